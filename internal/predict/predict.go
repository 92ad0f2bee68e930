// Package predict holds how far the simulator's predictions were measured from real GPUs:
// for each group of validation rows (model family × GPU × engine × load kind) and each
// figure, a 90 % prediction interval as factors of the predicted value, from the rows'
// residuals (llmbench validate --spreads), and the same from a calibrated profile's held-out
// error. simulate puts the interval beside each figure it predicts, so a planner can tell a
// figure measured within 3 % from one measured within 90 %.
package predict

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/sim"
)

// Figures are the figures an interval is given for, under validate's names: a latency
// metric's statistic, or output_throughput.
var Figures = []string{"ttft_ms.p50", "ttft_ms.p99", "tpot_ms.p50", "tpot_ms.p99", "e2el_ms.p50", "output_throughput"}

// Band is one figure's 90 % prediction interval as factors of the predicted value P: the
// measured value lies in [Lo·P, Hi·P].
type Band struct {
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	Rows int     `json:"rows"` // the residuals it was read from (0: a calibration's error)
	// Groups is how many groups' residuals a pooled band was read from (newGroupBand).
	Groups int `json:"groups,omitempty"`
}

// Load kinds of a group: a closed loop, or an open loop by its arrival process.
const (
	Closed   = "closed"
	Poisson  = schedule.Poisson
	Constant = schedule.Constant
	Gamma    = schedule.Gamma
)

// Loads are the load kinds a spread has bands for.
var Loads = []string{Closed, Poisson, Constant, Gamma}

// LoadKind is the load kind of a level: Closed, or its open loop's arrival process.
func LoadKind(closed bool, a schedule.Arrival) string {
	if closed {
		return Closed
	}
	return cmp.Or(a.Kind, Poisson)
}

// Group is what the validation rows' errors are summarised and their bands read by: model
// family × GPU generation × engine × load kind.
type Group struct {
	Family string `json:"family"`
	GPU    string `json:"gpu"`
	Engine string `json:"engine"`
	Load   string `json:"load"` // one of Loads: closed, or the open loop's arrivals
}

// String is the group's key in spreads.json and its name in validate's tables.
func (g Group) String() string { return g.Family + " " + g.GPU + " " + g.Engine + " " + g.Load }

// Table is the spreads of every group with enough rows, each figure's over all rows
// (Pooled), and how it was made.
type Table struct {
	Made   string                     `json:"made"`   // the command that wrote it, and when
	Groups map[string]map[string]Band `json:"groups"` // by "family gpu engine load", then figure
	// Pooled is a group's band that has no rows of its own, by figure: newGroupBand of
	// every group's residuals.
	Pooled map[string]Band `json:"pooled"`
	// PooledByLoop is Pooled over one kind of loop's groups only (loopOf: closed, open), by
	// loop then figure, where at least two of its groups have rows: what a group without
	// rows of its own takes first.
	PooledByLoop map[string]map[string]Band `json:"pooled_by_loop,omitempty"`
	// Families and GPUs are those with any row; a profile of a family or GPU none measured
	// takes the pooled band widened by FamilyWidening or GPUWidening (both, for both).
	Families []string `json:"families"`
	GPUs     []string `json:"gpus"`
	// FamilyWidening and GPUWidening multiply the pooled band's log-width for a family or
	// GPU no row measured: what the rows needed when each family (GPU) was left out in turn
	// (leaveOutWidening), at least 1.
	FamilyWidening float64 `json:"family_widening"`
	GPUWidening    float64 `json:"gpu_widening"`
}

// MinRows is the fewest rows a group's band is read from; a group with fewer takes the
// pooled band.
const MinRows = 5

// Residual is one row's figure, predicted and measured, with the row's group and source.
type Residual struct {
	Group             Group
	Source            string
	Figure            string
	Predicted, Actual float64
}

// NewTable builds the spreads from the rows' residuals: per group and figure with at least
// MinRows rows, and pooled for the groups without. A group's band is the normal prediction
// interval of the log ratio ln(measured/predicted): mean ± t(0.95, n−1)·sd·√(1 + 1/n), so
// its bias moves the band and few rows widen it; the pooled band is newGroupBand's; the
// widenings for a family or GPU none measured are leaveOutWidening's.
func NewTable(rs []Residual, made string) Table {
	t := bands(rs)
	t.Made = made
	t.FamilyWidening = leaveOutWidening(rs, func(r Residual) string { return r.Group.Family })
	t.GPUWidening = leaveOutWidening(rs, func(r Residual) string { return r.Group.GPU })
	return t
}

