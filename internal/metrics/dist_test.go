package metrics

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// numpyPercentile is the reference: a full sort and numpy's "linear" method.
func numpyPercentile(sorted []float64, p float64) float64 {
	h := p / 100 * float64(len(sorted)-1)
	lo := math.Floor(h)
	t := h - lo
	if t == 0 {
		return sorted[int(lo)]
	}
	return lerp(sorted[int(lo)], sorted[int(lo)+1], t)
}

func TestPercentileHandComputed(t *testing.T) {
	d := NewDist()
	for _, v := range []int64{4000, 1000, 3000, 2000} { // 1..4 ms
		d.AddMicros(v)
	}
	for p, want := range map[float64]float64{0: 1, 50: 2.5, 90: 3.7, 100: 4, 25: 1.75} {
		if got, _ := d.Percentile(p); math.Abs(got-want) > 1e-12 {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	mean, std := d.MeanStd()
	if mean != 2.5 || math.Abs(std-math.Sqrt(1.25)) > 1e-12 {
		t.Errorf("mean %v std %v, want 2.5, %v (population std)", mean, std, math.Sqrt(1.25))
	}
	if d.Min() != 1 || d.Max() != 4 {
		t.Errorf("min %v max %v", d.Min(), d.Max())
	}
}

// TestDistEqualsFullSort: exact counts give bit-identical percentiles to sorting every sample.
func TestDistEqualsFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		d := NewDist()
		var all []float64
		for range 1 + rng.IntN(3000) {
			g := rng.Int64N(50_000) - 100 // a few negative values (schedule lag can be)
			n := int64(1 + rng.IntN(4))
			if trial%2 == 0 {
				n = 1
			}
			d.AddRatio(g, n, uint64(n))
			for range n {
				all = append(all, float64(g)/(float64(n)*1000))
			}
		}
		slices.Sort(all)
		for _, p := range []float64{0, 1, 10, 50, 90, 95, 99, 99.9, 99.99, 100} {
			got, _ := d.Percentile(p)
			if want := numpyPercentile(all, p); got != want {
				t.Fatalf("trial %d p%v: dist %v, full sort %v", trial, p, got, want)
			}
		}
		var sum float64
		for _, v := range all {
			sum += v
		}
		mean, _ := d.MeanStd()
		if math.Abs(mean-sum/float64(len(all))) > 1e-9 {
			t.Fatalf("mean %v want %v", mean, sum/float64(len(all)))
		}
		if got := d.Values(); !slices.Equal(got, all) {
			t.Fatalf("values differ from the sorted samples")
		}
		if d.Distinct() > len(all) {
			t.Fatalf("distinct %d > samples %d", d.Distinct(), len(all))
		}
	}
}

func TestRatioOrderingExact(t *testing.T) {
	d := NewDist()
	d.AddRatio(10, 3, 3) // 3.333… µs
	d.AddRatio(20, 6, 6) // the same value, reduced
	d.AddMicros(3)
	d.AddRatio(7, 2, 2) // 3.5
	if d.Distinct() != 3 || d.Count() != 12 {
		t.Fatalf("distinct %d count %d", d.Distinct(), d.Count())
	}
	if got := d.Max(); got != 3.5/1000 {
		t.Errorf("max %v", got)
	}
	if got, _ := d.Percentile(50); got != 10.0/3000 {
		t.Errorf("median %v, want 10/3 µs", got)
	}
}

// bruteRanks finds l, u by their definition with exact rational binomial CDFs.
func bruteRanks(n int64, q *big.Rat) (l, u int64) {
	qc := new(big.Rat).Sub(big.NewRat(1, 1), q)
	odds := new(big.Rat).Quo(q, qc)
	term := big.NewRat(1, 1) // pmf(0) = (1-q)^n
	for range n {
		term.Mul(term, qc)
	}
	F := make([]*big.Rat, n+1)
	acc := new(big.Rat)
	for k := int64(0); k <= n; k++ {
		acc = new(big.Rat).Add(acc, term)
		F[k] = acc
		// pmf(k+1) = pmf(k) * (n-k)/(k+1) * q/(1-q)
		term = new(big.Rat).Mul(term, big.NewRat(n-k, k+1))
		term.Mul(term, odds)
	}
	lo, hi := big.NewRat(1, 40), big.NewRat(39, 40)
	l = 0
	for k := int64(0); k <= n; k++ {
		if F[k].Cmp(lo) <= 0 {
			l = k + 1
		}
	}
	u = n + 1
	for k := int64(0); k <= n; k++ {
		if F[k].Cmp(hi) >= 0 {
			u = k + 1
			break
		}
	}
	return l, u
}

