package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DefaultPercentiles are reported when Config.Percentiles is empty.
var DefaultPercentiles = []float64{50, 90, 95, 99, 99.9}

// Stats summarises one latency metric of one level, in milliseconds.
type Stats struct {
	Count       int
	Mean, Std   float64 // Std is the population standard deviation (ddof = 0)
	Min, Max    float64
	Percentiles []Percentile // in the order of the configured list
	// MeanLo, MeanHi bound the mean with 95% confidence by batch means (batch.go); NaN
	// (null) when the level is too short for them. MeanMethod is MethodBatchMeans then.
	MeanLo, MeanHi float64
	MeanMethod     string
}

// Percentile is one interpolated percentile with its distribution-free 95% confidence interval.
type Percentile struct {
	P     float64 // 0..100
	Value float64 // ms
	// CI95 bounds: by batch means where the level allows (Method MethodBatchMeans,
	// batch.go), else from order statistics (MethodOrderStatistics, valid for independent
	// samples). An unbounded side (the sample is too small to bound the percentile there)
	// is -Inf / +Inf, written as null in JSON.
	Lo, Hi float64
	Method string
}

// Reliable reports whether both sides of the confidence interval are bounded by the sample.
func (p Percentile) Reliable() bool { return !math.IsInf(p.Lo, 0) && !math.IsInf(p.Hi, 0) }

// Key is the JSON key of percentile p: p50, p99.9.
func Key(p float64) string { return "p" + strconv.FormatFloat(p, 'f', -1, 64) }

// Get returns the percentile p if it was computed.
func (s Stats) Get(p float64) (Percentile, bool) {
	for _, x := range s.Percentiles {
		if x.P == p {
			return x, true
		}
	}
	return Percentile{}, false
}

// Unreliable lists the keys of percentiles whose confidence interval is unbounded.
func (s Stats) Unreliable() []string {
	out := []string{}
	for _, x := range s.Percentiles {
		if !x.Reliable() {
			out = append(out, Key(x.P))
		}
	}
	return out
}

// StatsOf computes the statistics of d for the given percentiles.
func StatsOf(d *Dist, percentiles []float64) Stats {
	s := Stats{Count: int(d.Count())}
	if s.Count == 0 {
		for _, p := range percentiles {
			s.Percentiles = append(s.Percentiles, Percentile{P: p, Value: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1)})
		}
		s.Mean, s.Std, s.Min, s.Max = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		s.MeanLo, s.MeanHi = math.NaN(), math.NaN()
		return s
	}
	s.Mean, s.Std = d.MeanStd()
	s.Min, s.Max = d.Min(), d.Max()
	s.MeanLo, s.MeanHi = math.NaN(), math.NaN()
	for _, p := range percentiles {
		v, _ := d.Percentile(p)
		lo, hi := d.CI95(p)
		s.Percentiles = append(s.Percentiles, Percentile{P: p, Value: v, Lo: lo, Hi: hi, Method: MethodOrderStatistics})
	}
	return s
}

// MinSamples is the fewest samples whose distribution-free 95% confidence interval (CI95)
// bounds the p-th percentile on both sides: P99 needs 368, P90 36, P50 6. Fewer is "low n",
// too few samples to bound the percentile, and an SLO term on it is undecided. The minimum
// and maximum (P0, P100) have no interval to bound, being what was observed: 1.
func MinSamples(p float64) int {
	if !(p > 0 && p < 100) { // NaN (the mean) too: no interval of order statistics
		return 1
	}
	bounded := func(n int64) bool { l, u := ciRanks(n, p/100, 0.05); return l >= 1 && u <= n }
	hi := int64(1)
	for !bounded(hi) {
		hi *= 2
	}
	lo := hi / 2 // not bounded (or 0)
	for hi-lo > 1 {
		if m := (lo + hi) / 2; bounded(m) {
			hi = m
		} else {
			lo = m
		}
	}
	return int(hi)
}

// CI95 is a distribution-free 95% confidence interval for the p-th percentile: the order
// statistics X(l) <= X(u) (1-based ranks) such that, with B ~ Binomial(n, p/100) the number
// of samples below the true percentile, P(B < l) <= 2.5% and P(B >= u) <= 2.5%, so the
// interval covers the true percentile with probability >= 95% whatever the distribution.
// When no rank l >= 1 (or u <= n) satisfies this, the sample cannot bound that side and it
// is returned as -Inf (+Inf); e.g. P99 needs n >= 368 for an upper bound, P90 n >= 36, P50 n >= 6.
func (d *Dist) CI95(p float64) (lo, hi float64) {
	n := d.Count()
	if n == 0 {
		return math.Inf(-1), math.Inf(1)
	}
	l, u := ciRanks(int64(n), p/100, 0.05)
	d.build()
	lo, hi = math.Inf(-1), math.Inf(1)
	if l >= 1 {
		lo = d.at(uint64(l - 1))
	}
	if u <= int64(n) {
		hi = d.at(uint64(u - 1))
	}
	return lo, hi
}

