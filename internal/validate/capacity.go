package validate

import (
	"context"
	"fmt"
	"math"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/search"
)

// Capacity is a row's capacity question answered by the simulator: the highest Poisson
// rate, to 5 %, at which the row's deployment meets its P99 limits and keeps up, against
// the rate the submitter found (Limits.SubmittedRate). ErrorPct is (predicted − submitted)
// / submitted in %: an over-prediction is a fleet bought too small.
type Capacity struct {
	SubmittedRate float64 `json:"submitted_rate"`
	PredictedRate float64 `json:"predicted_rate"`
	ErrorPct      float64 `json:"error_pct"`
	// Probes are the rates simulated, in order, and whether each met the limits.
	Probes []CapacityProbe `json:"probes"`
}

// CapacityProbe is one rate a capacity search simulated.
type CapacityProbe struct {
	Rate      float64 `json:"rate"`
	Met       bool    `json:"met"`
	TTFTP99Ms float64 `json:"ttft_p99_ms"`
	TPOTP99Ms float64 `json:"tpot_p99_ms"`
	// Oversaturated: the level fell behind (its backlog kept growing), as its verdict says.
	Oversaturated bool `json:"oversaturated,omitempty"`
	// Reason is why the level's verdict did not pass, as summary.json's slo.reason says it.
	Reason string `json:"reason,omitempty"`
}

// capacityReach bounds the search at this many times the submitted rate.
const capacityReach = 4

// The figures a capacity probe reports (CapacityProbe's TTFT and TPOT), and derives alone.
const probeTTFT, probeTPOT = "ttft_ms.p99", "tpot_ms.p99"

var probeFigures = []string{probeTTFT, probeTPOT}

// FindCapacity answers row r's capacity question (r.Limits): it grows the Poisson rate
// from the submitted one by half again until the limits are missed, or halves it from there
// down, then bisects to within 5 %, each probe the row's workload at that rate as long as
// the row's own run (openLoopRequests), judged as a run's level with the limits as its SLO
// terms (a level that fell behind fails whatever its figures). Nil when the row states no
// limits or the simulator refuses it.
func FindCapacity(ctx context.Context, r Row, seed int64, tmp string) (*Capacity, error) {
	lim := r.Limits
	if lim == nil || r.Skip != "" || !(lim.SubmittedRate > 0) || r.Workload.Rate == 0 {
		return nil, nil
	}
	c := &Capacity{SubmittedRate: lim.SubmittedRate}
	refused := false
	probe := func(rate float64) (bool, error) {
		w := r.Workload
		w.Rate = rate
		w.Requests, w.Warmup = openLoopRequests(rate)
		lv, skip, err := simulateLevel(ctx, r, w, lim.slo(), probeFigures, seed, tmp)
		if err != nil || skip != "" {
			refused = skip != ""
			return false, err
		}
		p := CapacityProbe{Rate: rate, Oversaturated: metrics.Behind(lv.SLO)}
		figs, err := Figures(lv, map[string]float64{probeTTFT: 0, probeTPOT: 0})
		if err != nil {
			return false, err
		}
		p.TTFTP99Ms, p.TPOTP99Ms = figs[probeTTFT], figs[probeTPOT]
		if v := lv.SLO; v == nil {
			return false, fmt.Errorf("row %s: the probe at %g req/s has no verdict", r.ID, rate)
		} else if p.Met = v.Pass; !p.Met {
			p.Reason = v.Reason
		}
		c.Probes = append(c.Probes, p)
		return p.Met, nil
	}
	within := func(lo, hi float64) bool { return lo > 0 && hi <= lo*1.05 }
	geo := func(lo, hi float64) float64 { return math.Sqrt(lo * hi) }
	met, err := probe(lim.SubmittedRate)
	if err != nil || refused {
		return nil, err
	}
	var rate float64
	if met {
		rate, err = search.Grow(ctx, lim.SubmittedRate, 1.5*lim.SubmittedRate, capacityReach*lim.SubmittedRate,
			func(x float64) float64 { return 1.5 * x }, geo, within, probe)
	} else {
		// Halve until a rate meets the limits, then bisect between it and the last missed.
		hi, lo := lim.SubmittedRate, lim.SubmittedRate/2
		for ; lo >= lim.SubmittedRate/64; hi, lo = lo, lo/2 {
			if met, err = probe(lo); err != nil || met {
				break
			}
		}
		if err == nil && met {
			rate, err = search.Bisect(ctx, lo, hi, geo, within, probe)
		}
	}
	if err != nil || refused {
		return nil, err
	}
	c.PredictedRate = rate
	c.ErrorPct = 100 * (rate - lim.SubmittedRate) / lim.SubmittedRate
	return c, ctx.Err()
}

// CapacitySummary is the capacity answers over the rows that have one: the median of
// |error| and how many were over-predicted by more than 25 % (a fleet bought too small).
type CapacitySummary struct {
	Rows            int     `json:"rows"`
	MedianAbsPct    float64 `json:"median_abs_pct"`
	MedianPct       float64 `json:"median_pct"`
	OverPredicted25 int     `json:"over_predicted_25"`
}

// SummariseCapacity summarises results' capacity answers; nil when none has one.
func SummariseCapacity(results []Result) *CapacitySummary {
	var abs, signed []float64
	s := &CapacitySummary{}
	for _, r := range results {
		if r.Capacity == nil {
			continue
		}
		e := r.Capacity.ErrorPct
		abs, signed = append(abs, math.Abs(e)), append(signed, e)
		if e > 25 {
			s.OverPredicted25++
		}
	}
	if len(abs) == 0 {
		return nil
	}
	s.Rows, s.MedianAbsPct, s.MedianPct = len(abs), metrics.Median(abs), metrics.Median(signed)
	return s
}