func TestCIRanksAgainstBruteForceBinomial(t *testing.T) {
	qs := []struct {
		num, den int64
	}{{1, 2}, {9, 10}, {19, 20}, {99, 100}, {1, 4}, {999, 1000}}
	for _, q := range qs {
		for _, n := range []int64{1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 17, 20, 25, 34, 35, 36, 50, 71, 72, 100, 150, 200, 299, 367, 368, 400} {
			wl, wu := bruteRanks(n, big.NewRat(q.num, q.den))
			gl, gu := ciRanks(n, float64(q.num)/float64(q.den), 0.05)
			if gl != wl || gu != wu {
				t.Errorf("n=%d q=%d/%d: ranks (%d,%d), brute force (%d,%d)", n, q.num, q.den, gl, gu, wl, wu)
			}
		}
	}
}

func TestCIBoundedness(t *testing.T) {
	// P99's upper side needs 0.99^n <= 0.025, i.e. n >= 368; P90's n >= 36; P50's n >= 6.
	for _, c := range []struct {
		n      int64
		p      float64
		hiOpen bool
		loOpen bool
	}{{367, 99, true, false}, {368, 99, false, false}, {5, 50, true, true}, {6, 50, false, false}, {35, 90, true, false}, {36, 90, false, false}, {71, 95, true, false}, {72, 95, false, false}, {3687, 99.9, true, false}, {3688, 99.9, false, false}} {
		d := NewDist()
		for i := range c.n {
			d.AddMicros(i)
		}
		lo, hi := d.CI95(c.p)
		if math.IsInf(hi, 1) != c.hiOpen || math.IsInf(lo, -1) != c.loOpen {
			t.Errorf("n=%d p%v: ci [%v, %v], want open hi=%v lo=%v", c.n, c.p, lo, hi, c.hiOpen, c.loOpen)
		}
		if v, _ := d.Percentile(c.p); v < lo || v > hi {
			t.Errorf("n=%d p%v: estimate %v outside its CI [%v, %v]", c.n, c.p, v, lo, hi)
		}
	}
	// Large n stays cheap and gives a tight interval around the median of 0..n-1.
	l, u := ciRanks(100_000_000, 0.5, 0.05)
	if l < 49_980_000 || u > 50_020_000 || l >= u {
		t.Errorf("n=1e8 median ranks (%d, %d)", l, u)
	}
}

func TestStatsJSON(t *testing.T) {
	d := NewDist()
	for i := range int64(100) {
		d.AddMicros(1000 * (i + 1))
	}
	s := StatsOf(d, []float64{50, 99.9})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{`"count":100`, `"mean":50.5`, `"min":1`, `"max":100`, `"p50":50.5`, `"p99.9":`, `"ci95":{"p50":[`, `"p99.9":[`, `,null]`, `"unreliable":["p99.9"]`} {
		if !strings.Contains(got, want) {
			t.Errorf("JSON %s lacks %s", got, want)
		}
	}
	var back Stats
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b2) != got {
		t.Errorf("round trip:\n%s\n%s", b2, got)
	}
	empty, _ := json.Marshal(StatsOf(NewDist(), []float64{50}))
	if string(empty) != `{"count":0,"mean":null,"std":null,"min":null,"max":null,"p50":null,"ci95":{"p50":[null,null]},"ci_method":{},"unreliable":["p50"]}` {
		t.Errorf("empty stats JSON %s", empty)
	}
}

func TestParsePercentiles(t *testing.T) {
	got, err := ParsePercentiles("50, 90,p99.9")
	if err != nil || !slices.Equal(got, []float64{50, 90, 99.9}) {
		t.Errorf("got %v %v", got, err)
	}
	_, err = ParsePercentiles("50,abc,101,50")
	if err == nil || !strings.Contains(err.Error(), `"abc"`) || !strings.Contains(err.Error(), `"101"`) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("want every problem named, got %v", err)
	}
}

