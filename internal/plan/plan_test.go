package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

func listPrice(p sim.Profile) *metrics.Price {
	if p.USDPerGPUHour() <= 0 {
		return nil
	}
	return &metrics.Price{GPU: &metrics.GPUPrice{USDPerGPUHour: p.USDPerGPUHour(), GPUs: p.GPUs()}}
}

func textbook(t *testing.T) sim.Profile {
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Validate lists every problem, each a field error naming its field (the command names the
// flag).
func TestValidateListsEveryProblem(t *testing.T) {
	cfg := Config{Base: textbook(t), MaxReplicas: 0, Workers: -1,
		Space: Space{GPUs: []string{"h100", "tpu", "h100"}, TPs: []int{3}, Dtypes: []string{"int8"}, MaxNumSeqs: []int{0},
			MaxBatchedTokens: []int{-1}, Prefill: []string{"split"}, Routers: []string{"random", "prefix-affinity"}},
		Metrics: slos(t, "ttft<=500ms")}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"Space.GPUs,Space.TPs,Space.Dtypes: profile textbook has a linear cost model", "plans replicas of that server only",
		`Space.GPUs: "tpu" is not a GPU preset`, "Space.GPUs: h100 is listed twice", "Space.TPs: 3 is not a power of two",
		`Space.Dtypes: "int8" is not one of bf16, fp8, int4, mxfp4, nvfp4`, "Space.MaxNumSeqs: 0", "Space.MaxBatchedTokens: -1", `Space.Prefill: "split"`,
		`Space.Routers: "random"`, "Space.Routers: prefix-affinity needs a profile with engine.prefix_caching: true", "Traffic: needs an arrival rate", "Metrics.SLOs: plan needs verdict terms", "MaxReplicas: 0", "Workers: -1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestTextbookFleet derives the replicas of the textbook model by hand and holds the plan
// to them. The textbook profile prefills in an unlimited disaggregated pool (10.24 ms for
// 512 tokens) and decodes in lock-step at 8 × (1 + 0.12 (b − 1)) = 7.04 + 0.96 b ms a step
// for a batch of b. With constant arrivals split round-robin, each of n replicas gets a
// constant λ = R / n; a request decodes 127 steps after its first token (128 output
// tokens), so in a steady state the batch is b = λ × 127 × step(b) (Little's law):
//
//	b = λ · 0.127 · (7.04 + 0.96 b)   ⇒   b = 0.89408 λ / (1 − 0.12192 λ)
//
// and every request's TPOT is step(b). TPOT ≤ 20 ms needs b ≤ (20 − 7.04) / 0.96 = 13.5,
// so λ ≤ 13.5 / (0.89408 + 0.12192 · 13.5) = 5.315 req/s per replica. At R = 20 req/s,
// ⌈20 / 5.315⌉ = 4 replicas: 4 give λ = 5 (TPOT 18.0 ms), 3 give λ = 6.67 (TPOT 37.7 ms).
// Four replicas' headroom is 4 × 5.315 = 21.3 req/s.
func TestTextbookFleet(t *testing.T) {
	const rate, bound = 20.0, 20.0
	b := (bound - 7.04) / 0.96
	perReplica := b / (0.89408 + 0.12192*b)
	want := int(math.Ceil(rate / perReplica))
	if want != 4 {
		t.Fatalf("derivation: %d replicas, want 4", want)
	}
	base := textbook(t)
	base.Deployment.Router = sim.RouterRoundRobin
	cfg := Config{Base: base, Traffic: traffic(t, rate, "constant", 512, 128), Metrics: slos(t, "tpot:p99<=20ms"),
		MaxReplicas: 64, Workers: 1, Price: listPrice}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := pl.BestCandidate()
	if c == nil {
		t.Fatalf("no plan: %+v", pl.Candidates)
	}
	if c.Replicas != want || c.GPUs != want {
		t.Errorf("replicas %d, GPUs %d; want %d", c.Replicas, c.GPUs, want)
	}
	if tpot := *c.SLO[0].Value; math.Abs(tpot-(7.04+0.96*0.89408*5/(1-0.12192*5))) > 0.02*tpot {
		t.Errorf("TPOT P99 %.2f ms, want the steady state's 18.0 within 2%%", tpot)
	}
	if h := *c.HeadroomRate; h > float64(want)*perReplica*1.02 || h < float64(want)*perReplica/1.05/1.02 {
		t.Errorf("headroom %.2f req/s, want within 5%% below %.2f", h, float64(want)*perReplica)
	}
	if r := *c.ReplicaRate; r > perReplica*1.02 || r < perReplica/1.05/1.02 {
		t.Errorf("one replica's rate %.2f req/s, want within 5%% below %.3f", r, perReplica)
	}
	// The fleet one replica smaller misses the SLOs; the evaluation simulated it.
	ev := newEvaluation(context.Background(), &cfg, cfg.engines()[0], nil)
	for n, meet := range map[int]bool{want: true, want - 1: false} {
		o, err := ev.run(n, sim.RouterRoundRobin, 1)
		if err != nil || o.meets != meet {
			t.Errorf("%d replicas: meets %v (%s), %v; want %v", n, o.meets, o.why, err, meet)
		}
	}
	if want := 4 * 5.58; c.USDPerHour == nil || math.Abs(*c.USDPerHour-want) > 1e-9 {
		t.Errorf("USD/hour %v, want 4 h200s at their list price, %.2f", c.USDPerHour, want)
	}
}

// A bound below the textbook's fastest step (8 ms, one sequence alone) cannot be met by
// any fleet: one simulation at 1/MaxReplicas of the traffic shows it.
func TestUnreachableSLOIsPruned(t *testing.T) {
	cfg := Config{Base: textbook(t), Traffic: traffic(t, 20, "poisson", 512, 128), Metrics: slos(t, "tpot:p99<=5ms"), MaxReplicas: 16}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := pl.Candidates[0]
	if pl.Best != nil || c.MeetsSLO || !c.Fits || c.Simulations != 1 || c.Replicas != 0 {
		t.Errorf("got best %v, %+v; want one simulation and no plan", pl.Best, c)
	}
	if !strings.Contains(c.Reason, "even at 1.25 req/s (1/16 of the traffic): tpot:p99<=5ms measured ") {
		t.Errorf("reason %q", c.Reason)
	}
}

// A 70B in bf16 needs 141 GB of weights: never planned at tp 1 on 80 GB GPUs, and
// nothing simulated for it.
func Test70BNeverAtTP1On80GB(t *testing.T) {
	base, _ := sim.LoadProfile("")
	base.Model, _ = sim.ModelPreset("llama-3.1-70b")
	cfg := Config{Base: base, Traffic: traffic(t, 2, "poisson", 512, 128), Metrics: slos(t, "ttft:p90<=2s,tpot:p90<=80ms"), Confidence: ConfidencePoint,
		MaxReplicas: 8, Workers: 2, Price: listPrice, Space: Space{GPUs: []string{"a100", "h100"}, TPs: []int{1, 2, 4}}}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Candidates) != 6 || pl.Best == nil {
		t.Fatalf("%d candidates, best %v", len(pl.Candidates), pl.Best)
	}
	for _, c := range pl.Candidates {
		if c.TP == 1 && (c.Fits || c.MeetsSLO || c.Simulations != 0 || !strings.Contains(c.Reason, "leave no room for a KV cache")) {
			t.Errorf("%s: fits %v, meets %v, %d simulations: %s", c.Describe(), c.Fits, c.MeetsSLO, c.Simulations, c.Reason)
		}
	}
	if b := pl.BestCandidate(); b.TP < 2 {
		t.Errorf("chosen %s", b.Describe())
	}
}

// DeepSeek-V3 in fp8 does not fit 8 × H100 (the plan says why) and fits 8 × H200; the
// plan searches dp and expert parallelism, and marks the GPUs no measurement has checked.
func TestDeepSeekPlanOnEightGPUs(t *testing.T) {
	base, _ := sim.LoadProfile("")
	base.Model, _ = sim.ModelPreset("deepseek-v3")
	base.Engine.MaxNumSeqs = 16
	cfg := Config{Base: base, Traffic: traffic(t, 0.5, "poisson", 256, 32), Metrics: slos(t, "ttft:p90<=5s,tpot:p90<=200ms"), Confidence: ConfidencePoint,
		MaxReplicas: 2, Workers: 2, Price: listPrice,
		Space: Space{GPUs: []string{"h100", "h200", "mi300x"}, TPs: []int{8}, Dtypes: []string{sim.DtypeFP8}, ExpertParallel: []bool{false, true}}}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Candidates) != 6 || pl.Best == nil {
		t.Fatalf("%d candidates, best %v", len(pl.Candidates), pl.Best)
	}
	eps := map[bool]int{}
	for _, c := range pl.Candidates {
		eps[c.ExpertParallel]++
		switch c.GPU {
		case "h100":
			if c.Fits || !strings.Contains(c.Reason, "deepseek-v3's fp8 weights (671.0 GB in all) at tp 8 (") || !strings.Contains(c.Reason, "leave no room for a KV cache in 90% of h100's 85.5 GB") {
				t.Errorf("%s: fits %v: %s", c.Describe(), c.Fits, c.Reason)
			}
		default:
			if !c.Fits || c.KVCacheTokens < 100_000 || !c.MeetsSLO {
				t.Errorf("%s: fits %v with %d tokens of cache, meets %v: %s", c.Describe(), c.Fits, c.KVCacheTokens, c.MeetsSLO, c.Reason)
			}
		}
		if c.GPUCalibrated != (c.GPU != "mi300x") || c.DP != 1 {
			t.Errorf("%s: calibrated %v, dp %d", c.Describe(), c.GPUCalibrated, c.DP)
		}
	}
	if eps[true] != 3 || eps[false] != 3 {
		t.Errorf("expert parallelism searched %v", eps)
	}
	var b strings.Builder
	WriteTable(&b, pl, 0, false)
	if !strings.Contains(b.String(), "Not calibrated on this GPU: mi300x") {
		t.Errorf("the table does not mark mi300x:\n%s", b.String())
	}
	dense, _ := sim.LoadProfile("")
	if err := (Space{DPs: []int{2}}).Validate(dense); err == nil || !strings.Contains(err.Error(), "is dense") {
		t.Errorf("--dp on a dense model: %v", err)
	}
}

// Workers only share the engine configurations out: the plan is the same with one or two.
func TestPlanDeterministicAcrossWorkers(t *testing.T) {
	base, _ := sim.LoadProfile("")
	var out []string
	for _, w := range []int{1, 2} {
		// P90 terms: 1,000 requests give their intervals, where a P99's would take 10,000.
		cfg := Config{Base: base, Traffic: traffic(t, 30, "poisson", 512, 128), Metrics: slos(t, "ttft:p90<=400ms,tpot:p90<=40ms"),
			MaxReplicas: 16, Workers: w, Price: listPrice,
			Space: Space{GPUs: []string{"h100", "l40s"}, MaxNumSeqs: []int{32, 256}, Routers: []string{sim.RouterRoundRobin, sim.RouterLeastOutstanding}}}
		pl, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteJSON(&b, pl); err != nil {
			t.Fatal(err)
		}
		out = append(out, b.String())
	}
	if out[0] != out[1] {
		t.Errorf("plans differ between 1 and 2 workers:\n%s\n%s", out[0], out[1])
	}
}

// Interrupted, a plan keeps the configurations it finished and says so.
func TestInterruptKeepsFinished(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, _ := sim.LoadProfile("")
	cfg := Config{Base: base, Traffic: traffic(t, 30, "poisson", 512, 128), Metrics: slos(t, "ttft:p99<=400ms,tpot:p99<=40ms"), Confidence: ConfidencePoint,
		MaxReplicas: 16, Workers: 1, Price: listPrice, Space: Space{MaxNumSeqs: []int{16, 32, 64, 128, 256}},
		Progress: func(p Progress) {
			if p.Done == 2 {
				cancel()
			}
		}}
	pl, err := Run(ctx, cfg)
	if err == nil || !pl.Interrupted {
		t.Fatalf("err %v, interrupted %v", err, pl.Interrupted)
	}
	if len(pl.Candidates) != 2 || pl.Evaluated != 2 || pl.Configurations != 5 {
		t.Errorf("%d candidates, %d evaluated of %d; want the 2 finished of 5", len(pl.Candidates), pl.Evaluated, pl.Configurations)
	}
	for _, c := range pl.Candidates {
		if c.Simulations == 0 || !c.MeetsSLO && c.Reason == "" {
			t.Errorf("a half-planned candidate: %+v", c)
		}
	}
}

func TestRankAndPareto(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	pl := &Plan{}
	pl.setCandidates([][]Candidate{{
		{GPU: "a", MeetsSLO: false},
		{GPU: "b", MeetsSLO: true, USDPerHour: f(10), GPUs: 2, HeadroomRate: f(5), TokensPerSPerUser: f(50), OutputThroughputPerGPU: f(100)},
		{GPU: "c", MeetsSLO: true, USDPerHour: f(10), GPUs: 2, HeadroomRate: f(7), TokensPerSPerUser: f(40), OutputThroughputPerGPU: f(100)},
		{GPU: "d", MeetsSLO: true, USDPerHour: f(4), GPUs: 1, HeadroomRate: f(3), TokensPerSPerUser: f(30), OutputThroughputPerGPU: f(200)},
		{GPU: "e", MeetsSLO: true, GPUs: 1, TokensPerSPerUser: f(20), OutputThroughputPerGPU: f(150)},
	}})
	var order []string
	for _, c := range pl.Candidates {
		order = append(order, c.GPU)
	}
	if want := []string{"d", "c", "b", "e", "a"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v (cheapest, then more headroom at a tie, unpriced, missing)", order, want)
	}
	if pl.Best == nil || *pl.Best != 0 {
		t.Errorf("best %v", pl.Best)
	}
	var front []string
	for _, i := range pl.Pareto() {
		front = append(front, pl.Candidates[i].GPU)
	}
	// e (20, 150) loses to d (30, 200); c (40, 100) to b (50, 100).
	if want := []string{"d", "b"}; !slices.Equal(front, want) {
		t.Errorf("front %v, want %v", front, want)
	}
}

// The names scripts read (issue 14): candidates[] with these keys, and best.
func TestPlanJSONNames(t *testing.T) {
	cfg := Config{Base: textbook(t), Traffic: traffic(t, 10, "poisson", 512, 128), Metrics: slos(t, "tpot:p99<=30ms,ttft:p99<=1s"),
		MaxReplicas: 8, Price: listPrice}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, pl); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Candidates []map[string]any `json:"candidates"`
		Best       *int             `json:"best"`
		Warnings   []string         `json:"warnings"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Best == nil || *doc.Best != 0 || len(doc.Candidates) != 1 {
		t.Fatalf("best %v, %d candidates", doc.Best, len(doc.Candidates))
	}
	if doc.Warnings == nil || len(doc.Warnings) != 0 {
		t.Errorf("warnings %v, want [] (the plan chose its horizons)", doc.Warnings)
	}
	c := doc.Candidates[0]
	if c["steady"] != true || c["horizon_s"].(float64) < MinHorizon.Seconds() {
		t.Errorf("steady %v over %v s", c["steady"], c["horizon_s"])
	}
	for _, k := range []string{"gpu", "tp", "replicas", "gpus", "fits", "meets_slo", "usd_per_hour", "cost_per_million_output_tokens",
		"headroom_rate", "max_num_seqs", "max_batched_tokens", "prefill", "router", "dtype", "slo", "horizon_s", "steady", "oversaturated",
		"dp", "expert_parallel", "gpu_calibrated"} {
		if _, ok := c[k]; !ok {
			t.Errorf("candidate lacks %q: %v", k, c)
		}
	}
	terms := c["slo"].([]any)
	if len(terms) != 2 {
		t.Fatalf("slo %v", terms)
	}
	for _, term := range terms {
		m := term.(map[string]any)
		for _, k := range []string{"term", "value", "margin", "bound", "pass"} {
			if _, ok := m[k]; !ok {
				t.Errorf("term lacks %q: %v", k, m)
			}
		}
		if v, margin, bound := m["value"].(float64), m["margin"].(float64), m["bound"].(float64); math.Abs(margin-(bound-v)/bound) > 1e-12 {
			t.Errorf("margin %v of value %v within %v", margin, v, bound)
		}
	}
}

// chosen holds chosenPlanPage's plan and page once computed: two tests read them, and
// planning the six configurations is seconds of CPU that the same inputs always repeat.
var chosen struct {
	sync.Mutex
	pl   *Plan
	page []byte
}

// chosenPlanPage is the plan.html of six configurations at 30 req/s, one of them chosen.
// Callers share one plan and page (computed by the first): they must not change them.
func chosenPlanPage(t *testing.T) (*Plan, []byte) {
	t.Helper()
	chosen.Lock()
	defer chosen.Unlock()
	if chosen.pl != nil {
		return chosen.pl, chosen.page
	}
	base, _ := sim.LoadProfile("")
	cfg := Config{Base: base, Traffic: traffic(t, 30, "poisson", 512, 128), Metrics: slos(t, "ttft:p99<=400ms,tpot:p99<=40ms"), Confidence: ConfidencePoint,
		MaxReplicas: 16, Workers: 2, Price: listPrice, Space: Space{GPUs: []string{"h100", "h200", "l40s"}, TPs: []int{1, 2}}}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, pl); err != nil {
		t.Fatal(err)
	}
	chosen.pl, chosen.page = pl, b.Bytes()
	return pl, b.Bytes()
}

func TestHTMLMarksTheChosenPlan(t *testing.T) {
	pl, b := chosenPlanPage(t)
	page := string(b)
	best := pl.BestCandidate()
	for _, want := range []string{"<svg", ">chosen</text>", "<title>chosen plan: #1 " + best.Describe(), `<tr class="chosen">`, "Pareto front</span>", "<polyline"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n, want := strings.Count(page, "<circle"), pl.meeting(); n != want {
		t.Errorf("%d points, want one per candidate meeting the SLOs (%d)", n, want)
	}
	// Each fleet's estimated power, in the table and beside the chosen one.
	if best.PowerKW == nil {
		t.Fatal("the chosen plan has no power estimate")
	}
	kw := fmtOpt(best.PowerKW, "%.3g")
	for _, want := range []string{"<th>kW (est.)</th>", "<th>tok/s per kW</th>", "draw an estimated " + kw + " kW", kw + " kW estimated"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, ext := range []string{"src=", "href=", "<script"} {
		if strings.Contains(page, ext) {
			t.Errorf("page is not self-contained: %q", ext)
		}
	}
}

// The engine configurations are the space's product, each the base with its settings.
func TestEnginesCoverTheSpace(t *testing.T) {
	base, _ := sim.LoadProfile("")
	cfg := Config{Base: base, Space: Space{GPUs: []string{"h100", "b200"}, TPs: []int{1, 2}, Dtypes: []string{"bf16", "fp8"},
		MaxNumSeqs: []int{64}, Prefill: []string{"colocated", "disaggregated"}, Routers: []string{"round-robin", "least-outstanding"}}}
	es := cfg.engines()
	if len(es) != 16 || cfg.Configurations() != 32 {
		t.Fatalf("%d engines, %d configurations", len(es), cfg.Configurations())
	}
	e := es[len(es)-1].p
	got := []any{e.GPU.Name, e.Deployment.TP, e.Deployment.WeightDtype, e.Deployment.KVDtype, e.Engine.MaxNumSeqs, e.Engine.MaxBatchedTokens, e.Engine.Prefill}
	if want := []any{"b200", 2, "fp8", "fp8", 64, 8192, "disaggregated"}; !reflect.DeepEqual(got, want) {
		t.Errorf("last engine %v, want %v", got, want)
	}
}

// BenchmarkPlan100 plans 100 configurations of the default workload (512/128 tokens,
// 50 req/s Poisson): 5 GPUs × 4 TPs × 5 batch limits behind least-outstanding.
func BenchmarkPlan100(b *testing.B) {
	base, _ := sim.LoadProfile("")
	cfg := Config{Base: base, Traffic: traffic(b, 50, "poisson", 512, 128), Metrics: slos(b, "ttft:p99<=500ms,tpot:p99<=50ms"), Confidence: ConfidencePoint,
		MaxReplicas: 64, Workers: 2, Price: listPrice,
		Space: Space{GPUs: sim.GPUPresets(), TPs: []int{1, 2, 4, 8}, MaxNumSeqs: []int{64, 128, 256, 512, 1024}}}
	for b.Loop() {
		pl, err := Run(context.Background(), cfg)
		if err != nil || pl.Configurations != 100 {
			b.Fatal(err, pl.Configurations)
		}
	}
}

// TestSteadyStateDecides: a fleet is judged once it has settled. At the traffic a 10 s
// level (today's default before horizons) is short enough that a fleet past its capacity
// still looks fine: its servers have not filled. The plan's horizon shows the backlog
// growing, and the candidate that needs more replicas is chosen; its fleet one replica
// smaller misses as oversaturated or unsteady.
func TestSteadyStateDecides(t *testing.T) {
	base, _ := sim.LoadProfile("")
	cfg := Config{Base: base, Traffic: traffic(t, 40, "poisson", 1024, 256), Metrics: slos(t, "ttft:p99<=500ms,tpot:p99<=40ms"), Confidence: ConfidencePoint,
		MaxReplicas: 16, Workers: 1, Price: listPrice, Space: Space{GPUs: []string{"h100"}, TPs: []int{1}}}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	best := pl.BestCandidate()
	if best == nil || best.Replicas < 3 || !best.Steady {
		t.Fatalf("best %+v: want a steady fleet of 3 h100s or more (2 saturate at 40 req/s of 1024 → 256 tokens)", best)
	}
	ev := newEvaluation(context.Background(), &cfg, cfg.engines()[0], nil)
	cfg.Metrics.Percentiles = withSLOPercentiles(cfg.Metrics)
	o, err := ev.decide(best.Replicas-1, sim.RouterLeastOutstanding, 1)
	if err != nil {
		t.Fatal(err)
	}
	if o.meets || o.steady && !o.oversaturated {
		t.Errorf("%d replicas: meets %v, steady %v, oversaturated %v (%s); want a fleet that did not settle", best.Replicas-1, o.meets, o.steady, o.oversaturated, o.why)
	}
	if !strings.Contains(o.why, "not steady at") {
		t.Errorf("reason %q does not say it was not steady", o.why)
	}
	if o.oversaturated && (o.lv.SLO == nil || o.lv.SLO.Pass || !strings.HasPrefix(o.lv.SLO.Reason, "oversaturated: ") || !strings.Contains(o.why, "oversaturated: ")) {
		t.Errorf("%d replicas, oversaturated: verdict %+v, reason %q; want the verdict run and simulate give, failed as oversaturated", best.Replicas-1, o.lv.SLO, o.why)
	}
}

// TestMeetsNeedsTheVerdict: a fleet is judged by the level's verdict, the one run and
// simulate give: steady figures within every bound do not meet the SLOs when the verdict
// failed because the fleet fell behind, or is undecided on too few samples.
func TestMeetsNeedsTheVerdict(t *testing.T) {
	pass := func() *metrics.Verdict {
		return &metrics.Verdict{Pass: true, Terms: []metrics.TermCheck{{Term: "ttft:p99<=1s", Value: ptr(100.0), Pass: true}}}
	}
	o := &outcome{steady: true, horizon: time.Minute, lv: metrics.Level{SLO: pass()}}
	if ok, why := meets(o, nil); !ok {
		t.Fatalf("a passing verdict: misses (%s)", why)
	}
	metrics.FailBehind(o.lv.SLO, "its backlog kept growing")
	if ok, why := meets(o, nil); ok || !strings.Contains(why, "oversaturated: its backlog kept growing") {
		t.Errorf("a verdict failed as oversaturated: meets %v (%s)", ok, why)
	}
	o.lv.SLO = pass()
	o.lv.SLO.Pass, o.lv.SLO.Undecided, o.lv.SLO.Reason = false, true, "undecided: ttft on 1 sample"
	o.lv.SLO.Terms[0] = metrics.TermCheck{Term: "ttft:p99<=1s", Value: ptr(100.0), Undecided: true, Reason: "ttft on 1 sample"}
	if ok, why := meets(o, nil); ok || !strings.Contains(why, "undecided: ttft on 1 sample") {
		t.Errorf("an undecided verdict: meets %v (%s)", ok, why)
	}
}

// TestFixedLengthWarns: a --duration shorter than a steady state needs is the user's to
// give, and the plan says so in its warnings; each candidate's horizon is the length given.
func TestFixedLengthWarns(t *testing.T) {
	base, _ := sim.LoadProfile("")
	tr := traffic(t, 40, "poisson", 1024, 256)
	at := tr.At
	tr.Fixed = true
	tr.At = func(scale float64, _ time.Duration) (load.Level, workload.Source, error) {
		return at(scale, 10*time.Second)
	}
	cfg := Config{Base: base, Traffic: tr, Metrics: slos(t, "ttft:p99<=500ms,tpot:p99<=40ms"), Confidence: ConfidencePoint,
		MaxReplicas: 16, Workers: 1, Price: listPrice, Space: Space{GPUs: []string{"h100"}, TPs: []int{1}}}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Warnings) != 1 || !strings.Contains(pl.Warnings[0], "shorter than a steady state needs") {
		t.Fatalf("warnings %q; %+v", pl.Warnings, pl.Candidates)
	}
	for _, c := range pl.Candidates {
		if c.Replicas > 0 && (c.HorizonS < 9 || c.HorizonS > 40) {
			t.Errorf("%s: horizon %g s, want the 10 s of arrivals given and their drain", c.Describe(), c.HorizonS)
		}
	}
}

// TestBatchLimitsReuseRuns: engines differing in max_num_seqs alone share the runs in which
// the limit held nothing back (runCache), and the plan is the one each would get alone.
func TestBatchLimitsReuseRuns(t *testing.T) {
	base, _ := sim.LoadProfile("")
	plan := func(seqs ...int) []Candidate {
		cfg := Config{Base: base, Traffic: traffic(t, 30, "poisson", 512, 128), Metrics: slos(t, "ttft:p90<=400ms,tpot:p90<=40ms"),
			MaxReplicas: 16, Workers: 1, Price: listPrice, Space: Space{GPUs: []string{"h100"}, MaxNumSeqs: seqs}}
		pl, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return pl.Candidates
	}
	together := plan(16, 256, 1024)
	for _, c := range together {
		alone := plan(c.MaxNumSeqs)[0]
		a, b := c, alone
		a.profile, b.profile = sim.Profile{}, sim.Profile{}
		a.EquivalentToBest = false // a relation to the others planned, not the candidate's figures
		if !reflect.DeepEqual(a, b) {
			t.Errorf("max_num_seqs %d: planned with the others %+v, alone %+v", c.MaxNumSeqs, a, b)
		}
	}
}
