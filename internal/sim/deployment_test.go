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

// presetProfile is model on gpu under the roofline with deployment d.
func presetProfile(t testing.TB, model, gpu string, d Deployment) Profile {
	t.Helper()
	m, ok := ModelPreset(model)
	g, ok2 := GPUPreset(gpu)
	if !ok || !ok2 {
		t.Fatalf("no preset %s or %s", model, gpu)
	}
	return Profile{Name: "test", Model: m, GPU: g, Seed: 1, Engine: defaultEngine(), Deployment: d, Cost: CostConfig{Kind: CostRoofline}}
}

// TestDeploymentFit: the GPUs' memory decides what fits, and the refusal says what to change.
func TestDeploymentFit(t *testing.T) {
	for _, tc := range []struct {
		model, gpu string
		d          Deployment
		want       []string // the error's parts; none = fits
	}{
		{"llama-3.1-70b", "h100", Deployment{TP: 1}, []string{"deployment.tp: llama-3.1-70b's bf16 weights at tp 1 (141.1 GB per GPU)", "90% of h100's 85.5 GB", "use tp 2, or weight_dtype fp8"}},
		{"llama-3.1-70b", "h100", Deployment{}, []string{"at tp 1"}}, // the zero value is tp 1
		{"llama-3.1-70b", "h100", Deployment{TP: 2}, nil},
		{"llama-3.1-70b", "h100", Deployment{TP: 4, Replicas: 3}, nil},
		{"llama-3.1-70b", "h200", Deployment{WeightDtype: DtypeFP8}, nil},
		{"llama-3.1-70b", "h100", Deployment{WeightDtype: DtypeInt4}, nil},
		{"llama-3.1-70b", "a100", Deployment{TP: 1, WeightDtype: DtypeBF16}, []string{"bf16 weights at tp 1", "a100's 85.9 GB"}},
		{"llama-3.1-70b", "l40s", Deployment{TP: 2}, []string{"at tp 2 (70.6 GB per GPU)", "l40s's 48.3 GB", "use tp 4, or weight_dtype fp8"}},
		{"llama-3.1-70b", "b200", Deployment{}, nil},
	} {
		t.Run(fmt.Sprintf("%s-%s-%+v", tc.model, tc.gpu, tc.d), func(t *testing.T) {
			err := presetProfile(t, tc.model, tc.gpu, tc.d).Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
	// Weights must fit even when the cache's size is given: a 70B is never priced on one
	// 80 GB GPU.
	p := presetProfile(t, "llama-3.1-70b", "h100", Deployment{})
	p.Engine.KVCacheTokens = 1000
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "at tp 1") {
		t.Errorf("70B on one h100 with kv_cache_tokens given: %v", err)
	}
}

// TestKVCapacityPerGPU works the memory arithmetic by hand from config.json figures.
func TestKVCapacityPerGPU(t *testing.T) {
	// llama-3.1-70b at tp 4 on h100: each GPU holds 16 of 64 query heads, 2 of 8 KV heads,
	// a quarter of the MLP (28672 / 4) and of the vocabulary (128256 / 4).
	const h, layers, hd = 8192, 80, 128
	layer := int64(h*16*hd + 2*h*2*hd + 16*hd*h + 3*h*7168 + 2*h)
	params := layers*layer + 2*32064*h + h
	weights := float64(params) * 2
	kvPerToken := 2.0 * layers * 2 * hd * 2 // K and V, 80 layers, 2 KV heads, bf16
	// An H100's memory: nvidia-smi's 81,559 MiB.
	want := int((mib(81559)*1e9*0.9 - weights) / kvPerToken)
	want -= want % 16
	p := presetProfile(t, "llama-3.1-70b", "h100", Deployment{TP: 4})
	if s := p.ShardModel(); s.Params() != params || s.KVBytesPerToken() != kvPerToken {
		t.Errorf("tp 4 shard: %d params, %g KV bytes/token; want %d, %g", s.Params(), s.KVBytesPerToken(), params, kvPerToken)
	}
	if got, err := p.KVCacheTokens(); err != nil || got != want {
		t.Errorf("tp 4 KV capacity %d tokens (%v), want %d", got, err, want)
	}
	if p.GPUs() != 4 {
		t.Errorf("GPUs() = %d", p.GPUs())
	}
	// Replicas do not change a replica's cache; they multiply the GPUs.
	p.Deployment.Replicas = 3
	if got, _ := p.KVCacheTokens(); got != want || p.GPUs() != 12 {
		t.Errorf("3 replicas: KV %d, GPUs %d", got, p.GPUs())
	}

	// fp8 KV halves the bytes per token; fp8 weights halve the weights and leave the KV
	// cache at the model's precision.
	f := presetProfile(t, "llama-3.1-70b", "h100", Deployment{TP: 4, KVDtype: DtypeFP8})
	if got := f.ShardModel().KVBytesPerToken(); got != kvPerToken/2 {
		t.Errorf("fp8 KV: %g bytes/token, want %g", got, kvPerToken/2)
	}
	w := presetProfile(t, "llama-3.1-70b", "h100", Deployment{TP: 4, WeightDtype: DtypeFP8})
	if s := w.ShardModel(); s.WeightBytes() != weights/2 || s.KVBytesPerToken() != kvPerToken {
		t.Errorf("fp8 weights: %g weight bytes, %g KV bytes/token", s.WeightBytes(), s.KVBytesPerToken())
	}
	// The deployment's dtype decides over model.bytes_per_param; without one, it stays.
	m := presetProfile(t, "llama-3.1-8b", "h200", Deployment{})
	m.Model.BytesPerParam = 1
	if m.ShardModel().WeightBytes() != m.Model.WeightBytes() {
		t.Error("bytes_per_param without a deployment dtype changed")
	}
	m.Deployment.WeightDtype = DtypeBF16
	if s := m.ShardModel(); s.WeightBytes() != 2*m.Model.WeightBytes() || s.KVBytesPerToken() != m.Model.KVBytesPerToken() {
		t.Errorf("weight_dtype bf16 over bytes_per_param 1: %g weight bytes, %g KV bytes/token", s.WeightBytes(), s.KVBytesPerToken())
	}

	// Fewer KV heads than GPUs: each GPU keeps one, replicated.
	r := presetProfile(t, "llama-3.1-70b", "h100", Deployment{TP: 16})
	if s := r.ShardModel(); s.KVHeads != 1 || s.Heads != 4 || s.KVBytesPerToken() != 2*layers*1*hd*2 {
		t.Errorf("tp 16: %d heads, %d KV heads, %g KV bytes/token", s.Heads, s.KVHeads, s.KVBytesPerToken())
	}
	// tp 1 is the model itself: nothing changes for profiles without a deployment.
	one := presetProfile(t, "llama-3.1-8b", "h200", Deployment{})
	if one.ShardModel() != one.Model {
		t.Error("tp 1 shard differs from the model")
	}
}

// TestTensorParallelArithmetic: the roofline of one GPU's shard plus two ring all-reduces
// per layer of the step's activations.
func TestTensorParallelArithmetic(t *testing.T) {
	p := presetProfile(t, "llama-3.1-70b", "h100", Deployment{TP: 4})
	cm, err := p.NewCostModel()
	if err != nil {
		t.Fatal(err)
	}
	tp, ok := cm.(*TensorParallel)
	if !ok {
		t.Fatalf("tp 4 cost model is %T", cm)
	}
	shard := NewRoofline(p.ShardModel(), p.GPU, p.Cost.rooflineParams())
	// 160 all-reduces of tokens × 8192 × 2 bytes: 10 µs each plus 2·3/4 of the bytes at 450 GB/s.
	allReduce := func(tokens int) time.Duration {
		bytes := float64(tokens) * 8192 * 2
		return time.Duration(math.Round(160 * (10e3 + 1.5*bytes/450e9*1e9)))
	}
	for _, w := range []StepWork{
		{DecodeSeqs: 1, DecodeContext: 1000},
		{DecodeSeqs: 64, DecodeContext: 64 * 2000},
		{DecodeSeqs: 8, DecodeContext: 8000, PrefillSeqs: 1, PrefillTokens: 2048, PrefillAttn: 2048 * 1024},
	} {
		want := shard.Step(w) + allReduce(w.DecodeSeqs+w.PrefillTokens)
		if got := tp.Step(w); (got - want).Abs() > time.Microsecond {
			t.Errorf("Step(%+v) = %v, want %v", w, got, want)
		}
	}
	if got, want := tp.Prefill(4096), shard.Prefill(4096)+allReduce(4096); (got - want).Abs() > time.Microsecond {
		t.Errorf("Prefill(4096) = %v, want %v", got, want)
	}
	if tp.Step(StepWork{}) != 0 || tp.Prefill(0) != 0 {
		t.Error("an empty step costs time")
	}
	if got := tp.AllReduce(1); got < 1600*time.Microsecond || got > 1700*time.Microsecond {
		t.Errorf("one token's all-reduces: %v, want 160 × ~10 µs", got)
	}
	// tp 1 is the plain roofline, unchanged.
	if cm, _ := presetProfile(t, "llama-3.1-8b", "h200", Deployment{}).NewCostModel(); fmt.Sprintf("%T", cm) != "*sim.Roofline" {
		t.Errorf("tp 1 cost model is %T", cm)
	}
	// More GPUs: a shorter decode step (less to read each), but never below the all-reduces.
	prev := time.Duration(math.MaxInt64)
	for _, n := range []int{2, 4, 8} {
		cm, err := presetProfile(t, "llama-3.1-70b", "h100", Deployment{TP: n}).NewCostModel()
		if err != nil {
			t.Fatal(err)
		}
		d := cm.Step(StepWork{DecodeSeqs: 1, DecodeContext: 1000})
		if d >= prev || d <= cm.(*TensorParallel).AllReduce(1) {
			t.Errorf("tp %d decode step %v (tp %d: %v)", n, d, n/2, prev)
		}
		prev = d
	}
}

// tpPoint is one published measurement of testdata/tp-measurements.json.
type tpPoint struct {
	Source      string  `json:"source"`
	Model       string  `json:"model"`
	GPU         string  `json:"gpu"`
	TP          int     `json:"tp"`
	WeightDtype string  `json:"weight_dtype"`
	Batch       int     `json:"batch"`
	Input       int     `json:"input"`
	Output      int     `json:"output"`
	Metric      string  `json:"metric"` // latency_ms: the batch's end-to-end; itl_ms: mean inter-token latency
	Measured    float64 `json:"measured"`
	Baseline    *int    `json:"baseline"` // the single-GPU row of the same harness and GPU
}

// runBatch submits batch requests of in prompt tokens and out output tokens at t = 0 to
// one engine of p and returns the first token's and the last token's times.
func runBatch(t testing.TB, p Profile, batch, in, out int) (first, last time.Duration) {
	t.Helper()
	v, err := NewVirtual(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		if err := v.Submit(uint64(i), in, nil, out, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	v.Kick(0)
	first = -1
	for {
		at, ok := v.Next()
		if !ok {
			return first, last
		}
		v.Process(at, func(_ uint64, at time.Duration, _ int, _ bool) {
			if first < 0 {
				first = at
			}
			last = at
		})
		v.Kick(at)
	}
}

// TestTPMeasurements checks the tensor-parallel model against published measurements
// (testdata/tp-measurements.json names them) and prints the table docs/simulator.md shows:
//
//	go test ./internal/sim -run TPMeasurements -v
//
// Each prediction must be within 30 % of its measurement; a tensor-parallel point's ratio
// to the single-GPU point of the same harness and GPU — which cancels what the roofline
// misses on every GPU alike — within 15 %.
func TestTPMeasurements(t *testing.T) {
	b, err := os.ReadFile("testdata/tp-measurements.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Points []tpPoint `json:"points"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	pred := make([]float64, len(file.Points))
	rows := []string{"| source | model | GPUs | weights | batch × in / out | metric | measured ms | predicted ms | error | ratio to tp 1 8B: measured | predicted | error |", "|---|---|---|---|---|---|---|---|---|---|---|---|"}
	for i, pt := range file.Points {
		p := presetProfile(t, pt.Model, pt.GPU, Deployment{Replicas: 1, TP: pt.TP, WeightDtype: pt.WeightDtype})
		first, last := runBatch(t, p, pt.Batch, pt.Input, pt.Output)
		switch pt.Metric {
		case "latency_ms":
			pred[i] = float64(last) / 1e6
		case "itl_ms":
			pred[i] = float64(last-first) / 1e6 / float64(pt.Output-1)
		default:
			t.Fatalf("point %d: metric %q", i, pt.Metric)
		}
		e := pred[i]/pt.Measured - 1
		dt := pt.WeightDtype
		if dt == "" {
			dt = DtypeBF16
		}
		row := fmt.Sprintf("| %s | %s | %d × %s | %s | %d × %d / %d | %s | %.2f | %.2f | %+.1f%% |", pt.Source, pt.Model, pt.TP, pt.GPU, dt, pt.Batch, pt.Input, pt.Output, pt.Metric, pt.Measured, pred[i], e*100)
		if math.Abs(e) > 0.30 {
			t.Errorf("%s %s tp %d on %s: predicted %.2f ms, measured %.2f (%+.1f%%, tolerance 30%%)", pt.Source, pt.Model, pt.TP, pt.GPU, pred[i], pt.Measured, e*100)
		}
		if k := pt.Baseline; k != nil {
			base := file.Points[*k]
			mr, pr := pt.Measured/base.Measured, pred[i]/pred[*k]
			re := pr/mr - 1
			row += fmt.Sprintf(" %.3f | %.3f | %+.1f%% |", mr, pr, re*100)
			if math.Abs(re) > 0.15 {
				t.Errorf("%s tp %d on %s: ratio to the tp 1 point %.3f predicted, %.3f measured (%+.1f%%, tolerance 15%%)", pt.Model, pt.TP, pt.GPU, pr, mr, re*100)
			}
		} else {
			row += " | | |"
		}
		rows = append(rows, row)
	}
	t.Logf("\n%s", strings.Join(rows, "\n"))
}

func TestDeploymentString(t *testing.T) {
	for _, tc := range []struct {
		d    Deployment
		want string
	}{
		{Deployment{}, ""},
		{defaultDeployment(), ""},
		{Deployment{TP: 4}, "tp 4"},
		{Deployment{Replicas: 3, TP: 2, Router: RouterRoundRobin, WeightDtype: DtypeFP8, KVDtype: DtypeFP8, MaxModelLen: 8192},
			"3 replicas of tp 2 = 6 GPUs, router round-robin, fp8 weights, fp8 KV cache, max_model_len 8192"},
		{Deployment{Replicas: 2}, "2 replicas of tp 1 = 2 GPUs, router least-outstanding"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.d, got, tc.want)
		}
	}
}

// DescribeServing adds speculative decoding to the deployment's words, and alone says it.
func TestDescribeServing(t *testing.T) {
	var p Profile
	if got := p.DescribeServing(); got != "" {
		t.Errorf("one GPU: %q", got)
	}
	p.Speculative = Speculative{DraftTokens: 2, Acceptance: 0.7, Method: SpecNgram}
	spec := "speculative decoding " + p.Speculative.String()
	if got := p.DescribeServing(); got != spec {
		t.Errorf("speculative alone: %q", got)
	}
	p.Deployment = Deployment{TP: 4}
	if got := p.DescribeServing(); got != "tp 4, "+spec {
		t.Errorf("tp 4 and speculative: %q", got)
	}
}

func TestParseDeployment(t *testing.T) {
	p, err := ParseProfile([]byte(`
model: llama-3.1-70b
gpu: h100
engine: {prefix_caching: true}
deployment:
  replicas: 3
  tp: 4
  router: prefix-affinity
  weight_dtype: fp8
  kv_dtype: fp8
  max_model_len: 32768
`), "")
	if err != nil {
		t.Fatal(err)
	}
	want := Deployment{Replicas: 3, TP: 4, Router: RouterPrefixAffinity, WeightDtype: DtypeFP8, KVDtype: DtypeFP8, MaxModelLen: 32768}
	if p.Deployment != want || p.GPUs() != 12 {
		t.Errorf("parsed %+v (%d GPUs), want %+v", p.Deployment, p.GPUs(), want)
	}
	// Without the mapping: one GPU, least-outstanding, the model's precision.
	p, err = ParseProfile([]byte("model: llama-3.1-8b\n"), "")
	if err != nil || p.Deployment != defaultDeployment() || p.GPUs() != 1 {
		t.Errorf("default deployment %+v, %v", p.Deployment, err)
	}
	// One replica fewer is one number edited.
	three := "model: llama-3.1-70b\ngpu: h100\ndeployment:\n  replicas: 3\n  tp: 2\n"
	p3, err1 := ParseProfile([]byte(three), "")
	p2, err2 := ParseProfile([]byte(strings.Replace(three, "replicas: 3", "replicas: 2", 1)), "")
	if err1 != nil || err2 != nil || p3.GPUs() != 6 || p2.GPUs() != 4 {
		t.Errorf("replicas 3 → 2: %d → %d GPUs (%v, %v)", p3.GPUs(), p2.GPUs(), err1, err2)
	}
}

// TestParseDeploymentErrors: every problem at once, each with its key (and line, where
// the file has one).
func TestParseDeploymentErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"duplicate keys anywhere", `
deployment:
  replicas: 3
  tp: 2
  replicas: 4
engine:
  block_size: 16
  block_size: 32
seed: 1
seed: 2
`, []string{"line 5: deployment.replicas: appears twice (first on line 3)", "line 8: engine.block_size: appears twice (first on line 7)", "line 10: seed: appears twice (first on line 9)"}},
		{"duplicate mapping", "deployment: {tp: 2}\ndeployment: {tp: 4}\n", []string{"line 2: deployment: appears twice (first on line 1)"}},
		{"duplicate key in a custom model", "model: {layers: 2, layers: 3, hidden: 64, heads: 1, kv_heads: 1, intermediate: 1, vocab: 1}\n",
			[]string{"line 1: model.layers: appears twice"}},
		{"bad values", `
deployment:
  replicas: 0
  tp: two
  router: random
  weight_dtype: fp4
  kv_dtype: int4
  max_model_len: -1
  gpus: 8
`, []string{"line 3: deployment.replicas: must be in 1..1000, got 0", "line 4: deployment.tp: want an integer", "deployment.router: \"random\" is not one of round-robin, least-outstanding, session, prefix-affinity",
			"deployment.weight_dtype: \"fp4\" is not one of bf16, fp8, int4", "deployment.kv_dtype: \"int4\" is not one of bf16, fp8",
			"deployment.max_model_len: must be in 0..", "line 9: deployment.gpus: unknown key (known: dp, expert_dtype, expert_parallel, kv_dtype, max_model_len, replicas, router, tp, truncate_prompts, weight_dtype)"}},
		{"out of range", "deployment: {replicas: 1001, tp: 3}\n", []string{"deployment.replicas: must be in 1..1000, got 1001", "deployment.tp: must be a power of two in 1..64, got 3"}},
		{"tp too large", "deployment: {tp: 128}\n", []string{"deployment.tp: must be a power of two in 1..64, got 128"}},
		{"not a mapping", "deployment: 4\n", []string{"line 1: deployment: want a mapping"}},
		{"tp with a measured model", "cost: {kind: linear, decode_step_ms: 8}\ndeployment: {tp: 2}\n", []string{"deployment.tp: 2 needs cost kind roofline: a linear model describes one measured server"}},
		{"tp not dividing the heads", "model: qwen2.5-7b\ndeployment: {tp: 8}\n", []string{"deployment.tp: 8 does not divide qwen2.5-7b's 28 attention heads"}},
		{"tp on a GPU without interconnect figures", "gpu: {tflops: 989, bandwidth_gbps: 4800, memory_gb: 141}\ndeployment: {tp: 2}\n", []string{"deployment.tp: 2 needs the GPU's interconnect"}},
		{"prefix affinity without a cache", "deployment: {replicas: 2, router: prefix-affinity}\n", []string{"deployment.router: prefix-affinity needs engine.prefix_caching: true"}},
		{"longer than the model's context", "model: qwen2.5-7b\ndeployment: {max_model_len: 65536}\n", []string{"deployment.max_model_len: 65536 exceeds qwen2.5-7b's context of 32768 tokens"}},
		{"does not fit", "model: llama-3.1-70b\ngpu: h100\ndeployment: {replicas: 8}\n", []string{"deployment.tp: llama-3.1-70b's bf16 weights at tp 1", "use tp 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProfile([]byte(tc.yaml), "")
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestDeploymentTable prints docs/simulator.md's table of llama-3.1-70b deployments —
// weights per GPU, one replica's KV cache and the roofline decode step — and holds what the
// table shows: more GPUs per replica leave more cache and shorten a step.
//
//	go test ./internal/sim -run DeploymentTable -v
func TestDeploymentTable(t *testing.T) {
	rows := []string{"| GPU | tp | weights | weights GB per GPU | KV tokens per replica | step ms, 1 × 1k ctx | 64 × 1k |", "|---|---|---|---|---|---|---|"}
	for _, gpu := range GPUPresets() {
		prevKV, prevStep := 0, time.Duration(math.MaxInt64)
		for _, tp := range []int{1, 2, 4, 8} {
			for _, dt := range []string{DtypeBF16, DtypeFP8} {
				p := presetProfile(t, "llama-3.1-70b", gpu, Deployment{Replicas: 1, TP: tp, WeightDtype: dt})
				w := p.ShardModel().WeightBytes() / 1e9
				if err := p.Validate(); err != nil {
					if !strings.Contains(err.Error(), "leave no room") || w < p.GPU.MemoryGB*0.9 {
						t.Errorf("%s tp %d %s: %v", gpu, tp, dt, err)
					}
					rows = append(rows, fmt.Sprintf("| %s | %d | %s | %.1f | does not fit | | |", gpu, tp, dt, w))
					continue
				}
				kv, _ := p.KVCacheTokens()
				cm, _ := p.NewCostModel()
				one := cm.Step(StepWork{DecodeSeqs: 1, DecodeContext: 1024})
				many := cm.Step(StepWork{DecodeSeqs: 64, DecodeContext: 64 * 1024})
				rows = append(rows, fmt.Sprintf("| %s | %d | %s | %.1f | %d | %.1f | %.1f |", gpu, tp, dt, w, kv, float64(one)/1e6, float64(many)/1e6))
				if dt == DtypeBF16 {
					if kv <= prevKV || one >= prevStep {
						t.Errorf("%s tp %d: %d KV tokens, %v step; tp %d: %d, %v", gpu, tp, kv, one, tp/2, prevKV, prevStep)
					}
					prevKV, prevStep = kv, one
				}
			}
		}
	}
	t.Logf("\n%s", strings.Join(rows, "\n"))
}

// The precisions by name follow ShardModel: weight_dtype alone leaves the KV cache at the
// model's element size.
func TestDtypeNames(t *testing.T) {
	p, _ := LoadProfile("")
	for _, c := range []struct {
		w, kv         string
		bytes         float64
		wantW, wantKV string
	}{
		{"", "", 0, "bf16", "bf16"},
		{"fp8", "", 0, "fp8", "bf16"},
		{"int4", "fp8", 0, "int4", "fp8"},
		{"", "", 1, "fp8", "fp8"},
		{"", "", 4, "4 bytes per parameter", "4 bytes per parameter"},
	} {
		q := p
		q.Deployment.WeightDtype, q.Deployment.KVDtype, q.Model.BytesPerParam = c.w, c.kv, c.bytes
		if got, gotKV := q.WeightDtype(), q.KVDtype(); got != c.wantW || gotKV != c.wantKV {
			t.Errorf("weight_dtype %q, kv_dtype %q, bytes %v: %s, %s; want %s, %s", c.w, c.kv, c.bytes, got, gotKV, c.wantW, c.wantKV)
		}
	}
}
