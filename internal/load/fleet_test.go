package load

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/sim"
)

// latencies are the records' (TTFT, E2EL) pairs, sorted: per-request latencies whatever
// the order in which the requests ran.
func latencies(t *testing.T, recs []*record.Record) [][2]time.Duration {
	t.Helper()
	out := make([][2]time.Duration, 0, len(recs))
	for _, r := range recs {
		f, ok := r.FirstToken()
		if !r.OK() || !ok {
			t.Fatalf("request %d: %v", r.Index, r.Error)
		}
		out = append(out, [2]time.Duration{f - r.Sent, r.Done - r.Sent})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	return out
}

// simulateFleet runs one level against profile p's whole deployment, as simulate does.
func simulateFleet(t *testing.T, p sim.Profile, lvl Level) []*record.Record {
	t.Helper()
	f, err := sim.NewFleet(p)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*record.Record
	if _, _, err := RunVirtual(context.Background(), lvl, 0, fixedSource{in: 512, out: 64}, f, func(r *record.Record) { recs = append(recs, r) }); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestFleetTwiceTheLoad: two replicas behind a round-robin router at twice the load give
// every request the latencies one replica gives at the load, closed loop and open.
func TestFleetTwiceTheLoad(t *testing.T) {
	p := simProfile(t, "h200-llama-3.1-8b")
	two := p
	two.Deployment.Replicas, two.Deployment.Router = 2, sim.RouterRoundRobin
	for _, tc := range []struct {
		name      string
		one, both Level
	}{
		{"closed loop", Level{Concurrency: 24, Requests: 240}, Level{Concurrency: 48, Requests: 480}},
		{"constant arrivals", Level{Rate: 20, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 300},
			Level{Rate: 40, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 600}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			single := latencies(t, simulateFleet(t, p, tc.one))
			fleet := latencies(t, simulateFleet(t, two, tc.both))
			var doubled [][2]time.Duration
			for _, l := range single {
				doubled = append(doubled, l, l)
			}
			if !reflect.DeepEqual(fleet, doubled) {
				t.Errorf("2 replicas at twice the load: TTFT/E2EL %v … %v; 1 replica: %v … %v",
					fleet[0], fleet[len(fleet)-1], single[0], single[len(single)-1])
			}
			// Not a test that cannot fail: a fleet of one at twice the load is slower.
			if slow := latencies(t, simulateFleet(t, p, tc.both)); reflect.DeepEqual(slow, doubled) {
				t.Error("one replica at twice the load gives the same latencies")
			}
		})
	}
}