// bands is NewTable without its widenings (1).
func bands(rs []Residual) Table {
	t := Table{Groups: map[string]map[string]Band{}, FamilyWidening: 1, GPUWidening: 1}
	byGroup := map[Group]map[string][]float64{}
	fam, gpus := map[string]bool{}, map[string]bool{}
	for _, r := range rs {
		if !(r.Predicted > 0) || !(r.Actual > 0) || math.IsInf(r.Predicted, 0) || math.IsInf(r.Actual, 0) {
			continue
		}
		if byGroup[r.Group] == nil {
			byGroup[r.Group] = map[string][]float64{}
		}
		byGroup[r.Group][r.Figure] = append(byGroup[r.Group][r.Figure], math.Log(r.Actual/r.Predicted))
		fam[r.Group.Family], gpus[r.Group.GPU] = true, true
	}
	for g, figs := range byGroup {
		for f, xs := range figs {
			if len(xs) >= MinRows {
				if t.Groups[g.String()] == nil {
					t.Groups[g.String()] = map[string]Band{}
				}
				t.Groups[g.String()][f] = band(xs, 1)
			}
		}
	}
	// In order: the same sums each time.
	keys := slices.SortedFunc(maps.Keys(byGroup), func(a, b Group) int { return strings.Compare(a.String(), b.String()) })
	t.Pooled = pool(byGroup, keys, func(Group) bool { return true }, true)
	for _, loop := range []string{Closed, open} {
		if b := pool(byGroup, keys, func(g Group) bool { return loopOf(g.Load) == loop }, false); len(b) > 0 {
			if t.PooledByLoop == nil {
				t.PooledByLoop = map[string]map[string]Band{}
			}
			t.PooledByLoop[loop] = b
		}
	}
	t.Families, t.GPUs = slices.Sorted(maps.Keys(fam)), slices.Sorted(maps.Keys(gpus))
	return t
}

// pool is, for each figure, newGroupBand over the groups keep admits (keys, in order) that
// measure it, where two or more do; where one alone does, its own band if alone (and it has
// two rows), else none.
func pool(byGroup map[Group]map[string][]float64, keys []Group, keep func(Group) bool, alone bool) map[string]Band {
	groups := map[string][][]float64{}
	for _, g := range keys {
		if keep(g) {
			for f, xs := range byGroup[g] {
				groups[f] = append(groups[f], xs)
			}
		}
	}
	out := map[string]Band{}
	for f, gs := range groups {
		switch {
		case len(gs) >= 2:
			out[f] = newGroupBand(gs)
		case alone && len(gs[0]) >= 2:
			out[f] = band(gs[0], 1)
		}
	}
	return out
}

// open is the kind of loop of every arrival process (loopOf).
const open = "open"

// loopOf is the kind of loop of load kind load: Closed, or open for every arrival process.
// They are pooled apart because their errors differ in kind: a closed loop holds its
// requests in flight, so a step-time error reads as itself, while an open loop near
// capacity queues, and the same error reads many times over in its latencies (and not at
// all in its throughput, which the arrivals set).
func loopOf(load string) string {
	if load == Closed {
		return Closed
	}
	return open
}

// pooled is the band of figure f for a group of load kind load without rows of its own: the
// pooled band of its kind of loop's groups, else every group's; loop says which ("" for
// every group's).
func (t Table) pooled(load, f string) (b Band, loop string, ok bool) {
	if b, ok := t.PooledByLoop[loopOf(load)][f]; ok {
		return b, loopOf(load), true
	}
	b, ok = t.Pooled[f]
	return b, "", ok
}

// leaveOutWidening is how much wider than the pooled band a row of a family (or GPU: key)
// no row measured needs its band: each key's rows are left out in turn and measured against
// the pooled band of the others, and the widening is the 90th percentile (nearest rank) of
// their distances from its centre in half-widths, pooled over the keys' figures — so that
// the widened band would have held 90 % of them. At least 1 (the pooled band is already the
// band of a group none measured), and 1 with fewer than two keys (nothing to leave out).
func leaveOutWidening(rs []Residual, key func(Residual) string) float64 {
	byKey := map[string][]Residual{}
	for _, r := range rs {
		byKey[key(r)] = append(byKey[key(r)], r)
	}
	if len(byKey) < 2 {
		return 1
	}
	var zs []float64
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		var rest []Residual
		for _, r := range rs {
			if key(r) != k {
				rest = append(rest, r)
			}
		}
		others := bands(rest)
		for _, r := range byKey[k] {
			b, _, ok := others.pooled(r.Group.Load, r.Figure)
			if !ok || !(r.Predicted > 0) || !(r.Actual > 0) || math.IsInf(r.Predicted, 0) || math.IsInf(r.Actual, 0) {
				continue
			}
			lo, hi := math.Log(b.Lo), math.Log(b.Hi)
			if !(hi > lo) {
				continue
			}
			zs = append(zs, math.Abs(math.Log(r.Actual/r.Predicted)-(lo+hi)/2)/((hi-lo)/2))
		}
	}
	if len(zs) == 0 {
		return 1
	}
	slices.Sort(zs)
	return max(1, zs[int(math.Ceil(0.9*float64(len(zs))))-1])
}

