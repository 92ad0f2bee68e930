// Package plan sizes a deployment for a traffic (llmbench plan): for each engine
// configuration of a search space (GPU, tensor parallelism, precision, batch limits,
// prefill placement) it simulates one replica to bound the replicas needed, finds the
// fewest replicas whose whole fleet, behind each router, meets the SLOs at the traffic,
// measures how much more traffic that fleet takes (headroom), and prices it. It runs the
// same simulator, load driver and aggregation as simulate; the caller supplies the traffic
// and the price, or the bench.Spec they are made of (Config.ForSpec).
package plan

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// Space is the search space: every combination of its lists is an engine configuration,
// and every engine configuration is planned behind each router. An empty list keeps the
// base profile's own setting.
type Space struct {
	GPUs             []string // GPU presets
	TPs              []int    // tensor-parallel GPUs per replica
	Dtypes           []string // weight precision (sim.WeightDtypes); the KV cache follows bf16 and fp8
	DPs              []int    // data-parallel attention groups per replica (an MoE model's)
	ExpertParallel   []bool   // expert parallelism off, on (an MoE model's)
	MaxNumSeqs       []int
	MaxBatchedTokens []int
	Prefill          []string // sim.PrefillColocated, sim.PrefillDisaggregated
	Routers          []string // sim.Router*
	// Speculative are speculative decoding settings, drafting as the base profile's
	// speculative: mapping states (its method and cost); DraftTokens 0 is off.
	Speculative []SpecSetting
}

// SpecSetting is one speculative decoding setting of the search: K tokens drafted per
// step, each accepted with probability A. K 0 is speculation off.
type SpecSetting struct {
	DraftTokens int
	Acceptance  float64
}

func (v SpecSetting) String() string {
	if v.DraftTokens == 0 {
		return "off"
	}
	return fmt.Sprintf("%d:%s", v.DraftTokens, strconv.FormatFloat(v.Acceptance, 'g', -1, 64))
}

// ParseSpeculative reads a list of speculative settings: "off" or K:A (draft tokens,
// acceptance), e.g. "off,4:0.8,2:0.7".
func ParseSpeculative(s string) ([]SpecSetting, error) {
	var out []SpecSetting
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if f == "off" {
			out = append(out, SpecSetting{})
			continue
		}
		ks, as, ok := strings.Cut(f, ":")
		k, err1 := strconv.Atoi(ks)
		a, err2 := strconv.ParseFloat(as, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q is neither off nor K:A (draft tokens and acceptance, e.g. 4:0.8)", f)
		}
		out = append(out, SpecSetting{k, a})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q lists nothing", s)
	}
	return out, nil
}

// Traffic is what the deployment must serve. At builds the level and its requests at
// scale times the traffic (scale 1 is the traffic itself, as simulate runs it; 2 is twice
// its arrival rate, or a trace replayed twice as fast), with horizon of arrivals — the
// length the plan chose for that fleet, as a simulated level's duration — unless the
// traffic's length is Fixed.
type Traffic struct {
	Rate float64 // the traffic's arrival rate, requests/s (a trace's mean)
	At   func(scale float64, horizon time.Duration) (load.Level, workload.Source, error)
	// Fixed says At ignores length: the user gave the levels' length (their duration or
	// requests), or the traffic is a trace replayed whole. The plan then judges each fleet
	// over that length and warns where it is too short for a steady state.
	Fixed bool
	// Trace says the traffic is a replayed trace (its length is its own).
	Trace bool
	// Unit names the rate's unit: "req/s" (the default), or "tasks/s" for agentic tasks.
	Unit string
	// Load is the traffic's load kind (predict.LoadKind: its arrival process), whose
	// prediction bands its fleets are judged at; "" is predict.Poisson.
	Load string
}

// unit is the rate's unit, "req/s" unless the traffic says otherwise.
func (t Traffic) unit() string {
	if t.Unit == "" {
		return "req/s"
	}
	return t.Unit
}

// Names are how the caller's users name the settings a plan's console, HTML and warnings
// point them to (a command line's flags); each left empty is left unsaid.
type Names struct {
	Wide       string // every column of the table
	Confidence string // the rule a fleet is judged by (Config.Confidence)
	Length     string // the levels' length, when the user fixed it
	DropLength string // what lets the plan choose the length again
}

