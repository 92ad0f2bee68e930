package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// gpt-oss-120b as shipped (MXFP4 experts, bf16 attention) fits one H100, and a decode step
// at batch 1 reads the active experts' bytes, not the total's; at a large batch it reads
// nearly every expert. The bounds are derived here from config.json's numbers, by hand.
func TestGptOss120bOnOneH100(t *testing.T) {
	m, _ := ModelPreset("gpt-oss-120b")
	g, _ := GPUPreset("h100")
	p := Profile{Name: "t", Model: m, GPU: g, Engine: defaultEngine(), Deployment: defaultDeployment(), Cost: CostConfig{Kind: CostRoofline}}
	kv, err := p.KVCacheTokens()
	if err != nil || kv < 50_000 {
		t.Fatalf("gpt-oss-120b on one H100: %d tokens of KV cache, %v", kv, err)
	}
	// hidden 2880, 36 layers, 64 heads and 8 KV heads of 64, 128 experts 2880 wide (4 per
	// token), vocab 201088.
	const h, layers = 2880, 36
	attn := float64(h*64*64+2*h*8*64+64*64*h) * layers // q, k, v, o
	router, norms := float64(h*128*layers), float64(2*h*layers)
	lmHead := float64(201088 * h)
	bf16 := (attn + router + norms + lmHead) * 2    // bytes
	expert := float64(3*h*2880) * 4.25 / 8 * layers // one expert across the layers, MXFP4
	activeBytes, totalBytes := bf16+4*expert, bf16+128*expert
	bw := 3350e9 // bytes/s
	r := NewRoofline(p.ShardModel(), g, DefaultRooflineParams())
	one := r.Step(StepWork{DecodeSeqs: 1, DecodeContext: 1})
	if lo, hi := activeBytes/bw, totalBytes/bw; one.Seconds() < lo || one.Seconds() > hi/4 {
		t.Errorf("batch 1: %v, want at least the active weights' %v and far below the total's %v",
			one, time.Duration(lo*1e9), time.Duration(hi*1e9))
	}
	big := r.Step(StepWork{DecodeSeqs: 512, DecodeContext: 512})
	if lo := 0.98 * totalBytes / bw; big.Seconds() < lo {
		t.Errorf("batch 512: %v, want at least 98%% of the total weights' %v", big, time.Duration(lo*1e9))
	}
	// 512 tokens choosing 4 of 128 experts touch all but 128·(124/128)^512 ≈ 1e-5 of them.
	if got := r.ExpertsTouched(512); math.Abs(got-128) > 1e-3 {
		t.Errorf("experts touched by 512 tokens: %g", got)
	}
	if got, want := r.ExpertsTouched(1), 4.0; math.Abs(got-want) > 1e-12 {
		t.Errorf("experts touched by 1 token: %g, want %g", got, want)
	}
	if got, want := r.ExpertsTouched(2), 128*(1-math.Pow(1-4.0/128, 2)); math.Abs(got-want) > 1e-9 {
		t.Errorf("experts touched by 2 tokens: %g, want %g", got, want)
	}
}

// DeepSeek-V3's 671 B parameters in fp8 leave no room on 8 × H100 (80 GB) and fit 8 × H200.
func TestDeepSeekV3Fp8OnEightGPUs(t *testing.T) {
	m, _ := ModelPreset("deepseek-v3")
	for _, c := range []struct {
		gpu  string
		fits bool
	}{{"h100", false}, {"h200", true}} {
		g, _ := GPUPreset(c.gpu)
		p := Profile{Name: "t", Model: m, GPU: g, Engine: defaultEngine(), Cost: CostConfig{Kind: CostRoofline},
			Deployment: Deployment{TP: 8, WeightDtype: DtypeFP8}}
		err := p.Validate()
		if c.fits != (err == nil) {
			t.Errorf("%s: %v", c.gpu, err)
			continue
		}
		if !c.fits {
			for _, want := range []string{"deepseek-v3's fp8 weights (671.0 GB in all) at tp 8 (", "GB per GPU) leave no room for a KV cache in 90% of h100's 85.5 GB"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error does not say %q:\n%v", c.gpu, want, err)
				}
			}
			continue
		}
		// MLA's cache, 576 elements a layer in bf16, is the same on every rank.
		kv, _ := p.KVCacheTokens()
		if per := p.ShardModel().KVBytesPerToken(); per != 61*576*2 || kv < 100_000 {
			t.Errorf("h200: %g bytes of KV per token on each GPU, %d tokens", per, kv)
		}
	}
}

