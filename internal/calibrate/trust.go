package calibrate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/sim"
)

// missFactor is how many times its stated error the fitted twin may miss a probe point by
// before the point is named: a point further out is one the twin does not explain, which
// a largest error over held-out points alone would not show.
const missFactor = 3

// missFloorPct is the least stated error a miss is judged against: a stated error of 1 %
// would name a point missed by 4 %, within a busy server's run-to-run noise.
const missFloorPct = 5

// trustPct is the largest error of a probe point's TTFT and TPOT P50 at which the twin is
// trusted at that point's load: the tolerance simulate's predictions are checked to.
const trustPct = 25

// trustFigures are the figures a point is judged on for the verdict and the misses: the
// medians (P99s rest on a few requests a point).
var trustFigures = []figure.Key{figure.TTFTP50, figure.TPOTP50}

// Miss is a probe point the profile written misses by more than missFactor × the error
// stated for its kind of load.
type Miss struct {
	Point               string
	Figure              figure.Key
	Measured, Predicted float64
	ErrPct, StatedPct   float64
	// HeldOut says the stated error includes this point (its held-out prediction's error);
	// otherwise the profile was fitted on it and the stated error does not.
	HeldOut bool
}

// Trust is the verdict for one range of probed loads: the points of one kind of load
// (closed or open loops) whose TTFT and TPOT P50 the twin predicts within trustPct, with
// the largest such error (LoadRange.ErrorPct), or one point it does not.
type Trust struct {
	sim.LoadRange
	Points []string // the probe points it rests on
}

// pointError is a point's largest error of the trust figures, percent, by the held-out fit
// where it was held out (the honest figure) and by the profile written otherwise.
func pointError(p *Fitted) float64 {
	pred := p.Predicted
	if p.HeldOut {
		pred = p.Validation
	}
	e := math.NaN()
	for _, k := range trustFigures {
		if v := math.Abs(pct(pred[k], p.Measured[k])); !math.IsNaN(v) && !(v <= e) {
			e = v
		}
	}
	return e
}

// statedFor is the held-out error stated for the kind of load p is, of figure k; the
// overall one when none of that kind was held out; NaN when none was.
func (r *Result) statedFor(p *Fitted, k figure.Key) float64 {
	e := r.ByLoad.Closed
	if p.Open {
		e = r.ByLoad.Open
	}
	if v := e.Pct[k]; !math.IsNaN(v) {
		return v
	}
	return r.HeldOut.Pct[k]
}

// misses are the probe points the profile written misses by more than missFactor × the
// stated error (at least missFloorPct), worst figure of each point.
func (r *Result) misses() []Miss {
	var out []Miss
	for i := range r.Points {
		p := &r.Points[i]
		var worst *Miss
		for _, k := range trustFigures {
			stated := r.statedFor(p, k)
			if math.IsNaN(stated) {
				continue
			}
			e := math.Abs(pct(p.Predicted[k], p.Measured[k]))
			if math.IsNaN(e) || e <= missFactor*math.Max(stated, missFloorPct) {
				continue
			}
			if worst == nil || e > worst.ErrPct {
				worst = &Miss{Point: p.Name, Figure: k, Measured: p.Measured[k], Predicted: p.Predicted[k], ErrPct: e, StatedPct: stated, HeldOut: p.HeldOut}
			}
		}
		if worst != nil {
			out = append(out, *worst)
		}
	}
	return out
}

// String is the miss in words, for the console and the page.
func (m Miss) String() string {
	in := "not in the stated error: the profile was fitted on it"
	if m.HeldOut {
		in = "in the stated error: held out"
	}
	return fmt.Sprintf("%s: %s measured %s ms, the profile predicts %s ms (%.0f%% off, %.1f× the stated %.1f%%; %s)",
		m.Point, label(m.Figure), fmtMs(m.Measured), fmtMs(m.Predicted), m.ErrPct, m.ErrPct/math.Max(m.StatedPct, 1e-9), m.StatedPct, in)
}

// trust is the verdict: for each kind of load, the probed points sorted by load
// (concurrency, then prompt length; an open loop's rate), each run of neighbours within
// trustPct one trusted range, and the points beyond it ranges not trusted. A run extends
// only to a point that shares its neighbour's concurrency (or rate) or prompt length: the
// prefill sweep at concurrency 1 and the decode ladder at 32 tokens do not vouch for each
// other's corner (long prompts at many in flight was never probed).
func (r *Result) trust() (trusted, untrusted []Trust) {
	for _, kind := range []string{sim.LoadClosed, sim.LoadOpen, sim.LoadMixed} {
		var pts []*Fitted
		for i := range r.Points {
			if loadOf(&r.Points[i]) == kind && !math.IsNaN(pointError(&r.Points[i])) {
				pts = append(pts, &r.Points[i])
			}
		}
		slices.SortStableFunc(pts, func(a, b *Fitted) int {
			if c := cmp.Compare(rateOf(&a.Point), rateOf(&b.Point)); c != 0 {
				return c
			}
			if a.Concurrency != b.Concurrency {
				return a.Concurrency - b.Concurrency
			}
			return meanPrompt(&a.Point) - meanPrompt(&b.Point)
		})
		// One load probed twice (the decode ladder's passes) is judged by its worse pass: the
		// twin is not trusted where one of two measurements of a load escaped it.
		var loads []Trust
		for _, p := range pts {
			t := trustOf(p, pointError(p))
			if n := len(loads); n > 0 && loads[n-1].sameLoad(t) {
				loads[n-1].add(t)
				continue
			}
			loads = append(loads, t)
		}
		var last *Trust // the run the previous load joined, trusted or not
		var prev Trust
		for _, t := range loads {
			ok := t.ErrorPct <= trustPct
			switch {
			case last != nil && (last.ErrorPct <= trustPct) == ok && t.adjoins(prev):
				last.add(t)
			case ok:
				trusted = append(trusted, t)
				last = &trusted[len(trusted)-1]
			default:
				untrusted = append(untrusted, t)
				last = &untrusted[len(untrusted)-1]
			}
			prev = t
		}
	}
	return trusted, untrusted
}

