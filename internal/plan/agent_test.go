package plan

import (
	"context"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/testtier"
	"github.com/llmbench/llmbench/internal/workload"
)

// TestAgenticPlanHolds: a plan for agentic tasks (12 tasks/s, each three calls with a
// fan-out of two sub-agents and 300 ms tools between them, on an 8B model with prefix
// caching behind a prefix-affinity router) under a task SLO and a per-call one picks a
// fleet that, re-simulated for 600 s, meets the task SLO; one replica fewer does not, nor does
// the fleet without prefix caching or behind a round-robin router. In the
// accuracy tier: the plan and the two 600 s simulations take about half a minute of two
// busy cores.
func TestAgenticPlanHolds(t *testing.T) {
	testtier.Accuracy(t, "an agentic plan re-simulated for 600 s meets its task SLO, one replica fewer does not")
	base, err := sim.LoadProfile("../../bench/agents-8b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := workload.New(workload.Config{InputTokens: workload.Fixed(1000), OutputTokens: workload.Fixed(100), Seed: 1, LengthsOnly: true,
		Agent: workload.Agent{Calls: workload.Fixed(3), ToolLatency: workload.Fixed(300), ToolResultTokens: workload.Fixed(200), FanOut: 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const rate = 12 // tasks/s
	a, _ := schedule.ParseArrival("poisson")
	cfg := Config{Base: base, Traffic: Traffic{Rate: rate, At: func(scale float64, h time.Duration) (load.Level, workload.Source, error) {
		return load.Level{Rate: rate * scale, Arrival: a, Seed: 1, DetectSaturation: true, Duration: h}, src, nil
	}}, Metrics: slos(t, "task:p99<=5s,ttft:p99<=1s"), MaxReplicas: 16, Workers: 1, Price: listPrice}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	best := pl.BestCandidate()
	if best == nil {
		t.Fatal("no candidate meets task:p99<=5s,ttft:p99<=1s")
	}
	t.Logf("chosen %s over %g s: %s", best.Describe(), best.HorizonS, fmtTerms(best.SLO))
	if best.Replicas < 2 {
		t.Fatalf("chosen %s: one replica, so no smaller fleet to miss the task SLO (make the traffic heavier)", best.Describe())
	}
	if ok, why := holds(t, cfg, best.Profile(), rate, 600*time.Second); !ok {
		t.Errorf("chosen %s misses the SLOs over 600 s: %s", best.Describe(), why)
	}
	less := best.Profile()
	less.Deployment.Replicas--
	if ok, _ := holds(t, cfg, less, rate, 600*time.Second); ok {
		t.Errorf("chosen %s: one replica fewer meets the SLOs over 600 s", best.Describe())
	}
	// The cache and the router matter as they do: the same fleet without prefix caching, or
	// with it but round-robin (a task's calls scattered over caches), misses the task SLO.
	for name, change := range map[string]func(p *sim.Profile){
		"without prefix caching": func(p *sim.Profile) { p.Engine.PrefixCaching, p.Deployment.Router = false, sim.RouterLeastOutstanding },
		"round-robin":            func(p *sim.Profile) { p.Deployment.Router = sim.RouterRoundRobin },
	} {
		p := best.Profile()
		change(&p)
		if ok, _ := holds(t, cfg, p, rate, 600*time.Second); ok {
			t.Errorf("chosen %s %s meets the SLOs over 600 s: the cache or the router does not matter", best.Describe(), name)
		}
	}
}
