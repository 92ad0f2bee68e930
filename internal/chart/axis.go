package chart

import (
	"math"
	"strconv"
	"strings"
)

// axis maps data values to [0, 1] and holds its ticks.
type axis struct {
	lo, hi  float64 // the range drawn (log10 of it on a log axis)
	log     bool
	labels  map[float64]string // named ticks (categories) in place of numbers
	percent bool               // fractions written as percentages
	step    float64            // between linear ticks
	exact   bool               // lo and hi as given, not widened to whole ticks
	ticks   []float64
	mults   []float64 // log ticks: the multiples of each power of ten
}

func (a axis) frac(v float64) float64 {
	if a.log {
		v = math.Log10(v)
	}
	return (v - a.lo) / (a.hi - a.lo)
}

// at is the value at fraction f of the axis.
func (a axis) at(f float64) float64 {
	v := a.lo + f*(a.hi-a.lo)
	if a.log {
		return math.Pow(10, v)
	}
	return v
}

// fit is the axis for values vs: their range with a margin, widened to whole ticks, and
// from 0 only when the data starts near 0 (so that points do not crowd into a corner).
func fit(vs []float64, log bool) axis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if log {
			v = math.Log10(v)
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if log {
		span := math.Max(hi-lo, 0.3)
		a := axis{lo: lo - span*0.06, hi: hi + span*0.06, log: true}
		switch d := a.hi - a.lo; {
		case d < 0.8: // within a decade, 1, 2, 5 alone leave two ticks
			a.mults = []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
		case d > 3:
			a.mults = []float64{1}
		default:
			a.mults = []float64{1, 2, 5}
		}
		a.ticks = a.logTicks()
		return a
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi)*0.2, 1)
	}
	lo, hi = lo-span*0.08, hi+span*0.08
	if vmin := lo + span*0.08; vmin >= 0 && (lo < 0 || vmin < span*0.35) {
		lo = 0
	}
	return linear(lo, hi, niceStep((hi-lo)/5))
}

func linear(lo, hi, step float64) axis {
	a := axis{lo: math.Floor(lo/step+1e-9) * step, hi: math.Ceil(hi/step-1e-9) * step, step: step}
	for v := a.lo; v <= a.hi+step/2; v += step {
		a.ticks = append(a.ticks, math.Round(v/step)*step)
	}
	return a
}

// exactStep is the axis from lo to hi whatever the ticks, with ticks at whole steps inside.
func exactStep(lo, hi, step float64) axis {
	a := axis{lo: lo, hi: hi, step: step, exact: true}
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9; v += step {
		a.ticks = append(a.ticks, math.Round(v/step)*step)
	}
	return a
}

func (a axis) logTicks() []float64 {
	var ts []float64
	for e := math.Floor(a.lo); e <= math.Ceil(a.hi); e++ {
		for _, m := range a.mults {
			v := m * math.Pow(10, e)
			if l := math.Log10(v); l >= a.lo-1e-9 && l <= a.hi+1e-9 {
				ts = append(ts, v)
			}
		}
	}
	return ts
}

// crowded says whether two neighbouring tick labels, each size(label) long along an axis
// length long, would touch.
func (a axis) crowded(length float64, size func(string) float64) bool {
	for i := 1; i < len(a.ticks); i++ {
		p, q := a.ticks[i-1], a.ticks[i]
		if (a.frac(q)-a.frac(p))*length < (size(a.format(p))+size(a.format(q)))/2 {
			return true
		}
	}
	return false
}

// categories is an axis of named ticks with half a step's room at either end.
func categories(ts []Tick) axis {
	a := axis{lo: math.Inf(1), hi: math.Inf(-1), labels: map[float64]string{}, step: 1}
	for _, t := range ts {
		a.lo, a.hi = math.Min(a.lo, t.At-0.5), math.Max(a.hi, t.At+0.5)
		a.ticks = append(a.ticks, t.At)
		a.labels[t.At] = t.Label
	}
	return a
}

// coarser is the axis with about half as many ticks.
func (a axis) coarser() axis {
	if a.labels != nil { // every other category keeps its name
		a.ticks = everyOther(a.ticks)
		return a
	}
	if a.log {
		switch len(a.mults) {
		case 9:
			a.mults = []float64{1, 2, 5}
		case 3:
			a.mults = []float64{1}
		default: // every other power of ten
			a.ticks = everyOther(a.ticks)
			return a
		}
		a.ticks = a.logTicks()
		return a
	}
	if a.exact {
		return exactStep(a.lo, a.hi, niceStep(a.step*1.9))
	}
	b := linear(a.lo, a.hi, niceStep(a.step*1.9))
	b.percent = a.percent
	return b
}

func everyOther(ts []float64) []float64 {
	var out []float64
	for i, t := range ts {
		if i%2 == 0 {
			out = append(out, t)
		}
	}
	return out
}

// niceStep rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		if v <= m*e*(1+1e-9) {
			return m * e
		}
	}
	return 10 * e
}

// format writes tick value v as people write numbers: 10,000 and 1.5M, never 1e+04, with
// as many decimals as the step between ticks needs.
func (a axis) format(v float64) string {
	if a.labels != nil {
		return a.labels[v]
	}
	if a.percent {
		return Number(v*100, a.step*100) + "%"
	}
	step := a.step
	if a.log {
		step = v
	}
	return Number(v, step)
}

// Number writes v with the decimals that resolution step needs, thousands separated below
// a million and in M (or G) above.
func Number(v, step float64) string {
	if v == 0 {
		return "0"
	}
	suffix := ""
	switch a := math.Abs(v); {
	case a >= 1e9:
		v, step, suffix = v/1e9, step/1e9, "G"
	case a >= 1e6:
		v, step, suffix = v/1e6, step/1e6, "M"
	}
	d := 0
	for d < 6 && math.Abs(step*math.Pow(10, float64(d))-math.Round(step*math.Pow(10, float64(d)))) > 1e-6*math.Max(1, step*math.Pow(10, float64(d))) {
		d++
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if suffix != "" {
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s + suffix
	}
	return group(s)
}

// group puts thousands separators into the integer part of s.
func group(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if hasFrac {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}
