package plan

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/testtier"
)

// holdCase is a plan whose answers are checked at steady state.
type holdCase struct {
	name        string
	base        sim.Profile
	space       Space
	rate        float64
	in, out     int
	slo         string
	maxReplicas int
}

func holdCases(t *testing.T) []holdCase {
	preset := func(model string) sim.Profile {
		p, err := sim.LoadProfile(sim.DefaultProfile)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := sim.ModelPreset(model)
		if !ok {
			t.Fatalf("no preset %s", model)
		}
		p.Model, p.Name = m, model
		return p
	}
	linear16, err := sim.LoadProfile("../../bench/linear16.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fitted, err := sim.LoadProfile("testdata/fitted-linear16.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return []holdCase{
		// The README's two examples.
		{name: "README 8B", base: preset("llama-3.1-8b"), space: Space{GPUs: []string{"l40s", "h100", "h200", "b200"}, TPs: []int{1, 2}},
			rate: 40, in: 1024, out: 256, slo: "ttft:p99<=500ms,tpot:p99<=40ms"},
		{name: "README 70B", base: preset("llama-3.1-70b"), space: Space{GPUs: []string{"h100", "h200", "b200"}, TPs: []int{1, 2, 4, 8}, Dtypes: []string{"bf16", "fp8"}},
			rate: 10, in: 1024, out: 256, slo: "ttft:p99<=1s,tpot:p99<=50ms"},
		// Other traffics, SLOs and models.
		{name: "Qwen2.5-7B chat", base: preset("qwen2.5-7b"), space: Space{GPUs: []string{"a100", "h100"}, TPs: []int{1}, MaxNumSeqs: []int{64, 256}},
			rate: 25, in: 512, out: 128, slo: "ttft:p90<=300ms,e2el:p99<=8s"},
		{name: "Mistral-7B long prompts", base: preset("mistral-7b"), space: Space{GPUs: []string{"h200", "l40s"}, TPs: []int{1, 2}},
			rate: 6, in: 4096, out: 128, slo: "ttft:p99<=2s,tpot:p99<=60ms"},
		// A linear profile of 16 slots, and the profile calibrate fitted to a server of it:
		// replicas of it only.
		{name: "linear 16 slots", base: linear16, rate: 20, in: 512, out: 100, slo: "ttft:p99<=1s,tpot:p50<=25ms"},
		{name: "calibrated 16 slots", base: fitted, rate: 12, in: 1024, out: 128, slo: "ttft:p99<=2s,tpot:p99<=30ms"},
	}
}

// TestPlansHoldAtSteadyState: a plan's answers hold for ten minutes of the traffic, as
// `simulate --duration 600s` would run them: the chosen fleet meets every SLO, the fleet one
// replica smaller does not, and every candidate meeting the SLOs meets them at 95% of its
// headroom rate. It checks the plan's predictions, as the calibrate tests check
// calibrate's, so it is in the accuracy tier: deterministic, but about a minute of two cores
// (five plans, and every candidate re-simulated for 600 s).
func TestPlansHoldAtSteadyState(t *testing.T) {
	testtier.Accuracy(t, "plans re-simulated for 600 s meet their SLOs, one replica fewer does not")
	for _, tc := range holdCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Base: tc.base, Space: tc.space, Traffic: traffic(t, tc.rate, "poisson", tc.in, tc.out),
				Metrics: slos(t, tc.slo), MaxReplicas: max(tc.maxReplicas, 64), Workers: 1, Price: listPrice}
			pl, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			best := pl.BestCandidate()
			if best == nil {
				t.Fatalf("no candidate meets %s", tc.slo)
			}
			t.Logf("chosen %s over %g s: %s", best.Describe(), best.HorizonS, fmtTerms(best.SLO))
			check := func(p sim.Profile, rate float64) (bool, string) {
				return holds(t, cfg, p, rate, 600*time.Second)
			}
			if ok, why := check(best.Profile(), tc.rate); !ok {
				t.Errorf("chosen %s misses the SLOs over 600 s: %s", best.Describe(), why)
			}
			if best.Replicas > 1 {
				less := best.Profile()
				less.Deployment.Replicas--
				if ok, _ := check(less, tc.rate); ok {
					t.Errorf("chosen %s: one replica fewer meets the SLOs over 600 s", best.Describe())
				}
			}
			for _, c := range pl.Candidates {
				if !c.MeetsSLO {
					continue
				}
				if !c.Steady || c.HorizonS < MinHorizon.Seconds() {
					t.Errorf("%s meets the SLOs with steady %v over %g s", c.Describe(), c.Steady, c.HorizonS)
				}
				if ok, why := check(c.Profile(), 0.95**c.HeadroomRate); !ok {
					t.Errorf("%s misses the SLOs over 600 s at 95%% of its headroom (%.3g req/s): %s", c.Describe(), 0.95**c.HeadroomRate, why)
				}
			}
		})
	}
}

// holds simulates profile p at rate for d as simulate does (no warm-up, over-saturation
// watched) and says whether it meets cfg's SLOs, and why not.
func holds(t *testing.T, cfg Config, p sim.Profile, rate float64, d time.Duration) (bool, string) {
	t.Helper()
	lvl, src, err := cfg.Traffic.At(rate/cfg.Traffic.Rate, d)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := bench.Deploy(p)
	if err != nil {
		t.Fatal(err)
	}
	agg := metrics.NewAggregator(cfg.Metrics)
	_, reason, err := load.RunVirtual(context.Background(), lvl, 0, src, srv, agg.Add)
	if err != nil {
		t.Fatal(err)
	}
	lv := agg.Level()
	switch {
	case reason == load.EndOversaturated:
		return false, "oversaturated"
	case lv.Failed > 0:
		return false, fmt.Sprintf("%d failed", lv.Failed)
	case lv.SLO == nil || !lv.SLO.Pass:
		return false, fmt.Sprintf("verdict %+v", lv.SLO)
	}
	return true, ""
}

func fmtTerms(ts []Term) string {
	var b []byte
	for _, t := range ts {
		b = fmt.Appendf(b, "%s %s; ", t.Term, t.String())
	}
	return string(b)
}
