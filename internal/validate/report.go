package validate

import (
	"cmp"
	"context"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/workload"
)

// Headline are the figures the console shows per row and per group; validation.json has
// every figure a row measured.
var Headline = []string{"ttft_ms.p50", "ttft_ms.p99", "tpot_ms.p50", "tpot_ms.p99", "e2el_ms.p50", "output_throughput"}

// Report is validation.json.
type Report struct {
	Seed   int64         `json:"seed"`
	Tables []string      `json:"tables"`
	Rows   []Result      `json:"rows"`
	Groups []GroupResult `json:"groups"`
	// Capacity summarises the rows' capacity answers (validate --capacity).
	Capacity *CapacitySummary `json:"capacity,omitempty"`
}

// GroupResult is a group's error per figure over its simulated rows.
type GroupResult struct {
	predict.Group
	Rows    int                    `json:"rows"`    // simulated
	Skipped int                    `json:"skipped"` // skipped, with reasons in rows[]
	Figures map[string]FigureError `json:"figures"`
}

// FigureError is one figure's error over a group's rows: the median of |error| and the
// worst error (the largest |error|, with its sign).
type FigureError struct {
	N         int     `json:"n"`
	MedianPct float64 `json:"median_abs_pct"`
	WorstPct  float64 `json:"worst_pct"`
}

// Run simulates every row, workers rows at a time (0: one per CPU), and with capacity
// answers the capacity question of each row that states its limits. Rows are handed out
// largest first (Workload.work), so that no worker is left with a large row when the
// others are done; the results are in the rows' order.
func Run(ctx context.Context, rows []Row, seed int64, workers int, capacity bool) ([]Result, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	tmp, err := os.MkdirTemp("", "llmbench-validate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	results := make([]Result, len(rows))
	errs := make([]error, len(rows))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				results[i], errs[i] = Simulate(ctx, rows[i], seed, tmp)
				if capacity && errs[i] == nil && results[i].Skipped == "" {
					results[i].Capacity, errs[i] = FindCapacity(ctx, rows[i], seed, tmp)
				}
			}
		})
	}
	order := make([]int, len(rows))
	work := make([]float64, len(rows))
	for i, r := range rows {
		order[i] = i
		if r.Skip == "" {
			work[i] = r.Workload.work()
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(work[b], work[a]) })
	for _, i := range order {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, ctx.Err()
}

// work estimates a row's simulation work, for ordering rows only: the tokens its requests
// generate (the simulator's inner loop runs a sequence a token) and a unit a request for its
// own handling, warm-up ones included. A workload that does not parse counts none
// (Simulate says what is wrong).
func (w Workload) work() float64 {
	out, err := workload.ParseDist(w.OutputTokens)
	if err != nil {
		return 0
	}
	return float64(w.Requests+w.Warmup) * (1 + out.Mean())
}

// Groups summarises results by group, in the order groups first appear.
func Groups(results []Result) []GroupResult {
	var order []predict.Group
	by := map[predict.Group]*GroupResult{}
	errs := map[predict.Group]map[string][]float64{}
	for _, r := range results {
		g, ok := by[r.Group]
		if !ok {
			g = &GroupResult{Group: r.Group, Figures: map[string]FigureError{}}
			by[r.Group], errs[r.Group] = g, map[string][]float64{}
			order = append(order, r.Group)
		}
		if r.Skipped != "" {
			g.Skipped++
			continue
		}
		g.Rows++
		for k, e := range r.ErrorPct {
			errs[r.Group][k] = append(errs[r.Group][k], e)
		}
	}
	out := make([]GroupResult, 0, len(order))
	for _, k := range order {
		g := by[k]
		for fig, es := range errs[k] {
			g.Figures[fig] = summarise(es)
		}
		out = append(out, *g)
	}
	return out
}

func summarise(es []float64) FigureError {
	abs := make([]float64, len(es))
	worst := 0.0
	for i, e := range es {
		abs[i] = math.Abs(e)
		if abs[i] > math.Abs(worst) {
			worst = e
		}
	}
	return FigureError{N: len(abs), MedianPct: metrics.Median(abs), WorstPct: worst}
}

// Validate simulates rows as Run does and summarises them as validation.json holds them:
// each row's interval, the groups and the capacity answers. tables say where the rows came
// from.
func Validate(ctx context.Context, rows []Row, tables []string, seed int64, workers int, capacity bool) (*Report, error) {
	results, err := Run(ctx, rows, seed, workers, capacity)
	if err != nil {
		return nil, err
	}
	SetIntervals(results)
	return &Report{Seed: seed, Tables: tables, Rows: results, Groups: Groups(results), Capacity: SummariseCapacity(results)}, nil
}