// ciRanks returns the 1-based ranks l (largest with F(l-1) <= alpha/2) and u (smallest with
// F(u-1) >= 1-alpha/2) where F is the Binomial(n, q) CDF; l = 0 or u = n+1 mean unbounded.
func ciRanks(n int64, q, alpha float64) (l, u int64) {
	F := binomCDF(n, q)
	// l-1 = largest k in [-1, n] with F(k) <= alpha/2.
	k := int64(-1)
	lo, hi := int64(0), n // F is nondecreasing: binary search the last k with F(k) <= a
	for lo <= hi {
		m := lo + (hi-lo)/2
		if F(m) <= alpha/2 {
			k = m
			lo = m + 1
		} else {
			hi = m - 1
		}
	}
	l = k + 1
	// u-1 = smallest k in [0, n] with F(k) >= 1 - alpha/2 (F(n) = 1 always).
	lo, hi = 0, n
	k = n
	for lo <= hi {
		m := lo + (hi-lo)/2
		if F(m) >= 1-alpha/2 {
			k = m
			hi = m - 1
		} else {
			lo = m + 1
		}
	}
	// F(n) = 1, so k <= n; k = n (u = n+1, unbounded) when F(n-1) < 1-alpha/2.
	return l, k + 1
}

// binomCDF returns k -> P(B <= k) for B ~ Binomial(n, q). The pmf is evaluated in a window
// around the mode (from lgamma, then by the ratio recurrence outwards) until terms fall below
// 1e-18 of the peak: exact to double precision at O(sqrt(n)) cost, so it stays cheap for the
// 100M-sample ITL distributions of huge runs.
func binomCDF(n int64, q float64) func(k int64) float64 {
	switch {
	case q <= 0:
		return func(k int64) float64 {
			if k < 0 {
				return 0
			}
			return 1
		}
	case q >= 1:
		return func(k int64) float64 {
			if k < n {
				return 0
			}
			return 1
		}
	}
	mode := int64(math.Floor(float64(n+1) * q))
	if mode > n {
		mode = n
	}
	lg := func(x int64) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	logPeak := lg(n) - lg(mode) - lg(n-mode) + float64(mode)*math.Log(q) + float64(n-mode)*math.Log1p(-q)
	peak := math.Exp(logPeak)
	const cut = 1e-18
	odds := q / (1 - q)
	var left []float64 // left[i] = pmf(mode-1-i)
	pm := peak
	for k := mode; k > 0; k-- {
		pm *= float64(k) / float64(n-k+1) / odds // pmf(k-1) = pmf(k) * k / ((n-k+1) odds)
		if pm < peak*cut {
			break
		}
		left = append(left, pm)
	}
	var right []float64 // right[i] = pmf(mode+1+i)
	pm = peak
	for k := mode; k < n; k++ {
		pm *= float64(n-k) / float64(k+1) * odds
		if pm < peak*cut {
			break
		}
		right = append(right, pm)
	}
	first := mode - int64(len(left))
	pmf := make([]float64, 0, len(left)+1+len(right))
	for i := len(left) - 1; i >= 0; i-- {
		pmf = append(pmf, left[i])
	}
	pmf = append(pmf, peak)
	pmf = append(pmf, right...)
	// Cumulate from the smaller tail inwards, normalised by the window's mass.
	var tot kahan
	for _, v := range pmf {
		tot.add(v)
	}
	total := tot.sum()
	cdf := make([]float64, len(pmf))
	var acc kahan
	for i, v := range pmf {
		acc.add(v)
		cdf[i] = acc.sum() / total
	}
	// Upper tail from the right end, so values near 1 keep their precision.
	var up kahan
	upper := make([]float64, len(pmf)) // upper[i] = P(B > first+i)
	for i := len(pmf) - 1; i >= 0; i-- {
		upper[i] = up.sum() / total
		up.add(pmf[i])
	}
	return func(k int64) float64 {
		i := k - first
		switch {
		case i < 0:
			return 0
		case i >= int64(len(pmf)):
			return 1
		}
		if cdf[i] < 0.5 {
			return cdf[i]
		}
		return 1 - upper[i]
	}
}

