package metrics

import "math"

// Intervals that hold for correlated requests: batch means.
//
// Requests of one level are not independent: requests in one batch of the server share
// its step times, a burst of arrivals slows every request it meets, a stream's token gaps
// follow one another. The order-statistics interval of a percentile (stats.go) and the
// textbook interval of a mean assume independent samples, and with positively correlated
// samples they are too narrow. Batch means (Law & Kelton, "Simulation Modeling and
// Analysis", §9.5.3; Schmeiser 1982) account for that without modelling the correlation:
// the level's samples, in time order, are cut into k consecutive batches; each batch gives
// its own estimate θ_j of the statistic (its mean, its percentile); when batches are long
// against the correlation, the θ_j are nearly independent and nearly normal, so
//
//	θ ± t(0.975, k−1) · sd(θ_1..θ_k) / √k
//
// is a 95% interval, centred on the whole sample's estimate θ. llmbench cuts the level's
// time buckets (window.go, by done time) into BatchCount batches of about equal sample
// counts. An interval by batch means needs at least MinBatches batches, each with enough
// samples for its own estimate: 10 for a mean, ⌈5 / min(q, 1 − q)⌉ for the q-quantile (10
// for P50, 50 for P90, 500 for P99), so that each batch's percentile is not simply its
// extreme. Where that does not hold (short levels, far tails), the percentile keeps the
// order-statistics interval — exact for independent samples, and the best the sample can
// give — and the mean has none; ci_method says which each interval is.
const (
	BatchCount = 20
	MinBatches = 10
)

// PrecisionRequests is how many measured requests a level needs for an interval by batch
// means of every percentile its SLOs' verdict terms bound (BatchCount batches of
// ⌈5 / min(q, 1 − q)⌉ samples each: 10,000 for a P99, 1,000 for a P90), at most
// maxPrecisionRequests (a deeper tail keeps the order-statistics interval); 0 when no term
// bounds a percentile.
func PrecisionRequests(slos []SLO) int {
	n := 0
	for _, s := range slos {
		if s.Kind != SLOPercentile || math.IsNaN(s.P) {
			continue
		}
		q := s.P / 100
		n = max(n, BatchCount*int(math.Ceil(5/max(min(q, 1-q), 1e-9))))
	}
	return min(n, maxPrecisionRequests)
}

const maxPrecisionRequests = 20_000

// CI methods, as ci_method names them.
const (
	MethodBatchMeans       = "batch_means"
	MethodOrderStatistics  = "order_statistics"
	minBatchSamplesForMean = 10
)

// batchDists merges the buckets' distributions of metric i into about BatchCount batches
// of equal sample counts, in order.
func batchDists(accs []*windowAcc, i int) []*Dist {
	var total uint64
	for _, acc := range accs {
		if acc != nil {
			total += acc.dists[i].Count()
		}
	}
	if total == 0 {
		return nil
	}
	per := max(total/BatchCount, 1)
	var out []*Dist
	cur := newSparseDist()
	for _, acc := range accs {
		if acc == nil || acc.dists[i].Count() == 0 {
			continue
		}
		cur.Merge(acc.dists[i])
		if cur.Count() >= per {
			out = append(out, cur)
			cur = newSparseDist()
		}
	}
	if cur.Count() > 0 {
		if len(out) == 0 {
			return []*Dist{cur}
		}
		out[len(out)-1].Merge(cur) // a short last batch joins the one before
	}
	return out
}

// batchIntervals replaces s's intervals by batch means over batches where they can be had.
func batchIntervals(s *Stats, batches []*Dist) {
	s.MeanLo, s.MeanHi = math.NaN(), math.NaN()
	if len(batches) < MinBatches || s.Count == 0 {
		return
	}
	smallest := batches[0].Count()
	for _, b := range batches {
		smallest = min(smallest, b.Count())
	}
	est := make([]float64, len(batches))
	if smallest >= minBatchSamplesForMean {
		for j, b := range batches {
			est[j], _ = b.MeanStd()
		}
		s.MeanLo, s.MeanHi = tInterval(s.Mean, est)
		s.MeanMethod = MethodBatchMeans
	}
	for k := range s.Percentiles {
		p := &s.Percentiles[k]
		q := p.P / 100
		need := uint64(math.Ceil(5 / max(min(q, 1-q), 1e-9)))
		if smallest < need {
			continue
		}
		for j, b := range batches {
			est[j], _ = b.Percentile(p.P)
		}
		p.Lo, p.Hi = tInterval(p.Value, est)
		p.Method = MethodBatchMeans
	}
}

// tInterval is centre ± t(0.975, k−1) · sd(est) / √k.
func tInterval(centre float64, est []float64) (lo, hi float64) {
	k := len(est)
	_, sd := meanSD(est)
	h := TQuantile975(k-1) * sd / math.Sqrt(float64(k))
	return centre - h, centre + h
}

// meanSD is the mean and the sample standard deviation (ddof = 1) of xs.
func meanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	var k kahan
	for _, x := range xs {
		k.add(x)
	}
	mean = k.sum() / float64(len(xs))
	if len(xs) < 2 {
		return mean, math.NaN()
	}
	var v kahan
	for _, x := range xs {
		v.add((x - mean) * (x - mean))
	}
	return mean, math.Sqrt(v.sum() / float64(len(xs)-1))
}

// t975 holds Student's t 97.5% points for 1..30 degrees of freedom.
var t975 = [...]float64{12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
	2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
	2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423}

// TQuantile975 is the 97.5% point of Student's t with df degrees of freedom (the half-width
// factor of a two-sided 95% interval): a table to 30, then the Cornish–Fisher expansion
// around the normal's 1.95996 (error below 1e-4). NaN for df < 1.
func TQuantile975(df int) float64 {
	switch {
	case df < 1:
		return math.NaN()
	case df <= len(t975):
		return t975[df-1]
	}
	z, n := 1.959964, float64(df)
	z3, z5, z7 := z*z*z, math.Pow(z, 5), math.Pow(z, 7)
	return z + (z3+z)/(4*n) + (5*z5+16*z3+3*z)/(96*n*n) + (3*z7+19*z5+17*z3-15*z)/(384*n*n*n)
}