// Config is a plan to make.
type Config struct {
	// Base is the model and everything the space leaves alone: a roofline profile (a model
	// preset on a GPU, or a calibrated roofline fit) whose model carries to every GPU and
	// TP, or a linear or table profile, which describes one measured server and plans
	// replicas of it only.
	Base    sim.Profile
	Space   Space
	Traffic Traffic
	// Metrics aggregates each simulated level, its verdict terms deciding; at least one
	// verdict term (a percentile, goodput or error_rate) is needed.
	Metrics metrics.Config
	// Price is a deployment's price (nil: it has none, and the plan ranks by GPUs).
	Price func(sim.Profile) *metrics.Price
	// Energy prices the fleets' estimated power (sim/power.go): Electricity in USD per kWh
	// (0: energy is not priced) drawn at PUE times the GPUs' power (0 is 1); Objective
	// ranks the candidates meeting the SLOs by cost (ObjectiveCost, "" too) or by the
	// fleet's power (ObjectiveEnergy).
	Electricity, PUE float64
	Objective        string
	// Confidence is what a fleet is judged on: ConfidenceAuto ("" too), ConfidenceInterval
	// or ConfidencePoint.
	Confidence string
	// MaxReplicas bounds the fleets tried: a configuration that needs more does not meet
	// the SLOs.
	MaxReplicas int
	// Workers simulate configurations in parallel (0: one).
	Workers int
	// Progress, if set, is called as the plan starts and after each engine configuration
	// is planned, from one goroutine at a time.
	Progress func(Progress)
	// Names are the caller's for the settings the plan's text points to.
	Names Names
}

// Progress is how far a plan has got.
type Progress struct {
	Done, Total int        // engine configurations
	Meeting     int        // candidates meeting the SLOs so far
	Cheapest    *Candidate // the cheapest of them; nil while none meets
}

// Objectives: what ranks the candidates meeting the SLOs first.
const (
	ObjectiveCost   = "cost"   // the lowest price an hour (GPU-hours, plus energy with Electricity)
	ObjectiveEnergy = "energy" // the least power drawn at the traffic
)

// pue is c's PUE, 1 when unset.
func (c Config) pue() float64 {
	if c.PUE == 0 {
		return 1
	}
	return c.PUE
}

// MaxReplicasLimit is the most replicas a plan may try: sim's own limit on a deployment.
const MaxReplicasLimit = 1000

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	errs := []error{c.Space.Validate(c.Base)}
	add := func(field, format string, a ...any) { errs = append(errs, fielderr.New(field, format, a...)) }
	if !(c.Traffic.Rate > 0) || c.Traffic.At == nil {
		add("Traffic", "needs an arrival rate above 0 and the levels at it")
	}
	if !(c.Electricity >= 0) || math.IsInf(c.Electricity, 0) {
		add("Electricity", "%g is not a price in USD per kWh (0 or more)", c.Electricity)
	}
	if c.PUE != 0 && !(c.PUE >= 1 && c.PUE <= 5) {
		add("PUE", "%g is not a power usage effectiveness in [1, 5] (the facility's power over the IT equipment's; 1 counts the GPUs alone)", c.PUE)
	}
	switch c.Objective {
	case "", ObjectiveCost, ObjectiveEnergy:
	default:
		add("Objective", "%q is not %s or %s", c.Objective, ObjectiveCost, ObjectiveEnergy)
	}
	switch c.Confidence {
	case "", ConfidenceAuto, ConfidenceInterval, ConfidencePoint:
	default:
		add("Confidence", "%q is not %s (each SLO at its prediction interval's unfavourable edge), %s (the simulated figures alone) or %s (the edge where every interval is within ×%g)",
			c.Confidence, ConfidenceInterval, ConfidencePoint, ConfidenceAuto, MaxEdgeFactor)
	}
	if !metrics.HasVerdict(c.Metrics.SLOs) {
		add("Metrics.SLOs", "plan needs verdict terms to decide on, such as 'ttft:p99<=500ms,tpot:p99<=50ms' (per-request bounds alone judge no level)")
	}
	if err := c.Metrics.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxReplicas < 1 || c.MaxReplicas > MaxReplicasLimit {
		add("MaxReplicas", "%d is not in 1..%d", c.MaxReplicas, MaxReplicasLimit)
	}
	if c.Workers < 0 {
		add("Workers", "%d is negative", c.Workers)
	}
	return errors.Join(errs...)
}