// MarshalJSON writes {count, mean, std, min, max, p50, …, ci95: {mean: [lo, hi], p50: [lo,
// hi]}, ci_method: {mean: …, p50: …}, unreliable}; ci95.mean and its method only when the
// mean has an interval.
// Undefined figures (no samples, unbounded CI sides) are null.
func (s Stats) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	num := func(v float64) { writeJSONNum(&b, v) }
	b.WriteString(`{"count":`)
	b.WriteString(strconv.Itoa(s.Count))
	for _, f := range []struct {
		k string
		v float64
	}{{"mean", s.Mean}, {"std", s.Std}, {"min", s.Min}, {"max", s.Max}} {
		fmt.Fprintf(&b, ",%q:", f.k)
		num(f.v)
	}
	for _, p := range s.Percentiles {
		fmt.Fprintf(&b, ",%q:", Key(p.P))
		num(p.Value)
	}
	hasMean := !math.IsNaN(s.MeanLo) && !math.IsNaN(s.MeanHi) && s.MeanMethod != ""
	b.WriteString(`,"ci95":{`)
	sep := ""
	if hasMean {
		b.WriteString(`"mean":`)
		writeJSONPair(&b, s.MeanLo, s.MeanHi)
		sep = ","
	}
	for _, p := range s.Percentiles {
		fmt.Fprintf(&b, "%s%q:", sep, Key(p.P))
		sep = ","
		writeJSONPair(&b, p.Lo, p.Hi)
	}
	b.WriteString(`},"ci_method":{`)
	sep = ""
	if hasMean {
		fmt.Fprintf(&b, `"mean":%q`, s.MeanMethod)
		sep = ","
	}
	for _, p := range s.Percentiles {
		if p.Method != "" {
			fmt.Fprintf(&b, "%s%q:%q", sep, Key(p.P), p.Method)
			sep = ","
		}
	}
	b.WriteString(`},"unreliable":`)
	u, _ := json.Marshal(s.Unreliable())
	b.Write(u)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeJSONNum writes v as a JSON number, null when it is undefined (NaN, ±Inf).
func writeJSONNum(b *bytes.Buffer, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		b.WriteString("null")
		return
	}
	b.Write(strconv.AppendFloat(nil, v, 'g', -1, 64))
}

// writeJSONPair writes [lo,hi].
func writeJSONPair(b *bytes.Buffer, lo, hi float64) {
	b.WriteByte('[')
	writeJSONNum(b, lo)
	b.WriteByte(',')
	writeJSONNum(b, hi)
	b.WriteByte(']')
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Stats) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	f := func(k string) (float64, error) {
		raw, ok := m[k]
		if !ok || string(raw) == "null" {
			return math.NaN(), nil
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return 0, fmt.Errorf("stats %s: %w", k, err)
		}
		return v, nil
	}
	*s = Stats{}
	var errs []error
	if raw, ok := m["count"]; ok {
		if err := json.Unmarshal(raw, &s.Count); err != nil {
			errs = append(errs, fmt.Errorf("stats count: %w", err))
		}
	}
	var err error
	for _, x := range []struct {
		k string
		p *float64
	}{{"mean", &s.Mean}, {"std", &s.Std}, {"min", &s.Min}, {"max", &s.Max}} {
		if *x.p, err = f(x.k); err != nil {
			errs = append(errs, err)
		}
	}
	var ci map[string][2]*float64
	if raw, ok := m["ci95"]; ok {
		if err := json.Unmarshal(raw, &ci); err != nil {
			errs = append(errs, fmt.Errorf("stats ci95: %w", err))
		}
	}
	var methods map[string]string
	if raw, ok := m["ci_method"]; ok {
		if err := json.Unmarshal(raw, &methods); err != nil {
			errs = append(errs, fmt.Errorf("stats ci_method: %w", err))
		}
	}
	s.MeanLo, s.MeanHi = math.NaN(), math.NaN()
	if b, ok := ci["mean"]; ok && b[0] != nil && b[1] != nil {
		s.MeanLo, s.MeanHi, s.MeanMethod = *b[0], *b[1], methods["mean"]
	}
	for k := range m {
		if !strings.HasPrefix(k, "p") {
			continue
		}
		p, perr := strconv.ParseFloat(k[1:], 64)
		if perr != nil {
			continue
		}
		v, err := f(k)
		if err != nil {
			errs = append(errs, err)
		}
		pc := Percentile{P: p, Value: v, Lo: math.Inf(-1), Hi: math.Inf(1), Method: methods[k]}
		if b, ok := ci[k]; ok {
			if b[0] != nil {
				pc.Lo = *b[0]
			}
			if b[1] != nil {
				pc.Hi = *b[1]
			}
		}
		s.Percentiles = append(s.Percentiles, pc)
	}
	slices.SortFunc(s.Percentiles, func(a, b Percentile) int {
		switch {
		case a.P < b.P:
			return -1
		case a.P > b.P:
			return 1
		}
		return 0
	})
	return errors.Join(errs...)
}

// ParsePercentiles parses a comma list such as "50,90,95,99,99.9".
func ParsePercentiles(s string) ([]float64, error) {
	var out []float64
	var errs []error
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		f = strings.TrimPrefix(strings.TrimPrefix(f, "p"), "P")
		p, err := strconv.ParseFloat(f, 64)
		switch {
		case err != nil || math.IsNaN(p):
			errs = append(errs, fmt.Errorf("percentile %q: not a number", f))
		case p < 0 || p > 100:
			errs = append(errs, fmt.Errorf("percentile %q: must be between 0 and 100", f))
		case slices.Contains(out, p):
			errs = append(errs, fmt.Errorf("percentile %q: listed twice", f))
		default:
			out = append(out, p)
		}
	}
	return out, errors.Join(errs...)
}
