package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/llmbench/llmbench/internal/engine"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/workload"
)

// Simulate runs one load level against the simulated engine on a virtual clock: the load
// generator and the engine share one timeline, with no goroutines and no sleeping, and the
// records are those a live run against serve would produce with a zero-latency network
// (requests use max_tokens with ignore_eos, as the benchmark sends them). levelStart is
// the level's start on the run's virtual timeline; Simulate returns the level's end (the
// last request's Done). sink, if not nil, gets each record as its request finishes.
//
// The level follows the same plan as engine.Run: the same indices, due times, warm-up
// marks and stopping rules. When ctx is cancelled the requests in flight are reported as
// cancelled and ctx's error is returned.
func Simulate(ctx context.Context, p Profile, lvl engine.Level, levelStart time.Duration, src workload.Source, sink func(*record.Record)) (time.Duration, error) {
	if err := lvl.Validate(); err != nil {
		return levelStart, fmt.Errorf("level %d: %w", lvl.Index, err)
	}
	if src == nil {
		return levelStart, errors.New("sim.Simulate: nil workload source")
	}
	if sink == nil {
		sink = func(*record.Record) {}
	}
	v := &vsim{lvl: lvl, start: levelStart, end: levelStart, src: src, sink: sink}
	c, err := newCore(p, v.emit)
	if err != nil {
		return levelStart, err
	}
	c.vemit = v
	v.c = c
	if c.cache != nil {
		v.bs = c.bs
	}
	return v.run(ctx)
}

// vsim is one level on the virtual clock.
type vsim struct {
	lvl   engine.Level
	c     *core
	src   workload.Source
	sink  func(*record.Record)
	start time.Duration // level start on the run's timeline
	end   time.Duration
	bs    int // block size for synthetic prefix hashes; 0 without prefix caching

	closed   *engine.ClosedLoop
	open     *engine.OpenLoop
	next     engine.Planned // open loop: the next arrival
	hasNext  bool
	cap      int              // open loop: in-flight cap, 0 = none
	queued   []engine.Planned // open loop: due but waiting for a slot
	qhead    int
	inflight int
	live     *seq // in-flight sequences, a list through lnext/lprev
}

func (v *vsim) run(ctx context.Context) (time.Duration, error) {
	t := v.start
	if v.lvl.Closed() {
		v.closed = engine.NewClosedLoop(v.lvl)
		for range v.lvl.ShardConcurrency() {
			v.closedNext(t)
		}
	} else {
		v.open = engine.NewOpenLoop(v.lvl, v.src)
		v.cap = v.lvl.ShardMaxConcurrency()
		v.next, v.hasNext = v.open.Next()
	}
	v.c.kick(t)
	for iter := 0; ; iter++ {
		if iter&1023 == 0 && ctx.Err() != nil {
			v.interrupt(t)
			return v.end, ctx.Err()
		}
		tc, okc := v.c.next()
		ta, oka := v.start+v.next.Due, v.hasNext
		switch {
		case okc && (!oka || tc <= ta):
			t = tc
		case oka:
			t = ta
		default:
			if v.c.nLive > 0 {
				return v.end, fmt.Errorf("sim: engine stalled with %d sequences unfinished", v.c.nLive)
			}
			return v.end, nil
		}
		if okc && tc == t {
			v.c.process(t) // completions send closed-loop follow-ups at t
		}
		for v.hasNext && v.start+v.next.Due == t {
			v.arrive(t)
		}
		v.c.kick(t)
	}
}

// closedNext sends a closed-loop slot's next request at t, if the level has one.
func (v *vsim) closedNext(t time.Duration) {
	i, warm, ok := v.closed.Next(t - v.start)
	if !ok {
		return
	}
	req := v.src.Request(v.lvl.Index, i)
	v.send(i, warm, t, t, &req)
}

// arrive handles the open-loop arrival due at t: sent now, or queued for a slot.
func (v *vsim) arrive(t time.Duration) {
	p := v.next
	v.next, v.hasNext = v.open.Next()
	if v.cap > 0 && v.inflight >= v.cap {
		v.queued = append(v.queued, p)
		return
	}
	v.send(p.Index, p.Warmup, t, t, &p.Request)
}

