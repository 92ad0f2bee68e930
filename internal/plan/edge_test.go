package plan

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/sim"
)

// A term takes its own figure's band, else its metric's at the nearest percentile (a mean
// the median's); a metric no validation row measures has none.
func TestNearestBand(t *testing.T) {
	bands := map[string]predict.Band{"ttft_ms.p50": {Hi: 2}, "ttft_ms.p99": {Hi: 9}, "tpot_ms.p50": {Hi: 1.5}}
	for term, want := range map[string]string{
		"ttft:p99<=1s": "ttft_ms.p99", "ttft:p90<=1s": "ttft_ms.p99", "ttft:p60<=1s": "ttft_ms.p50",
		"ttft:mean<=1s": "ttft_ms.p50", "tpot:p99<=40ms": "tpot_ms.p50", "itl:p99<=40ms": "",
	} {
		s := slos(t, term).SLOs[0]
		got, ok := nearestBand(bands, s)
		if got != want || ok != (want != "") {
			t.Errorf("%s: band %q (%v), want %q", term, got, ok, want)
		}
	}
}

// At ConfidenceInterval a term is bounded by its bound over its edge's factor, never
// looser than the bound; at ConfidencePoint, and for a term with no edge, as written. The
// terms keep their text.
func TestJudgedSLOs(t *testing.T) {
	s := slos(t, "ttft:p99<=500ms,tpot:p99<=40ms,itl:p99<=100ms").SLOs
	es := map[string]edge{"ttft:p99<=500ms": {Factor: 2, Figure: "ttft_ms.p99"}, "tpot:p99<=40ms": {Factor: 0.8, Figure: "tpot_ms.p99"}}
	got := judgedSLOs(s, es, ConfidenceInterval)
	if got[0].Limit != 250*time.Millisecond || got[1].Limit != 40*time.Millisecond || got[2].Limit != 100*time.Millisecond {
		t.Errorf("limits %v %v %v, want 250ms 40ms 100ms", got[0].Limit, got[1].Limit, got[2].Limit)
	}
	if got[0].String() != "ttft:p99<=500ms" || s[0].Limit != 500*time.Millisecond {
		t.Errorf("term %q, the user's %v: the term keeps its text and the user's SLOs their bounds", got[0], s[0].Limit)
	}
	if got := judgedSLOs(s, es, ConfidencePoint); got[0].Limit != 500*time.Millisecond {
		t.Errorf("point: %v", got[0].Limit)
	}
}

// A traffic's terms take the bands of its own arrivals: at constant arrivals, the group's
// constant-arrival band where validation rows measured one (Llama-2-70B on H100 under vLLM,
// inference-perf's rows), not the Poisson one.
func TestEdgesOfTheTrafficsArrivals(t *testing.T) {
	p, _ := sim.LoadProfile("")
	p.Model.Name = "llama-2-70b"
	p.GPU, _ = sim.GPUPreset("h100")
	want, ok := predict.Builtin().Groups["llama-2-70b h100 vllm constant"]["ttft_ms.p99"]
	if !ok {
		t.Fatal("spreads.json has no constant-arrival TTFT P99 band of llama-2-70b on h100: the test needs a group with one")
	}
	term := slos(t, "ttft:p99<=1s").SLOs
	constant, basis := edges(p, term, predict.Constant)
	if e := constant["ttft:p99<=1s"]; e.Factor != want.Hi || !strings.Contains(basis, "constant") {
		t.Errorf("constant arrivals: edge %+v, basis %q; want ×%g from the group's constant rows", e, basis, want.Hi)
	}
	poisson, _ := edges(p, term, predict.Poisson)
	if poisson["ttft:p99<=1s"].Factor == want.Hi {
		t.Errorf("Poisson arrivals take the constant rows' band ×%g too: the test cannot tell them apart", want.Hi)
	}
	if def, _ := edges(p, term, ""); def["ttft:p99<=1s"] != poisson["ttft:p99<=1s"] {
		t.Errorf("no load kind: %+v, want Poisson's %+v", def, poisson)
	}
}

// A calibrated profile's terms take its held-out error: measured = predicted·(1+e) at the
// worst, so the edge is 1/(1−e).
func TestEdgesOfACalibratedProfile(t *testing.T) {
	p, err := sim.LoadProfile("")
	if err != nil {
		t.Fatal(err)
	}
	errs := figure.Unmeasured()
	errs[figure.TPOTP99] = 20
	p.Calibration = &sim.Calibration{Error: errs}
	es, basis := edges(p, slos(t, "tpot:p99<=40ms,ttft:p99<=1s").SLOs, predict.Poisson)
	e, ok := es["tpot:p99<=40ms"]
	if !ok || math.Abs(e.Factor-1/0.8) > 1e-12 || e.Figure != "tpot_ms.p99" {
		t.Errorf("edge %+v (%v), want 1.25 from tpot_ms.p99", e, ok)
	}
	if _, ok := es["ttft:p99<=1s"]; ok {
		t.Error("a figure the calibration did not measure has an edge")
	}
	if !strings.Contains(basis, "held-out") {
		t.Errorf("basis %q", basis)
	}
}

