package metrics

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/search"
)

func TestIsotonicPoolsViolators(t *testing.T) {
	got := isotonic([]float64{1, 3, 2, 4, math.Inf(1), 5}, []float64{1, 1, 1, 1, 1, 1})
	want := []float64{1, 2.5, 2.5, 4, math.Inf(1), math.Inf(1)}
	if !slices.Equal(got, want) {
		t.Errorf("isotonic = %v, want %v", got, want)
	}
}

// levelWithP99 is a level whose TPOT P99 is v ms with the 95% interval [lo, hi].
func levelWithP99(v, lo, hi float64) Level {
	var l Level
	l.Metrics.Set(KeyTPOT, Stats{Count: 400, Percentiles: []Percentile{{P: 99, Value: v, Lo: lo, Hi: hi}}})
	return l
}

// TestEstimateLimitCrossesTheBound: the estimate is where the fitted curve crosses the
// bound, between the last level under it and the first over it; its interval holds it; a
// level that could not keep up is above the bound; open sides say so.
func TestEstimateLimitCrossesTheBound(t *testing.T) {
	slos := []SLO{{Kind: SLOPercentile, Metric: KeyTPOT, P: 99, Limit: 30 * time.Millisecond}}
	loads := []Load{{Concurrency: 8}, {Concurrency: 16}, {Concurrency: 32}, {Concurrency: 64}}
	levels := []Level{levelWithP99(10, 9.8, 10.2), levelWithP99(20, 19.5, 20.5), levelWithP99(40, 39, 41), {}}
	e := EstimateLimit(levels, loads, []bool{false, false, false, true}, slos)
	if e == nil || e.Value == nil || math.Abs(*e.Value-24) > 1e-9 {
		t.Fatalf("estimate %+v, want 24 (20 ms at 16, 40 at 32: 30 ms at 24)", e)
	}
	if e.CI90[0] == nil || e.CI90[1] == nil || *e.CI90[0] > 24 || *e.CI90[1] < 24 || *e.CI90[0] < 16 || *e.CI90[1] > 32 {
		t.Errorf("ci90 %v does not hold 24 within the levels around it", e.CI90)
	}
	if e.Term != "tpot:p99<=30ms" {
		t.Errorf("term %q", e.Term)
	}
	// Every level passes: the limit is above the highest load run.
	e = EstimateLimit(levels[:2], loads[:2], nil, slos)
	if e.Value != nil || e.CI90[1] != nil || e.Note == "" {
		t.Errorf("all passing: %+v, want no value, an open upper side and a note", e)
	}
	// None passes: below the lowest.
	e = EstimateLimit(levels[2:3], loads[2:3], nil, slos)
	if e.Value != nil || e.CI90[0] != nil || e.Note == "" {
		t.Errorf("none passing: %+v, want no value, an open lower side and a note", e)
	}
	// Mixed axes have no one curve.
	if e := EstimateLimit(levels[:2], []Load{{Concurrency: 8}, {Rate: 2}}, nil, slos); e != nil {
		t.Errorf("mixed axes gave %+v", e)
	}
}

// TestEstimateLimitIntervalCoversTheLimit: levels whose own intervals say nothing of their
// noise (requests decoded together tie: each level's interval has zero width), placed as a
// search places them, each off a straight line by 2 % at random: over many such runs the
// 90 % interval holds the line's crossing about as often as it says. A monotone fit of the
// levels' own values, drawn about itself, held it in 61 %.
func TestEstimateLimitIntervalCoversTheLimit(t *testing.T) {
	slos := []SLO{{Kind: SLOPercentile, Metric: KeyTPOT, P: 99, Limit: 30 * time.Millisecond}}
	xs := []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 192, 224, 208, 200, 204, 202, 196, 198}
	curve := func(x float64) float64 { return 10 + 0.1*x } // crosses 30 ms at 200
	rng := rand.New(rand.NewPCG(7, 8))
	const runs = 200
	held := 0
	for range runs {
		levels := make([]Level, len(xs))
		loads := make([]Load, len(xs))
		for i, x := range xs {
			v := curve(x) * (1 + 0.02*rng.NormFloat64())
			levels[i], loads[i] = levelWithP99(v, v, v), Load{Concurrency: int(x)}
		}
		e := EstimateLimit(levels, loads, nil, slos)
		if e == nil || e.CI90[0] == nil || e.CI90[1] == nil {
			t.Fatalf("estimate %+v: want both sides bounded", e)
		}
		if *e.CI90[0] <= 200 && 200 <= *e.CI90[1] {
			held++
		}
	}
	if f := float64(held) / runs; f < 0.82 || f > 0.96 {
		t.Errorf("the 90%% interval held the limit in %d of %d runs (%.0f%%), want 82-96%%", held, runs, 100*f)
	}
}

// TestEstimateLimitIntervalCoversASearch: levels a search places by their own verdicts (its
// bisection) straddle the bound in load order, so their distances to their neighbours' line
// understate their noise; read from the search's other levels (its doubling and its grid
// about the answer, search.Grid), the scatter is the levels' own and the 90% interval holds
// the limit about as often as it says (186 of these 200 runs, 93%). Read from every level,
// it held it in 175 (88%), which the lower bound, 89%, fails; with the search's earlier
// refinement (levels placed inside the estimate's interval) it fell further.
func TestEstimateLimitIntervalCoversASearch(t *testing.T) {
	slos := []SLO{{Kind: SLOPercentile, Metric: KeyTPOT, P: 99, Limit: 30 * time.Millisecond}}
	curve := func(x float64) float64 { return 22 + 0.04*x } // crosses 30 ms at 200, as flat as a decode step's time
	rng := rand.New(rand.NewPCG(7, 8))
	const runs = 200
	held, heldAll := 0, 0
	for range runs {
		var (
			levels []Level
			loads  []Load
			placed []Placement
			xs     []float64
		)
		failed := false
		probe := func(x float64) (bool, error) {
			v := curve(x) * (1 + 0.015*rng.NormFloat64())
			levels, loads, xs = append(levels, levelWithP99(v, v, v)), append(loads, Load{Concurrency: int(x)}), append(xs, x)
			p := PlacedFixed
			if failed {
				p = PlacedByVerdict
			}
			placed = append(placed, p)
			failed = failed || v > 30
			return v <= 30, nil
		}
		best, _ := search.Largest(context.Background(), search.Concurrency, 1024, probe)
		for _, x := range search.Grid(search.Concurrency, best, 1024, slices.Clone(xs)) {
			failed = false
			_, _ = probe(x)
		}
		if holds(EstimateLimitPlaced(levels, loads, nil, placed, slos), 200) {
			held++
		}
		if holds(EstimateLimit(levels, loads, nil, slos), 200) {
			heldAll++
		}
	}
	t.Logf("held %d of %d; read from every level, %d", held, runs, heldAll)
	if f := float64(held) / runs; f < 0.89 || f > 0.97 {
		t.Errorf("the 90%% interval held the limit in %d of %d runs (%.0f%%), want 89-97%%", held, runs, 100*f)
	}
}

// holds reports whether e's interval holds x, an open side holding all beyond it.
func holds(e *LimitEstimate, x float64) bool {
	return e != nil && (e.CI90[0] == nil || *e.CI90[0] <= x) && (e.CI90[1] == nil || x <= *e.CI90[1])
}
