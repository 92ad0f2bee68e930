package metrics

import (
	"fmt"
	"sort"
	"strconv"
)

// Load describes a level's offered load: Concurrency for closed loop, Rate (req/s) for open loop.
type Load struct {
	Concurrency int
	Rate        float64
}

func (l Load) x() float64 {
	if l.Concurrency > 0 {
		return float64(l.Concurrency)
	}
	return l.Rate
}

// String is "concurrency 16" or "rate 4 req/s".
func (l Load) String() string {
	if l.Concurrency > 0 {
		return "concurrency " + strconv.Itoa(l.Concurrency)
	}
	return "rate " + strconv.FormatFloat(l.Rate, 'f', -1, 64) + " req/s"
}

// Pick names one level of a ladder and why it was chosen (summary.json sweet_spot, slo_limit).
type Pick struct {
	Index       int     `json:"index"`
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	Reason      string  `json:"reason"`
	// Cost is the picked level's cost (levels[i].cost), so the pick says what its load
	// costs; absent when the run was not priced.
	Cost *Cost `json:"cost,omitempty"`
}

func pick(i int, l Load, reason string) *Pick {
	return &Pick{Index: i, Concurrency: l.Concurrency, Rate: l.Rate, Reason: reason}
}

// SLOLimit is the highest-load level whose SLO verdict passes; nil when no level has a
// verdict or none passes. loads[i] describes levels[i].
func SLOLimit(levels []Level, loads []Load) *Pick {
	best := -1
	for i := range levels {
		if i >= len(loads) || levels[i].SLO == nil || !levels[i].SLO.Pass {
			continue
		}
		if best < 0 || loads[i].x() > loads[best].x() {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	return pick(best, loads[best], "highest load whose SLO verdict passes")
}

// AnyPassed reports whether SLO verdicts were given (judged) and whether any level passed:
// the CLI exits with code 3 when judged && !passed.
func AnyPassed(levels []Level) (passed, judged bool) {
	for _, l := range levels {
		if l.SLO != nil {
			judged = true
			passed = passed || l.SLO.Pass
		}
	}
	return passed, judged
}

// KneeSensitivity is Kneedle's S: a knee must stand S mean x-steps above the curve after it.
const KneeSensitivity = 1.0

// Throughput is the figure a ladder's knee is found on and its table shows: output tokens/s
// for generation, inputs/s for embeddings, documents/s for rerank (pooled APIs generate no
// tokens).
type Throughput struct {
	Name, Unit string // "output throughput", "tok/s"
	Of         func(l *Level) float64
}

// LadderThroughput is the throughput of levels: inputs/s or documents/s where no level
// generated tokens and the levels sent inputs (embeddings) or documents (rerank), else
// output tokens/s.
func LadderThroughput(levels []Level) Throughput {
	var out, inputs, docs bool
	for i := range levels {
		out = out || levels[i].OutputThroughput > 0
		inputs = inputs || levels[i].InputsPerS != nil
		docs = docs || levels[i].DocumentsPerS != nil
	}
	deref := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	switch {
	case !out && docs:
		return Throughput{"document throughput", "docs/s", func(l *Level) float64 { return deref(l.DocumentsPerS) }}
	case !out && inputs:
		return Throughput{"input throughput", "inputs/s", func(l *Level) float64 { return deref(l.InputsPerS) }}
	}
	return Throughput{"output throughput", "tok/s", func(l *Level) float64 { return l.OutputThroughput }}
}

// SweetSpot finds the knee of output throughput (LadderThroughput: inputs/s, documents/s for
// pooled APIs) against load with Kneedle (Satopää et al.,
// "Finding a 'Kneedle' in a Haystack", 2011) on the normalised curve:
//
//  1. sort the levels by load and keep the rising part, up to the highest throughput (past
//     it, more load buys nothing);
//  2. normalise load and throughput to [0, 1] (xn, yn) and take the difference curve
//     d = yn - xn: how far the curve stands above the straight line from the first to the
//     peak level;
//  3. each local maximum i of d is a candidate with threshold T = d[i] - S·mean(Δxn); it is the
//     knee if d falls below T at a later level before rising above d[i]. The first knee is
//     the sweet spot: the level after which extra load buys little throughput for much latency.
//
// With SLO verdicts, the sweet spot is never above the SLO limit: a knee beyond it is replaced
// by the limit, and when no level passes there is no sweet spot. With no knee (throughput still
// rising linearly, or fewer than three rising levels) the SLO limit is returned when there is
// one, or the peak when throughput falls after it; otherwise nil.
func SweetSpot(levels []Level, loads []Load) *Pick {
	n := min(len(levels), len(loads))
	limit := SLOLimit(levels[:n], loads[:n])
	_, judged := AnyPassed(levels[:n])
	if judged && limit == nil {
		return nil
	}
	idx := make([]int, 0, n)
	for i := range n {
		idx = append(idx, i)
	}
	sort.SliceStable(idx, func(a, b int) bool { return loads[idx[a]].x() < loads[idx[b]].x() })
	fig := LadderThroughput(levels[:n])
	xs := make([]float64, n)
	ys := make([]float64, n)
	for k, i := range idx {
		xs[k], ys[k] = loads[i].x(), fig.Of(&levels[i])
	}
	knee, reason := kneedle(xs, ys, fig.Name)
	var p *Pick
	if knee >= 0 {
		p = pick(idx[knee], loads[idx[knee]], reason)
	}
	switch {
	case limit == nil:
		return p
	case p == nil:
		limit.Reason = "no knee in " + fig.Name + "; highest load meeting the SLOs"
		return limit
	case loads[p.Index].x() > loads[limit.Index].x():
		limit.Reason = fmt.Sprintf("knee at %s is beyond the SLO limit; capped at the SLO limit", loads[p.Index])
		return limit
	}
	return p
}

// kneedle returns the index (into xs sorted ascending) of the knee of y(x), or -1.
// what names the throughput in the reason.
func kneedle(xs, ys []float64, what string) (int, string) {
	if len(xs) == 0 {
		return -1, ""
	}
	peak := 0
	for i := range ys {
		if ys[i] > ys[peak] {
			peak = i
		}
	}
	m := peak + 1 // the rising part: xs[:m]
	if m < 3 {
		if peak > 0 && peak < len(xs)-1 {
			return peak, what + " peaks here and falls at higher load"
		}
		return -1, ""
	}
	x0, x1, y0, y1 := xs[0], xs[m-1], ys[0], ys[m-1]
	for _, y := range ys[:m] {
		y0 = min(y0, y)
	}
	if x1 <= x0 || y1 <= y0 {
		return -1, ""
	}
	d := make([]float64, m)
	for i := range m {
		d[i] = (ys[i]-y0)/(y1-y0) - (xs[i]-x0)/(x1-x0)
	}
	meanStep := 1.0 / float64(m-1) // normalised x spans [0, 1] in m-1 steps
	for i := 1; i < m-1; i++ {
		if !(d[i] >= d[i-1] && d[i] > d[i+1]) {
			continue // not a local maximum
		}
		t := d[i] - KneeSensitivity*meanStep
		for j := i + 1; j < m; j++ {
			if d[j] > d[i] {
				break
			}
			if d[j] < t {
				return i, fmt.Sprintf("knee of %s vs load (Kneedle, S=%g): %.0f%% of the peak throughput at %.0f%% of the peak load",
					what, KneeSensitivity, 100*ys[i]/y1, 100*xs[i]/x1)
			}
		}
	}
	return -1, ""
}
