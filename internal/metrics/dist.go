package metrics

import (
	"cmp"
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
	// are counted in dense[us] (from denseFrom samples on), other values appended to
	// pending. A slice increment costs ~2 ns, an append not much more; a map insert ~40 ns,
	// which matters at 10^8 samples.
	dense []uint64
	// pending holds the samples outside dense as (value, count) pairs, values repeating;
	// pending[:merged] is sorted with distinct values. Whenever the unsorted tail outgrows
	// the sorted head (and pendingMin), it is sorted and merged in, so pending stays within
	// about twice the distinct values.
	pending []distinct
	merged  int
	n       uint64

	// Once read, the counts are frozen into this sorted form (and the above freed), so a
	// kept Dist costs 32 bytes per distinct value. Adding again thaws it.
	sorted []distinct
	cum    []uint64 // cum[i] = samples with value <= sorted[i]

	sparse bool // no dense counter: a small distribution (a time bucket's, a batch's)
}

// denseMax bounds the dense counter: 2^18 µs = 262 ms, at most 2 MiB per Dist.
const denseMax = 1 << 18

// pendingMin is the unsorted samples pending holds before it first sorts them: sorting
// fewer, more often, would cost more than it saves.
const pendingMin = 1 << 12

// pendingStart is pending's first capacity: a bucket's distribution takes hundreds of
// samples, and growing to them from one reallocates and copies a dozen times.
const pendingStart = 64

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
	if uint64(us) < uint64(len(d.dense)) { // the common case, kept inlinable (nil dense: len 0)
		d.n += count
		d.dense[us] += count
		return
	}
	d.addOther(us, count)
}

// addOther is addInt for a value its dense counter does not hold yet (or a frozen Dist).
func (d *Dist) addOther(us int64, count uint64) {
	if d.sorted != nil {
		d.thaw()
	}
	d.n += count
	if us >= 0 && us < denseMax && !d.sparse && (d.dense != nil || d.n >= denseFrom) {
		if us >= int64(len(d.dense)) {
			d.grow(us)
		}
		d.dense[us] += count
		return
	}
	d.push(distinct{ratio{us, 1}, count})
}

// denseFrom is the samples a Dist holds before it counts in a dense counter: until then
// pending holds them all, cheaper than clearing and scanning a counter of up to 2 MiB for
// the few hundred samples of a short level or of a window's merge.
const denseFrom = 4096

func (d *Dist) grow(us int64) {
	n := max(2*len(d.dense), int(us)+1, 1024)
	n = min(n, denseMax)
	nd := make([]uint64, n)
	copy(nd, d.dense)
	d.dense = nd
}

// push appends one pending pair, sorting the unsorted tail in when it has outgrown the
// sorted head.
func (d *Dist) push(e distinct) {
	if d.pending == nil {
		d.pending = make([]distinct, 0, pendingStart)
	}
	d.pending = append(d.pending, e)
	if len(d.pending)-d.merged >= max(d.merged, pendingMin) {
		d.compact()
	}
}

// compact sorts pending's tail and merges it into the sorted head, adding the counts of
// equal values, so pending is sorted with distinct values.
func (d *Dist) compact() {
	if d.merged == len(d.pending) {
		return
	}
	head, tail := d.pending[:d.merged], d.pending[d.merged:]
	slices.SortFunc(tail, func(a, b distinct) int { return cmpRatio(a.v, b.v) })
	k := 0 // tail[:k]: its distinct values, their counts added
	for _, e := range tail {
		if k > 0 && tail[k-1].v == e.v {
			tail[k-1].c += e.c
			continue
		}
		tail[k] = e
		k++
	}
	d.pending = mergeRuns(head, tail[:k])
	d.merged = len(d.pending)
}

// thaw turns the frozen sorted form back into pending counts.
func (d *Dist) thaw() {
	d.pending, d.merged = d.sorted, len(d.sorted)
	d.sorted, d.cum = nil, nil
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
	d.n += count
	d.push(distinct{ratio{num / g, den / g}, count})
}

