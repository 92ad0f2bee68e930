package load

import (
	"context"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/testtier"
	"github.com/llmbench/llmbench/internal/workload"
)

// textbookCapacity is the textbook profile's capacity in requests/s for 512-token prompts
// and 100-token outputs, worked by hand: prefill is disaggregated (10.24 ms a request, on
// its own), and a decode step of b sequences takes 8 × (1 + 0.12 (b − 1)) ms for b tokens,
// so decode throughput grows with the batch up to its cap of 256 sequences: 256 tokens per
// 8 × (1 + 0.12 × 255) = 252.8 ms, 1012.66 tokens/s. Each request decodes 99 tokens (its
// first comes from prefill): 1012.66 / 99 = 10.229 requests/s.
const textbookCapacity = 256 / (8 * (1 + 0.12*255) / 1000) / 99

// TestOversaturationLadder: on the textbook profile, a Poisson rate ladder past capacity
// is stopped as oversaturated within two levels of capacity and never below 90% of it,
// for every seed; the levels below stop only by their length.
func TestOversaturationLadder(t *testing.T) {
	p := simProfile(t, "textbook")
	fracs := []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2}
	capIdx := 5 // the first level at or above capacity
	seeds := 20
	if testtier.Quick() {
		seeds = 3
	}
	for seed := range seeds {
		stopped := -1
		var at time.Duration
		for i, f := range fracs {
			lvl := Level{Index: i, Rate: f * textbookCapacity, Arrival: schedule.Arrival{Kind: "poisson"},
				Duration: 300 * time.Second, Seed: int64(1000*seed + i), DetectSaturation: true}
			var last time.Duration
			_, reason, err := simulateLevel(context.Background(), p, lvl, 0, fixedSource{in: 512, out: 100},
				func(r *record.Record) { last = max(last, r.Scheduled) })
			if err != nil {
				t.Fatal(err)
			}
			if reason == EndOversaturated {
				stopped, at = i, last
				break
			}
			if reason != EndDuration {
				t.Fatalf("seed %d, %.2f × capacity: end reason %q", seed, f, reason)
			}
		}
		if stopped < 0 {
			t.Fatalf("seed %d: no level stopped as oversaturated", seed)
		}
		t.Logf("seed %d: stopped at %.2f × capacity (%.2f req/s), after %.1f s", seed, fracs[stopped], fracs[stopped]*textbookCapacity, at.Seconds())
		if fracs[stopped] < 0.9 || stopped > capIdx+2 {
			t.Errorf("seed %d: stopped at %.2f × capacity (level %d): want at or above 0.9 and at most level %d", seed, fracs[stopped], stopped, capIdx+2)
		}
	}
}

// TestMaxErrorRate: a level whose requests fail past the limit stops after the minimum
// count; one under it runs to its end. Closed loop on the virtual clock.
func TestMaxErrorRate(t *testing.T) {
	p := simProfile(t, "textbook")
	// Prompts longer than the engine's batch fail (400) at once.
	src := funcSource(func(i int) workload.Request {
		if i%10 < 4 { // 40% fail
			return workload.Request{InputTokens: 1 << 30, OutputTokens: 10}
		}
		return workload.Request{InputTokens: 64, OutputTokens: 10}
	})
	for _, tc := range []struct {
		limit float64
		want  EndReason
		n     int // records
	}{{0.3, EndMaxErrorRate, ErrorMinimum}, {0.5, EndRequests, 200}} {
		lvl := Level{Concurrency: 1, Requests: 200, MaxErrorRate: tc.limit}
		n := 0
		_, reason, err := simulateLevel(context.Background(), p, lvl, 0, src, func(*record.Record) { n++ })
		if err != nil {
			t.Fatal(err)
		}
		if reason != tc.want || n != tc.n {
			t.Errorf("limit %g: end reason %q after %d requests, want %q after %d", tc.limit, reason, n, tc.want, tc.n)
		}
	}
}
