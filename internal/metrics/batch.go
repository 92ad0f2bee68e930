package metrics

import (
	"math"
	"slices"
)

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
// give — and the mean has none; ci_method says which each interval is. Every interval is
// clamped to the sample's range [min, max], and one whose first batches are outliers (a
// closed loop's first wave) is of the steady part (MethodBatchMeansSteady).
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
	MethodBatchMeans = "batch_means"
	// MethodBatchMeansSteady is batch means over the level's steady part: its leading
	// batches (a closed loop's first wave) were outliers and are left out (steadyFrom).
	MethodBatchMeansSteady = "batch_means_steady"
	MethodOrderStatistics  = "order_statistics"
	minBatchSamplesForMean = 10
)

// bucketBatches is every registry metric's batches over the buckets accs (batchDists).
func bucketBatches(accs []*windowAcc) [][]*Dist {
	b := make([][]*Dist, len(Registry))
	for i := range b {
		b[i] = batchDists(accs, i)
	}
	return b
}

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
	var cur []*Dist
	var n uint64
	for _, acc := range accs {
		if acc == nil || acc.dists[i].Count() == 0 {
			continue
		}
		cur = append(cur, acc.dists[i])
		if n += acc.dists[i].Count(); n >= per {
			out = append(out, mergeAll(cur))
			cur, n = cur[:0], 0
		}
	}
	if n > 0 {
		if len(out) == 0 {
			return []*Dist{mergeAll(cur)}
		}
		out[len(out)-1] = mergeAll(append(cur, out[len(out)-1])) // a short last batch joins the one before
	}
	return out
}

// batchIntervals replaces s's intervals by batch means over batches where they can be had.
// Every interval is then clamped to the sample's range [Min, Max] (an interval of a
// non-negative figure never goes below zero, nor any beyond what was observed), and a
// statistic whose leading batches are outliers (a closed loop's first wave, steadyFrom) gets
// the interval of the steady part, by MethodBatchMeansSteady.
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
		s.MeanLo, s.MeanHi, s.MeanMethod = batchInterval(s.Mean, est, batches, func(d *Dist) float64 {
			m, _ := d.MeanStd()
			return m
		})
		s.MeanLo, s.MeanHi = clampTo(s.MeanLo, s.MeanHi, s.Min, s.Max)
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
		p.Lo, p.Hi, p.Method = batchInterval(p.Value, est, batches, func(d *Dist) float64 {
			v, _ := d.Percentile(p.P)
			return v
		})
		p.Lo, p.Hi = clampTo(p.Lo, p.Hi, s.Min, s.Max)
	}
}

// batchInterval is the batch-means interval of one statistic from its batches' estimates
// est: over every batch, centred on the whole level's estimate centre; or, where leading
// batches are outliers (steadyFrom), over the steady batches alone, centred on their pooled
// estimate (of, applied to the steady batches merged).
func batchInterval(centre float64, est []float64, batches []*Dist, of func(*Dist) float64) (lo, hi float64, method string) {
	from := steadyFrom(est)
	if from == 0 {
		lo, hi = tInterval(centre, est)
		return lo, hi, MethodBatchMeans
	}
	lo, hi = tInterval(of(mergeAll(batches[from:])), est[from:])
	return lo, hi, MethodBatchMeansSteady
}

// steadyFrom is the number of leading batches to leave out of a batch-means interval: a
// closed loop's first wave (every slot's first request, sent at once into an idle server
// that queues them) or a cold start gives the first batches estimates far from the rest,
// and one such batch among 20 makes the interval many times wider than the steady part's
// spread (a TTFT median of 141 ms got [−599, 881]). A leading batch is an outlier when its
// estimate lies more than outlierMADs robust standard deviations (1.4826 × the median
// absolute deviation of the later batches), and more than twice as far as any later batch,
// from the later batches' median; at most
// maxFirstWave batches are left out and MinBatches always remain; 0 when none is an outlier.
func steadyFrom(est []float64) int {
	limit := min(maxFirstWave, len(est)-MinBatches)
	if limit <= 0 {
		return 0
	}
	rest := slices.Clone(est[limit:])
	med := median(rest)
	far := 0.0
	for i, x := range rest {
		rest[i] = math.Abs(x - med)
		far = max(far, rest[i])
	}
	scale := 1.4826 * median(rest)
	if scale <= 0 || math.IsNaN(scale) {
		return 0
	}
	bound := max(outlierMADs*scale, 2*far)
	n := 0
	for n < limit && math.Abs(est[n]-med) > bound {
		n++
	}
	return n
}

const (
	// maxFirstWave is the most leading batches (of BatchCount) steadyFrom leaves out.
	maxFirstWave = 5
	// outlierMADs is how many robust standard deviations from the later batches' median
	// make a leading batch an outlier: far beyond what a stationary level's batches spread
	// (a batch mean of 20 nearly normal ones lies beyond 5 σ about once in 10⁶ levels).
	outlierMADs = 5
)

// median of xs (reordered).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}

// clampTo clamps an interval to [lo, hi], the sample's range: the true value of a
// percentile or mean lies within the range of the population, and the sample's range is the
// best bound of that the level has (an interval below the smallest observed latency, below
// zero for a non-negative figure, says nothing). Infinite sides (unbounded) stay.
func clampTo(a, b, lo, hi float64) (float64, float64) {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return a, b
	}
	if !math.IsInf(a, 0) {
		a = min(max(a, lo), hi)
	}
	if !math.IsInf(b, 0) {
		b = min(max(b, lo), hi)
	}
	return a, b
}

// ByBatchMeans reports whether an interval's method accounts for correlated requests
// (MethodBatchMeans or MethodBatchMeansSteady).
func ByBatchMeans(method string) bool {
	return method == MethodBatchMeans || method == MethodBatchMeansSteady
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
