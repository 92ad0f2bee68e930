// Package search finds the largest load that meets a verdict (llmbench run --search, and
// plan's capacity, replica and headroom searches): grow the load until a verdict fails,
// then bisect between the largest passing and the smallest failing load. It knows nothing of HTTP or levels: a Probe runs
// one load and says whether it passed.
package search

import (
	"context"
	"fmt"
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

// ParseAxis reads an axis by its name.
func ParseAxis(s string) (Axis, error) {
	if a := Axis(s); a == Concurrency || a == Rate {
		return a, nil
	}
	return "", fmt.Errorf("%q is not concurrency or rate", s)
}

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

// RefineLevels is how many levels a search spends after its bisection on a grid about its
// answer (Grid).
const RefineLevels = 5

// gridStep is the grid's spacing, relative to the search's answer.
const gridStep = 0.01

// Grid is the loads a search runs after its bisection, about its answer best (the largest
// load that passed), given the loads already run: RefineLevels loads gridStep apart
// (relative to best) from two steps below it to three above, a load already run moved
// outward to the nearest one not run (by one concurrency; a rate moves by a step), none
// above limit or below the least load. Their loads depend on best only, not on their own
// verdicts or values, so their distances to the line through their neighbours on the grid
// are their noise (metrics.PlacedFixed), where a bisection's levels, each placed by the
// verdicts before it, straddle the bound in order and look less noisy than they are. None
// when best is 0 (nothing passed) or limit (the bound passed: nothing to refine).
func Grid(axis Axis, best, limit float64, run []float64) []float64 {
	if best <= 0 || best >= limit {
		return nil
	}
	taken := slices.Clone(run)
	var out []float64
	for _, k := range []float64{-2, -1, 1, 2, 3} {
		x := best * (1 + k*gridStep)
		unit := best * gridStep
		if axis == Concurrency {
			x, unit = math.Round(x), 1
		}
		dir := math.Copysign(1, k)
		for slices.Contains(taken, x) {
			x += dir * unit
		}
		least := 1.0
		if axis == Rate {
			least = 0
		}
		if x > limit || x < least || (axis == Rate && x <= 0) {
			continue
		}
		taken = append(taken, x)
		out = append(out, x)
	}
	return out
}
