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
// concurrency the decode ladder ran in both its passes, whether its requests there ran at
// two speeds, and every level both passes ran (a server steady at one in flight moved 81 %
// at two, CI's llama.cpp in docs/testing.md).
type Drift struct {
	Concurrency int
	First       float64 // ms, the first pass
	Again       float64 // ms, the second
	Speeds      TwoSpeeds
	Pairs       []PassPair // by concurrency, the first among them
}

// PassPair is TPOT P50 at one concurrency in the decode ladder's two passes.
type PassPair struct {
	Concurrency int
	First       float64 // ms
	Again       float64 // ms
}

// Pct is the second pass's TPOT P50 relative to the first's, in percent.
func (p PassPair) Pct() float64 { return 100 * (p.Again/p.First - 1) }

// Widest is the pair whose passes differ most, and whether there is one measured.
func (d Drift) Widest() (PassPair, bool) {
	var w PassPair
	for _, p := range d.Pairs {
		if p.First > 0 && p.Again > 0 && (w.Concurrency == 0 || math.Abs(p.Pct()) > math.Abs(w.Pct())) {
			w = p
		}
	}
	return w, w.Concurrency > 0
}

// TwoSpeeds is a server whose requests of one decode level ran at one of two distinct
// paces, each request steady at its own: the host's doing (another tenant on the core's
// sibling, a frequency step), not the load's. llama.cpp's server on a core of its own here
// ran such requests at 0.91–1.18 ms a token or at 1.44–1.91 ms, switching between requests
// (docs/measurements.md); the passes' medians (Drift.Pct) miss it when both passes mix the
// two alike, and a profile fitted on the mix predicts neither server.
type TwoSpeeds struct {
	Fast, Slow   float64 // ms a token: each group's median pace
	NFast, NSlow int     // requests at each
}

// Found reports whether the level ran at two speeds.
func (s TwoSpeeds) Found() bool { return s.NFast > 0 && s.NSlow > 0 }

// twoSpeedsRatio is the least ratio between the slowest fast request's pace and the fastest
// slow one's that makes two speeds: one request's pace is the median of its dozens of gaps,
// and at one request in flight requests of one speed lie within a few percent of each other
// (0.98–1.08 ms), where the host's two groups' nearest requests lay 33–46 % apart.
const twoSpeedsRatio = 1.25

// twoSpeeds splits paces at their widest ratio between neighbours (sorted): two speeds when
// it is at least twoSpeedsRatio and each side holds a tenth of the requests, three at least
// (one slow request is a hiccup, not a speed).
func twoSpeeds(paces []float64) TwoSpeeds {
	side := max(3, len(paces)/10)
	if len(paces) < 2*side {
		return TwoSpeeds{}
	}
	s := slices.Sorted(slices.Values(paces))
	at, widest := 0, 0.0
	for i := side; i <= len(s)-side; i++ {
		if r := s[i] / s[i-1]; r > widest {
			at, widest = i, r
		}
	}
	if widest < twoSpeedsRatio {
		return TwoSpeeds{}
	}
	return TwoSpeeds{Fast: s[at/2], Slow: s[at+(len(s)-at)/2], NFast: at, NSlow: len(s) - at}
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
	w, ok := d.Widest()
	if ok && w.Concurrency != d.Concurrency && math.Abs(w.Pct()) > max(DriftWarnPct, math.Abs(d.Pct())) {
		s += fmt.Sprintf(", and at concurrency %d %.2f and %.2f ms (%+.1f%%)", w.Concurrency, w.First, w.Again, w.Pct())
	}
	if math.Abs(d.Pct()) > DriftWarnPct || ok && math.Abs(w.Pct()) > DriftWarnPct {
		s += fmt.Sprintf(": beyond %.0f%%, the server's speed moved while it was probed (another load, a busy machine), and predictions above the probe carry that; calibrate again when it is steady", DriftWarnPct)
	}
	if v := d.Speeds; v.Found() {
		s += fmt.Sprintf(". Two speeds: there, %d requests ran at %.2f ms a token and %d at %.2f ms (%+.0f%%), each steady at its own: the host's doing (another tenant, a frequency step), not the load's; the profile is fitted to a mix of two servers and a live run may meet either; calibrate again when the host holds one speed",
			v.NFast, v.Fast, v.NSlow, v.Slow, 100*(v.Slow/v.Fast-1))
	}
	return s
}

// paceDrift is the drift at the lowest concurrency the decode ladder ran in both passes,
// with the two speeds of that level's requests over both passes, if it ran at two.
func paceDrift(pts []Point) Drift {
	var d Drift
	var paces []float64
	var pairs []PassPair
	for _, pr := range passPairs(pts) {
		a, b := &pts[pr[0]], &pts[pr[1]]
		pairs = append(pairs, PassPair{Concurrency: a.Concurrency, First: a.Measured[figure.TPOTP50], Again: b.Measured[figure.TPOTP50]})
		if d.Concurrency == 0 || a.Concurrency < d.Concurrency {
			d = Drift{Concurrency: a.Concurrency, First: a.Measured[figure.TPOTP50], Again: b.Measured[figure.TPOTP50]}
			paces = append(slices.Clip(a.Paces), b.Paces...)
		}
	}
	slices.SortFunc(pairs, func(x, y PassPair) int { return x.Concurrency - y.Concurrency })
	d.Pairs = pairs
	d.Speeds = twoSpeeds(paces)
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
