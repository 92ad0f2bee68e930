package load

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/testtier"
	"github.com/llmbench/llmbench/internal/workload"
)

// slowTarget only timestamps Sent and holds the request for a while: the cheapest possible
// target, so what is measured is the engine's own dispatch lateness.
type slowTarget struct{ hold time.Duration }

func (s slowTarget) Do(ctx context.Context, start time.Time, _ workload.Request, rec *record.Record) {
	rec.Sent = record.Since(start, time.Now())
	t := time.NewTimer(s.hold)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	rec.Done = record.Since(start, time.Now())
}

// openLoopLags runs an open loop of 2,000 Poisson arrivals at 4,000/s, each held 500 ms, on
// whatever clock runs, and returns each request's lag behind its due time, sorted, and how
// many were in flight at the last dispatch.
func openLoopLags(t *testing.T) (lags []time.Duration, inFlightAtLast int) {
	t.Helper()
	const rate, n = 4000.0, 2000
	lvl := Level{Rate: rate, Arrival: schedule.Arrival{Kind: schedule.Poisson}, Requests: n, Seed: 1}
	var c collector
	start := time.Now()
	if _, err := Run(t.Context(), start, lvl, fakeSource{}, slowTarget{hold: 500 * time.Millisecond}, c.sink); err != nil {
		t.Fatal(err)
	}
	recs := c.sorted()
	if len(recs) != n {
		t.Fatalf("%d records", len(recs))
	}
	lags = make([]time.Duration, n)
	last := recs[n-1].Sent
	for i, r := range recs {
		lags[i] = r.Sent - r.Scheduled
		if r.Sent <= last && r.Done > last {
			inFlightAtLast++
		}
	}
	slices.Sort(lags)
	if inFlightAtLast < n/2 {
		t.Errorf("only %d in flight at the end: the test did not load the dispatcher", inFlightAtLast)
	}
	if lags[0] < 0 {
		t.Errorf("a request was sent %v before its due time", -lags[0])
	}
	return lags, inFlightAtLast
}

// TestDispatchOnTimeFakeClock: what the dispatcher decides, on synctest's fake clock, with
// ~2,000 requests in flight: every request goes out exactly at its due time, whatever the
// machine's speed (TestDispatchLatenessRealClock measures the real clock's lateness).
func TestDispatchOnTimeFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if lags, _ := openLoopLags(t); lags[len(lags)-1] != 0 {
			t.Errorf("on the fake clock a request was sent %v after its due time", lags[len(lags)-1])
		}
	})
}

// TestDispatchLatenessRealClock runs the same open loop on the real clock and checks that
// the dispatcher stays on time. Bounds are loose because the machine is shared; the figures
// are logged (LLMBENCH_ACCURACY=1 go test -run Lateness -v).
func TestDispatchLatenessRealClock(t *testing.T) {
	testtier.Accuracy(t, "the dispatcher's lateness on the real clock")
	lags, inFlight := openLoopLags(t)
	n := len(lags)
	p50, p99, worst := lags[n/2], lags[n*99/100], lags[n-1]
	t.Logf("%d in flight at the last dispatch: lag p50 %v p99 %v max %v", inFlight, p50, p99, worst)
	if p50 > 2*time.Millisecond || p99 > 50*time.Millisecond {
		t.Errorf("dispatcher late: p50 %v, p99 %v", p50, p99)
	}
}
