package metrics

import (
	"math"
	"math/bits"
	"slices"
	"sort"
)

// Dist is an exact distribution of durations kept as counts per distinct value.
//
// Why not []float64: a million-request run with ~128 tokens each yields ~128M ITL samples
// (1 GiB as float64). Event times are integer microseconds, so every sample is an exact
// rational number of microseconds (a gap g, or g/n for a gap carrying n tokens, or
// (last-first)/(N-1) for TPOT). Equal samples collapse into one (value, count) pair, so memory
// grows with the number of distinct values, not with the number of samples, and the order
// statistics — hence the interpolated percentiles and their confidence intervals — are exactly
// those a full sort would give.
//
// A Dist is not safe for concurrent use while samples are added; once frozen (any read does it,
// and Aggregate returns its Dists frozen) concurrent reads are safe.
type Dist struct {
	// While samples are added: small non-negative integers (the bulk of ITL and chunk gaps)
	// are counted in dense[us] (from denseFrom samples on), other integers in ints,
	// non-integers in rats. Map inserts
	// cost ~40 ns; a slice increment ~2 ns, which matters at 10^8 samples.
	dense []uint64
	ints  map[int64]uint64 // integer microseconds -> count
	rats  map[ratio]uint64 // reduced non-integer ratios of microseconds -> count
	n     uint64

	// Once read, the counts are frozen into this sorted form (and the above freed), so a
	// kept Dist costs 32 bytes per distinct value. Adding again thaws it.
	sorted []distinct
	cum    []uint64 // cum[i] = samples with value <= sorted[i]

	sparse bool // no dense counter: a small distribution (a time bucket's, a batch's)
}

// denseMax bounds the dense counter: 2^18 µs = 262 ms, at most 2 MiB per Dist.
const denseMax = 1 << 18

// ratio is num/den microseconds, den >= 1, reduced to lowest terms.
type ratio struct{ num, den int64 }

type distinct struct {
	v ratio
	c uint64
}

// NewDist returns an empty distribution.
func NewDist() *Dist { return &Dist{} }

// NewSparseDist is an empty distribution for few samples: no dense counter to allocate
// (thousands of samples or fewer, as a calibration judges each candidate profile on).
func NewSparseDist() *Dist { return newSparseDist() }

// newSparseDist is an empty distribution for few samples: no dense counter to allocate.
func newSparseDist() *Dist { return &Dist{sparse: true} }

// AddMicros adds one sample of us microseconds.
func (d *Dist) AddMicros(us int64) { d.addInt(us, 1) }

func (d *Dist) addInt(us int64, count uint64) {
	if d.sorted != nil {
		d.thaw()
	}
	d.n += count
	if us >= 0 && us < denseMax && !d.sparse && (d.dense != nil || d.n >= denseFrom) {
		if d.dense == nil {
			d.denseFromInts()
		}
		if us >= int64(len(d.dense)) {
			d.grow(us)
		}
		d.dense[us] += count
		return
	}
	if d.ints == nil {
		d.ints = make(map[int64]uint64)
	}
	d.ints[us] += count
}

// denseFrom is the samples a Dist holds before it counts in a dense counter: until then the
// map holds them all, cheaper than clearing and scanning a counter of up to 2 MiB for the
// few hundred samples of a short level or of a window's merge.
const denseFrom = 4096

// denseFromInts moves the map's integers that the dense counter covers into it, so that
// each value is counted in one place.
func (d *Dist) denseFromInts() {
	top := int64(-1)
	for us := range d.ints {
		if us >= 0 && us < denseMax {
			top = max(top, us)
		}
	}
	d.dense = []uint64{}
	if top < 0 {
		return
	}
	d.grow(top)
	for us, c := range d.ints {
		if us >= 0 && us < denseMax {
			d.dense[us] += c
			delete(d.ints, us)
		}
	}
}

func (d *Dist) grow(us int64) {
	n := max(2*len(d.dense), int(us)+1, 1024)
	n = min(n, denseMax)
	nd := make([]uint64, n)
	copy(nd, d.dense)
	d.dense = nd
}

