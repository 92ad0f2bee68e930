package metrics

import (
	"container/heap"
	"math"
	"slices"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// Aggregator computes one level's figures from its records, one record at a time: run,
// simulate, report and merge all feed one. Its memory grows with the distinct values of
// the exact distributions (Dist), the level's length in seconds, two instants per measured
// request for the peak concurrency, and a fixed-size sample of requests for report.html —
// never with the records themselves. Not safe for concurrent use.
type Aggregator struct {
	cfg    Config
	varies string // Varies' reason: the load changed on purpose, so no steady state is sought
	lv     Level
	dists  []*Dist    // by registry index
	limits []int64    // per-request SLO bound by registry index, µs; -1 for none
	cur    int        // registry index being derived
	wacc   *windowAcc // the bucket the record being derived finished in
	failed bool       // the record being derived broke a bound
	// The metric being derived, looked up once per record rather than per sample: its
	// Dist, its per-request bound (-1 for none) and whether its bucket keeps it (nil: no).
	curDist   *Dist
	curLimit  int64
	curBucket *windowAcc
	add       func(num, den int64, weight uint64)
	nBound    int

	good, goodTokens       int
	first, last            int64
	starts, ends           []int64
	busy                   int64 // sum of (done - sent), µs
	prompt                 PromptTokens
	intendedSum, serverSum int64
	imagesSum              int64 // images of the requests in prompt
	peak                   peakTokens

	server  serverTimingsAcc
	cached  cachedAcc
	turns   turnsAcc
	tasks   tasksAcc
	present []bool // by registry index: Metric.Present held for some record; Streamed: some request streamed, or none was measured
	skip    []bool // by registry index: not derived (Config.Only)
	// streamed, unstreamed: some measured request had a stream, resp. came as one document.
	streamed, unstreamed bool
	inputs, documents    int // of completed requests (embeddings, rerank)

	anatomy Anatomy
	sampler sampler
	windows *windows
}

// NewAggregator starts a level's aggregation.
func NewAggregator(cfg Config) *Aggregator {
	a := &Aggregator{cfg: cfg, first: math.MaxInt64, last: math.MinInt64, present: make([]bool, len(Registry)),
		lv:    Level{Errors: map[string]int{}, Dists: map[string]*Dist{}},
		peak:  peakTokens{origin: math.MaxInt64},
		dists: make([]*Dist, len(Registry)), limits: make([]int64, len(Registry))}
	for i, m := range Registry {
		a.dists[i] = NewDist()
		a.lv.Dists[m.Key] = a.dists[i]
		a.limits[i] = -1
		a.present[i] = m.Streamed
	}
	if len(cfg.Only) > 0 {
		a.skip = make([]bool, len(Registry))
		for i, m := range Registry {
			a.skip[i] = !slices.Contains(cfg.Only, m.Key)
		}
	}
	for _, s := range cfg.SLOs {
		if m, ok := Lookup(s.Metric); ok && s.Kind == SLOBound {
			lim := us(s.Limit)
			if l := a.limits[m.index]; l < 0 || lim < l {
				a.limits[m.index] = lim
			}
			a.nBound++
		}
	}
	a.add = a.addSample
	a.anatomy = Anatomy{Start: math.MaxInt64, End: math.MinInt64}
	a.sampler.k = SampleSize
	a.windows = newWindows(cfg.Window)
	return a
}

// Aggregate computes a level's figures from its records: NewAggregator, Add each, Level.
func Aggregate(recs []record.Record, cfg Config) Level {
	a := NewAggregator(cfg)
	for i := range recs {
		a.Add(&recs[i])
	}
	return a.Level()
}

func (a *Aggregator) addSample(num, den int64, weight uint64) {
	a.curDist.AddRatio(num, den, weight)
	if a.curBucket != nil {
		d := a.curBucket.dists[a.cur]
		if d == nil {
			d = newSparseDist()
			a.curBucket.dists[a.cur] = d
		}
		d.AddRatio(num, den, weight)
	}
	if a.curLimit >= 0 && cmpMul(num, 1, a.curLimit, den) > 0 {
		a.failed = true
	}
}

// derive adds every registry metric of a scope that r gives.
func (a *Aggregator) derive(r *record.Record, scope Scope) {
	for i, m := range Registry {
		if m.Scope == scope && (a.skip == nil || !a.skip[i]) {
			a.cur, a.curDist, a.curLimit, a.curBucket = i, a.dists[i], a.limits[i], nil
			if !m.PerToken {
				a.curBucket = a.wacc
			}
			m.Samples(r, a.add)
			if m.Present != nil && !a.present[i] && m.Present(r) {
				a.present[i] = true
			}
		}
	}
}

// AddSample adds weight samples of num/den µs to a metric outside any record (a producer
// that knows n identical samples, such as the simulator's step gaps, adds them at once).
// Such samples enter the metric's statistics, not the per-request SLO bounds.
func (a *Aggregator) AddSample(key string, num, den int64, weight uint64) {
	if m, ok := Lookup(key); ok {
		a.dists[m.index].AddRatio(num, den, weight)
	}
}

// Add aggregates one record of the level, warm-up ones included (they are counted only in
// the anatomy). Latency metrics come from completed requests only; failed requests are
// counted (by kind) and never good; canceled ones (cut off by the end of the run) are
// counted apart. The measured window — for duration, concurrency and the 1 s buckets —
// spans every measured request that was sent, whatever its outcome, since all of them
// loaded the server.
func (a *Aggregator) Add(r *record.Record) {
	a.anatomyAdd(r)
	a.tasks.add(r)
	if r.Warmup {
		return
	}
	a.turns.add(r)
	a.noteStream(r)
	if r.Retried {
		a.lv.Retried++
	}
	if r.TTFTUpperBound {
		a.lv.TTFTUpperBound++
	}
	if !sent(r) {
		countOutcome(&a.lv, r)
		a.windows.outcome(r)
		return
	}
	s, d := us(r.Sent), us(r.Done)
	if d < s {
		d = s
	}
	a.first, a.last = min(a.first, s), max(a.last, d)
	a.starts, a.ends = append(a.starts, s), append(a.ends, d)
	a.busy += d - s
	if !a.peak.frozen {
		a.peak.origin = min(a.peak.origin, s)
	}
	a.windows.inflight(r.Sent, r.Done)
	a.wacc = a.windows.bucket(r.Done)
	a.derive(r, ScopeSent)
	if r.Error != nil {
		a.wacc = nil
		countOutcome(&a.lv, r)
		a.windows.outcome(r)
		return
	}
	a.lv.Completed++
	n := outputTokensOf(r)
	a.lv.TotalInputTokens += r.InputTokens
	a.lv.TotalOutputTokens += n
	if r.ToolCallTokens > 0 {
		a.lv.ToolCalls++
		a.lv.TotalToolCallTokens += int(r.ToolCallTokens)
	}
	a.inputs += int(r.Inputs)
	a.documents += int(r.Documents)
	if r.ServerPromptTokens > 0 {
		a.prompt.Requests++
		a.intendedSum += int64(r.InputTokens)
		a.serverSum += int64(r.ServerPromptTokens)
		a.imagesSum += int64(r.Images)
	}
	a.failed = false
	a.wacc = a.windows.bucket(r.Done)
	a.derive(r, ScopeCompleted)
	ok := !a.failed // meets every per-request bound
	if r.Events.Len() == 0 && !r.Unstreamed {
		// Completed without any token event: nothing to time, and it cannot meet a
		// latency bound.
		ok = a.nBound == 0
	}
	if ok {
		a.good++
		a.goodTokens += n
	}
	a.peak.add(r)
	a.server.add(r)
	a.cached.add(r)
	a.wacc = nil
	a.windows.completed(r, n, ok)
}

// Level returns the level's figures, once its records are in. The distributions in
// Level.Dists are the aggregator's own, frozen; records added afterwards change them, and
// count towards the peak output throughput with its buckets' origin fixed by now.
func (a *Aggregator) Level() Level {
	a.peak.freeze()
	lv := a.lv
	lv.Errors = maps(a.lv.Errors)
	lv.ErrorDetails = append([]ErrorDetail{}, a.lv.ErrorDetails...) // [] in JSON when none
	sortErrorDetails(lv.ErrorDetails)
	lv.PeakOutputThroughput = a.peak.max(a.last)
	if a.first != math.MaxInt64 && a.last > a.first {
		dur := float64(a.last-a.first) / 1e6
		lv.DurationS = dur
		lv.RequestThroughput = float64(lv.Completed) / dur
		lv.OutputThroughput = float64(lv.TotalOutputTokens) / dur
		lv.TotalTokenThroughput = float64(lv.TotalInputTokens+lv.TotalOutputTokens) / dur
		lv.InputThroughput = float64(lv.TotalInputTokens) / dur
		lv.MeanConcurrency = float64(a.busy) / float64(a.last-a.first)
	}
	perS := func(n int) *float64 {
		if n == 0 {
			return nil // not an embeddings (rerank) level
		}
		if lv.DurationS == 0 {
			return ptr(0.0)
		}
		return ptr(float64(n) / lv.DurationS)
	}
	lv.InputsPerS, lv.DocumentsPerS = perS(a.inputs), perS(a.documents)
	lv.PeakConcurrency = PeakOverlap(a.starts, a.ends)
	if a.prompt.Requests > 0 {
		p := a.prompt
		p.IntendedMean = float64(a.intendedSum) / float64(p.Requests)
		p.ServerMean = float64(a.serverSum) / float64(p.Requests)
		p.ImagesMean = float64(a.imagesSum) / float64(p.Requests)
		lv.PromptTokens = &p
	}
	if definesGoodput(a.cfg.SLOs) {
		lv.GoodRequests = ptr(a.good)
		var gp, gt float64
		if lv.DurationS > 0 {
			gp = float64(a.good) / lv.DurationS
			gt = float64(a.goodTokens) / lv.DurationS
		}
		lv.Goodput, lv.GoodputTokenThroughput = ptr(gp), ptr(gt)
		frac := 0.0
		if judged := lv.Completed + lv.Failed; judged > 0 {
			frac = float64(a.good) / float64(judged)
		}
		lv.GoodFraction = ptr(frac)
	}
	lv.Unstreamed = a.unstreamed && !a.streamed
	ps := a.cfg.percentiles()
	a.windows.integrate()
	var accs []*windowAcc
	if w := a.windows; w.lo <= w.hi {
		_, _, accs = w.span(time.Duration(w.lo)*w.width, time.Duration(w.hi+1)*w.width)
	}
	setStats(&lv, a.dists, a.present, a.skip, ps, bucketBatches(accs))
	if e2el := a.dists[registryIndex[KeyE2EL].index]; e2el.Count() > 0 {
		mean, _ := e2el.MeanStd()
		lv.LittlesLawConcurrency = lv.RequestThroughput * mean / 1000
	}
	var errorRate *float64
	if judged := lv.Completed + lv.Failed; judged > 0 {
		errorRate = ptr(float64(lv.Failed) / float64(judged))
	}
	lv.Tasks = a.tasks.result(ps, a.cfg.SLOs, lv.DurationS, lv.Dists) // before the verdicts: task:p99<=60s
	lv.SLO = evaluate(a.cfg.SLOs, lv.Dists, lv.GoodFraction, errorRate)
	lv.SteadyState = a.steadyState(&lv)
	if ss := lv.SteadyState; ss != nil && ss.Growing {
		FailBehind(lv.SLO, ss.Reason)
	}
	lv.ServerTimings = a.server.result()
	lv.CachedTokens = a.cached.result()
	lv.Turns = a.turns.result(ps)
	an := a.anatomy
	an.Sample = a.sampler.sorted()
	lv.Anatomy = &an
	return lv
}

// Varies marks the requests as sent under a load that changed on purpose (a staged level,
// a ramp): growth in flight is then the load's, not a backlog, so no steady state is
// sought and the verdict is the requests' own; why is the steady state's reason.
func (a *Aggregator) Varies(why string) { a.varies = why }

// setStats fills a level's Metrics (and its OnLevel metrics) from distributions by
// registry index: optional metrics only when they have samples (and, with Present, when
// present says so), with intervals by batch means over batches (by registry index; nil
// for none) where they allow.
func setStats(lv *Level, dists []*Dist, present, skip []bool, ps []float64, batches [][]*Dist) {
	lv.Metrics = Metrics{}
	for i, m := range Registry {
		d := dists[i]
		if skip != nil && skip[i] {
			continue
		}
		if m.Optional && (d.Count() == 0 || (m.Present != nil && !present[i])) || m.Streamed && !present[i] {
			continue
		}
		st := StatsOf(d, ps)
		var b []*Dist
		if batches != nil {
			b = batches[i]
		}
		batchIntervals(&st, b)
		switch m.Key {
		case KeyReadLag:
			lv.ReadLag = &st
		case KeyFirstContent:
			lv.FirstContent = &st
		default:
			lv.Metrics.Set(m.Key, st)
		}
	}
}

// noteStream keeps the Streamed metrics present unless every measured request so far came
// without a stream.
func (a *Aggregator) noteStream(r *record.Record) {
	seen := &a.streamed
	if r.Unstreamed {
		seen = &a.unstreamed
	}
	if *seen {
		return
	}
	*seen = true
	on := a.streamed || !a.unstreamed
	for i, m := range Registry {
		if m.Streamed {
			a.present[i] = on
		}
	}
}

// Stats returns the level's statistics of a registry metric by key: an OnLevel metric's
// from the level itself (ReadLag, FirstContent), the others' from Metrics.Get; false when
// the level has none.
func (l *Level) Stats(key string) (*Stats, bool) {
	switch key {
	case KeyReadLag:
		return l.ReadLag, l.ReadLag != nil
	case KeyFirstContent:
		return l.FirstContent, l.FirstContent != nil
	}
	return l.Metrics.Get(key)
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// peakTokens finds the peak output throughput: the most output tokens of completed
// requests in a 1 s bucket of event time, buckets counted from the window's first sent.
// That origin is known only once every record is in, so token events are held exactly
// until pendingMax of them are; then the origin is fixed at the earliest sent seen so far
// and events go straight into buckets (Level fixes it too). Records arrive in about done order, so the first
// request sent is in long before: a request sent earlier still, arriving later, has its
// early tokens counted in the first bucket.
type peakTokens struct {
	origin int64
	frozen bool
	// Until frozen: the token events, 4 bytes each as µs from base (base is 2^31 µs
	// before the first event, so ±35 minutes around it fit), in fixed-size chunks (no
	// copying as they grow), with the counts other than 1 apart.
	base    int64
	pending [][]uint32
	held    int
	multi   []multiTokens
	buckets []int64
}

type multiTokens struct{ i, n uint32 }

// pendingMax is how many token events peakTokens holds before fixing its origin (a var for tests).
var pendingMax = 1 << 20

const pendingChunk = 1 << 14

func (p *peakTokens) add(r *record.Record) {
	r.Events.Each(func(_ int, t time.Duration, k int) {
		e := us(t)
		if !p.frozen {
			if p.held == 0 {
				p.base = e - 1<<31
			}
			if off := e - p.base; off >= 0 && off <= math.MaxUint32 {
				if k != 1 {
					p.multi = append(p.multi, multiTokens{uint32(p.held), uint32(k)})
				}
				if p.held%pendingChunk == 0 {
					p.pending = append(p.pending, make([]uint32, 0, pendingChunk))
				}
				c := &p.pending[len(p.pending)-1]
				*c = append(*c, uint32(off))
				p.held++
				return
			}
			p.freeze() // an event too far from the first to hold: fix the origin now
		}
		p.bucket(e, int64(k))
	})
	if !p.frozen && p.held >= pendingMax {
		p.freeze()
	}
}

func (p *peakTokens) freeze() {
	if p.frozen {
		return
	}
	p.frozen = true
	i, m := 0, 0
	for _, c := range p.pending {
		for _, off := range c {
			n := int64(1)
			if m < len(p.multi) && p.multi[m].i == uint32(i) {
				n = int64(p.multi[m].n)
				m++
			}
			p.bucket(p.base+int64(off), n)
			i++
		}
	}
	p.pending, p.multi, p.held = nil, nil, 0
}

func (p *peakTokens) bucket(t, n int64) {
	b := max((t-p.origin)/1_000_000, 0)
	for int64(len(p.buckets)) <= b {
		p.buckets = append(p.buckets, 0)
	}
	p.buckets[b] += n
}

// max is the peak rate over the buckets, tokens per second of each bucket's own length. The
// level's window ends at end (µs): its last bucket is partial, and is merged into the one
// before it (or is the only one), so that every rate is over at least a second — a burst in
// the last milliseconds is not a peak — and the bucket rates, weighted by their lengths,
// average to the level's output throughput, of which the peak is then never below.
func (p *peakTokens) max(end int64) float64 {
	n := len(p.buckets)
	if n == 0 || p.origin == math.MaxInt64 {
		return 0
	}
	span := func(b int) float64 { // bucket b's length in seconds, the last one cut at end
		from, to := p.origin+int64(b)*1_000_000, p.origin+int64(b+1)*1_000_000
		return float64(min(to, max(end, from))-from) / 1e6
	}
	best := 0.0
	for b := 0; b < n; b++ {
		tokens, length := float64(p.buckets[b]), span(b)
		if b == n-2 && length == 1 && span(n-1) < 1 { // the partial last joins this one
			tokens, length = tokens+float64(p.buckets[n-1]), length+span(n-1)
			b++
		}
		if length > 0 {
			best = max(best, tokens/length)
		} else {
			best = max(best, tokens) // no window (one instant): the count itself
		}
	}
	return best
}

// SampleSize is how many requests per level Anatomy.Sample holds.
const SampleSize = 2000

// sampleSeed makes the per-level sample reproducible.
const sampleSeed = 0x6c6c6d62656e6368 // "llmbench"

// Anatomy is a level's requests as report.html draws them: counts, span, and a uniform
// sample of up to SampleSize requests that depends only on (level, index), not on the
// order records arrive in.
type Anatomy struct {
	Requests int           // every record of the level, warm-up included
	Measured int           // not warm-up / cool-down
	OK       int           // measured and successful
	Failed   int           // measured, failed (not canceled)
	Start    time.Duration // first scheduled/sent of the level
	End      time.Duration // last done of the level
	Sample   []SampledRequest
}

// SampledRequest is one request of Anatomy.Sample.
type SampledRequest struct {
	Index        int
	Scheduled    time.Duration
	Sent         time.Duration // Scheduled when it was never sent
	First, Last  time.Duration
	HasTokens    bool
	Done         time.Duration
	OutputTokens int
	Warmup       bool
	ErrKind      string
	Phases       *record.Phases // nil when none were measured
	key          uint64         // sampling priority; smallest keys are kept
}

func (a *Aggregator) anatomyAdd(r *record.Record) {
	an := &a.anatomy
	an.Requests++
	isSent := sent(r)
	start := r.Scheduled
	if isSent && r.Sent < start {
		start = r.Sent
	}
	an.Start = min(an.Start, start)
	an.End = max(an.End, r.Done)
	s := SampledRequest{
		Index: r.Index, Scheduled: r.Scheduled, Sent: r.Sent, Done: r.Done,
		OutputTokens: r.OutputTokens, Warmup: r.Warmup,
		key: splitmix(sampleSeed ^ uint64(r.Level)<<40 ^ uint64(r.Index)),
	}
	if !isSent {
		s.Sent = r.Scheduled
	}
	if p := r.Phases; p != nil && p.Has != 0 {
		cp := *p
		s.Phases = &cp
	}
	if f, ok := r.FirstToken(); ok {
		s.First, s.HasTokens = f, true
		s.Last, _ = r.LastToken()
	}
	if r.Error != nil {
		s.ErrKind = r.Error.Kind
	}
	a.sampler.offer(s)
	if r.Warmup {
		return
	}
	an.Measured++
	switch {
	case r.Error == nil:
		an.OK++
	case r.Error.Kind != record.KindCanceled:
		an.Failed++
	}
}

// splitmix is SplitMix64's finaliser: a well-mixed 64-bit hash, so the smallest keys form a
// uniform sample that depends only on (level, index), not on the order of the records.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// sampler keeps the k offered requests with the smallest keys (a max-heap on key).
type sampler struct {
	k     int
	items []SampledRequest
}

func (b *sampler) Len() int           { return len(b.items) }
func (b *sampler) Less(i, j int) bool { return b.items[i].key > b.items[j].key }
func (b *sampler) Swap(i, j int)      { b.items[i], b.items[j] = b.items[j], b.items[i] }
func (b *sampler) Push(x any)         { b.items = append(b.items, x.(SampledRequest)) }
func (b *sampler) Pop() any {
	x := b.items[len(b.items)-1]
	b.items = b.items[:len(b.items)-1]
	return x
}

func (b *sampler) offer(s SampledRequest) {
	if len(b.items) < b.k {
		heap.Push(b, s)
		return
	}
	if s.key < b.items[0].key {
		b.items[0] = s
		heap.Fix(b, 0)
	}
}

// sorted returns the sample in the order the timeline draws it: by sent time, then index.
func (b *sampler) sorted() []SampledRequest {
	out := slices.Clone(b.items)
	slices.SortFunc(out, func(x, y SampledRequest) int {
		if x.Sent != y.Sent {
			if x.Sent < y.Sent {
				return -1
			}
			return 1
		}
		return x.Index - y.Index
	})
	return out
}
