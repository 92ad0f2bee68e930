package plan

import (
	"context"
	"fmt"
	"github.com/llmbench/llmbench/internal/search"
	"math"
	"strings"
	"sync"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/sim"
)

// Precision of the rate searches: a bracket is closed when its ends are within 5 % of each
// other, as run --search closes a rate's.
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
	engines := cfg.engines()
	routers := cfg.routers()
	pl := &Plan{Configurations: len(engines) * len(routers), MaxReplicas: cfg.MaxReplicas, Rate: cfg.Traffic.Rate}
	workers := min(max(cfg.Workers, 1), len(engines))
	jobs := make(chan engine)
	type result struct {
		e     engine
		cands []Candidate
		err   error
	}
	results := make(chan result)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range jobs {
				ev := &evaluation{cfg: &cfg, ctx: ctx, e: e, runs: map[runKey]*outcome{}}
				cands, err := ev.plan(routers)
				results <- result{e, cands, err}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, e := range engines {
			select {
			case jobs <- e:
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
	if firstErr != nil {
		return pl, firstErr
	}
	if err := ctx.Err(); err != nil {
		pl.Interrupted = true
		return pl, err
	}
	return pl, nil
}

// runKey names one simulation of an engine configuration: a fleet of n replicas behind
// router (none for one replica, which no router changes) at scale times the traffic.
type runKey struct {
	n      int
	router string
	scale  float64
}

// outcome is one simulated level and whether it meets the SLOs (why not, when not).
type outcome struct {
	lv            metrics.Level
	oversaturated bool // stopped by load's over-saturation rule
	meets         bool
	why           string
}

// evaluation plans one engine configuration. Its simulations are kept, so that the
// replica searches behind several routers, and the headroom search, reuse them.
type evaluation struct {
	cfg  *Config
	ctx  context.Context
	e    engine
	runs map[runKey]*outcome
}

// plan finds, behind each router, the fewest replicas meeting the SLOs at the traffic.
func (ev *evaluation) plan(routers []string) ([]Candidate, error) {
	p := ev.e.p
	base := newCandidate(p)
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
		why := fmt.Sprintf("one replica misses the SLOs even at %s req/s (1/%d of the traffic): %s, so no fleet of up to %d replicas meets them",
			fmtRate(ev.cfg.Traffic.Rate/float64(ev.cfg.MaxReplicas)), ev.cfg.MaxReplicas, low.why, ev.cfg.MaxReplicas)
		for i := range out {
			out[i].Reason, out[i].Simulations = why, len(ev.runs)
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

// run simulates a fleet of n replicas behind router at scale times the traffic, once.
func (ev *evaluation) run(n int, router string, scale float64) (*outcome, error) {
	if n == 1 {
		router = ""
	}
	k := runKey{n, router, scale}
	if o, ok := ev.runs[k]; ok {
		return o, nil
	}
	p := ev.fleet(n, router)
	lvl, src, err := ev.cfg.Traffic.At(scale)
	if err != nil {
		return nil, err
	}
	srv, err := bench.Deploy(p)
	if err != nil {
		return nil, err
	}
	agg := metrics.NewAggregator(ev.cfg.Metrics)
	_, reason, err := load.RunVirtual(ev.ctx, lvl, 0, src, srv, agg.Add)
	if err != nil {
		return nil, err
	}
	o := &outcome{lv: agg.Level(), oversaturated: reason == load.EndOversaturated}
	o.lv.Dists, o.lv.Anatomy = nil, nil // the figures are taken; the distributions are not kept
	o.meets, o.why = meets(o.lv, o.oversaturated)
	ev.runs[k] = o
	return o, nil
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

// meets says whether a simulated level meets the SLOs: every verdict term passes, no
// request failed (a fleet that refuses requests serves less than the traffic; the
// simulator refuses only those no replica could ever take, so this never tells two
// fleets of one configuration apart), and the level was not stopped as oversaturated (a
// backlog that kept growing: its figures describe no steady state, which is why run
// --search and summary.json's slo_limit pass over such a level too). why says what missed.
func meets(lv metrics.Level, oversaturated bool) (bool, string) {
	var why []string
	if oversaturated {
		why = append(why, "it could not keep up (stopped as oversaturated: docs/metrics.md)")
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
			if !t.Pass {
				why = append(why, missed(t))
			}
		}
	}
	return len(why) == 0, strings.Join(why, "; ")
}

// missed says what a failed term measured.
func missed(t metrics.TermCheck) string {
	if t.Value == nil {
		return t.Term + " not measured"
	}
	return fmt.Sprintf("%s measured %s", t.Term, fmtValue(*t.Value))
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
// better than its replicas alone) and gallops up, then bisects, while they are missed.
// The answer's fleet meets the SLOs and the fleet one replica smaller does not; when no
// fleet of up to MaxReplicas meets them, the largest is returned with its outcome.
func (ev *evaluation) fewest(router string, share float64) (int, *outcome, error) {
	maxN := ev.cfg.MaxReplicas
	n := min(max(int(math.Ceil(1/share-1e-9)), 1), maxN)
	o, err := ev.run(n, router, 1)
	if err != nil {
		return 0, nil, err
	}
	if o.meets {
		for n > 1 {
			less, err := ev.run(n-1, router, 1)
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
	lo, hi, step := n, 0, 1 // lo misses; hi meets once found
	for hi == 0 {
		if lo == maxN {
			return maxN, o, nil
		}
		t := min(lo+step, maxN)
		ot, err := ev.run(t, router, 1)
		if err != nil {
			return 0, nil, err
		}
		if ot.meets {
			hi, o = t, ot
		} else {
			lo, o, step = t, ot, step*2
		}
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		om, err := ev.run(mid, router, 1)
		if err != nil {
			return 0, nil, err
		}
		if om.meets {
			hi, o = mid, om
		} else {
			lo = mid
		}
	}
	return hi, o, nil
}

// headroom is the largest scale of the traffic, to 5 %, that the fleet of n replicas
// behind router still meets the SLOs at: it grows from the replicas' shares added up
// (or 1.25, whichever is more) by half again until a scale misses, then bisects.
func (ev *evaluation) headroom(n int, router string, share float64) (float64, error) {
	lo, hi := 1.0, 0.0
	g := max(1.25, float64(n)*share)
	for hi == 0 {
		if g > maxHeadroom {
			return maxHeadroom, nil
		}
		o, err := ev.run(n, router, g)
		if err != nil {
			return 0, err
		}
		if o.meets {
			lo, g = g, g*1.5
		} else {
			hi = g
		}
	}
	return bisectLog(ev.ctx, lo, hi, func(scale float64) (bool, error) {
		o, err := ev.run(n, router, scale)
		return err == nil && o.meets, err
	})
}

// fill gives c the figures of its fleet of n replicas at the traffic.
func (ev *evaluation) fill(c *Candidate, n int, o *outcome) {
	p := ev.fleet(n, c.Router)
	c.Replicas, c.GPUs, c.MeetsSLO, c.Oversaturated, c.profile = n, p.GPUs(), o.meets, o.oversaturated, p
	if !o.meets {
		c.Reason = fmt.Sprintf("%d replicas (the most tried): %s", n, o.why)
	}
	lv := o.lv
	c.SLO = terms(ev.cfg.Metrics.SLOs, lv.SLO)
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
}

// terms pairs a verdict's terms with their SLOs' bounds and margins.
func terms(slos []metrics.SLO, v *metrics.Verdict) []Term {
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
