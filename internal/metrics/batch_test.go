package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// ar1Level is one level of n requests sent 10 ms apart whose TTFTs are 1 s plus a
// stationary AR(1) series x_i = φ x_{i−1} + e_i, e_i ~ N(0, σ²): strongly correlated
// requests (a correlation time of 1/(1 − φ) = 10 requests at φ = 0.9) whose true mean and
// median are 1 s and whose true P90 is 1 s + 1.2816 σ / √(1 − φ²).
func ar1Level(seed uint64, n int, phi, sigma float64) Level {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	x := rng.NormFloat64() * sigma / math.Sqrt(1-phi*phi)
	return ttftLevel(n, func(i int) (sent, ttft time.Duration) {
		x = phi*x + rng.NormFloat64()*sigma
		return time.Duration(i) * 10 * time.Millisecond, time.Second + time.Duration(x*float64(time.Millisecond))
	})
}

// ttftLevel is one level of n two-token requests, the i-th sent and answered after the
// TTFT at(i) gives (µs-truncated), its second token 1 ms later.
func ttftLevel(n int, at func(i int) (sent, ttft time.Duration)) Level {
	a := NewAggregator(Config{Percentiles: []float64{50, 90}})
	for i := range n {
		sent, ttft := at(i)
		ttft = ttft.Truncate(time.Microsecond)
		r := rec(sent, sent, 0, 2, ev{sent + ttft, 1}, ev{sent + ttft + time.Millisecond, 1})
		r.Index, r.Done = i, sent+ttft+time.Millisecond
		a.Add(&r)
	}
	return a.Level()
}

// TestBatchMeansCoverage: on 200 seeded trials of a correlated series whose true values
// are known, the batch-means 95% intervals of the mean, P50 and P90 contain the truth in
// 90-99% of trials, where the order-statistics interval (which assumes independent
// samples) covers the median far less often.
func TestBatchMeansCoverage(t *testing.T) {
	const (
		trials = 200
		n      = 2000
		phi    = 0.9
		sigma  = 10.0 // ms
	)
	sx := sigma / math.Sqrt(1-phi*phi)
	truth := map[string]float64{"mean": 1000, "p50": 1000, "p90": 1000 + 1.2815516*sx}
	hits := map[string]int{}
	orderHits := 0
	for trial := range trials {
		lv := ar1Level(uint64(trial), n, phi, sigma)
		st := lv.Metrics.Stat(KeyTTFT)
		if st.MeanMethod != MethodBatchMeans {
			t.Fatalf("trial %d: mean interval by %q, want batch means", trial, st.MeanMethod)
		}
		if st.MeanLo <= truth["mean"] && truth["mean"] <= st.MeanHi {
			hits["mean"]++
		}
		for _, p := range st.Percentiles {
			if p.Method != MethodBatchMeans {
				t.Fatalf("trial %d: P%g's interval by %q, want batch means", trial, p.P, p.Method)
			}
			if k := Key(p.P); p.Lo <= truth[k] && truth[k] <= p.Hi {
				hits[k]++
			}
		}
		// The independent-sample bound on the same sample.
		lo, hi := lv.Dists[KeyTTFT].CI95(50)
		if lo <= truth["p50"] && truth["p50"] <= hi {
			orderHits++
		}
	}
	for _, k := range []string{"mean", "p50", "p90"} {
		cov := float64(hits[k]) / trials
		t.Logf("%s: batch means cover the true value in %.1f%% of %d trials", k, 100*cov, trials)
		if cov < 0.90 || cov > 0.99 {
			t.Errorf("%s: coverage %.1f%%, want 90-99%%", k, 100*cov)
		}
	}
	ocov := float64(orderHits) / trials
	t.Logf("p50: the order-statistics (independent-sample) interval covers it in %.1f%%", 100*ocov)
	if ocov > 0.8 {
		t.Errorf("the independent-sample interval covered %.1f%% of correlated trials: the test series is not correlated enough", 100*ocov)
	}
}

// On independent samples, the batch-means interval is about as wide as the
// order-statistics one (both are valid there).
func TestBatchMeansIndependent(t *testing.T) {
	lv := ar1Level(7, 4000, 0, 10)
	st := lv.Metrics.Stat(KeyTTFT)
	p, _ := st.Get(50)
	lo, hi := lv.Dists[KeyTTFT].CI95(50)
	if r := (p.Hi - p.Lo) / (hi - lo); r < 0.6 || r > 1.7 {
		t.Errorf("independent samples: batch-means P50 interval %.3f wide, order statistics %.3f: ratio %.2f", p.Hi-p.Lo, hi-lo, r)
	}
}