// Validate reports every problem with the space over the base profile at once, each a
// *fielderr.Error naming its field (Space.GPUs, Space.TPs, ...; several joined by commas).
func (s Space) Validate(base sim.Profile) error {
	var errs []error
	add := func(field, format string, a ...any) { errs = append(errs, fielderr.New(field, format, a...)) }
	if base.Cost.Kind != sim.CostRoofline {
		var hw []string
		for _, f := range []struct {
			field string
			n     int
		}{{"Space.GPUs", len(s.GPUs)}, {"Space.TPs", len(s.TPs)}, {"Space.Dtypes", len(s.Dtypes)}, {"Space.DPs", len(s.DPs)}, {"Space.ExpertParallel", len(s.ExpertParallel)}} {
			if f.n > 0 {
				hw = append(hw, f.field)
			}
		}
		if len(hw) > 0 {
			add(strings.Join(hw, ","), "profile %s has a %s cost model, fitted to (or describing) one server on its own GPU and TP: it does not say how the model would run on other GPUs, split over GPUs or at another precision, so it plans replicas of that server only (leave these out, or give a roofline profile or a model preset)",
				base.Name, base.Cost.Kind)
		}
	}
	for _, g := range s.GPUs {
		if _, ok := sim.GPUPreset(g); !ok {
			add("Space.GPUs", "%q is not a GPU preset (%s)", g, strings.Join(sim.GPUPresets(), ", "))
		}
	}
	for _, tp := range s.TPs {
		if tp < 1 || tp > 64 || bits.OnesCount(uint(tp)) != 1 {
			add("Space.TPs", "%d is not a power of two in 1..64", tp)
		}
	}
	for _, d := range s.Dtypes {
		if !slices.Contains(sim.WeightDtypes(), d) {
			add("Space.Dtypes", "%q is not one of %s (the weights' precision; the KV cache takes bf16's or fp8's, and keeps the model's with the others)", d, strings.Join(sim.WeightDtypes(), ", "))
		}
	}
	for _, n := range s.DPs {
		if n < 1 || n > 64 {
			add("Space.DPs", "%d is not in 1..64", n)
		}
	}
	if moe := base.Model.MoE(); !moe && (slices.ContainsFunc(s.DPs, func(n int) bool { return n > 1 }) || slices.Contains(s.ExpertParallel, true)) {
		add("Space.DPs,Space.ExpertParallel", "%s is dense: data-parallel attention and expert parallelism apply to a mixture of experts (plan replicas of a dense model instead)", base.Model.Name)
	}
	for _, n := range s.MaxNumSeqs {
		if n < 1 || n > 1_000_000 {
			add("Space.MaxNumSeqs", "%d is not in 1..1000000", n)
		}
	}
	for _, n := range s.MaxBatchedTokens {
		if n < 1 || n > 100_000_000 {
			add("Space.MaxBatchedTokens", "%d is not in 1..100000000", n)
		}
	}
	for _, p := range s.Prefill {
		if p != sim.PrefillColocated && p != sim.PrefillDisaggregated {
			add("Space.Prefill", "%q is not %s or %s", p, sim.PrefillColocated, sim.PrefillDisaggregated)
		}
	}
	routers := []string{sim.RouterRoundRobin, sim.RouterLeastOutstanding, sim.RouterPrefixAffinity}
	for _, r := range s.Routers {
		if !slices.Contains(routers, r) {
			add("Space.Routers", "%q is not one of %s", r, strings.Join(routers, ", "))
		}
	}
	for _, v := range s.Speculative {
		if v.DraftTokens < 0 || v.DraftTokens > 32 || !(v.Acceptance >= 0 && v.Acceptance <= 1) {
			add("Space.Speculative", "%s: want K in 0..32 draft tokens (0, or off, for none) and an acceptance A in [0, 1]", v)
		}
	}
	if slices.ContainsFunc(s.Speculative, func(v SpecSetting) bool { return v.DraftTokens > 0 }) && !base.Speculative.Stated() {
		add("Space.Speculative", "profile %s does not say how tokens would be drafted: give a profile with a speculative: mapping of method and drafting cost (draft_model: a preset; or method eagle or ngram with draft_ms_per_token or draft_step_fraction), draft_tokens 0 to leave it off there", base.Name)
	}
	if d := duplicate(s.Speculative); d != "" {
		add("Space.Speculative", "%s is listed twice", d)
	}
	if slices.Contains(s.Routers, sim.RouterPrefixAffinity) && !base.Engine.PrefixCaching {
		add("Space.Routers", "prefix-affinity needs a profile with engine.prefix_caching: true (without a cache there is no prefix to be near)")
	}
	for _, l := range []struct {
		field string
		dup   string
	}{{"Space.GPUs", duplicate(s.GPUs)}, {"Space.TPs", duplicate(s.TPs)}, {"Space.Dtypes", duplicate(s.Dtypes)}, {"Space.DPs", duplicate(s.DPs)},
		{"Space.ExpertParallel", duplicate(s.ExpertParallel)}, {"Space.MaxNumSeqs", duplicate(s.MaxNumSeqs)},
		{"Space.MaxBatchedTokens", duplicate(s.MaxBatchedTokens)}, {"Space.Prefill", duplicate(s.Prefill)}, {"Space.Routers", duplicate(s.Routers)}} {
		if l.dup != "" {
			add(l.field, "%s is listed twice", l.dup)
		}
	}
	return errors.Join(errs...)
}

func duplicate[T comparable](list []T) string {
	for i, v := range list {
		if slices.Contains(list[:i], v) {
			return fmt.Sprint(v)
		}
	}
	return ""
}

// engine is one engine configuration: a replica's profile, and its place in the space.
type engine struct {
	index int         // in the space's order
	group int         // engines of one group differ in max_num_seqs alone
	p     sim.Profile // one replica (Deployment.Replicas 1), router unset
}

