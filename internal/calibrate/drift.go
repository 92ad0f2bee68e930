package calibrate

import (
	"fmt"
	"math"

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

// paceDrift pairs each decode step of the ladder's second pass with the first pass's at
// the same concurrency, and returns the lowest concurrency's pair.
func paceDrift(pts []Point) Drift {
	var d Drift
	for i := range pts {
		a := &pts[i]
		if a.Phase != PhaseDecode || a.Pass != 2 || a.Open {
			continue
		}
		for j := range pts {
			b := &pts[j]
			if b.Phase == PhaseDecode && b.Pass == 1 && !b.Open && b.Concurrency == a.Concurrency &&
				(d.Concurrency == 0 || a.Concurrency < d.Concurrency) {
				d = Drift{Concurrency: a.Concurrency, First: b.Measured[figure.TPOTP50], Again: a.Measured[figure.TPOTP50]}
			}
		}
	}
	return d
}
