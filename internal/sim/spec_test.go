package sim

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// chunk is one emission a sequence's client would see: n tokens at at.
type chunk struct {
	at time.Duration
	n  int
}

// runOne runs one sequence of prompt and maxTokens tokens alone on the virtual clock and
// returns its chunks.
func runOne(t *testing.T, p Profile, prompt, maxTokens int) []chunk {
	t.Helper()
	return runSeqs(t, p, 1, prompt, maxTokens)[0]
}

// runBatch submits n sequences together at 0 and returns each one's chunks.
func runSeqs(t *testing.T, p Profile, n, prompt, maxTokens int) [][]chunk {
	t.Helper()
	v, err := NewVirtual(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := v.Submit(uint64(i), prompt, nil, maxTokens, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	v.Kick(0)
	out := make([][]chunk, n)
	for {
		at, ok := v.Next()
		if !ok {
			break
		}
		v.Process(at, func(id uint64, at time.Duration, k int, _ bool) { out[id] = append(out[id], chunk{at, k}) })
		v.Kick(at)
	}
	return out
}

// tpot is (last − first) / (tokens − 1), as docs/metrics.md defines it.
func tpot(cs []chunk) time.Duration {
	n := 0
	for _, c := range cs {
		n += c.n
	}
	return (cs[len(cs)-1].at - cs[0].at) / time.Duration(n-1)
}

// linearSpec is a linear profile whose steps a test can price by hand: a prefill token
// costs 0.5 ms, a decode step 10 ms whatever the batch or context, and drafting is ngram at
// 1 ms per drafted position.
func linearSpec(k int, a float64) Profile {
	m, _ := ModelPreset("llama-3.1-8b")
	g, _ := GPUPreset("h200")
	p := Profile{Name: "spec-test", Model: m, GPU: g, Seed: 1, Engine: defaultEngine(), Deployment: defaultDeployment(),
		Cost: CostConfig{Kind: CostLinear, PrefillMsPerToken: 0.5, DecodeStepMs: 10}}
	p.Speculative = Speculative{DraftTokens: k, Acceptance: a, Method: SpecNgram, DraftMsPerToken: 1}
	return p
}

// TestSpeculativeMatchesExpectation: with K = 4 and A = 0.8, one sequence alone steps every
// 10 ms (the decode step) + 4 × 0.5 ms (the verify's four more positions, at the prefill
// rate) + 4 × 1 ms (drafting) = 16 ms, and each step emits L+1 tokens, P(L ≥ i) = 0.8^i for
// i ≤ 4: E[L+1] = Σ_{i=0..4} 0.8^i = (1 − 0.8^5)/0.2 = 3.3616 tokens, E[(L+1)²] =
// Σ_{i=1..5} (2i−1)·0.8^(i−1) = 13.8704, so σ = √(13.8704 − 3.3616²) = 1.603. Over the
// S ≈ 5,900 steps of 20,000 tokens the mean chunk's standard error is σ/√S = 0.021 tokens
// (0.62 %): the test allows 4 of them. TPOT is then 16 ms / mean chunk, the same tolerance.
// The last steps, fewer than K+1 tokens from max_tokens, draft only what is left to emit
// (and cost 1.5 ms less per draft not made): too few to move either figure.
func TestSpeculativeMatchesExpectation(t *testing.T) {
	const k, a, out = 4, 0.8, 20000
	p := linearSpec(k, a)
	cs := runOne(t, p, 100, out)
	sizes := map[int]int{}
	total := cs[0].n
	for i := 1; i < len(cs); i++ {
		drafts := min(k, out-total-1)
		step := 10*time.Millisecond + time.Duration(drafts)*1500*time.Microsecond
		if g := cs[i].at - cs[i-1].at; g != step {
			t.Fatalf("chunk %d came %v after the one before, want its step's %v (%d drafts)", i, g, step, drafts)
		}
		sizes[cs[i].n]++
		total += cs[i].n
	}
	if total != out || cs[0].n != 1 {
		t.Fatalf("%d tokens, the first chunk %d: want exactly max_tokens %d, the first alone", total, cs[0].n, out)
	}
	wantMean := (1 - math.Pow(a, k+1)) / (1 - a)
	if got := p.Speculative.TokensPerStep(); math.Abs(got-3.3616) > 1e-9 || math.Abs(got-wantMean) > 1e-12 {
		t.Fatalf("TokensPerStep %g, want 3.3616", got)
	}
	steps := len(cs) - 1
	sigma := math.Sqrt(13.8704 - wantMean*wantMean)
	tol := 4 * sigma / math.Sqrt(float64(steps)) / wantMean // relative
	mean := float64(out-1) / float64(steps)
	if math.Abs(mean/wantMean-1) > tol {
		t.Errorf("mean chunk %.4f tokens over %d steps, want %.4f ± %.2f%%", mean, steps, wantMean, 100*tol)
	}
	wantTPOT := float64(16*time.Millisecond) / wantMean
	if got := float64(tpot(cs)); math.Abs(got/wantTPOT-1) > tol {
		t.Errorf("TPOT %v, want %v ± %.2f%%", time.Duration(got), time.Duration(wantTPOT), 100*tol)
	}
	// Chunks vary over 1..K+1, the full run as often as 0.8^4 = 41 % of steps (binomial
	// standard error 0.6 % over these steps).
	for n := range sizes {
		if n < 1 || n > k+1 {
			t.Errorf("a chunk of %d tokens; want 1..%d", n, k+1)
		}
	}
	if len(sizes) != k+1 {
		t.Errorf("chunk sizes %v: want every size 1..%d", sizes, k+1)
	}
	if f := float64(sizes[k+1]) / float64(steps); math.Abs(f-math.Pow(a, k)) > 4*math.Sqrt(0.4096*0.5904/float64(steps)) {
		t.Errorf("%.3f of chunks carry %d tokens, want %.3f", f, k+1, math.Pow(a, k))
	}
}

// TestSpeculativeAcceptanceZeroNoBetter: accepting nothing, each step still drafts and
// verifies, and emits one token: TPOT is never below the plain engine's, alone or batched,
// for each drafting method; with acceptance 0.8 it is below (one sequence, memory-bound).
func TestSpeculativeAcceptanceZeroNoBetter(t *testing.T) {
	base := mustProfile(t, "h200-llama-3.1-8b")
	draft, _ := ModelPreset("llama-3.2-1b")
	specs := map[string]Speculative{
		"draft model": {Method: SpecDraftModel, DraftModel: draft},
		"eagle":       {Method: SpecEagle, DraftStepFraction: 0.05},
		"ngram":       {Method: SpecNgram},
	}
	for name, s := range specs {
		for _, batch := range []int{1, 32} {
			plain := runSeqs(t, base, batch, 512, 200)
			p := base
			s.DraftTokens, s.Acceptance = 4, 0
			p.Speculative = s
			zero := runSeqs(t, p, batch, 512, 200)
			for i := range zero {
				for _, c := range zero[i][1:] {
					if c.n != 1 {
						t.Fatalf("%s: acceptance 0 emitted a chunk of %d", name, c.n)
					}
				}
				if tz, tp := tpot(zero[i]), tpot(plain[i]); tz < tp {
					t.Errorf("%s, batch %d: TPOT %v at acceptance 0, below the plain engine's %v", name, batch, tz, tp)
				}
			}
			p.Speculative.Acceptance = 0.8
			if good, tp := tpot(runOne(t, p, 512, 200)), tpot(plain[0]); batch == 1 && good >= tp {
				t.Errorf("%s: TPOT %v at acceptance 0.8, not below the plain engine's %v", name, good, tp)
			}
		}
	}
}

// TestSpeculativeSeeded: the chunks depend on the seed alone: the same seed gives the same
// run, another seed another.
func TestSpeculativeSeeded(t *testing.T) {
	p := linearSpec(4, 0.7)
	a, b := runSeqs(t, p, 8, 64, 300), runSeqs(t, p, 8, 64, 300)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs of one seed differ")
	}
	p.Seed = 2
	if c := runSeqs(t, p, 8, 64, 300); reflect.DeepEqual(a, c) {
		t.Error("seeds 1 and 2 gave the same chunks")
	}
}

// TestSpeculativeMaxTokensExact: the last run is cut at max_tokens, however short.
func TestSpeculativeMaxTokensExact(t *testing.T) {
	p := linearSpec(6, 1) // every draft accepted: 7 tokens a step
	for _, out := range []int{1, 2, 5, 7, 8, 9, 100} {
		n := 0
		for _, c := range runOne(t, p, 32, out) {
			n += c.n
		}
		if n != out {
			t.Errorf("max_tokens %d: %d tokens emitted", out, n)
		}
	}
}

// TestSpeculativeWallClockAgrees: serve's engine on the wall clock (a synctest bubble's)
// emits the chunks the virtual clock does, at the same offsets.
func TestSpeculativeWallClockAgrees(t *testing.T) {
	p := linearSpec(4, 0.8)
	want := runOne(t, p, 64, 400)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		e := NewEngineOnGoTimers(p)
		go e.Start(ctx)
		t0 := time.Now()
		ch, err := e.Submit(ctx, SeqRequest{PromptTokens: 64, MaxTokens: 400, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		var got []chunk
		for st := range ch {
			got = append(got, chunk{st.At.Sub(t0), st.Tokens})
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("wall clock: %d chunks, virtual clock %d; first differences: %v", len(got), len(want), firstDiff(got, want))
		}
		st := e.Stats()
		if st.GenerationTokens != 400 || st.SpecDraftTokens == 0 || st.SpecAcceptedTokens > st.SpecDraftTokens {
			t.Errorf("stats: %+v", st)
		}
	})
}

func firstDiff(a, b []chunk) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("chunk %d: %d tokens at %v against %d at %v", i, a[i].n, a[i].at, b[i].n, b[i].at)
		}
	}
	return "one is a prefix of the other"
}