// band is the prediction interval of log ratios xs, its log-width about their mean
// multiplied by widen.
func band(xs []float64, widen float64) Band {
	n := float64(len(xs))
	var mean, ss float64
	for _, x := range xs {
		mean += x
	}
	mean /= n
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / (n - 1))
	h := tQuantile95(len(xs)-1) * sd * math.Sqrt(1+1/n) * widen
	return Band{Lo: math.Exp(mean - h), Hi: math.Exp(mean + h), Rows: len(xs)}
}

// newGroupBand is the prediction interval of a row of a group no residual measured (a
// one-way random-effects model of the groups' log ratios): a new group's bias is drawn
// like the measured groups' mean errors, each group counting once however many rows it
// has, and its row scatters about it as rows do within a group:
//
//	mean of the group means ± t(0.95, k−1)·√(s_m²·(1 + 1/k) + s_w²)
//
// s_m² the variance of the k group means, s_w² the pooled variance within groups. Pooling
// the rows instead weighs the groups by their row counts, and a family measured in many
// rows narrows the band every other deployment takes to its own bias.
func newGroupBand(groups [][]float64) Band {
	k := float64(len(groups))
	means := make([]float64, len(groups))
	var mu, within float64
	rows, df := 0, 0
	for i, g := range groups {
		for _, x := range g {
			means[i] += x
		}
		means[i] /= float64(len(g))
		mu += means[i]
		for _, x := range g {
			within += (x - means[i]) * (x - means[i])
		}
		rows += len(g)
		df += len(g) - 1
	}
	mu /= k
	var between float64
	for _, m := range means {
		between += (m - mu) * (m - mu)
	}
	between /= k - 1
	if df > 0 {
		within /= float64(df)
	}
	h := tQuantile95(len(groups)-1) * math.Sqrt(between*(1+1/k)+within)
	return Band{Lo: math.Exp(mu - h), Hi: math.Exp(mu + h), Rows: rows, Groups: len(groups)}
}

// Spread is the bands a profile's predictions carry, for each kind of level, and why.
type Spread struct {
	Basis  map[string]string          // by load kind (Loads): where the bands came from
	ByLoad map[string]map[string]Band // by load kind (Loads), then figure
}

// For is the spread of a profile of model family, GPU and engine: each load kind's group
// bands where the group has its rows, else the pooled bands (widened for a family or GPU
// no row measured).
func (t Table) For(family, gpu, engine string) Spread {
	s := Spread{Basis: map[string]string{}, ByLoad: map[string]map[string]Band{}}
	wf, unmeasured := 1.0, []string(nil)
	if !slices.Contains(t.Families, family) {
		wf *= max(1, t.FamilyWidening)
		unmeasured = append(unmeasured, "the model family "+family)
	}
	if !slices.Contains(t.GPUs, gpu) {
		wf *= max(1, t.GPUWidening)
		unmeasured = append(unmeasured, "the GPU "+gpu)
	}
	unseen := len(unmeasured) > 0
	for _, load := range Loads {
		g := Group{Family: family, GPU: gpu, Engine: engine, Load: load}
		bands := map[string]Band{}
		rows := 0
		var pooled, fromAll []string // figures the group has no band of; of those, the ones its loop's groups do not give
		for _, f := range Figures {
			if b, ok := t.Groups[g.String()][f]; ok {
				bands[f], rows = b, max(rows, b.Rows)
				continue
			}
			if b, loop, ok := t.pooled(load, f); ok {
				if unseen {
					b = widen(b, wf)
				}
				bands[f] = b
				pooled = append(pooled, f)
				if loop == "" {
					fromAll = append(fromAll, f)
				}
			}
		}
		s.ByLoad[load] = bands
		spread := spreadOf(loopOf(load), pooled, fromAll)
		switch {
		case rows > 0:
			s.Basis[load] = fmt.Sprintf("the residuals of the %d validation rows of %s", rows, g.String())
			if len(pooled) > 0 {
				s.Basis[load] += fmt.Sprintf(" (%s, which they do not measure: %s)", strings.Join(pooled, ", "), spread)
			}
		case unseen:
			s.Basis[load] = fmt.Sprintf("%s, widened %.2f× (no row measured %s)", spread, wf, strings.Join(unmeasured, " or "))
		default:
			s.Basis[load] = fmt.Sprintf("%s (no %d rows of %s)", spread, MinRows, g.String())
		}
	}
	return s
}

