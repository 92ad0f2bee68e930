package calibrate

import (
	"fmt"
	"math"
	"slices"

	"github.com/llmbench/llmbench/internal/figure"
)

// DriftWarnPct is the pace drift (percent) beyond which the fit's report says to calibrate
// again: the growth between ladder levels, which every prediction above the probe
// multiplies, is then as uncertain as the drift.
const DriftWarnPct = 10.0

// Drift is how far the server's pace moved during the probe: TPOT P50 at the lowest
// concurrency the decode ladder ran in both its passes.
type Drift struct {
	Concurrency int
	First       float64 // ms, the first pass
	Again       float64 // ms, the second
}

// Measured reports whether the probe ran the ladder twice.
func (d Drift) Measured() bool { return d.Concurrency > 0 && d.First > 0 && d.Again > 0 }

// Pct is the second pass's TPOT P50 relative to the first's, in percent (NaN if not measured).
func (d Drift) Pct() float64 {
	if !d.Measured() {
		return math.NaN()
	}
	return 100 * (d.Again/d.First - 1)
}

// String says it in words, with what to do when it is large.
func (d Drift) String() string {
	if !d.Measured() {
		return "Pace drift: not measured (the decode ladder ran once)"
	}
	s := fmt.Sprintf("Pace drift: TPOT P50 at concurrency %d was %.2f ms in the decode ladder's first pass and %.2f ms in its second (%+.1f%%)",
		d.Concurrency, d.First, d.Again, d.Pct())
	if math.Abs(d.Pct()) > DriftWarnPct {
		s += fmt.Sprintf(": beyond %.0f%%, the server's speed moved while it was probed (another load, a busy machine), and predictions above the probe carry that; calibrate again when it is steady", DriftWarnPct)
	}
	return s
}

// paceDrift is the drift at the lowest concurrency the decode ladder ran in both passes.
func paceDrift(pts []Point) Drift {
	var d Drift
	for _, pr := range passPairs(pts) {
		a, b := &pts[pr[0]], &pts[pr[1]]
		if d.Concurrency == 0 || a.Concurrency < d.Concurrency {
			d = Drift{Concurrency: a.Concurrency, First: a.Measured[figure.TPOTP50], Again: b.Measured[figure.TPOTP50]}
		}
	}
	return d
}

// passPairs pairs each decode step of the ladder's second pass (index 1) with the first
// pass's at the same concurrency (index 0).
func passPairs(pts []Point) [][2]int {
	var prs [][2]int
	for i := range pts {
		a := &pts[i]
		if a.Phase != PhaseDecode || a.Pass != 2 || a.Open {
			continue
		}
		for j := range pts {
			if b := &pts[j]; b.Phase == PhaseDecode && b.Pass == 1 && !b.Open && b.Concurrency == a.Concurrency {
				prs = append(prs, [2]int{j, i})
				break
			}
		}
	}
	return prs
}

// repeatable returns pts with each figure's standard error at least what its two passes'
// disagreement shows: the spread of a level's own samples misses what changes from one run
// of it to the next. A closed loop's short prompts group by how the first wave's sends fell
// (serve's c16 read TTFT P50 11.5 ms in one pass and 17.3 in the other, 1+6+9 requests per
// prefill step against 1+15), a pattern the simulator, sending at set instants, picks one
// of; trusted to 2 %, such a point bent the cost model's prefill 3 % low to split the two.
// Two runs differing by ln-ratio d say each is about d/√2 from where a third would fall.
func repeatable(pts []Point) []Point {
	out := slices.Clone(pts)
	for _, pr := range passPairs(pts) {
		a, b := &out[pr[0]], &out[pr[1]]
		for _, k := range figure.All {
			d := math.Abs(logRatio(a.Measured[k], b.Measured[k])) / math.Sqrt2
			a.SE[k], b.SE[k] = math.Max(a.SE[k], d), math.Max(b.SE[k], d)
		}
	}
	return out
}
