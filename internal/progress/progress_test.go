package progress

import (
	"testing"
	"time"
)

// A level's line says the level, done and failed, the rate and the time left from the
// first second, and how a long level is going.
func TestLevelLine(t *testing.T) {
	var ttft, tpot window
	for i := range 100 {
		ttft.add(float64(200 + i))
		tpot.add(20)
	}
	got := levelLine("concurrency 16", 400, 0, 10*time.Second, 100, 3, 5000, &ttft, &tpot)
	want := "concurrency 16 100/400, 3 failed (3.0%), 10.0 req/s, ~30s left | TTFT P50/P99 250/299 ms, TPOT 20.0/20.0, 500 tok/s"
	if got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	if got := levelLine("rate 4", 0, time.Minute, 500*time.Millisecond, 2, 0, 10, &window{}, &window{}); got != "rate 4 2 done, 4.0 req/s, 1m0s left" {
		t.Errorf("timed level: %q", got)
	}
}