// sameLoad says t and u are one load.
func (t Trust) sameLoad(u Trust) bool {
	return t.Load == u.Load && t.Concurrency == u.Concurrency && t.Rate == u.Rate && t.PromptTokens == u.PromptTokens
}

// adjoins says t's load shares prev's concurrency (or rate) or its prompt lengths.
func (t Trust) adjoins(prev Trust) bool {
	return t.Concurrency == prev.Concurrency && t.Rate == prev.Rate || t.PromptTokens == prev.PromptTokens
}

// add widens the range by t.
func (run *Trust) add(t Trust) {
	run.Concurrency = [2]int{min(run.Concurrency[0], t.Concurrency[0]), max(run.Concurrency[1], t.Concurrency[1])}
	run.Rate = [2]float64{math.Min(run.Rate[0], t.Rate[0]), math.Max(run.Rate[1], t.Rate[1])}
	run.PromptTokens = [2]int{min(run.PromptTokens[0], t.PromptTokens[0]), max(run.PromptTokens[1], t.PromptTokens[1])}
	run.ErrorPct = math.Max(run.ErrorPct, t.ErrorPct)
	run.Points = append(run.Points, t.Points...)
}

// loadOf is the kind of load a point is: a closed loop, an open one, or the mixed phase
// (long prompts arriving while others decode).
func loadOf(p *Fitted) string {
	switch {
	case !p.Open:
		return sim.LoadClosed
	case p.mixed():
		return sim.LoadMixed
	}
	return sim.LoadOpen
}

// trustOf is one point's load as a range of its own.
func trustOf(p *Fitted, e float64) Trust {
	t := Trust{LoadRange: sim.LoadRange{Load: loadOf(p), PromptTokens: rangeOf([]Point{p.Point}, func(q Request) int { return q.Prompt }), ErrorPct: e}, Points: []string{p.Name}}
	if p.Open {
		r := rateOf(&p.Point)
		t.Rate = [2]float64{r, r}
	} else {
		t.Concurrency = [2]int{p.Concurrency, p.Concurrency}
	}
	return t
}

// rateOf is an open loop's arrival rate, requests a second (0 for a closed loop, or
// arrivals all at one instant).
func rateOf(pt *Point) float64 {
	if !pt.Open {
		return 0
	}
	return openRates([]Point{*pt})[1]
}

// verdict is the trust verdict in words, one line each.
func (r *Result) verdict() []string {
	trusted, untrusted := r.trust()
	var lines []string
	for _, t := range trusted {
		lines = append(lines, fmt.Sprintf("trusted for %s: within %.1f%% (%s)", t, t.ErrorPct, strings.Join(t.Points, ", ")))
	}
	for _, t := range untrusted {
		lines = append(lines, fmt.Sprintf("not trusted for %s: up to %.0f%% off (%s)", t, t.ErrorPct, strings.Join(t.Points, ", ")))
	}
	if len(lines) == 0 {
		return []string{"no probe point judged: no verdict"}
	}
	if p, c := r.unprobedCorner(); p > 0 {
		lines = append(lines, fmt.Sprintf("not probed, so not trusted: closed loops of prompts over %d tokens at more than %d in flight (the prefill sweep ran them one at a time)", p, c))
	}
	return lines
}

// unprobedCorner is the longest prompt the closed loops probed at more than one in flight
// and that one, where the closed loops at c probed longer prompts: loads of longer prompts
// at more in flight lie between the prefill sweep and the decode ladder, vouched for by
// neither (0, 0 where none).
func (r *Result) unprobedCorner() (prompt, c int) {
	longest, low := 0, 0
	for i := range r.Points {
		p := &r.Points[i]
		if p.Open {
			continue
		}
		if low == 0 || p.Concurrency < low {
			low = p.Concurrency
		}
	}
	for i := range r.Points {
		p := &r.Points[i]
		if !p.Open && p.Concurrency > low {
			longest = max(longest, rangeOf([]Point{p.Point}, func(q Request) int { return q.Prompt })[1])
		}
	}
	for i := range r.Points {
		p := &r.Points[i]
		if !p.Open && p.Concurrency == low && longest > 0 && rangeOf([]Point{p.Point}, func(q Request) int { return q.Prompt })[1] > longest {
			return longest, low
		}
	}
	return 0, 0
}
