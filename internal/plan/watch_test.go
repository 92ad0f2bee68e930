package plan

import (
	"context"
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
)

// A watch knows nothing before the plan starts, and its last step after it ends.
func TestWatch(t *testing.T) {
	base, _ := sim.LoadProfile("")
	cfg := Config{Base: base, Traffic: traffic(t, 5, "poisson", 256, 64), Metrics: slos(t, "tpot:p99<=50ms"), Confidence: ConfidencePoint,
		MaxReplicas: 4, Workers: 1, Price: listPrice, Space: Space{MaxNumSeqs: []int{16, 32}}}
	var w Watch
	w.Follow(&cfg)
	if p := w.Now(); p != (Progress{}) {
		t.Errorf("before the plan: %+v", p)
	}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p := w.Now(); p.Done != 2 || p.Total != 2 || p.Meeting != pl.meeting() {
		t.Errorf("after the plan: %+v, want 2 of 2 done", p)
	}
}
