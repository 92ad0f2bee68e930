package metrics

import (
	"math"
	"slices"
)

// Significant is the two-sided p-value of the Mann–Whitney U test that a and b come from the
// same distribution, by the normal approximation with tie correction and continuity
// correction. A small p-value (< 0.05) means the difference is larger than noise. Returns 1
// when either sample is empty or every value is equal.
func Significant(a, b []float64) (pValue float64) {
	if len(a) == 0 || len(b) == 0 {
		return 1
	}
	as, bs := slices.Clone(a), slices.Clone(b)
	slices.Sort(as)
	slices.Sort(bs)
	type run struct {
		v      float64
		na, nb uint64
	}
	var runs []run
	i, j := 0, 0
	for i < len(as) || j < len(bs) {
		var v float64
		switch {
		case j >= len(bs) || (i < len(as) && as[i] <= bs[j]):
			v = as[i]
		default:
			v = bs[j]
		}
		r := run{v: v}
		for i < len(as) && as[i] == v {
			r.na++
			i++
		}
		for j < len(bs) && bs[j] == v {
			r.nb++
			j++
		}
		runs = append(runs, r)
	}
	cs := make([][3]float64, len(runs))
	for k, r := range runs {
		cs[k] = [3]float64{r.v, float64(r.na), float64(r.nb)}
	}
	return mannWhitney(cs, float64(len(a)), float64(len(b)))
}

// SignificantDist is Significant on two exact distributions, without materialising samples
// (ITL of a large run has ~10^8 of them).
func SignificantDist(a, b *Dist) float64 {
	if a.Count() == 0 || b.Count() == 0 {
		return 1
	}
	a.build()
	b.build()
	var cs [][3]float64
	i, j := 0, 0
	for i < len(a.sorted) || j < len(b.sorted) {
		switch {
		case j >= len(b.sorted) || (i < len(a.sorted) && less(a.sorted[i].v, b.sorted[j].v)):
			cs = append(cs, [3]float64{0, float64(a.sorted[i].c), 0})
			i++
		case i >= len(a.sorted) || less(b.sorted[j].v, a.sorted[i].v):
			cs = append(cs, [3]float64{0, 0, float64(b.sorted[j].c)})
			j++
		default:
			cs = append(cs, [3]float64{0, float64(a.sorted[i].c), float64(b.sorted[j].c)})
			i++
			j++
		}
	}
	return mannWhitney(cs, float64(a.Count()), float64(b.Count()))
}

// mannWhitney takes tie groups in ascending value order ({value, count in a, count in b}).
func mannWhitney(groups [][3]float64, na, nb float64) float64 {
	n := na + nb
	var rank, ra, ties float64 // rank: samples before this group
	for _, g := range groups {
		t := g[1] + g[2]
		mid := rank + (t+1)/2 // average rank of the tie group
		ra += g[1] * mid
		ties += t*t*t - t
		rank += t
	}
	u := ra - na*(na+1)/2
	mu := na * nb / 2
	sigma2 := na * nb / 12 * ((n + 1) - ties/(n*(n-1)))
	if sigma2 <= 0 {
		return 1
	}
	z := math.Abs(u-mu) - 0.5
	if z < 0 {
		z = 0
	}
	z /= math.Sqrt(sigma2)
	return math.Erfc(z / math.Sqrt2)
}
