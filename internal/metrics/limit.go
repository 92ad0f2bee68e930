package metrics

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// LimitEstimate is the load at which the SLOs stop being met, estimated from every level
// run rather than read off the best one (SLOLimit): each percentile or mean term's values,
// each level read on a line through its neighbours, are fitted against load by a monotone
// (isotonic) regression weighted by each level's own precision, the limit is where the tightest term's fitted curve crosses its bound, and the
// 90% interval comes from the levels' sampling error, drawn through the same fit (a seeded
// parametric bootstrap). A side the levels run cannot bound is null: every level passed
// (the limit is above the highest load run) or none did (below the lowest).
type LimitEstimate struct {
	Value *float64    `json:"value"`
	CI90  [2]*float64 `json:"ci90"`
	Term  string      `json:"term,omitempty"` // the term whose curve crosses first
	// Note says what an open side means, when there is one.
	Note string `json:"note,omitempty"`
}

// limitPoint is one level as the estimate sees it: its load and, per term, its value with
// the standard errors below and above it (+Inf value: a level that could not keep up).
type limitPoint struct {
	x          float64
	v, lo, hi  []float64 // by term
	overloaded bool
	placed     Placement
}

// Placement is how a level's load was chosen, which says whether its distance to its
// neighbours can be read as its noise.
type Placement uint8

// Placements.
const (
	// PlacedFixed: the load was chosen without regard to this level's or its neighbours'
	// figures near it (a ladder given in advance, a search's doubling, a grid about an
	// answer already found).
	PlacedFixed Placement = iota
	// PlacedByVerdict: the load was chosen from the verdicts of the levels around it (a
	// bisection's step). Such levels straddle the bound in load order by construction: one
	// that passed has every later level above it, one that failed below, so their values sit
	// closer to their neighbours' line than their noise would put them, and the scatter read
	// off them is too small. They enter the fit, not the scatter.
	PlacedByVerdict
)

// bootstrapDraws is how many times the levels' sampling error is drawn through the fit.
const bootstrapDraws = 400

// EstimateLimit estimates the SLO limit from levels (loads[i] describes levels[i]);
// overloaded[i] marks a level stopped because the server could not keep up, which is above
// the limit whatever its finished requests measured. Nil when slos have no percentile or
// mean term, when the levels mix concurrencies and rates, or when fewer than one level has
// a value.
func EstimateLimit(levels []Level, loads []Load, overloaded []bool, slos []SLO) *LimitEstimate {
	return EstimateLimitPlaced(levels, loads, overloaded, nil, slos)
}

