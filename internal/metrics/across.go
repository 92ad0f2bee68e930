package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Interval is one figure across repeated runs (--repeat): the mean of the runs' values,
// their sample standard deviation (ddof = 1), a t-distribution 95% interval for the
// figure's expectation, mean ± t(0.975, n−1)·std/√n, and the number of runs n that gave
// a value. With one run, std and the interval are null.
type Interval struct {
	Mean, Std, Lo, Hi float64
	N                 int
}

// MarshalJSON writes {mean, std, ci95: [lo, hi], n}, undefined figures as null.
func (iv Interval) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"mean":`)
	writeJSONNum(&b, iv.Mean)
	b.WriteString(`,"std":`)
	writeJSONNum(&b, iv.Std)
	b.WriteString(`,"ci95":`)
	writeJSONPair(&b, iv.Lo, iv.Hi)
	fmt.Fprintf(&b, `,"n":%d}`, iv.N)
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (iv *Interval) UnmarshalJSON(data []byte) error {
	var raw struct {
		Mean, Std *float64
		CI95      [2]*float64
		N         int
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	f := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	*iv = Interval{Mean: f(raw.Mean), Std: f(raw.Std), Lo: f(raw.CI95[0]), Hi: f(raw.CI95[1]), N: raw.N}
	return nil
}

// HalfWidth is the interval's half-width (NaN without one): Hi − Mean: the t interval's half-width, also where Lo was cut at zero.
func (iv Interval) HalfWidth() float64 { return iv.Hi - iv.Mean }

// Clipped reports whether Lo was cut at zero (the mean ± HalfWidth would reach below it).
func (iv Interval) Clipped() bool { return iv.Lo == 0 && iv.Mean-iv.HalfWidth() < 0 }

// IntervalOf is the across-runs interval of values (NaN ones are left out).
func IntervalOf(values []float64) Interval {
	var xs []float64
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			xs = append(xs, v)
		}
	}
	iv := Interval{Mean: math.NaN(), Std: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), N: len(xs)}
	if len(xs) == 0 {
		return iv
	}
	iv.Mean, iv.Std = meanSD(xs)
	if len(xs) > 1 {
		iv.Lo, iv.Hi = tInterval(iv.Mean, xs)
		if slices.Min(xs) >= 0 { // a non-negative figure's interval stops at zero
			iv.Lo = max(iv.Lo, 0)
		}
	}
	return iv
}

// AcrossRuns is levels[i].across_runs: every figure of a repeated level across its runs.
// Level-wide figures (output_throughput, request_throughput, ...) are Intervals under
// their own keys; each metric's statistics are Intervals by stat under the metric's
// JSON name: across_runs.tpot_ms.p50.
type AcrossRuns struct {
	Level   map[string]Interval            // by level figure's JSON key
	Metrics map[string]map[string]Interval // by metric JSON name, then "mean", "p50", ...
}

// acrossLevelFigures are the level-wide figures given across runs, in order.
var acrossLevelFigures = []struct {
	key string
	get func(l *Level) float64
}{
	{"request_throughput", func(l *Level) float64 { return l.RequestThroughput }},
	{"output_throughput", func(l *Level) float64 { return l.OutputThroughput }},
	{"total_token_throughput", func(l *Level) float64 { return l.TotalTokenThroughput }},
	{"mean_concurrency", func(l *Level) float64 { return l.MeanConcurrency }},
	{"goodput", func(l *Level) float64 {
		if l.Goodput == nil {
			return math.NaN()
		}
		return *l.Goodput
	}},
	{"good_fraction", func(l *Level) float64 {
		if l.GoodFraction == nil {
			return math.NaN()
		}
		return *l.GoodFraction
	}},
}

// Across computes the figures of a level's runs across them; nil for fewer than two runs.
func Across(runs []Level) *AcrossRuns {
	if len(runs) < 2 {
		return nil
	}
	ar := &AcrossRuns{Level: map[string]Interval{}, Metrics: map[string]map[string]Interval{}}
	vals := make([]float64, len(runs))
	for _, f := range acrossLevelFigures {
		for j := range runs {
			vals[j] = f.get(&runs[j])
		}
		if iv := IntervalOf(vals); iv.N > 0 {
			ar.Level[f.key] = iv
		}
	}
	for _, m := range Registry {
		if m.OnLevel {
			continue
		}
		var stats []Stats
		for j := range runs {
			if st, ok := runs[j].Metrics.Get(m.Key); ok && st.Count > 0 {
				stats = append(stats, *st)
			}
		}
		if len(stats) == 0 {
			continue
		}
		by := map[string]Interval{}
		xs := make([]float64, len(stats))
		for j, st := range stats {
			xs[j] = st.Mean
		}
		by["mean"] = IntervalOf(xs)
		for _, p := range stats[0].Percentiles {
			for j, st := range stats {
				q, _ := st.Get(p.P)
				xs[j] = q.Value
			}
			by[Key(p.P)] = IntervalOf(xs)
		}
		ar.Metrics[m.JSON] = by
	}
	return ar
}

// Get returns the interval of a metric's stat ("p50", "mean"), by metric key or JSON name.
func (a *AcrossRuns) Get(metric, stat string) (Interval, bool) {
	if a == nil {
		return Interval{}, false
	}
	if m, ok := Lookup(metric); ok {
		metric = m.JSON
	}
	iv, ok := a.Metrics[metric][stat]
	return iv, ok
}

// MarshalJSON writes the level figures in a fixed order, then the metrics in registry
// order, each with mean then its percentiles in order.
func (a AcrossRuns) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	sep := ""
	put := func(k string, v any) error {
		js, err := json.Marshal(v)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s%q:", sep, k)
		b.Write(js)
		sep = ","
		return nil
	}
	for _, f := range acrossLevelFigures {
		if iv, ok := a.Level[f.key]; ok {
			if err := put(f.key, iv); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range Registry {
		by, ok := a.Metrics[m.JSON]
		if !ok {
			continue
		}
		keys := make([]string, 0, len(by))
		for k := range by {
			if k != "mean" {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(x, y string) int {
			px, _ := strconv.ParseFloat(x[1:], 64)
			py, _ := strconv.ParseFloat(y[1:], 64)
			switch {
			case px < py:
				return -1
			case px > py:
				return 1
			}
			return 0
		})
		fmt.Fprintf(&b, "%s%q:{", sep, m.JSON)
		sep = ""
		for _, k := range append([]string{"mean"}, keys...) {
			if err := put(k, by[k]); err != nil {
				return nil, err
			}
		}
		b.WriteByte('}')
		sep = ","
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes: an object with "n" is a level figure's
// interval, any other a metric's stats.
func (a *AcrossRuns) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*a = AcrossRuns{Level: map[string]Interval{}, Metrics: map[string]map[string]Interval{}}
	for k, v := range raw {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(v, &probe); err != nil {
			return fmt.Errorf("across_runs.%s: %w", k, err)
		}
		if _, ok := probe["n"]; ok {
			var iv Interval
			if err := json.Unmarshal(v, &iv); err != nil {
				return fmt.Errorf("across_runs.%s: %w", k, err)
			}
			a.Level[k] = iv
			continue
		}
		by := map[string]Interval{}
		for s, sv := range probe {
			var iv Interval
			if err := json.Unmarshal(sv, &iv); err != nil {
				return fmt.Errorf("across_runs.%s.%s: %w", k, s, err)
			}
			by[s] = iv
		}
		a.Metrics[k] = by
	}
	return nil
}

// WelchP is the two-sided p-value of Welch's t-test that the figures behind two
// across-runs intervals have the same expectation (unequal variances, Welch–Satterthwaite
// degrees of freedom). NaN when either side has fewer than two runs.
func WelchP(a, b Interval) float64 {
	if a.N < 2 || b.N < 2 || math.IsNaN(a.Std) || math.IsNaN(b.Std) {
		return math.NaN()
	}
	va, vb := a.Std*a.Std/float64(a.N), b.Std*b.Std/float64(b.N)
	if va+vb == 0 {
		if a.Mean == b.Mean {
			return 1
		}
		return 0
	}
	t := (b.Mean - a.Mean) / math.Sqrt(va+vb)
	df := (va + vb) * (va + vb) / (va*va/float64(a.N-1) + vb*vb/float64(b.N-1))
	return regIncBeta(df/2, 0.5, df/(df+t*t))
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by its continued
// fraction (Lentz's method; Numerical Recipes §6.4).
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x > (a+1)/(a+b+2) {
		return 1 - regIncBeta(b, a, 1-x)
	}
	const tiny = 1e-300
	f, c, d := 1.0, 1.0, 0.0
	for i := 0; i <= 300; i++ {
		m := float64(i / 2)
		var num float64
		switch {
		case i == 0:
			num = 1
		case i%2 == 0:
			num = m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		default:
			num = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		}
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		d = 1 / d
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		f *= c * d
		if math.Abs(1-c*d) < 1e-14 {
			break
		}
	}
	return front * (f - 1) / a
}
