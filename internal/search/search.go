// Package search finds the largest load that meets a verdict (llmbench run --search, and
// plan's capacity, replica and headroom searches): grow the load until a verdict fails,
// then bisect between the largest passing and the smallest failing load. It knows nothing of HTTP or levels: a Probe runs
// one load and says whether it passed.
package search

import (
	"context"
	"math"
	"slices"
)

// Axis is what the search varies.
type Axis string

// Axes.
const (
	Concurrency Axis = "concurrency" // integer loads; stops when the bracket is one apart
	Rate        Axis = "rate"        // real loads (req/s); stops within 5%
)

// Probe runs one load and reports whether its verdict passed. An error stops the search.
type Probe func(load float64) (passed bool, err error)

// Largest probes loads 1, 2, 4, ... (capped at limit) until one fails, then bisects to the
// nearest integer concurrency or to within 5% of the rate (or below 0.01 req/s when nothing
// passed). It returns the largest load that passed (0 when none did) and stops early, with
// what it has, when ctx is done. When limit itself passes, the answer is at least limit.
func Largest(ctx context.Context, axis Axis, limit float64, probe Probe) (float64, error) {
	double := func(load float64) float64 { return 2 * load }
	if axis == Concurrency {
		return Grow(ctx, 0, 1, limit, double, func(lo, hi float64) float64 { return math.Floor((lo + hi) / 2) },
			func(lo, hi float64) bool { return hi-lo <= 1 }, probe)
	}
	return Grow(ctx, 0, 1, limit, double, func(lo, hi float64) float64 { return (lo + hi) / 2 },
		func(lo, hi float64) bool { return (lo > 0 && hi <= lo*1.05) || (lo == 0 && hi <= 0.01) }, probe)
}

// Grow is the one grow-then-bisect of every search: from lo, a load taken to pass, it
// probes first, then next of the last load probed (each capped at limit), until one fails,
// then bisects between the largest passing and that one (Bisect with mid and done). It
// returns the largest load that passed: limit when limit itself passes, lo when first
// fails and nothing between passes. It stops early, with what it has, when ctx is done or a
// probe errs.
func Grow(ctx context.Context, lo, first, limit float64, next func(float64) float64, mid func(lo, hi float64) float64,
	done func(lo, hi float64) bool, probe Probe) (float64, error) {
	for load := first; ; load = next(load) {
		if ctx.Err() != nil {
			return lo, nil
		}
		load = math.Min(load, limit)
		ok, err := probe(load)
		if err != nil {
			return lo, err
		}
		if !ok {
			return Bisect(ctx, lo, load, mid, done, probe)
		}
		lo = load
		if load >= limit {
			return lo, nil // the bound passes: the answer is at least limit
		}
	}
}

// Bisect narrows a bracket whose lo passed and hi failed, probing mid(lo, hi), until
// done(lo, hi), and returns the largest load that passed (lo as it then is). It stops
// early, with what it has, when ctx is done or a probe errs.
func Bisect(ctx context.Context, lo, hi float64, mid func(lo, hi float64) float64, done func(lo, hi float64) bool, probe Probe) (float64, error) {
	for ctx.Err() == nil && !done(lo, hi) {
		m := mid(lo, hi)
		ok, err := probe(m)
		if err != nil {
			return lo, err
		}
		if ok {
			lo = m
		} else {
			hi = m
		}
	}
	return lo, nil
}

// RefineLevels is how many levels a search spends after its bisection where the estimated
// limit's interval is widest (Widest), at most.
const RefineLevels = 4

// Widest is the next load to probe inside an estimated limit's interval [lo, hi], given the
// loads already run: the middle of the widest gap between them and the interval's ends. It
// reports false when that gap is already narrow — one concurrency apart, or 5% of a rate —
// so probing more would not narrow the interval by much.
func Widest(axis Axis, lo, hi float64, run []float64) (float64, bool) {
	edges := []float64{lo, hi}
	for _, x := range run {
		if x > lo && x < hi {
			edges = append(edges, x)
		}
	}
	slices.Sort(edges)
	best, at := 0.0, 0.0
	for i := 1; i < len(edges); i++ {
		if g := edges[i] - edges[i-1]; g > best {
			best, at = g, (edges[i]+edges[i-1])/2
		}
	}
	if axis == Concurrency {
		at = math.Round(at)
		if best < 2 || slices.Contains(run, at) || at < 1 {
			return 0, false
		}
		return at, true
	}
	if best <= 0.05*at || at <= 0 {
		return 0, false
	}
	return at, true
}