// Data-parallel attention divides the sequences and multiplies the cache; expert
// parallelism pays an all-to-all; both are refused where they mean nothing.
func TestDataAndExpertParallel(t *testing.T) {
	m, _ := ModelPreset("qwen3-30b-a3b")
	g, _ := GPUPreset("h200")
	base := Profile{Name: "t", Model: m, GPU: g, Engine: defaultEngine(), Cost: CostConfig{Kind: CostRoofline}, Deployment: Deployment{TP: 2}}
	dp := base
	dp.Deployment.DP = 2
	ep := dp
	ep.Deployment.ExpertParallel = true
	for _, p := range []Profile{base, dp, ep} {
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: %v", p.Deployment, err)
		}
	}
	kv1, _ := base.KVCacheTokens()
	kv2, _ := dp.KVCacheTokens()
	if kv2 < 2*kv1 { // two caches, and less of the experts' weights on each GPU
		t.Errorf("dp 2: %d tokens of cache, tp 2 alone %d", kv2, kv1)
	}
	if dp.GPUs() != 4 {
		t.Errorf("tp 2 × dp 2: %d GPUs", dp.GPUs())
	}
	w := StepWork{DecodeSeqs: 64, DecodeContext: 64 * 2000}
	step := func(p Profile) time.Duration {
		cm, err := p.NewCostModel()
		if err != nil {
			t.Fatal(err)
		}
		return cm.Step(w)
	}
	if a, b := step(base), step(dp); b >= a {
		t.Errorf("64 sequences over 2 dp groups (%v) no faster than over one (%v)", b, a)
	}
	if a, b := step(dp), step(ep); a == b {
		t.Errorf("expert parallelism's all-to-all costs the same as the all-reduce: %v", a)
	}
	dense := base
	dense.Model, _ = ModelPreset("llama-3.1-8b")
	dense.Deployment.DP, dense.Deployment.ExpertParallel = 2, true
	err := dense.Validate()
	for _, want := range []string{"deployment.dp: 2: data-parallel attention applies to a mixture of experts", "deployment.expert_parallel: applies to a mixture of experts"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("dense with dp and expert_parallel: %v, want %q", err, want)
		}
	}
	one := base
	one.Deployment = Deployment{ExpertParallel: true}
	if err := one.Validate(); err == nil || !strings.Contains(err.Error(), "needs tp × dp > 1") {
		t.Errorf("expert_parallel on one GPU: %v", err)
	}
}

// fp8 weights compute at the fp8 rate where the GPU has one (H100), at bf16's where not
// (A100, which dequantizes); attention stays at bf16's; FP4 runs at FP4's on B200 only.
func TestComputeRatesByPrecision(t *testing.T) {
	h100, _ := GPUPreset("h100")
	a100, _ := GPUPreset("a100")
	b200, _ := GPUPreset("b200")
	for _, c := range []struct {
		g    GPU
		elem float64
		want float64
	}{{h100, 1, 1979}, {a100, 1, 312}, {h100, 2, 989}, {h100, 0.5, 989}, {h100, mxfp4Bytes, 989}, {b200, mxfp4Bytes, 9000}, {b200, nvfp4Bytes, 9000}, {b200, 1, 4500}} {
		if got := c.g.computeTFLOPS(c.elem); got != c.want {
			t.Errorf("%s at %g bytes: %g TFLOP/s, want %g", c.g.Name, c.elem, got, c.want)
		}
	}
	m, _ := ModelPreset("llama-3.1-8b")
	fp8 := m
	fp8.BytesPerParam = 1
	prefill := StepWork{PrefillSeqs: 1, PrefillTokens: 8192, PrefillAttn: 8192 * 8192 / 2}
	bf, f8 := NewRoofline(m, h100, DefaultRooflineParams()).Step(prefill), NewRoofline(fp8, h100, DefaultRooflineParams()).Step(prefill)
	if r := float64(bf) / float64(f8); r < 1.5 || r > 2 {
		t.Errorf("an 8k prefill in bf16 (%v) over fp8 (%v): %.2f, want between 1.5 and 2 (the linear layers twice as fast, attention not)", bf, f8, r)
	}
}

// TestFP8RateAgainstPublished measures what computing fp8 weights at the fp8 rate changes
// against the published fp8 results (public-steps.json's TensorRT-LLM Llama-2-70B runs on
// one H200): before, as plan's --dtype fp8 priced them, every matmul at bf16's 989 TFLOP/s;
// after, the linear layers at fp8's 1,979. docs/simulator.md quotes the table.
func TestFP8RateAgainstPublished(t *testing.T) {
	raw, err := os.ReadFile("testdata/public-steps.json")
	if err != nil {
		t.Fatal(err)
	}
	var pub publicSteps
	if err := json.Unmarshal(raw, &pub); err != nil {
		t.Fatal(err)
	}
	rows := []string{"| run | measured ms | before (bf16 rate) | error | after (fp8 rate) | error |", "|---|---|---|---|---|---|"}
	var before, after float64
	n := 0
	for _, run := range pub.Runs {
		if run.BytesPerParam != 1 {
			continue
		}
		m, _ := ModelPreset(run.Model)
		m.BytesPerParam = 1
		g, _ := GPUPreset(run.GPU)
		old := g
		old.FP8TFLOPS = 0
		measured := run.TotalMs
		if run.OutTokPerS > 0 {
			measured = float64(run.Output) * float64(run.Batch) / run.OutTokPerS * 1e3
		}
		b, _ := runMs(NewRoofline(m, old, DefaultRooflineParams()), run.Batch, run.Input, run.Output, run.Prefill)
		a, _ := runMs(NewRoofline(m, g, DefaultRooflineParams()), run.Batch, run.Input, run.Output, run.Prefill)
		eb, ea := b/measured-1, a/measured-1
		before += math.Abs(math.Log(b / measured))
		after += math.Abs(math.Log(a / measured))
		n++
		rows = append(rows, fmt.Sprintf("| %s %dx%d+%d %s | %.0f | %.0f | %+.1f%% | %.0f | %+.1f%% |", run.Source, run.Batch, run.Input, run.Output, run.GPU, measured, b, eb*100, a, ea*100))
	}
	if n == 0 {
		t.Fatal("no fp8 runs in public-steps.json")
	}
	t.Logf("mean |log error|: before %.3f, after %.3f over %d fp8 runs\n%s", before/float64(n), after/float64(n), n, strings.Join(rows, "\n"))
	if after > before {
		t.Errorf("the fp8 rate predicts the published fp8 runs worse (mean |log error| %.3f) than bf16's (%.3f)", after/float64(n), before/float64(n))
	}
}