// TestSpeculativeProfile: a profile's speculative mapping reads, writes back the same, and
// its every problem is listed at once.
func TestSpeculativeProfile(t *testing.T) {
	p, err := ParseProfile([]byte("speculative:\n  draft_tokens: 3\n  acceptance: 0.7\n  draft_model: llama-3.2-1b\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Speculative; s.method() != SpecDraftModel || s.DraftTokens != 3 || s.DraftModel.Name != "llama-3.2-1b" {
		t.Fatalf("read %+v", s)
	}
	q, err := ParseProfile(p.YAML(""), "")
	if err != nil {
		t.Fatal(err)
	}
	if q.Speculative.DraftModel != p.Speculative.DraftModel || q.Speculative.DraftTokens != 3 || q.Speculative.Acceptance != 0.7 {
		t.Errorf("written and read back: %+v, want %+v", q.Speculative, p.Speculative)
	}
	// A draft model that is no preset is written as its whole shape, experts too: read back,
	// it drafts at the same cost.
	moe := mustProfile(t, "h200-llama-3.1-8b")
	moe.Model, _ = ModelPreset("qwen3-235b-a22b")
	moe.Deployment.TP = 8
	moe.Speculative = Speculative{DraftTokens: 2, Acceptance: 0.6, Method: SpecDraftModel}
	moe.Speculative.DraftModel, _ = ModelPreset("qwen3-30b-a3b")
	moe.Speculative.DraftModel.Name = "my-qwen3-draft"
	if err := moe.Validate(); err != nil {
		t.Fatal(err)
	}
	if r, err := ParseProfile(moe.YAML(""), ""); err != nil || r.Speculative.DraftModel != moe.Speculative.DraftModel {
		t.Errorf("a custom MoE draft model written and read back: %+v (%v), want %+v\n%s", r.Speculative.DraftModel, err, moe.Speculative.DraftModel, moe.YAML(""))
	}
	// The draft model's weights and KV cache take the target's memory.
	plain := mustProfile(t, "h200-llama-3.1-8b")
	kp, _ := plain.KVCacheTokens()
	ks, _ := p.KVCacheTokens()
	if !(ks < kp) {
		t.Errorf("KV cache %d tokens with a draft model, %d without", ks, kp)
	}

	_, err = ParseProfile([]byte("speculative:\n  draft_tokens: 99\n  acceptance: 1.5\n  method: medusa\n  draft_ms_per_token: 1\n"), "")
	for _, want := range []string{"speculative.draft_tokens: must be in 0..32", "speculative.acceptance: must be in [0, 1]", `speculative.method: "medusa" is not one of draft_model, eagle, ngram`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want it to say %q", err, want)
		}
	}
	for src, want := range map[string]string{
		"speculative:\n  draft_tokens: 2\n":                                                                                                     "speculative.method: missing",
		"speculative:\n  draft_tokens: 2\n  method: eagle\n":                                                                                    "eagle needs its drafting cost",
		"speculative:\n  draft_tokens: 2\n  method: eagle\n  draft_model: llama-3.2-1b\n":                                                       "speculative.draft_model: applies to method draft_model only",
		"speculative:\n  draft_tokens: 2\n  method: draft_model\n":                                                                              "method draft_model needs the draft model",
		"speculative:\n  draft_tokens: 2\n  draft_model: llama-3.2-1b\n  draft_ms_per_token: 1\n":                                               "drop draft_ms_per_token",
		"cost:\n  kind: linear\n  prefill_ms_per_token: 1\n  decode_step_ms: 8\nspeculative:\n  draft_tokens: 2\n  draft_model: llama-3.2-1b\n": "needs cost kind roofline",
		"speculative:\n  draft_tokens: 2\n  method: ngram\n  speed: 3\n":                                                                        "speculative.speed: unknown key",
		"speculative:\n  draft_tokens: 2\n  draft_model: qwen2.5-7b\n":                                                                          "qwen2.5-7b's vocabulary of 152064 tokens is not llama-3.1-8b's 128256",
	} {
		if _, err := ParseProfile([]byte(src), ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v; want it to say %q", src, err, want)
		}
	}
}

// TestSpeculativeFullCache: a request whose prompt and max_tokens fill the whole KV cache
// still completes: it never drafts past max_tokens, whose KV the cache could not hold.
func TestSpeculativeFullCache(t *testing.T) {
	p := linearSpec(8, 1)
	p.Engine.KVCacheTokens = 256
	n := 0
	for _, c := range runOne(t, p, 200, 56) {
		n += c.n
	}
	if n != 56 {
		t.Errorf("%d tokens, want 56", n)
	}
}