// thaw turns the frozen sorted form back into counters.
func (d *Dist) thaw() {
	s := d.sorted
	d.sorted, d.cum, d.n = nil, nil, 0
	for _, e := range s {
		d.AddRatio(e.v.num, e.v.den, e.c)
	}
}

// AddRatio adds count samples of num/den microseconds (den >= 1).
func (d *Dist) AddRatio(num, den int64, count uint64) {
	if count == 0 {
		return
	}
	if den == 1 { // the common case: whole microseconds, no division
		d.addInt(num, count)
		return
	}
	if den <= 0 {
		panic("metrics: AddRatio with den <= 0")
	}
	if num%den == 0 {
		d.addInt(num/den, count)
		return
	}
	if d.sorted != nil {
		d.thaw()
	}
	g := gcd(abs64(num), den)
	if d.rats == nil {
		d.rats = make(map[ratio]uint64)
	}
	d.rats[ratio{num / g, den / g}] += count
	d.n += count
}

// Merge adds every sample of o to d.
func (d *Dist) Merge(o *Dist) {
	if o == nil {
		return
	}
	o.build()
	for _, e := range o.sorted {
		d.AddRatio(e.v.num, e.v.den, e.c)
	}
}

// Count is the number of samples.
func (d *Dist) Count() uint64 {
	if d == nil {
		return 0
	}
	return d.n
}

// Distinct is the number of distinct values held (the memory the distribution takes).
func (d *Dist) Distinct() int {
	if d == nil || d.n == 0 {
		return 0
	}
	d.build()
	return len(d.sorted)
}

// build freezes the counters into the sorted form.
func (d *Dist) build() {
	if d.sorted != nil || d.n == 0 {
		return
	}
	nd := 0
	for _, c := range d.dense {
		if c > 0 {
			nd++
		}
	}
	// Exactly sized: a kept Dist (a window bucket's among them) costs its distinct values only.
	s := make([]distinct, 0, nd+len(d.ints)+len(d.rats))
	for v, c := range d.dense {
		if c > 0 {
			s = append(s, distinct{ratio{int64(v), 1}, c})
		}
	}
	for v, c := range d.ints {
		s = append(s, distinct{ratio{v, 1}, c})
	}
	for v, c := range d.rats {
		s = append(s, distinct{v, c})
	}
	slices.SortFunc(s, func(a, b distinct) int {
		if less(a.v, b.v) {
			return -1
		}
		if less(b.v, a.v) {
			return 1
		}
		return 0
	})
	d.dense, d.ints, d.rats = nil, nil, nil
	cum := make([]uint64, len(s))
	var acc uint64
	for i := range s {
		acc += s[i].c
		cum[i] = acc
	}
	d.sorted, d.cum = s, cum
}

// at returns the k-th order statistic (0-based) in milliseconds.
func (d *Dist) at(k uint64) float64 {
	i := sort.Search(len(d.cum), func(i int) bool { return d.cum[i] > k })
	return d.sorted[i].v.ms()
}

// Percentile returns the p-th percentile (0 <= p <= 100) in milliseconds by linear
// interpolation between the order statistics at ranks floor(h) and ceil(h), h = (n-1)p/100:
// numpy's default ("linear", Hyndman & Fan type 7), so figures compare with vLLM's.
// ok is false for an empty distribution.
func (d *Dist) Percentile(p float64) (v float64, ok bool) {
	if d.Count() == 0 {
		return 0, false
	}
	d.build()
	return Quantile(int(d.n), p, func(k int) float64 { return d.at(uint64(k)) }), true
}

// Quantile is the p-th percentile (0 <= p <= 100) of n sorted values, at(k) being the k-th
// (0-based), by Dist.Percentile's definition: every percentile of llmbench's (fidelity's,
// calibrate's medians) is this one. NaN when n is 0.
func Quantile(n int, p float64, at func(k int) float64) float64 {
	if n == 0 {
		return math.NaN()
	}
	q := math.Min(math.Max(p/100, 0), 1)
	h := q * float64(n-1)
	lo := math.Floor(h)
	t := h - lo
	a := at(int(lo))
	if t == 0 {
		return a
	}
	return lerp(a, at(int(lo)+1), t)
}