// engines lists the space's engine configurations in a fixed order — the product of the
// axes, the first outermost — each the base with those settings.
func (c Config) engines() []engine {
	axes := c.axes()
	idx := make([]int, len(axes)) // an odometer over the axes, the last turning fastest
	groups := map[string]int{}
	var out []engine
	for {
		p := c.Base
		p.Deployment.Replicas = 1
		for i, a := range axes {
			a.set(&p, idx[i])
		}
		key := fmt.Sprint(idx[:seqsAxis], idx[seqsAxis+1:])
		g, ok := groups[key]
		if !ok {
			g = len(groups)
			groups[key] = g
		}
		out = append(out, engine{index: len(out), group: g, p: p})
		i := len(axes) - 1
		for ; i >= 0; i-- {
			if idx[i]++; idx[i] < axes[i].n {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return out
		}
	}
}

// axis is one dimension of the search space: how many values it takes (the base's own
// setting when the list is empty) and how the i-th sets a replica's profile. A new axis is
// one more entry in axes, with its flag, its Space list and its Validate rule.
type axis struct {
	n   int
	set func(p *sim.Profile, i int)
}

// seqsAxis is max_num_seqs's place in axes: engines that differ in it alone form a group,
// whose runs a larger limit can reuse (runCache).
const seqsAxis = 3

// axes are the space's dimensions, in the order engines varies them (GPU outermost).
func (c Config) axes() []axis {
	s, b := c.Space, c.Base
	strs := func(list []string, set func(p *sim.Profile, v string)) axis {
		if len(list) == 0 {
			return axis{1, func(*sim.Profile, int) {}}
		}
		return axis{len(list), func(p *sim.Profile, i int) { set(p, list[i]) }}
	}
	ints := func(list []int, def int, set func(p *sim.Profile, v int)) axis {
		if len(list) == 0 {
			list = []int{def}
		}
		return axis{len(list), func(p *sim.Profile, i int) { set(p, list[i]) }}
	}
	bools := func(list []bool, def bool, set func(p *sim.Profile, v bool)) axis {
		if len(list) == 0 {
			list = []bool{def}
		}
		return axis{len(list), func(p *sim.Profile, i int) { set(p, list[i]) }}
	}
	return []axis{
		strs(s.GPUs, func(p *sim.Profile, g string) { p.GPU, _ = sim.GPUPreset(g) }),
		ints(s.TPs, max(b.Deployment.TP, 1), func(p *sim.Profile, tp int) { p.Deployment.TP = tp }),
		strs(s.Dtypes, func(p *sim.Profile, d string) {
			p.Deployment.WeightDtype, p.Deployment.ExpertDtype = d, ""
			if d == sim.DtypeBF16 || d == sim.DtypeFP8 {
				p.Deployment.KVDtype = d
			}
		}),
		ints(s.MaxNumSeqs, b.Engine.MaxNumSeqs, func(p *sim.Profile, n int) { p.Engine.MaxNumSeqs = n }),
		ints(s.MaxBatchedTokens, b.Engine.MaxBatchedTokens, func(p *sim.Profile, n int) { p.Engine.MaxBatchedTokens = n }),
		strs(s.Prefill, func(p *sim.Profile, pf string) { p.Engine.Prefill = pf }),
		ints(s.DPs, max(b.Deployment.DP, 1), func(p *sim.Profile, n int) { p.Deployment.DP = n }),
		bools(s.ExpertParallel, b.Deployment.ExpertParallel, func(p *sim.Profile, on bool) { p.Deployment.ExpertParallel = on }),
		// The prefill pool's size is the disaggregated placement's alone.
		{1, func(p *sim.Profile, _ int) {
			if p.Engine.Prefill == sim.PrefillColocated {
				p.Engine.PrefillWorkers = 0
			}
		}},
		specAxis(s.Speculative),
	}
}

// specAxis sets speculative decoding's K and A, drafting as the base profile states.
func specAxis(list []SpecSetting) axis {
	if len(list) == 0 {
		return axis{1, func(*sim.Profile, int) {}}
	}
	return axis{len(list), func(p *sim.Profile, i int) {
		p.Speculative.DraftTokens, p.Speculative.Acceptance = list[i].DraftTokens, list[i].Acceptance
	}}
}

// routers are the routers each engine configuration is planned behind.
func (c Config) routers() []string {
	if len(c.Space.Routers) > 0 {
		return c.Space.Routers
	}
	r := c.Base.Deployment.Router
	if r == "" {
		r = sim.RouterLeastOutstanding
	}
	return []string{r}
}

// Configurations is the number of candidates the plan evaluates: engine configurations
// times routers.
func (c Config) Configurations() int { return len(c.engines()) * len(c.routers()) }
