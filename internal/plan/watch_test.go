package plan

import (
	"context"
	"testing"
	"time"

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

func TestProgressLine(t *testing.T) {
	usd := 11.16
	got := Progress{Done: 25, Total: 100, Meeting: 7, Cheapest: &Candidate{Replicas: 2, GPU: "h200", TP: 1, USDPerHour: &usd}}.Line(2, 5*time.Second)
	if want := "plan: 25/100 engine configurations × 2 routers, 7 meet the SLOs, cheapest 2 × h200 tp 1 at 11.16 USD/h, 5s, ~15s left"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