// send submits request i at t; scheduled is when the plan wanted it sent.
func (v *vsim) send(i int, warm bool, scheduled, t time.Duration, req *workload.Request) {
	rec := &record.Record{
		Level: v.lvl.Index, Index: i, Warmup: warm,
		Scheduled: scheduled.Truncate(time.Microsecond), Sent: t.Truncate(time.Microsecond),
		InputTokens: req.InputTokens, ServerPromptTokens: req.InputTokens,
		OutputTokensSource: record.SourceUsage,
	}
	rec.ResponseID = responseID(v.lvl.Index, i)
	rec.Events.Base = rec.Sent
	rec.Events.Grow(req.OutputTokens)
	sr := SeqRequest{PromptTokens: req.InputTokens, MaxTokens: req.OutputTokens, IgnoreEOS: true}
	if v.bs > 0 && req.PrefixTokens >= v.bs {
		sr.PrefixHashes = prefixHashes(req.PrefixGroup, req.PrefixTokens/v.bs)
	}
	s, err := v.c.newSeq(&sr)
	if err != nil {
		// The server would answer 400: a failed request, not a failed simulation.
		rec.Done = rec.Sent
		rec.Error = &record.Error{Kind: record.KindHTTPStatus, Status: 400, Message: err.Error()}
		v.finish(rec, t)
		return
	}
	s.rec = rec
	v.inflight++
	v.link(s)
	v.c.submit(s, t)
}

// prefixHashes are the block hashes of a shared prefix: equal for every request of the
// group, so the prefix cache sees them as one prompt prefix.
func prefixHashes(group, blocks int) []uint64 {
	h := make([]uint64, blocks)
	x := splitmix64(uint64(group) + 0x5eed)
	for i := range h {
		x = splitmix64(x ^ uint64(i))
		h[i] = x
	}
	return h
}

func responseID(level, i int) string {
	b := make([]byte, 0, 24)
	b = append(b, "cmpl-sim-"...)
	b = strconv.AppendInt(b, int64(level), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(i), 10)
	return string(b)
}

// emit records tokens; on the last one the request is done and its slot frees at t.
func (v *vsim) emit(s *seq, t time.Duration, n int, done bool) {
	s.rec.Events.Append(t, n)
	if !done {
		return
	}
	v.unlink(s)
	v.inflight--
	rec := s.rec
	s.rec = nil
	rec.Done = t.Truncate(time.Microsecond)
	rec.OutputTokens = rec.Events.Tokens()
	v.finish(rec, t)
}

// finish reports rec and refills its slot at t.
func (v *vsim) finish(rec *record.Record, t time.Duration) {
	if rec.Done > v.end {
		v.end = rec.Done
	}
	v.sink(rec)
	if v.closed != nil {
		v.closedNext(t)
		return
	}
	if v.qhead < len(v.queued) {
		// A capped open loop gives up on waiting requests once the level's time is up.
		if v.lvl.Duration > 0 && t-v.start >= v.lvl.Duration {
			v.queued, v.qhead = nil, 0
			return
		}
		p := v.queued[v.qhead]
		v.queued[v.qhead] = engine.Planned{}
		v.qhead++
		if v.qhead == len(v.queued) {
			v.queued, v.qhead = v.queued[:0], 0
		}
		v.send(p.Index, p.Warmup, v.start+p.Due, t, &p.Request)
	}
}

// interrupt reports the requests in flight as cancelled at t, as engine.Run does.
func (v *vsim) interrupt(t time.Duration) {
	for s := v.live; s != nil; s = s.lnext {
		rec := s.rec
		rec.Done = t.Truncate(time.Microsecond)
		rec.OutputTokens = rec.Events.Tokens()
		rec.Error = &record.Error{Kind: record.KindCanceled, Message: "interrupted"}
		v.sink(rec)
	}
	v.live = nil
}

func (v *vsim) link(s *seq) {
	s.lnext = v.live
	if v.live != nil {
		v.live.lprev = s
	}
	v.live = s
}

func (v *vsim) unlink(s *seq) {
	if s.lprev != nil {
		s.lprev.lnext = s.lnext
	} else {
		v.live = s.lnext
	}
	if s.lnext != nil {
		s.lnext.lprev = s.lprev
	}
	s.lprev, s.lnext = nil, nil
}