// The default plan buys the fleet that meets the SLOs at its intervals' edge: more
// replicas than the point figures need, each term's margin at both in the candidate; a
// term whose interval no fleet can meet within the bound is named with its edge.
func TestPlanAtTheIntervalsEdge(t *testing.T) {
	base, _ := sim.LoadProfile("")
	// The TPOT bound is 12 ms at the edge, whatever the built-in bands' factor: a bound an
	// H100 can meet (its 8B decode step is about 7 ms), and ten times looser at the point.
	h100 := base
	h100.GPU, _ = sim.GPUPreset("h100")
	f := predict.ForProfile(h100).ByLoad[predict.Poisson]["tpot_ms.p99"].Hi
	if !(f > 2) {
		t.Fatalf("tpot_ms.p99's edge factor %g: the test needs one far from the point", f)
	}
	cfg := Config{Base: base, Traffic: traffic(t, 30, "poisson", 512, 128), Metrics: slos(t, fmt.Sprintf("tpot:p99<=%.1fms", 12*f)),
		MaxReplicas: 16, Workers: 2, Price: listPrice, Space: Space{GPUs: []string{"h100"}, TPs: []int{1}}, Confidence: ConfidenceInterval}
	run := func(c Config) *Candidate {
		t.Helper()
		pl, err := Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if want := c.Confidence; pl.Confidence != want {
			t.Errorf("plan.confidence %q, want %q", pl.Confidence, want)
		}
		return pl.BestCandidate()
	}
	edgeBest := run(cfg)
	pointCfg := cfg
	pointCfg.Confidence = ConfidencePoint
	pointBest := run(pointCfg)
	if edgeBest == nil || pointBest == nil {
		t.Fatalf("best at the edge %v, at the point %v: want both", edgeBest, pointBest)
	}
	t.Logf("%d h100s at the edge (TPOT P99 %.2f ms, %+v), %d at the point", edgeBest.Replicas, *edgeBest.SLO[0].Value, edgeBest.Intervals, pointBest.Replicas)
	if edgeBest.Replicas <= pointBest.Replicas {
		t.Errorf("%d replicas at the edge, %d at the point: the edge's TPOT bound is tighter", edgeBest.Replicas, pointBest.Replicas)
	}
	term, iv := edgeBest.SLO[0], edgeBest.Intervals
	if len(iv) != 1 || iv[0].Factor <= 1 || iv[0].Figure != "tpot_ms.p99" || iv[0].Term != term.Term ||
		term.ValueAtEdge == nil || math.Abs(*term.ValueAtEdge-*term.Value*iv[0].Factor) > 1e-9 ||
		term.MarginAtEdge == nil || *term.MarginAtEdge < 0 || *term.Margin <= *term.MarginAtEdge || !term.Pass {
		t.Errorf("term %+v: want the value, its edge and both margins, met at the edge", term)
	}
	if edgeBest.IntervalBasis == "" {
		t.Error("no interval basis")
	}
	if pt := pointBest.SLO[0]; pt.MarginAtEdge == nil || *pt.MarginAtEdge >= 0 {
		t.Errorf("point plan's term %+v: want its margin at the edge too, negative (the fleet the point buys misses there)", pt)
	}

	// TTFT's interval is wide where the simulator's TTFT was measured far off: a plan at
	// its edge finds none, and says which term and by how much.
	cfg.Metrics = slos(t, "ttft:p99<=50ms")
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if pl.BestCandidate() != nil {
		t.Fatalf("best %+v: want none at the edge of TTFT P99's interval", pl.BestCandidate())
	}
	if why := pl.Candidates[0].Reason; !strings.Contains(why, "at its 90% interval's edge (×") {
		t.Errorf("reason %q: want the edge named", why)
	}
	var b strings.Builder
	WriteTable(&b, pl, 20, false)
	if !strings.Contains(b.String(), "Judged at the unfavourable edge of each term's 90% prediction interval") {
		t.Errorf("console does not say what the fleets were judged on:\n%s", b.String())
	}
	// The plan's text points to settings by the caller's names only: given none, it
	// names no flag.
	if strings.Contains(b.String(), "(--") || strings.Contains(b.String(), " --") {
		t.Errorf("a plan made without Names names a flag:\n%s", b.String())
	}
	cfg.Names = Names{Confidence: "-C"}
	if pl, err = Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	WriteTable(&b, pl, 20, false)
	if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), "(-C point judges the point alone)") {
		t.Errorf("console does not point to the caller's name of the confidence setting:\n%s", b.String())
	}
}

// auto (the default) plans at the edge where every term's interval is within ×2 of the
// simulated figure — a calibrated twin's held-out error — and at the point, saying why,
// where one reaches further: the roofline's TTFT on a GPU the rows did not measure.
func TestAutoConfidence(t *testing.T) {
	base, _ := sim.LoadProfile("")
	cfg := Config{Base: base, Metrics: slos(t, "ttft:p99<=500ms,tpot:p99<=40ms"), Space: Space{GPUs: []string{"h200", "h100"}, TPs: []int{1}}}
	got, why := resolveConfidence(cfg, cfg.engines())
	if got != ConfidencePoint || !strings.Contains(why, "ttft:p99<=500ms's 90% interval reaches ×") || !strings.Contains(why, "past ×2") {
		t.Errorf("roofline: %s, %q; want point, naming TTFT's interval", got, why)
	}
	errs := figure.Unmeasured()
	errs[figure.TTFTP99], errs[figure.TPOTP99] = 30, 10
	cfg.Base.Calibration = &sim.Calibration{Error: errs}
	if got, why := resolveConfidence(cfg, cfg.engines()); got != ConfidenceInterval || !strings.Contains(why, "within ×2") {
		t.Errorf("calibrated twin: %s, %q; want interval", got, why)
	}
	for _, c := range []string{ConfidencePoint, ConfidenceInterval} {
		cfg.Confidence = c
		if got, why := resolveConfidence(cfg, cfg.engines()); got != c || why != "" {
			t.Errorf("--confidence %s: %s, %q", c, got, why)
		}
	}
}