// Median of xs, which it leaves as they are, by Quantile; NaN when xs is empty.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	return Quantile(len(s), 50, func(k int) float64 { return s[k] })
}

// lerp mirrors numpy's _lerp, which evaluates from the nearer end so results match numpy
// to the last bit.
func lerp(a, b, t float64) float64 {
	diff := b - a
	if t >= 0.5 {
		return b - diff*(1-t)
	}
	return a + diff*t
}

// Min and Max in milliseconds (0 when empty).
func (d *Dist) Min() float64 {
	if d.Count() == 0 {
		return 0
	}
	d.build()
	return d.sorted[0].v.ms()
}

func (d *Dist) Max() float64 {
	if d.Count() == 0 {
		return 0
	}
	d.build()
	return d.sorted[len(d.sorted)-1].v.ms()
}

// MeanStd returns the mean and the population standard deviation (ddof = 0, like numpy's
// np.std that vLLM reports) in milliseconds, computed in two passes over the distinct values
// with compensated sums.
func (d *Dist) MeanStd() (mean, std float64) {
	if d.Count() == 0 {
		return 0, 0
	}
	d.build()
	var s kahan
	for _, e := range d.sorted {
		s.add(e.v.ms() * float64(e.c))
	}
	mean = s.sum() / float64(d.n)
	var v kahan
	for _, e := range d.sorted {
		dv := e.v.ms() - mean
		v.add(dv * dv * float64(e.c))
	}
	return mean, math.Sqrt(v.sum() / float64(d.n))
}

// Each calls f for every distinct value (ms) in ascending order with its count: enough to
// draw an exact CDF without materialising the samples.
func (d *Dist) Each(f func(ms float64, count uint64)) {
	if d.Count() == 0 {
		return
	}
	d.build()
	for _, e := range d.sorted {
		f(e.v.ms(), e.c)
	}
}

// Values returns every sample in ascending order (ms). Only for small distributions.
func (d *Dist) Values() []float64 {
	out := make([]float64, 0, d.Count())
	d.Each(func(ms float64, c uint64) {
		for range c {
			out = append(out, ms)
		}
	})
	return out
}

// ms converts exactly-held microseconds to milliseconds with a single rounding.
func (r ratio) ms() float64 { return float64(r.num) / (float64(r.den) * 1000) }

// less compares a.num/a.den < b.num/b.den exactly with 128-bit products.
func less(a, b ratio) bool {
	if a.den == b.den {
		return a.num < b.num
	}
	return cmpMul(a.num, b.den, b.num, a.den) < 0
}

// cmpMul compares x*y with u*v (y, v > 0) without overflow.
func cmpMul(x, y, u, v int64) int {
	sx, su := x < 0, u < 0
	if sx != su {
		if sx {
			return -1
		}
		return 1
	}
	hi1, lo1 := bits.Mul64(uint64(abs64(x)), uint64(y))
	hi2, lo2 := bits.Mul64(uint64(abs64(u)), uint64(v))
	c := 0
	switch {
	case hi1 != hi2:
		c = cmpU(hi1, hi2)
	default:
		c = cmpU(lo1, lo2)
	}
	if sx { // both negative: larger magnitude is smaller
		c = -c
	}
	return c
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	if a == 0 {
		return 1
	}
	return a
}

// kahan is Neumaier's compensated summation.
type kahan struct{ s, c float64 }

func (k *kahan) add(x float64) {
	t := k.s + x
	if math.Abs(k.s) >= math.Abs(x) {
		k.c += (k.s - t) + x
	} else {
		k.c += (x - t) + k.s
	}
	k.s = t
}

func (k *kahan) sum() float64 { return k.s + k.c }