func TestSignificant(t *testing.T) {
	// U = 0, mu = 4.5, sigma^2 = 5.25: z = 4/sqrt(5.25), p = erfc(z/sqrt2).
	want := math.Erfc(4 / math.Sqrt(5.25) / math.Sqrt2)
	if got := Significant([]float64{1, 2, 3}, []float64{4, 5, 6}); math.Abs(got-want) > 1e-12 || math.Abs(got-0.0809) > 1e-3 {
		t.Errorf("p = %v, want %v", got, want)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b, c []float64
	da, db := NewDist(), NewDist()
	for range 500 {
		x, y := 50+10*rng.NormFloat64(), 50+10*rng.NormFloat64()
		a, b, c = append(a, x), append(b, y), append(c, y+5)
		da.AddMicros(int64(x * 1000))
		db.AddMicros(int64((y + 5) * 1000))
	}
	if p := Significant(a, a); p != 1 {
		t.Errorf("identical samples: p = %v, want 1", p)
	}
	if p := Significant(a, b); p < 0.01 {
		t.Errorf("same distribution: p = %v, want large", p)
	}
	if p := Significant(a, c); p > 1e-6 {
		t.Errorf("shifted by half a std: p = %v, want tiny", p)
	}
	if p := SignificantDist(da, db); p > 1e-6 {
		t.Errorf("SignificantDist shifted: p = %v", p)
	}
	if p := Significant([]float64{1, 1}, []float64{1, 1, 1}); p != 1 {
		t.Errorf("all ties: p = %v", p)
	}
	if p := Significant(nil, a); p != 1 {
		t.Errorf("empty: p = %v", p)
	}
}

// Quantile is Dist.Percentile's definition over a sorted slice, and Median its P50.
func TestQuantileIsDistPercentile(t *testing.T) {
	var d Dist
	var vs []float64
	for i, us := range []int64{7, 1, 1, 30, 12, 5, 900, 44} {
		d.AddMicros(us)
		vs = append(vs, float64(us)/1000)
		sorted := slices.Clone(vs)
		slices.Sort(sorted)
		for _, p := range []float64{0, 1, 25, 50, 90, 99, 99.9, 100} {
			want, _ := d.Percentile(p)
			if got := Quantile(len(sorted), p, func(k int) float64 { return sorted[k] }); got != want {
				t.Errorf("%d values: Quantile(P%v) = %v, Dist.Percentile = %v", i+1, p, got, want)
			}
		}
		if want, _ := d.Percentile(50); Median(vs) != want {
			t.Errorf("%d values: Median = %v, want %v", i+1, Median(vs), want)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("the median of nothing is not NaN")
	}
}

// TestDistDenseFromPending: a Dist that passes denseFrom samples counts in its dense
// counter from then on, the values pending holds from before added to the same values'
// counts there: the same distinct values, counts and order statistics as a sparse Dist
// given the same samples.
func TestDistDenseFromPending(t *testing.T) {
	d, sp := NewDist(), NewSparseDist()
	add := func(us int64) { d.AddMicros(us); sp.AddMicros(us) }
	for round := range 12 {
		for v := range int64(1000) {
			add(v * 7) // in the dense counter's range, first held in pending
		}
		add(-int64(round) - 1)       // negative: always pending's
		add(denseMax + int64(round)) // beyond the dense counter: always pending's
	}
	if d.Count() != 12*1002 || d.dense == nil {
		t.Fatalf("count %d, dense counter %v: the test no longer passes denseFrom", d.Count(), d.dense != nil)
	}
	if got, want := d.Distinct(), sp.Distinct(); got != want || got != 1000+24 {
		t.Fatalf("distinct %d, sparse %d, want %d", got, want, 1000+24)
	}
	if !slices.Equal(d.sorted, sp.sorted) || !slices.Equal(d.cum, sp.cum) {
		t.Fatal("dense and sparse Dists differ")
	}
}

// TestDistPendingMergeAndThaw: samples outside the dense counter, many repeating, added
// past several compactions, read (frozen) and added to again (thawed), and merged from
// other Dists, give every sample in order with each distinct value held once.
func TestDistPendingMergeAndThaw(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 6 {
		parts := []*Dist{NewDist(), NewSparseDist(), NewDist()}
		var all []float64
		distinctVals := map[ratio]bool{}
		for i := range 60_000 {
			var num, den int64 = rng.Int64N(2000) - 50, 1 + rng.Int64N(3)
			if rng.IntN(3) == 0 {
				num = denseMax + rng.Int64N(1_000_000) // beyond the dense counter
			}
			if trial%2 == 1 {
				num *= 1 + int64(rng.IntN(1000)) // fewer repeats
			}
			d := parts[rng.IntN(len(parts))]
			d.AddRatio(num, den, 1)
			all = append(all, float64(num)/(float64(den)*1000))
			g := gcd(abs64(num), den)
			distinctVals[ratio{num / g, den / g}] = true
			if i%17_000 == 0 {
				d.Percentile(50) // freeze; the next sample thaws it
			}
		}
		into := NewDist()
		if trial%3 == 0 {
			into = NewSparseDist()
		}
		for _, p := range parts {
			into.Merge(p)
		}
		slices.Sort(all)
		if got := into.Values(); !slices.Equal(got, all) {
			t.Fatalf("trial %d: merged values differ from the sorted samples", trial)
		}
		if got := into.Distinct(); got != len(distinctVals) {
			t.Fatalf("trial %d: %d distinct values held, want %d", trial, got, len(distinctVals))
		}
	}
}