// spreadOf names where pooled bands came from: the validation's groups of loop (loopOf), but
// for the figures fromAll, which every group's gave.
func spreadOf(loop string, pooled, fromAll []string) string {
	switch {
	case len(fromAll) == len(pooled):
		return "the spread of the validation groups' errors"
	case len(fromAll) == 0:
		return "the spread of the validation's " + loop + "-loop groups' errors"
	}
	return fmt.Sprintf("the spread of the validation's %s-loop groups' errors (every group's for %s)", loop, strings.Join(fromAll, ", "))
}

// widen multiplies b's log-width about its centre by f.
func widen(b Band, f float64) Band {
	lo, hi := math.Log(b.Lo), math.Log(b.Hi)
	c, h := (lo+hi)/2, (hi-lo)/2*f
	return Band{Lo: math.Exp(c - h), Hi: math.Exp(c + h), Rows: b.Rows}
}

// FromError is the spread of a calibrated profile: each figure within its largest held-out
// error errPct (%, by validate's figure names), for every kind of level. (The largest error
// over a few held-out points, not a 90 % quantile: stated as such.)
func FromError(errPct map[string]float64) Spread {
	bands := map[string]Band{}
	for f, e := range errPct {
		if e = math.Abs(e) / 100; e > 0 && e < 1 && !math.IsNaN(e) {
			// Predicted = measured·(1+err), |err| ≤ e: measured in [P/(1+e), P/(1−e)].
			bands[f] = Band{Lo: 1 / (1 + e), Hi: 1 / (1 - e)}
		}
	}
	why := "the calibration's largest held-out error (a bound over its held-out points, not a 90 % quantile)"
	s := Spread{Basis: map[string]string{}, ByLoad: map[string]map[string]Band{}}
	for _, load := range Loads {
		s.Basis[load], s.ByLoad[load] = why, bands
	}
	return s
}

// Interval is a level's predicted figures' intervals: summary.json's
// levels[].prediction_interval, {"ttft_ms": {"p50": [lo, hi]}, "output_throughput": [lo,
// hi], "basis": "..."}.
type Interval struct {
	Basis            string
	Metrics          map[string]map[string][2]float64 // metric's JSON name, then statistic
	OutputThroughput *[2]float64
}