// EstimateLimitPlaced is EstimateLimit with each level's placement (placed[i] for
// levels[i]; missing: PlacedFixed): the levels' scatter is read from those placed
// PlacedFixed where they give enough of it, from all of them otherwise.
func EstimateLimitPlaced(levels []Level, loads []Load, overloaded []bool, placed []Placement, slos []SLO) *LimitEstimate {
	var terms []SLO
	for _, s := range slos {
		if s.Kind == SLOPercentile {
			terms = append(terms, s)
		}
	}
	if len(terms) == 0 || len(levels) == 0 {
		return nil
	}
	rate := loads[0].Concurrency == 0
	var pts []limitPoint
	for i, l := range levels {
		if (loads[i].Concurrency == 0) != rate {
			return nil // one axis, or no curve
		}
		p := limitPoint{x: loads[i].x(), overloaded: i < len(overloaded) && overloaded[i]}
		if i < len(placed) {
			p.placed = placed[i]
		}
		for _, t := range terms {
			v, lo, hi := termValue(l, t)
			if p.overloaded || math.IsNaN(v) {
				v, lo, hi = math.Inf(1), 0, 0
			}
			p.v, p.lo, p.hi = append(p.v, v), append(p.lo, lo), append(p.hi, hi)
		}
		pts = append(pts, p)
	}
	slices.SortStableFunc(pts, func(a, b limitPoint) int { return cmp.Compare(a.x, b.x) })
	bounds := make([]float64, len(terms))
	dof := make([]int, len(terms))
	for j, t := range terms {
		bounds[j] = float64(t.Limit) / float64(time.Millisecond)
		dof[j] = scatter(pts, j)
	}
	// Each level is read through a straight line over its neighbours before the monotone
	// fit: a monotone fit of the levels' own values follows their noise, pinning the
	// crossing between the two levels that straddle it however noisy they are (and its plain
	// bootstrap is known to be too narrow); pooling each level with its neighbours lets the
	// estimate use every level near the limit, and the draws move it as far as their noise
	// allows.
	own := make([][]float64, len(pts))
	for i := range pts {
		own[i] = pts[i].v
	}
	centre := smooth(pts, own)
	value, term := crossing(pts, bounds, func(i, j int) float64 { return centre[i][j] })
	est := &LimitEstimate{Term: terms[term].String()}
	// Smoothing the drawn levels smooths the curve again; the draws' crossings are read
	// about the twice-smoothed curve's and carried to the estimate.
	carry := 0.0
	again := smooth(pts, centre)
	if x, _ := crossing(pts, bounds, func(i, j int) float64 { return again[i][j] }); !math.IsInf(x, 0) && !math.IsInf(value, 0) {
		carry = value - x
	}
	rng := rand.New(rand.NewPCG(1, 2)) // the same levels give the same interval
	draws := make([]float64, 0, bootstrapDraws)
	for range bootstrapDraws {
		// Levels drawn about the smoothed curve with their errors, read as the levels were.
		// The scatter is itself read off a few levels: each draw takes its own, as likely
		// given what was read (σ·√(m/χ²ₘ) for m residuals), which makes the interval a
		// Student-t's where the levels are few.
		scale := make([]float64, len(terms))
		for j := range terms {
			scale[j] = 1
			if m := dof[j]; m > 0 {
				var chi2 float64
				for range m {
					z := rng.NormFloat64()
					chi2 += z * z
				}
				scale[j] = math.Sqrt(float64(m) / max(chi2, 1e-9))
			}
		}
		drawn := make([][]float64, len(pts))
		for i := range pts {
			drawn[i] = make([]float64, len(terms))
			for j := range terms {
				if d := rng.NormFloat64() * scale[j]; d < 0 {
					drawn[i][j] = centre[i][j] + d*pts[i].lo[j]
				} else {
					drawn[i][j] = centre[i][j] + d*pts[i].hi[j]
				}
			}
		}
		fit := smooth(pts, drawn)
		x, _ := crossing(pts, bounds, func(i, j int) float64 { return fit[i][j] })
		draws = append(draws, x+carry)
	}
	slices.Sort(draws)
	q := func(f float64) *float64 {
		x := draws[int(math.Round(f*float64(len(draws)-1)))]
		if math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	est.CI90 = [2]*float64{q(0.05), q(0.95)}
	switch {
	case math.IsInf(value, 1):
		est.Note = "every level run met the SLOs: the limit is above the highest load run"
		est.CI90[1] = nil
		if est.CI90[0] == nil {
			est.CI90[0] = &pts[len(pts)-1].x // what the levels show: at least the highest
		}
	case math.IsInf(value, -1):
		est.Note = "no level run met the SLOs: the limit is below the lowest load run"
		est.CI90[0] = nil
		if est.CI90[1] == nil {
			est.CI90[1] = &pts[0].x // at most the lowest
		}
	default:
		est.Value = &value
	}
	if est.CI90[0] == nil && est.CI90[1] == nil && est.Note == "" {
		est.Note = "the levels run are too few or too noisy to bound the limit on either side"
	}
	return est
}

// termValue is a level's value of a percentile or mean term, ms, and the standard errors
// below and above it from its 95% confidence interval (batch means where the level allows,
// else order statistics), at least seFloor of the value; an unbounded side is taken as the
// value itself (the sample says nothing there). NaN when the level has no samples of the term's metric.
func termValue(l Level, t SLO) (v, seLo, seHi float64) {
	const z95 = 1.959964
	s, ok := l.Metrics.Get(t.Metric)
	if !ok || s.Count == 0 {
		return math.NaN(), 0, 0
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if math.IsNaN(t.P) {
		v = s.Mean
		if !math.IsNaN(s.MeanLo) {
			lo, hi = s.MeanLo, s.MeanHi
		} else if s.Count > 1 {
			half := z95 * s.Std / math.Sqrt(float64(s.Count))
			lo, hi = v-half, v+half
		}
	} else {
		i := slices.IndexFunc(s.Percentiles, func(p Percentile) bool { return p.P == t.P })
		switch {
		case i >= 0:
			v, lo, hi = s.Percentiles[i].Value, s.Percentiles[i].Lo, s.Percentiles[i].Hi
		case l.Dists[t.Metric] != nil:
			d := l.Dists[t.Metric]
			v, _ = d.Percentile(t.P)
			lo, hi = d.CI95(t.P)
		default:
			return math.NaN(), 0, 0
		}
	}
	seLo, seHi = (v-lo)/z95, (hi-v)/z95
	if math.IsInf(seLo, 0) || math.IsNaN(seLo) {
		seLo = math.Abs(v)
	}
	if math.IsInf(seHi, 0) || math.IsNaN(seHi) {
		seHi = math.Abs(v)
	}
	// No closer than 1%: requests batched together share their steps, so their values tie
	// and move together, and order statistics over them overstate a level's precision (a
	// P99 over 368 such requests read an interval of zero width).
	floor := seFloor * math.Abs(v)
	return v, max(seLo, floor), max(seHi, floor)
}

// seFloor is the least standard error of a level's figure, relative to it.
const seFloor = 0.01

// crossing fits each term's values (value(i, j): level i, term j) against the sorted loads and returns the
// lowest load where a fitted curve passes its bound, and that term: -Inf when the first
// load already fails, +Inf when none does. Between two loads it interpolates linearly; next
// to a level that could not keep up (+Inf) it takes the last load that met the bound.
func crossing(pts []limitPoint, bounds []float64, value func(i, j int) float64) (float64, int) {
	best, term := math.Inf(1), 0
	for j, b := range bounds {
		ys := make([]float64, len(pts))
		ws := make([]float64, len(pts))
		for i, p := range pts {
			ys[i] = value(i, j)
			se := (p.lo[j] + p.hi[j]) / 2
			ws[i] = 1 / max(se*se, 1e-12)
		}
		f := isotonic(ys, ws)
		x := math.Inf(1)
		for i := range f {
			if f[i] <= b {
				continue
			}
			switch {
			case i == 0:
				x = math.Inf(-1)
			case math.IsInf(f[i], 1):
				x = pts[i-1].x
			default:
				x = pts[i-1].x + (b-f[i-1])/(f[i]-f[i-1])*(pts[i].x-pts[i-1].x)
			}
			break
		}
		if x < best {
			best, term = x, j
		}
	}
	return best, term
}

// isotonic is the weighted least-squares nondecreasing fit of ys (pool adjacent violators);
// a block holding +Inf is +Inf.
func isotonic(ys, ws []float64) []float64 {
	type block struct {
		v, w float64
		n    int
	}
	var bs []block
	for i := range ys {
		bs = append(bs, block{ys[i], ws[i], 1})
		for len(bs) > 1 && bs[len(bs)-2].v > bs[len(bs)-1].v {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			m := block{w: a.w + b.w, n: a.n + b.n}
			if math.IsInf(a.v, 1) || math.IsInf(b.v, 1) {
				m.v = math.Inf(1)
			} else {
				m.v = (a.v*a.w + b.v*b.w) / m.w
			}
			bs = append(bs[:len(bs)-2], m)
		}
	}
	out := make([]float64, 0, len(ys))
	for _, b := range bs {
		for range b.n {
			out = append(out, b.v)
		}
	}
	return out
}

// scatter widens term j's standard errors to at least the levels' own scatter: a level's
// interval counts its requests as independent, but requests decoded in one batch share their
// steps, so a level of a few rounds is further from its long-run value than its interval
// says, and by how much the levels themselves show. The scatter is read from each level's
// distance to the straight line through its two neighbours (a difference estimator: it needs
// no fitted curve, which would follow the noise and hide it), relative to its value, over
// levels whose neighbours lie within neighbourhood× of each other in load so the curve's
// bend does not count as noise; with fewer than three such levels, from the levels' residuals
// about their monotone fit.
//
// Levels placed by verdicts (PlacedByVerdict) are left out of the scatter when the others
// give it by their neighbours: each remaining level is then read on the line through the
// nearest remaining levels on either side, whose loads were chosen without its figures.
func scatter(pts []limitPoint, j int) (dof int) {
	var fixed []limitPoint
	for _, p := range pts {
		if p.placed == PlacedFixed {
			fixed = append(fixed, p)
		}
	}
	rel, m := neighbourScatter(fixed, j)
	if m == 0 {
		rel, m = neighbourScatter(pts, j)
	}
	if m == 0 {
		rel, m = fitScatter(pts, j)
	}
	if m == 0 {
		return 0
	}
	for i := range pts {
		floor := rel * math.Abs(pts[i].v[j])
		if !math.IsInf(floor, 0) {
			pts[i].lo[j], pts[i].hi[j] = max(pts[i].lo[j], floor), max(pts[i].hi[j], floor)
		}
	}
	return m
}

// smooth reads each level's values (vals[i][j]: level i, term j) on a weighted straight
// line through the levels within neighbourhood× of its load (weights: the levels'
// precision). A level with fewer than two such neighbours, or that could not keep up, keeps
// its own value.
func smooth(pts []limitPoint, vals [][]float64) [][]float64 {
	out := make([][]float64, len(pts))
	for i, p := range pts {
		out[i] = slices.Clone(vals[i])
		for j, y := range vals[i] {
			if math.IsInf(y, 0) || p.x <= 0 {
				continue
			}
			var sw, sx, sy, sxx, sxy float64
			n := 0
			for k, q := range pts {
				yk := vals[k][j]
				if math.IsInf(yk, 0) || q.x < p.x/neighbourhood || q.x > p.x*neighbourhood {
					continue
				}
				se := (q.lo[j] + q.hi[j]) / 2
				w := 1 / max(se*se, 1e-12)
				d := q.x - p.x
				sw, sx, sy, sxx, sxy = sw+w, sx+w*d, sy+w*yk, sxx+w*d*d, sxy+w*d*yk
				n++
			}
			if det := sw*sxx - sx*sx; n >= 3 && det > 1e-12*sw*sxx {
				out[i][j] = (sxx*sy - sx*sxy) / det // the line's value at d = 0
			}
		}
	}
	return out
}

// neighbourhood is the widest ratio of a level's neighbours' loads for its distance to their
// line to be read as noise: levels a bisection places near the limit are far closer.
const neighbourhood = 1.25

// neighbourScatter is the relative standard deviation of term j's levels about the local
// line through their neighbours: for level i between loads a and b at weight w, the residual
// v_i - ((1-w)v_a + w v_b) has variance σ²(1 + (1-w)² + w²) when each level is off its curve
// by σ, which each squared residual is divided by.
func neighbourScatter(pts []limitPoint, j int) (rel float64, dof int) {
	var ss float64
	m := 0
	for i := 1; i+1 < len(pts); i++ {
		a, b, c := pts[i-1], pts[i], pts[i+1]
		ya, yb, yc := a.v[j], b.v[j], c.v[j]
		if math.IsInf(ya, 0) || math.IsInf(yb, 0) || math.IsInf(yc, 0) || yb == 0 ||
			a.x <= 0 || c.x <= a.x || c.x > neighbourhood*a.x {
			continue
		}
		w := (b.x - a.x) / (c.x - a.x)
		r := (yb - ((1-w)*ya + w*yc)) / yb
		ss += r * r / (1 + (1-w)*(1-w) + w*w)
		m++
	}
	if m < 3 {
		return 0, 0
	}
	return math.Sqrt(ss / float64(m)), m
}

// fitScatter is the root mean square of term j's levels' relative residuals about their
// monotone fit; it understates the scatter (the fit follows the noise), so it is the
// fallback for levels too spread out for neighbourScatter.
func fitScatter(pts []limitPoint, j int) (rel float64, dof int) {
	ys, ws := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		se := (p.lo[j] + p.hi[j]) / 2
		ys[i], ws[i] = p.v[j], 1/max(se*se, 1e-12)
	}
	f := isotonic(ys, ws)
	var ss float64
	m := 0
	for i := range f {
		if !math.IsInf(ys[i], 0) && f[i] != 0 && !math.IsInf(f[i], 0) {
			r := (ys[i] - f[i]) / f[i]
			ss, m = ss+r*r, m+1
		}
	}
	if m < 3 {
		return 0, 0
	}
	return math.Sqrt(ss / float64(m-1)), m - 1
}