func TestTQuantile975(t *testing.T) {
	for df, want := range map[int]float64{1: 12.7062, 9: 2.2622, 19: 2.0930, 30: 2.0423, 40: 2.0211, 60: 2.0003, 120: 1.9799, 1000: 1.9623} {
		if got := TQuantile975(df); math.Abs(got-want) > 2e-4 {
			t.Errorf("t(0.975, %d) = %.4f, want %.4f", df, got, want)
		}
	}
	_ = record.KindTimeout
}

// Welch's test against values from a direct numerical integration of Student's t density
// (Simpson's rule, h = 0.01) at the Welch–Satterthwaite degrees of freedom.
func TestWelchP(t *testing.T) {
	for _, c := range []struct {
		a, b Interval
		want float64
	}{
		{Interval{Mean: 10, Std: 1, N: 5}, Interval{Mean: 12, Std: 1.5, N: 5}, 0.042314},
		{Interval{Mean: 100, Std: 10, N: 3}, Interval{Mean: 101, Std: 12, N: 4}, 0.909206},
		{Interval{Mean: 1, Std: 0, N: 3}, Interval{Mean: 1, Std: 0, N: 3}, 1},
	} {
		if got := WelchP(c.a, c.b); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("WelchP(%+v, %+v) = %.6f, want %.6f", c.a, c.b, got, c.want)
		}
	}
	if !math.IsNaN(WelchP(Interval{N: 1}, Interval{N: 3, Std: 1})) {
		t.Error("one run: no test")
	}
}

// skewedLevel is one level of n requests sent 10 ms apart whose TTFTs (ms) are
// exp(μ + y_i) for a stationary AR(1) series y_i = φ y_{i−1} + e_i with sd(y) = sy: skewed
// (lognormal) and correlated, true median e^μ, true mean e^(μ + sy²/2), true P90
// e^(μ + 1.2816 sy). The first `first` requests are a closed loop's first wave: all sent at
// t = 0 into a queue, the i-th waiting (i+1)/first × wave ms more; the others are sent after
// it.
func skewedLevel(seed uint64, n int, mu, phi, sy float64, first int, wave float64) Level {
	rng := rand.New(rand.NewPCG(seed, 0x10c))
	e := sy * math.Sqrt(1-phi*phi)
	y := rng.NormFloat64() * sy
	return ttftLevel(n, func(i int) (sent, ttft time.Duration) {
		y = phi*y + rng.NormFloat64()*e
		ms := math.Exp(mu + y)
		sent = time.Duration(wave*float64(time.Millisecond)) + time.Duration(i-first)*10*time.Millisecond
		if i < first {
			ms += wave * float64(i+1) / float64(first)
			sent = 0
		}
		return sent, time.Duration(ms * float64(time.Millisecond))
	})
}

// TestBatchMeansSkewedCoverage: on 200 seeded levels of 2,000 skewed (lognormal, sd of the
// log 0.5) correlated (AR(1), φ = 0.9) TTFTs, the 95% intervals of the mean, P50 and P90 contain the
// true value in at least 90% of them, none goes below zero or outside the sample's range,
// and the typical interval is a small fraction of the figure.
func TestBatchMeansSkewedCoverage(t *testing.T) {
	const (
		trials = 200
		mu     = 4.6 // median e^4.6 ≈ 99.5 ms
		phi    = 0.9
	)
	n, sy := 2000, 0.5 // docs/metrics.md gives the coverage measured at other n and sy too
	truth := map[string]float64{"mean": math.Exp(mu + sy*sy/2), "p50": math.Exp(mu), "p90": math.Exp(mu + 1.2815516*sy)}
	hits := map[string]int{}
	var widths = map[string][]float64{}
	for trial := range trials {
		st := skewedLevel(uint64(trial), n, mu, phi, sy, 0, 0).Metrics.Stat(KeyTTFT)
		check := func(k string, v, lo, hi float64, method string) {
			if !ByBatchMeans(method) {
				t.Fatalf("trial %d: %s's interval by %q, want batch means", trial, k, method)
			}
			if lo < 0 || lo < st.Min || hi > st.Max || lo > hi {
				t.Errorf("trial %d: %s's interval [%g, %g] outside the sample's range [%g, %g]", trial, k, lo, hi, st.Min, st.Max)
			}
			if lo <= truth[k] && truth[k] <= hi {
				hits[k]++
			}
			widths[k] = append(widths[k], (hi-lo)/v)
		}
		check("mean", st.Mean, st.MeanLo, st.MeanHi, st.MeanMethod)
		for _, p := range st.Percentiles {
			check(Key(p.P), p.Value, p.Lo, p.Hi, p.Method)
		}
	}
	for _, k := range []string{"mean", "p50", "p90"} {
		cov := float64(hits[k]) / trials
		w := median(widths[k])
		t.Logf("%s: covered in %.1f%% of %d skewed correlated levels; median width %.1f%% of the figure", k, 100*cov, trials, 100*w)
		if cov < 0.90 {
			t.Errorf("%s: coverage %.1f%%, want >= 90%%", k, 100*cov)
		}
		if w > 0.5 {
			t.Errorf("%s: median interval %.0f%% of the figure wide", k, 100*w)
		}
	}
}

