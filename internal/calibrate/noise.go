package calibrate

import (
	"math"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

var nan = math.NaN()

// stepNoise estimates the coefficient of variation of a level's step times from the
// spread of each request's one-token gaps about that request's own median gap: the ratio
// removes what differs between requests (batch, context), and the median absolute
// deviation of its logarithm ignores the rare long gaps of a prefill sharing the step,
// which the simulator models itself. For a log-normal factor of log-sd σ,
// MAD = 0.6745 σ and CV = sqrt(exp(σ²) − 1). NaN with fewer than 50 gaps. paces are the
// requests' median gaps in ms (those with 8 gaps or more): each one's pace (TwoSpeeds).
func stepNoise(recs []record.Record) (noise float64, paces []float64) {
	var logs []float64
	var gaps []float64
	for i := range recs {
		r := &recs[i]
		if r.Error != nil || r.Warmup {
			continue
		}
		gaps = gaps[:0]
		r.Events.EachGap(func(us int64, n int) {
			if n == 1 && us > 0 {
				gaps = append(gaps, float64(us))
			}
		})
		if len(gaps) < 8 {
			continue
		}
		m := metrics.Median(gaps)
		paces = append(paces, m/1000)
		for _, g := range gaps {
			logs = append(logs, math.Log(g/m))
		}
	}
	if len(logs) < 50 {
		return nan, paces
	}
	for i, l := range logs {
		logs[i] = math.Abs(l)
	}
	sigma := metrics.Median(logs) / 0.6745
	return math.Sqrt(math.Expm1(sigma * sigma)), paces
}
