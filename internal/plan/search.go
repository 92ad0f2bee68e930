package plan

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/search"
	"github.com/llmbench/llmbench/internal/sim"
)

// Precision of the rate searches: a bracket is closed when its ends are within 5 % of each
// other, as a run's SLO search closes a rate's.
const closeEnough = 1.05

// maxHeadroom bounds the headroom search: a fleet still meeting the SLOs at this many
// times the traffic is reported at that bound.
const maxHeadroom = 1000

// Run plans cfg: every engine configuration of the space, each behind every router. It
// returns what it found when ctx ends (Plan.Interrupted, with ctx's error).
func Run(ctx context.Context, cfg Config) (*Plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Metrics.Only = figures(cfg.Metrics.SLOs)
	cfg.Metrics.Percentiles = withSLOPercentiles(cfg.Metrics)
	engines := cfg.engines()
	routers := cfg.routers()
	pl := &Plan{Configurations: len(engines) * len(routers), MaxReplicas: cfg.MaxReplicas, Rate: cfg.Traffic.Rate, RateUnit: cfg.Traffic.unit(),
		Objective: cmp.Or(cfg.Objective, ObjectiveCost), Electricity: cfg.Electricity, PUE: cfg.pue(), names: cfg.Names}
	cfg.Confidence, pl.ConfidenceReason = resolveConfidence(cfg, engines)
	pl.Confidence = cfg.Confidence
	// A worker plans a group of engines (those differing in max_num_seqs alone) in turn,
	// so that a larger limit finds the runs a smaller one made; with fewer groups than
	// workers, engines are handed out one by one (they still share what is there).
	jobs := make(chan []engine)
	batches := byGroup(engines)
	workers := min(max(cfg.Workers, 1), len(engines))
	if len(batches) < workers {
		batches = batches[:0]
		for _, e := range engines {
			batches = append(batches, []engine{e})
		}
	}
	workers = min(workers, len(batches))
	type result struct {
		e     engine
		cands []Candidate
		err   error
	}
	results := make(chan result)
	cache := newRunCache()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range jobs {
				for _, e := range batch {
					ev := newEvaluation(ctx, &cfg, e, cache)
					cands, err := ev.plan(routers)
					results <- result{e, cands, err}
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, b := range batches {
			select {
			case jobs <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	byEngine := make([][]Candidate, len(engines))
	done := 0
	if cfg.Progress != nil {
		cfg.Progress(Progress{Total: len(engines)})
	}
	var firstErr error
	for r := range results {
		switch {
		case r.err != nil && ctx.Err() != nil:
			continue // cut short by the interruption: not a finding
		case r.err != nil:
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", describeEngine(r.e.p), r.err)
			}
			continue
		}
		byEngine[r.e.index] = r.cands
		done++
		if cfg.Progress != nil {
			pl.setCandidates(byEngine)
			pr := Progress{Done: done, Total: len(engines), Meeting: pl.meeting()}
			if b := pl.BestCandidate(); b != nil {
				c := *b // a copy: the next engine's candidates reuse and re-sort pl.Candidates
				pr.Cheapest = &c
			}
			cfg.Progress(pr)
		}
	}
	pl.setCandidates(byEngine)
	pl.Evaluated = done * len(routers)
	pl.Warnings = pl.lengthWarnings(cfg.Traffic)
	if firstErr != nil {
		return pl, firstErr
	}
	if err := ctx.Err(); err != nil {
		pl.Interrupted = true
		return pl, err
	}
	return pl, nil
}

// lengthWarnings say where a fixed length was shorter than the horizon the plan would have
// judged a fleet over: its figures may describe the servers filling, not holding the traffic.
func (pl *Plan) lengthWarnings(t Traffic) []string {
	if !t.Fixed {
		return []string{}
	}
	short, unsteady := 0, 0
	for _, c := range pl.Candidates {
		if c.Simulations == 0 {
			continue // it does not fit: never simulated
		}
		if c.HorizonS < c.needS {
			short++
		}
		if !c.Steady {
			unsteady++
		}
	}
	if short == 0 {
		return []string{}
	}
	what := "the levels' length you gave"
	if n := pl.names.Length; n != "" {
		what += " (" + n + ")"
	}
	if t.Trace {
		what = "the trace"
	}
	w := fmt.Sprintf("%s is shorter than a steady state needs for %d of the candidates simulated", what, short)
	if unsteady > 0 {
		w += fmt.Sprintf(", %d of which reached none", unsteady)
	}
	if b := pl.BestCandidate(); b != nil && b.HorizonS < b.needS {
		w += fmt.Sprintf("; the chosen one was judged over %s where the plan would take %s", fmtSeconds(b.HorizonS), fmtSeconds(b.needS))
	}
	w += fmt.Sprintf(" (its horizons hold %d requests per replica, enough for an interval of each bounded percentile, and %d mean end-to-end latencies)",
		RequestsPerReplica, HorizonE2ELs)
	if t.Trace {
		w += "; its figures may describe the servers filling rather than holding the traffic (a longer trace)"
	} else {
		w += "; its figures may describe the servers filling rather than holding the traffic"
		if n := pl.names.DropLength; n != "" {
			w += " (" + n + " to let the plan choose)"
		}
	}
	return []string{w}
}

// figures are the metrics a plan derives: those its candidates report and its horizons
// read (TTFT, TPOT, E2EL), and those its SLOs judge; the others cost each level their
// distributions and are read by nobody.
func figures(slos []metrics.SLO) []string {
	keys := []string{metrics.KeyTTFT, metrics.KeyTPOT, metrics.KeyE2EL}
	for _, s := range slos {
		if s.Metric != "" && !slices.Contains(keys, s.Metric) {
			keys = append(keys, s.Metric)
		}
	}
	return keys
}

// withSLOPercentiles is the percentiles to compute: the configured ones and every one the
// SLOs bound, so that each term has its interval.
func withSLOPercentiles(c metrics.Config) []float64 {
	ps := slices.Clone(c.Percentiles)
	if len(ps) == 0 {
		ps = slices.Clone(metrics.DefaultPercentiles)
	}
	for _, s := range c.SLOs {
		if s.Kind == metrics.SLOPercentile && !math.IsNaN(s.P) && !slices.Contains(ps, s.P) {
			ps = append(ps, s.P)
		}
	}
	return ps
}

// runKey names one simulation of an engine configuration: a fleet of n replicas behind
// router (none for one replica, which no router changes) at scale times the traffic, over
// its horizon doubled precision times.
type runKey struct {
	n         int
	router    string
	scale     float64
	precision int
}

// outcome is one simulated level and whether it meets the SLOs (why not, when not).
type outcome struct {
	lv            metrics.Level
	horizon       time.Duration // the level's length of arrivals (a fixed one's measured span)
	oversaturated bool          // stopped by load's over-saturation rule
	steady        bool          // it reached a steady state over a long enough horizon
	unsteady      string        // why not, when not
	windows       []judged      // the verdicts over its steady window and its SLO windows
	undecided     []string      // terms whose 95% interval holds their bound: too close to tell
	limit         int           // the max_num_seqs it ran under
	seqsNeeded    int           // the most max_num_seqs its runs (and those it grew from) needed
	meets         bool
	why           string
	energy        *sim.Energy // the GPUs' estimated energy over the level (nil: no estimate)
}

// evaluation plans one engine configuration. Its simulations are kept, so that the
// replica searches behind several routers, and the headroom search, reuse them.
type evaluation struct {
	cfg   *Config
	ctx   context.Context
	e     engine
	runs  map[runKey]*outcome
	cache *runCache // shared by the engines of a plan; nil: none
	// judge aggregates its levels: cfg.Metrics with the SLOs as the configuration is
	// judged on them (judgedSLOs: tighter by each term's edge at ConfidenceInterval); edges
	// are the terms' edges and basis where their bands came from.
	judge metrics.Config
	edges map[string]edge
	basis string
}

// judgedEdges are the edges the fleets are judged at (at ConfidenceInterval), which a
// missed term's reason states; none at ConfidencePoint, where a term misses at the point.
func (ev *evaluation) judgedEdges() map[string]edge {
	if ev.cfg.Confidence == ConfidencePoint {
		return nil
	}
	return ev.edges
}

// newEvaluation is the evaluation of engine e under cfg; the engines of a group (which
// share a GPU, model and engine kind, so their edges too) share cache.
func newEvaluation(ctx context.Context, cfg *Config, e engine, cache *runCache) *evaluation {
	ev := &evaluation{cfg: cfg, ctx: ctx, e: e, runs: map[runKey]*outcome{}, cache: cache, judge: cfg.Metrics}
	ev.edges, ev.basis = edges(e.p, cfg.Metrics.SLOs, cfg.Traffic.Load)
	ev.judge.SLOs = judgedSLOs(cfg.Metrics.SLOs, ev.edges, cfg.Confidence)
	return ev
}

// byGroup are the engines by group, each group in the space's order.
func byGroup(engines []engine) [][]engine {
	var out [][]engine
	at := map[int]int{}
	for _, e := range engines {
		i, ok := at[e.group]
		if !ok {
			i = len(out)
			at[e.group] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], e)
	}
	return out
}

// runCache keeps every engine's runs for the others of its group: a run in which
// max_num_seqs never held a sequence back is the same run under any limit from the most
// it needed up (sim.Virtual.SeqsNeeded), so an engine of a larger limit takes it instead of
// simulating it again. What it takes is what it would have computed: the plan does not
// depend on which engine ran first.
type runCache struct {
	mu   sync.Mutex
	runs map[groupRun][]*outcome
}

type groupRun struct {
	group int
	key   runKey
}

func newRunCache() *runCache { return &runCache{runs: map[groupRun][]*outcome{}} }

// get is a run of the group under a limit of seqs; nil when none serves.
func (c *runCache) get(group int, k runKey, seqs int) *outcome {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.runs[groupRun{group, k}] {
		if o.limit == seqs || o.seqsNeeded <= o.limit && o.seqsNeeded <= seqs {
			return o
		}
	}
	return nil
}

func (c *runCache) put(group int, k runKey, o *outcome) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[groupRun{group, k}] = append(c.runs[groupRun{group, k}], o)
}

// plan finds, behind each router, the fewest replicas meeting the SLOs at the traffic.
func (ev *evaluation) plan(routers []string) ([]Candidate, error) {
	p := ev.e.p
	base := newCandidate(p)
	base.IntervalBasis = ev.basis
	for _, s := range ev.cfg.Metrics.SLOs {
		if e, ok := ev.edges[s.String()]; ok {
			base.Intervals = append(base.Intervals, Interval{Term: s.String(), Figure: e.Figure, Factor: e.Factor})
		}
	}
	out := make([]Candidate, len(routers))
	for i, r := range routers {
		out[i] = base
		out[i].Router = r
	}
	if err := p.Validate(); err != nil {
		for i := range out {
			out[i].Reason = oneLine(err)
		}
		return out, nil
	}
	for i := range out {
		out[i].Fits = true
		out[i].KVCacheTokens, _ = p.KVCacheTokens()
	}
	// One replica bounds the fleet: the largest share of the traffic it meets the SLOs
	// at. Missing them at 1/MaxReplicas of it, no fleet within the bound can meet them
	// (each of its replicas would carry at least as much), so nothing more is simulated.
	share, low, err := ev.capacity()
	if err != nil {
		return nil, err
	}
	if share == 0 {
		why := fmt.Sprintf("one replica misses the SLOs even at %s %s (1/%d of the traffic): %s, so no fleet of up to %d replicas meets them",
			fmtRate(ev.cfg.Traffic.Rate/float64(ev.cfg.MaxReplicas)), ev.cfg.Traffic.unit(), ev.cfg.MaxReplicas, low.why, ev.cfg.MaxReplicas)
		for i := range out {
			out[i].Reason, out[i].Simulations = why, len(ev.runs)
			out[i].HorizonS, out[i].Steady = low.horizon.Seconds(), low.steady
			out[i].needS = ev.need(1, ev.cfg.Traffic.Rate/float64(ev.cfg.MaxReplicas), low)
		}
		return out, nil
	}
	for i, r := range routers {
		c := &out[i]
		c.ReplicaRate = ptr(share * ev.cfg.Traffic.Rate)
		n, o, err := ev.fewest(r, share)
		if err != nil {
			return nil, err
		}
		ev.fill(c, n, o)
		if c.MeetsSLO {
			h, err := ev.headroom(n, r, share)
			if err != nil {
				return nil, err
			}
			c.HeadroomRate = ptr(h * ev.cfg.Traffic.Rate)
		}
	}
	for i := range out {
		out[i].Simulations = len(ev.runs)
	}
	return out, nil
}

// run simulates a fleet of n replicas behind router at scale times the traffic, once, over
// a horizon long enough for its figures to describe a steady state (horizon). A fleet too
// close to a bound to tell counts as missing it: the searches for capacity and headroom
// take that (their answers err low); the replica count takes decide.
func (ev *evaluation) run(n int, router string, scale float64) (*outcome, error) {
	return ev.runAt(n, router, scale, 0)
}

// decide is run, where a fleet too close to a bound to tell is run again over twice and
// four times the horizon, until its intervals clear the bounds; one still undecided then
// misses the SLOs (the plan does not bet a fleet on a coin toss).
func (ev *evaluation) decide(n int, router string, scale float64) (*outcome, error) {
	for p := 0; ; p++ {
		o, err := ev.runAt(n, router, scale, p)
		if err != nil || len(o.undecided) == 0 || p == maxPrecision || ev.cfg.Traffic.Fixed || o.horizon >= MaxHorizon {
			return o, err
		}
	}
}

// maxPrecision is how many times decide doubles a horizon.
const maxPrecision = 2

func (ev *evaluation) runAt(n int, router string, scale float64, precision int) (*outcome, error) {
	if n == 1 {
		router = ""
	}
	k := runKey{n, router, scale, precision}
	if o, ok := ev.runs[k]; ok {
		return o, nil
	}
	if o := ev.cache.get(ev.e.group, k, ev.e.p.Engine.MaxNumSeqs); o != nil {
		ev.runs[k] = o
		return o, nil
	}
	rate := scale * ev.cfg.Traffic.Rate
	h := firstHorizon(n, rate, ev.cfg.Metrics.SLOs)
	needed := 0
	if precision > 0 {
		prev, err := ev.runAt(n, router, scale, precision-1)
		if err != nil {
			return nil, err
		}
		h = roundHorizon(2 * prev.horizon.Seconds())
		needed = prev.seqsNeeded
	}
	var o *outcome
	for try := 1; ; try++ {
		var err error
		if o, err = ev.simulate(n, router, scale, h); err != nil {
			return nil, err
		}
		needed = max(needed, o.seqsNeeded)
		o.seqsNeeded = needed
		if ev.cfg.Traffic.Fixed || o.oversaturated {
			break // a fixed length is the user's; an oversaturated fleet fails however long it runs
		}
		need := e2elHorizon(o.lv)
		if need <= h {
			break
		}
		if h == MaxHorizon || try == horizonTries {
			// Its requests grew longer with every horizon: still filling, however long.
			o.steady = false
			o.unsteady = fmt.Sprintf("its requests took %s on average over a horizon of %s, which %d of them need: it had not settled",
				fmtSeconds(meanE2EL(o.lv)), fmtSeconds(h.Seconds()), HorizonE2ELs)
			o.meets, o.why = meets(o, ev.judgedEdges())
			break
		}
		h = need
	}
	ev.runs[k] = o
	ev.cache.put(ev.e.group, k, o)
	return o, nil
}

// The horizon a fleet is judged over: long enough to settle and for tight percentiles —
// RequestsPerReplica measured requests for each replica, and enough for a confidence
// interval by batch means of every percentile the SLOs bound (metrics.PrecisionRequests:
// 10,000 for a P99), at least MinHorizon, and HorizonE2ELs mean end-to-end latencies
// (found by running it: a fleet whose requests turn out longer is run again over a longer
// horizon, horizonTries times at most), to MaxHorizon. Nothing of it is excluded as
// warm-up: the servers' filling from empty lasts a few end-to-end latencies, the steady
// state (metrics' MSER) must begin early in the level, and excluding it would make the
// check command, a simulation over the same horizon, differ from the plan.
// Horizons are rounded up to two significant digits of seconds, so the check command
// reads well.
const (
	RequestsPerReplica = 2000
	MinHorizon         = 60 * time.Second
	MaxHorizon         = 4 * time.Hour
	HorizonE2ELs       = 25
	horizonTries       = 3
)

// firstHorizon is the horizon a fleet of n replicas at rate req/s is first run over.
func firstHorizon(n int, rate float64, slos []metrics.SLO) time.Duration {
	measured := max(RequestsPerReplica*n, metrics.PrecisionRequests(slos))
	return roundHorizon(float64(measured) / rate)
}

// e2elHorizon is the horizon that holds HorizonE2ELs of the level's mean end-to-end latency.
func e2elHorizon(lv metrics.Level) time.Duration {
	return roundHorizon(HorizonE2ELs * meanE2EL(lv))
}

// meanE2EL is the level's mean end-to-end latency in seconds (0 when none completed).
func meanE2EL(lv metrics.Level) float64 {
	if st, ok := lv.Metrics.Get(metrics.KeyE2EL); ok && st.Count > 0 {
		return st.Mean / 1000
	}
	return 0
}

// roundHorizon rounds s seconds up to two significant digits, within [MinHorizon, MaxHorizon].
func roundHorizon(s float64) time.Duration {
	if s <= MinHorizon.Seconds() {
		return MinHorizon
	}
	unit := math.Pow(10, math.Floor(math.Log10(s))-1)
	return min(time.Duration(math.Ceil(s/unit-1e-9)*unit)*time.Second, MaxHorizon)
}

// simulate runs the fleet of n replicas behind router at scale times the traffic over h.
func (ev *evaluation) simulate(n int, router string, scale float64, h time.Duration) (*outcome, error) {
	lvl, src, err := ev.cfg.Traffic.At(scale, h)
	if err != nil {
		return nil, err
	}
	fleet := ev.fleet(n, router)
	srv, err := bench.Deploy(fleet)
	if err != nil {
		return nil, err
	}
	agg := metrics.NewAggregator(ev.judge)
	var opts []load.VirtualOption
	if !ev.judge.NeedsTokenEvents() {
		opts = append(opts, load.FirstAndLastTokens()) // the figures a plan reports are the same
	}
	end, reason, err := load.RunVirtual(ev.ctx, lvl, 0, src, srv, agg.Add, opts...)
	if err != nil {
		return nil, err
	}
	o := &outcome{lv: agg.Level(), horizon: lvl.Duration, oversaturated: reason == load.EndOversaturated,
		limit: ev.e.p.Engine.MaxNumSeqs, seqsNeeded: bench.SeqsNeeded(srv)}
	if en, ok := bench.EnergyOf(fleet, srv, end); ok {
		o.energy = &en
	}
	if ev.cfg.Traffic.Fixed {
		o.horizon = time.Duration(o.lv.DurationS * float64(time.Second)).Round(time.Second)
	}
	if o.oversaturated { // the verdict run and simulate give such a level: not met
		metrics.FailBehind(o.lv.SLO, "its backlog kept growing, so it was stopped (docs/metrics.md)")
	}
	switch ss := o.lv.SteadyState; {
	case o.oversaturated:
		o.unsteady = "its backlog kept growing (stopped as oversaturated: docs/metrics.md)"
	case ss == nil:
		o.unsteady = "no request was measured"
	case !ss.Reached:
		o.unsteady = "no steady state: " + ss.Reason
	default:
		o.steady = true
		o.windows = append(o.windows, judged{"in its steady window", ss.SLO})
		if !ev.cfg.Traffic.Fixed {
			o.windows = append(o.windows, sloWindows(agg, lvl.WarmupTime, lvl.Duration)...)
		}
	}
	o.undecided = undecided(ev.judge.SLOs, o.lv)
	o.lv.Dists, o.lv.Anatomy = nil, nil // the figures are taken; the distributions are not kept
	o.meets, o.why = meets(o, ev.judgedEdges())
	return o, nil
}

// undecided lists the verdict terms whose 95% interval by batch means holds their bound
// (a percentile or mean term, where the level allows such an interval): the level cannot
// tell whether the fleet meets them.
func undecided(slos []metrics.SLO, lv metrics.Level) []string {
	var out []string
	for _, s := range slos {
		if s.Kind != metrics.SLOPercentile {
			continue
		}
		st, ok := lv.Metrics.Get(s.Metric)
		if !ok || st.Count == 0 {
			continue
		}
		v, lo, hi := st.Mean, st.MeanLo, st.MeanHi
		if !math.IsNaN(s.P) {
			pc, ok := st.Get(s.P)
			if !ok || !metrics.ByBatchMeans(pc.Method) {
				continue
			}
			v, lo, hi = pc.Value, pc.Lo, pc.Hi
		} else if !metrics.ByBatchMeans(st.MeanMethod) {
			continue
		}
		if b := s.Bound(); lo <= b && b < hi {
			out = append(out, fmt.Sprintf("%s measured %s (95%% CI %s to %s)", s.String(), fmtValue(s.String(), v), fmtValue(s.String(), lo), fmtValue(s.String(), hi)))
		}
	}
	return out
}

// fleet is the engine configuration as a deployment of n replicas behind router.
func (ev *evaluation) fleet(n int, router string) sim.Profile {
	p := ev.e.p
	p.Deployment.Replicas = n
	if router != "" {
		p.Deployment.Router = router
	}
	return p
}

// meets says whether a simulated level meets the SLOs: it reached a steady state (a
// backlog that kept growing, or figures still changing when the horizon ended, describe
// no fleet that holds the traffic, which is why a run's SLO search and summary.json's slo_limit
// pass over an oversaturated level too), every verdict term passes over the level's
// measured part and over its steady window, and no request failed (a fleet that refuses
// requests serves less than the traffic; the simulator refuses only those no replica could
// ever take, so this never tells two fleets of one configuration apart). why says what
// missed, a term judged at its edge (es) with the figure there.
func meets(o *outcome, es map[string]edge) (bool, string) {
	lv := o.lv
	var why []string
	// The level's verdict (metrics): a fleet that fell behind fails it whatever its figures.
	behind := lv.SLO != nil && !lv.SLO.Pass && !lv.SLO.Undecided && lv.SLO.Reason != ""
	switch {
	case behind:
		why = append(why, "not steady at "+fmtSeconds(o.horizon.Seconds())+": "+lv.SLO.Reason)
	case !o.steady:
		why = append(why, "not steady at "+fmtSeconds(o.horizon.Seconds())+": "+o.unsteady)
	}
	if lv.Failed > 0 {
		msg := ""
		if len(lv.ErrorDetails) > 0 {
			msg = ": " + lv.ErrorDetails[0].FirstMessage
		}
		why = append(why, fmt.Sprintf("%d requests failed%s", lv.Failed, msg))
	}
	if lv.SLO == nil {
		why = append(why, "no verdict (no request completed)")
	} else {
		for _, t := range lv.SLO.Terms {
			if !t.Pass && !slices.ContainsFunc(o.undecided, func(u string) bool { return strings.HasPrefix(u, t.Term+" ") }) {
				why = append(why, missed(t, es))
			}
		}
	}
	for _, u := range o.undecided {
		why = append(why, u+": too close to its bound to tell")
	}
	if lv.SLO != nil && lv.SLO.Pass && len(o.undecided) == 0 {
		for _, w := range o.windows {
			for _, t := range w.v.Terms {
				if !t.Pass && !t.Undecided { // a window too short to judge a term cannot miss it
					why = append(why, missed(t, es)+" "+w.where)
				}
			}
			if len(why) > 0 {
				break // the first window that misses says enough
			}
		}
	}
	return len(why) == 0, strings.Join(why, "; ")
}

// judged is a verdict over part of a level, and where.
type judged struct {
	where string
	v     *metrics.Verdict
}

// SLOWindow is the window an SLO is held over: a fleet meets the SLOs when it meets them
// over its whole measured horizon and over each SLOWindow of it, as a service that reports
// its percentiles every ten minutes would see. A fleet whose long-run P99 sits just inside
// a bound still has windows past it (a batching server's bursts last minutes), and one
// ten-minute run of it is a coin toss.
const SLOWindow = 10 * time.Minute

// sloWindows are the verdicts over consecutive SLOWindows of the measured part of a level
// [from, to) (by done time), when it holds two or more.
func sloWindows(agg *metrics.Aggregator, from, to time.Duration) []judged {
	k := int((to - from) / SLOWindow)
	if k < 2 {
		return nil
	}
	out := make([]judged, k)
	for i := range k {
		a, b := from+time.Duration(i)*SLOWindow, from+time.Duration(i+1)*SLOWindow
		out[i] = judged{fmt.Sprintf("in %s–%s of its horizon", fmtSeconds(a.Seconds()), fmtSeconds(b.Seconds())), agg.Window(a, b).SLO}
	}
	return out
}

// fmtSeconds writes a duration in seconds for the console: "2400 s", "2.5 s".
func fmtSeconds(s float64) string {
	if s >= 100 {
		return strconv.FormatFloat(s, 'f', 0, 64) + " s"
	}
	return strconv.FormatFloat(s, 'g', 3, 64) + " s"
}

// missed says what a failed term measured.
func missed(t metrics.TermCheck, es map[string]edge) string {
	if t.Value == nil {
		return t.Term + " not measured"
	}
	if t.Undecided {
		return fmt.Sprintf("%s measured %s, undecided: %s", t.Term, fmtValue(t.Term, *t.Value), t.Reason)
	}
	if e, ok := es[t.Term]; ok && e.Factor > 1 {
		return fmt.Sprintf("%s simulated %s, %s at its 90%% interval's edge (×%s)", t.Term,
			fmtValue(t.Term, *t.Value), fmtValue(t.Term, *t.Value*e.Factor), fmtFactor(e.Factor))
	}
	return fmt.Sprintf("%s measured %s", t.Term, fmtValue(t.Term, *t.Value))
}

// capacity is the largest share of the traffic, within [1/MaxReplicas, 1] and to 5 %,
// at which one replica meets the SLOs: 0 (with that run's outcome) when it misses them at
// the smallest, 1 when it meets them at the whole traffic. Shares are bisected on a log
// scale, since the bracket spans orders of magnitude.
func (ev *evaluation) capacity() (float64, *outcome, error) {
	lo := 1 / float64(ev.cfg.MaxReplicas)
	o, err := ev.run(1, "", lo)
	if err != nil || !o.meets {
		return 0, o, err
	}
	hi := 1.0
	if o, err := ev.run(1, "", hi); err != nil || o.meets {
		return hi, o, err
	}
	lo, err = bisectLog(ev.ctx, lo, hi, func(share float64) (bool, error) {
		o, err := ev.run(1, "", share)
		return err == nil && o.meets, err
	})
	if err != nil {
		return 0, nil, err
	}
	return lo, nil, nil
}

// bisectLog narrows [lo, hi] — lo meets, hi misses — to within closeEnough of each other,
// halving the bracket on a log scale (it spans orders of magnitude), and returns lo. An
// interrupted search is the context's error, not a coarser answer.
func bisectLog(ctx context.Context, lo, hi float64, meets search.Probe) (float64, error) {
	lo, err := search.Bisect(ctx, lo, hi, func(lo, hi float64) float64 { return math.Sqrt(lo * hi) },
		func(lo, hi float64) bool { return hi/lo <= closeEnough }, meets)
	if err == nil {
		err = ctx.Err()
	}
	return lo, err
}

// fewest is the fewest replicas behind router that meet the SLOs at the traffic, with
// that fleet's outcome, starting from the traffic over one replica's share: it steps down
// while one fewer still meets them (a fleet pools its replicas' queues, so it can do
// better than its replicas alone) and, while they are missed, gallops up (+1, +2, +4, ...)
// and bisects (search.Grow on the largest fleet that misses them). The answer's fleet
// meets the SLOs and the fleet one replica smaller does not; when no fleet of up to
// MaxReplicas meets them, the largest is returned with its outcome.
func (ev *evaluation) fewest(router string, share float64) (int, *outcome, error) {
	maxN := ev.cfg.MaxReplicas
	n := min(max(int(math.Ceil(1/share-1e-9)), 1), maxN)
	o, err := ev.decide(n, router, 1)
	if err != nil {
		return 0, nil, err
	}
	if o.meets {
		for n > 1 {
			less, err := ev.decide(n-1, router, 1)
			if err != nil {
				return 0, nil, err
			}
			if !less.meets {
				break
			}
			n, o = n-1, less
		}
		return n, o, nil
	}
	step := 1.0
	gallop := func(t float64) float64 { step *= 2; return t + step }
	misses := func(t float64) (bool, error) {
		o, err := ev.decide(int(t), router, 1)
		return err == nil && !o.meets, err
	}
	most, err := search.Grow(ev.ctx, float64(n), float64(n+1), float64(maxN), gallop,
		func(lo, hi float64) float64 { return math.Floor((lo + hi) / 2) }, func(lo, hi float64) bool { return hi-lo <= 1 }, misses)
	if err != nil {
		return 0, nil, err
	}
	n = min(int(most)+1, maxN) // the largest fleet that misses, and one more; maxN when every fleet misses
	o, err = ev.decide(n, router, 1)
	return n, o, err
}

// headroom is the largest scale of the traffic, to 5 %, that the fleet of n replicas
// behind router still meets the SLOs at: it grows from the replicas' shares added up
// (or 1.25, whichever is more) by half again until a scale misses, then bisects on a log
// scale (search.Grow), to maxHeadroom.
func (ev *evaluation) headroom(n int, router string, share float64) (float64, error) {
	h, err := search.Grow(ev.ctx, 1, max(1.25, float64(n)*share), maxHeadroom, func(g float64) float64 { return 1.5 * g },
		func(lo, hi float64) float64 { return math.Sqrt(lo * hi) }, func(lo, hi float64) bool { return hi/lo <= closeEnough },
		func(scale float64) (bool, error) {
			o, err := ev.run(n, router, scale)
			return err == nil && o.meets, err
		})
	if err == nil {
		err = ev.ctx.Err() // an interrupted search is the context's error, not a coarser answer
	}
	return h, err
}

// need is the horizon, seconds, the plan would judge a fleet of n replicas at rate over,
// given its outcome o.
func (ev *evaluation) need(n int, rate float64, o *outcome) float64 {
	return max(firstHorizon(n, rate, ev.cfg.Metrics.SLOs), e2elHorizon(o.lv)).Seconds()
}

// fill gives c the figures of its fleet of n replicas at the traffic.
func (ev *evaluation) fill(c *Candidate, n int, o *outcome) {
	p := ev.fleet(n, c.Router)
	c.Replicas, c.GPUs, c.MeetsSLO, c.Oversaturated, c.profile = n, p.GPUs(), o.meets, o.oversaturated, p
	c.HorizonS, c.Steady = o.horizon.Seconds(), o.steady
	c.needS = ev.need(n, ev.cfg.Traffic.Rate, o)
	if !o.meets {
		c.Reason = fmt.Sprintf("%d replicas (the most tried): %s", n, o.why)
	}
	lv := o.lv
	c.SLO = terms(ev.cfg.Metrics.SLOs, lv.SLO, ev.edges)
	if lv.OutputThroughput > 0 {
		c.OutputThroughput = ptr(lv.OutputThroughput)
		c.OutputThroughputPerGPU = ptr(lv.OutputThroughput / float64(c.GPUs))
	}
	if st, ok := lv.Metrics.Get(metrics.KeyTPOT); ok && st.Count > 0 && st.Mean > 0 {
		c.TokensPerSPerUser = ptr(1000 / st.Mean)
	}
	if ev.cfg.Price != nil {
		if cost := ev.cfg.Price(p).Cost(lv, ev.cfg.Metrics.SLOs); cost != nil {
			c.USDPerHour = ptr(cost.USDPerHour)
			c.CostPerMillionOutputTokens = cost.PerMillionOutputTokens
		}
	}
	ev.fillEnergy(c, o)
}

// fillEnergy gives c its fleet's estimated power at the traffic and, with an electricity
// price, that energy's cost, added to its price an hour and per output token.
func (ev *evaluation) fillEnergy(c *Candidate, o *outcome) {
	en := o.energy
	if en == nil || !(en.PowerW > 0) {
		return
	}
	kw := en.PowerW / 1000
	c.PowerKW = ptr(kw)
	facility := kw * ev.cfg.pue()
	if c.OutputThroughput != nil {
		c.OutputTokensPerSPerKW = ptr(*c.OutputThroughput / facility)
	}
	if en.Tokens > 0 {
		c.JoulesPerOutputToken = ptr(en.Joules * ev.cfg.pue() / float64(en.Tokens))
	}
	if ev.cfg.Electricity <= 0 {
		return
	}
	energy := facility * ev.cfg.Electricity
	c.EnergyUSDPerHour = ptr(energy)
	gpu := 0.0
	if c.USDPerHour != nil {
		gpu = *c.USDPerHour
	}
	c.USDPerHour = ptr(gpu + energy)
	if c.OutputThroughput != nil && *c.OutputThroughput > 0 {
		c.CostPerMillionOutputTokens = ptr((gpu + energy) / (*c.OutputThroughput * 3600) * 1e6)
	}
}

// terms pairs a verdict's terms with their SLOs' bounds and margins, at the point and, for
// a term with an edge (es), at the edge.
func terms(slos []metrics.SLO, v *metrics.Verdict, es map[string]edge) []Term {
	if v == nil {
		return nil
	}
	out := make([]Term, 0, len(v.Terms))
	for _, tc := range v.Terms {
		t := Term{Term: tc.Term, Value: tc.Value, Pass: tc.Pass}
		for _, s := range slos {
			if s.String() == tc.Term {
				t.Bound, t.Unit = s.Bound(), "ms"
				if s.Kind == metrics.SLOGoodput || s.Kind == metrics.SLOErrorRate {
					t.Unit = "fraction"
				}
				if tc.Value != nil {
					t.Margin = ptr(s.Margin(*tc.Value))
				}
				if e, ok := es[tc.Term]; ok && tc.Value != nil {
					t.ValueAtEdge = ptr(*tc.Value * e.Factor)
					t.MarginAtEdge = ptr(s.Margin(*t.ValueAtEdge))
				}
				break
			}
		}
		out = append(out, t)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// oneLine is err's message on one line: a profile's problems joined by "; ".
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