// TestIntervalsWithinTheData: a short, very skewed level, whose textbook mean interval
// would reach below zero, gets intervals within [min, max] of its sample.
func TestIntervalsWithinTheData(t *testing.T) {
	for seed := range uint64(50) {
		st := skewedLevel(seed, 200, 0, 0.95, 2.5, 0, 0).Metrics.Stat(KeyTTFT)
		if st.MeanMethod != "" && (st.MeanLo < st.Min || st.MeanHi > st.Max) {
			t.Errorf("seed %d: mean interval [%g, %g] outside [%g, %g]", seed, st.MeanLo, st.MeanHi, st.Min, st.Max)
		}
		for _, p := range st.Percentiles {
			if p.Reliable() && (p.Lo < st.Min || p.Hi > st.Max) {
				t.Errorf("seed %d: P%g interval [%g, %g] outside [%g, %g]", seed, p.P, p.Lo, p.Hi, st.Min, st.Max)
			}
		}
	}
	if lo, hi := clampTo(-23.2, 273.1, 0.5, 900); lo != 0.5 || hi != 273.1 {
		t.Errorf("clampTo(-23.2, 273.1, 0.5, 900) = %g, %g", lo, hi)
	}
}

// TestFirstWaveLeftOut: a closed loop whose first 64 requests of 640 waited up to 7.9 s (its
// first wave, in the level's first two batches) gets, for its mean and median, the interval of the
// steady part (batch_means_steady), tens of ms wide rather than seconds; without a first
// wave the interval is by all the batches.
func TestFirstWaveLeftOut(t *testing.T) {
	st := skewedLevel(3, 640, math.Log(140), 0.5, 0.3, 64, 7900).Metrics.Stat(KeyTTFT)
	p50, _ := st.Get(50)
	for _, c := range []struct {
		k         string
		v, lo, hi float64
		method    string
	}{{"mean", st.Mean, st.MeanLo, st.MeanHi, st.MeanMethod}, {"p50", p50.Value, p50.Lo, p50.Hi, p50.Method}} {
		t.Logf("%s %.1f ms: 95%% CI [%.1f, %.1f] by %s", c.k, c.v, c.lo, c.hi, c.method)
		if c.method != MethodBatchMeansSteady {
			t.Errorf("%s: interval by %q, want %q", c.k, c.method, MethodBatchMeansSteady)
		}
		if c.lo < 100 || c.hi > 200 {
			t.Errorf("%s: interval [%.1f, %.1f], want the steady part's, about 140 ms", c.k, c.lo, c.hi)
		}
	}
	st = skewedLevel(3, 640, math.Log(140), 0.5, 0.3, 0, 0).Metrics.Stat(KeyTTFT)
	if st.MeanMethod != MethodBatchMeans {
		t.Errorf("no first wave: mean interval by %q", st.MeanMethod)
	}
}

// An across-runs interval of a non-negative figure stops at zero; its half-width stays the
// t interval's.
func TestAcrossRunsIntervalStopsAtZero(t *testing.T) {
	iv := IntervalOf([]float64{1, 2, 30})
	if iv.Lo != 0 || !iv.Clipped() || iv.Hi <= 30 || math.Abs(iv.HalfWidth()-(iv.Hi-iv.Mean)) > 1e-12 {
		t.Errorf("IntervalOf(1, 2, 30) = %+v (clipped %v)", iv, iv.Clipped())
	}
	if iv := IntervalOf([]float64{10, 11, 12}); iv.Clipped() || iv.Lo <= 0 {
		t.Errorf("IntervalOf(10, 11, 12) = %+v", iv)
	}
	if iv := IntervalOf([]float64{-5, 1, 30}); iv.Lo >= 0 {
		t.Errorf("a figure that can be negative keeps its interval: %+v", iv)
	}
}
