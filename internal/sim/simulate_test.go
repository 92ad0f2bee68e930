package sim

import (
	"math"
	"testing"

	"github.com/llmbench/llmbench/internal/engine"
)

// TestTextbookTable reproduces the textbook table (issue 3, "Done when"). With
// disaggregated prefill a request's first token comes after 512 × 0.02 = 10.24 ms, and
// the c requests of a closed loop then decode in lock-step, one token per step of
// 8 × (1 + 0.12 × (c − 1)) ms. So TPOT is the step time and the throughput is
// c × 100 tokens per E2EL = 10.24 + 99 × step.
func TestTextbookTable(t *testing.T) {
	p := mustProfile(t, "textbook")
	for _, tc := range []struct {
		c          int
		tpot, tput float64
	}{{1, 8.00, 125}, {4, 10.88, 368}, {16, 22.40, 718}, {64, 68.48, 943}} {
		lvl := engine.Level{Concurrency: tc.c, Requests: 20 * tc.c, Warmup: tc.c}
		recs, _ := simulate(t, p, lvl, fixedSource{in: 512, out: 100})
		var tpots []float64
		var measured = recs[:0:0]
		for _, r := range recs {
			if r.OutputTokens != 100 || !r.OK() {
				t.Fatalf("c=%d: request %d: %d tokens, error %v", tc.c, r.Index, r.OutputTokens, r.Error)
			}
			if !r.Warmup {
				tpots = append(tpots, tpotMs(r))
				measured = append(measured, r)
			}
		}
		tpot := percentile(tpots, 50)
		tput := outputThroughput(measured)
		t.Logf("c=%d: TPOT P50 %.2f ms, output throughput %.1f tok/s", tc.c, tpot, tput)
		if math.Abs(tpot/tc.tpot-1) > 0.02 {
			t.Errorf("c=%d: TPOT P50 %.3f ms, want %.2f ± 2%%", tc.c, tpot, tc.tpot)
		}
		if math.Abs(tput/tc.tput-1) > 0.02 {
			t.Errorf("c=%d: output throughput %.1f tok/s, want %.0f ± 2%%", tc.c, tput, tc.tput)
		}
	}
}