// Merge adds every sample of o to d.
func (d *Dist) Merge(o *Dist) {
	if o == nil || o.Count() == 0 {
		return
	}
	o.build()
	if d.sorted != nil {
		d.thaw()
	}
	if len(d.pending) == 0 {
		// o's sorted values become d's sorted head.
		d.pending = append(make([]distinct, 0, len(o.sorted)), o.sorted...)
		d.merged = len(d.pending)
	} else {
		d.pending = append(d.pending, o.sorted...)
		if len(d.pending)-d.merged >= max(d.merged, pendingMin) {
			d.compact()
		}
	}
	d.n += o.n
}

// mergeAll is a frozen Dist of every sample of ds: their sorted forms merged in pairs, each
// distinct value moved about log2(len(ds)) times and never sorted again (merging one by one
// into a growing Dist would move the early ones len(ds) times).
func mergeAll(ds []*Dist) *Dist {
	out := newSparseDist()
	var runs [][]distinct
	for _, d := range ds {
		if d.Count() > 0 {
			d.build()
			runs = append(runs, d.sorted)
			out.n += d.n
		}
	}
	switch len(runs) {
	case 0:
		return out
	case 1:
		out.sorted = slices.Clone(runs[0]) // d's own may be thawed and appended to
	default:
		for len(runs) > 1 {
			next := runs[:0]
			for i := 0; i < len(runs); i += 2 {
				if i+1 == len(runs) {
					next = append(next, runs[i])
				} else {
					next = append(next, mergeRuns(runs[i], runs[i+1]))
				}
			}
			runs = next
		}
		out.sorted = runs[0]
	}
	out.cum = cumulative(out.sorted)
	return out
}

// mergeRuns merges two sorted runs of distinct values, adding the counts of a value in both.
func mergeRuns(a, b []distinct) []distinct {
	out := make([]distinct, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := cmpRatio(a[i].v, b[j].v); {
		case c < 0:
			out = append(out, a[i])
			i++
		case c > 0:
			out = append(out, b[j])
			j++
		default:
			out = append(out, distinct{a[i].v, a[i].c + b[j].c})
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// cumulative is the running count of sorted values: cum[i] = samples with value <= s[i].
func cumulative(s []distinct) []uint64 {
	cum := make([]uint64, len(s))
	var acc uint64
	for i := range s {
		acc += s[i].c
		cum[i] = acc
	}
	return cum
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

// build freezes the counters into the sorted form: the dense counter's values merged with
// pending's, the counts of a value held in both added.
func (d *Dist) build() {
	if d.sorted != nil || d.n == 0 {
		return
	}
	d.compact()
	p := d.pending
	// Exactly sized: a kept Dist (a window bucket's among them) costs its distinct values only.
	nd := len(p)
	for _, c := range d.dense {
		if c > 0 {
			nd++
		}
	}
	for _, e := range p {
		if e.v.den == 1 && e.v.num >= 0 && e.v.num < int64(len(d.dense)) && d.dense[e.v.num] > 0 {
			nd--
		}
	}
	var s []distinct
	if d.dense == nil && cap(p) == nd {
		s = p
	} else {
		s = make([]distinct, 0, nd)
		j := 0
		for v, c := range d.dense {
			if c == 0 {
				continue
			}
			x := ratio{int64(v), 1}
			for j < len(p) && less(p[j].v, x) {
				s = append(s, p[j])
				j++
			}
			if j < len(p) && p[j].v == x {
				c += p[j].c
				j++
			}
			s = append(s, distinct{x, c})
		}
		s = append(s, p[j:]...)
	}
	d.dense, d.pending, d.merged = nil, nil, 0
	d.sorted, d.cum = s, cumulative(s)
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
func less(a, b ratio) bool { return cmpRatio(a, b) < 0 }

// cmpRatio compares a.num/a.den with b.num/b.den exactly: -1, 0 or 1.
func cmpRatio(a, b ratio) int {
	if a.den == b.den {
		return cmp.Compare(a.num, b.num)
	}
	return cmpMul(a.num, b.den, b.num, a.den)
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