// MarshalJSON writes the metrics' intervals at the top level beside basis.
func (iv Interval) MarshalJSON() ([]byte, error) {
	m := map[string]any{"basis": iv.Basis}
	for k, v := range iv.Metrics {
		m[k] = v
	}
	if iv.OutputThroughput != nil {
		m["output_throughput"] = iv.OutputThroughput
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (iv *Interval) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*iv = Interval{Metrics: map[string]map[string][2]float64{}}
	for k, v := range raw {
		var err error
		switch k {
		case "basis":
			err = json.Unmarshal(v, &iv.Basis)
		case "output_throughput":
			iv.OutputThroughput = new([2]float64)
			err = json.Unmarshal(v, iv.OutputThroughput)
		default:
			var st map[string][2]float64
			err = json.Unmarshal(v, &st)
			iv.Metrics[k] = st
		}
		if err != nil {
			return fmt.Errorf("prediction_interval.%s: %w", k, err)
		}
	}
	return nil
}

// Get is figure f's interval ("ttft_ms.p50", "output_throughput").
func (iv *Interval) Get(f string) ([2]float64, bool) {
	if iv == nil {
		return [2]float64{}, false
	}
	if f == "output_throughput" {
		if iv.OutputThroughput == nil {
			return [2]float64{}, false
		}
		return *iv.OutputThroughput, true
	}
	m, st, _ := strings.Cut(f, ".")
	v, ok := iv.Metrics[m][st]
	return v, ok
}

// Apply is the interval of a level's predicted figures (lv, of load kind load: LoadKind)
// under the spread; nil when the spread has no band for any of them.
func (s *Spread) Apply(lv *metrics.Level, load string) *Interval {
	if s == nil {
		return nil
	}
	bands := s.ByLoad[load]
	iv := &Interval{Basis: s.Basis[load], Metrics: map[string]map[string][2]float64{}}
	some := false
	for _, f := range Figures {
		b, ok := bands[f]
		v, has := Value(lv, f)
		if !ok || !has || !(v > 0) {
			continue
		}
		r := [2]float64{b.Lo * v, b.Hi * v}
		some = true
		if f == "output_throughput" {
			iv.OutputThroughput = &r
			continue
		}
		m, st, _ := strings.Cut(f, ".")
		if iv.Metrics[m] == nil {
			iv.Metrics[m] = map[string][2]float64{}
		}
		iv.Metrics[m][st] = r
	}
	if !some {
		return nil
	}
	return iv
}

// Value is figure f ("ttft_ms.p50", "output_throughput") of level lv; false when the level
// has none.
func Value(lv *metrics.Level, f string) (float64, bool) {
	if f == "output_throughput" {
		return lv.OutputThroughput, true
	}
	m, st, _ := strings.Cut(f, ".")
	stats, ok := lv.Stats(strings.TrimSuffix(m, "_ms"))
	if !ok || stats.Count == 0 {
		return 0, false
	}
	p, err := strconv.ParseFloat(strings.TrimPrefix(st, "p"), 64)
	if err != nil {
		return 0, false
	}
	pct, ok := stats.Get(p)
	return pct.Value, ok
}

// Coverage is how many held-out residuals their interval held, by the key that held them
// out (split), each key's residuals judged by a table made without them (a source, a GPU
// generation left out in turn); figures with no band are not counted.
func Coverage(rs []Residual, split func(Residual) string) (held, total map[string]int) {
	held, total = map[string]int{}, map[string]int{}
	keys := map[string]bool{}
	for _, r := range rs {
		keys[split(r)] = true
	}
	for k := range keys {
		var rest, out []Residual
		for _, r := range rs {
			if split(r) == k {
				out = append(out, r)
			} else {
				rest = append(rest, r)
			}
		}
		t := NewTable(rest, "")
		for _, r := range out {
			if !(r.Predicted > 0) || !(r.Actual > 0) {
				continue
			}
			b, ok := t.For(r.Group.Family, r.Group.GPU, r.Group.Engine).ByLoad[r.Group.Load][r.Figure]
			if !ok {
				continue
			}
			total[k]++
			if r.Actual >= b.Lo*r.Predicted && r.Actual <= b.Hi*r.Predicted {
				held[k]++
			}
		}
	}
	return held, total
}

// t95 holds Student's t 95 % points for 1..30 degrees of freedom.
var t95 = [...]float64{6.3138, 2.9200, 2.3534, 2.1318, 2.0150, 1.9432, 1.8946, 1.8595, 1.8331, 1.8125,
	1.7959, 1.7823, 1.7709, 1.7613, 1.7531, 1.7459, 1.7396, 1.7341, 1.7291, 1.7247,
	1.7207, 1.7171, 1.7139, 1.7109, 1.7081, 1.7056, 1.7033, 1.7011, 1.6991, 1.6973}

// tQuantile95 is Student's t 95 % point (a two-sided 90 % interval's factor): the table to
// 30 degrees of freedom, then the first terms of the Cornish–Fisher expansion about the
// normal's 1.64485.
func tQuantile95(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	if df <= len(t95) {
		return t95[df-1]
	}
	z, n := 1.644854, float64(df)
	z3, z5 := z*z*z, math.Pow(z, 5)
	return z + (z3+z)/(4*n) + (5*z5+16*z3+3*z)/(96*n*n)
}

//go:embed spreads.json
var embedded []byte

// Builtin is the table validate wrote over the visible measurements
// (internal/predict/spreads.json), read once; an empty table if it does not parse. Callers
// only read it.
var Builtin = sync.OnceValue(func() Table {
	var t Table
	if err := json.Unmarshal(embedded, &t); err != nil {
		return Table{}
	}
	return t
})

// ForProfile is the spread of profile p's predictions: a calibrated profile's held-out
// error; a roofline of a model on a GPU, the validation rows' bands (Builtin); nil for a
// profile of neither (a linear or table model stands for no real server nothing measured).
func ForProfile(p sim.Profile) *Spread {
	if c := p.Calibration; c != nil {
		errs := map[string]float64{}
		for _, k := range figure.Judged {
			if e := c.Error[k]; !math.IsNaN(e) {
				f := k.Figure()
				errs[f.Metric+"_ms.p"+strconv.FormatFloat(f.Pct, 'g', -1, 64)] = e
			}
		}
		if len(errs) == 0 {
			return nil
		}
		s := FromError(errs)
		return &s
	}
	if p.Cost.Kind != sim.CostRoofline || p.Model.Name == "" || p.GPU.Name == "" {
		return nil
	}
	engine := p.Engine.Kind
	if engine == "" {
		engine = sim.EngineVLLM
	}
	s := Builtin().For(p.Model.Name, p.GPU.Name, engine)
	return &s
}
