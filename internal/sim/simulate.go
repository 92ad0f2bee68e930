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
// last request's Done) and why it ended, as engine.Run says it: its requests, its duration,
// the end of a replayed trace, or engine.EndInterrupted with ctx's error. sink, if not nil,
// gets each record as its request finishes.
//
// The level follows the same plan as engine.Run: the same indices, due times, warm-up
// marks and stopping rules, multi-turn conversations included (engine.Conversations: turn
// k is due when turn k-1 finished plus the think time). When ctx is cancelled the
// requests in flight are reported as cancelled and ctx's error is returned.
//
// With prefix caching, a request's prompt blocks are keyed as a server keys them: a
// trace's block hashes (PrefixHashes), a shared prefix group's, or a conversation's, whose
// turns each extend the one before, so a later turn finds its history cached.
func Simulate(ctx context.Context, p Profile, lvl engine.Level, levelStart time.Duration, src workload.Source, sink func(*record.Record)) (time.Duration, engine.EndReason, error) {
	if err := lvl.Validate(); err != nil {
		return levelStart, "", fmt.Errorf("level %d: %w", lvl.Index, err)
	}
	if src == nil {
		return levelStart, "", errors.New("sim.Simulate: nil workload source")
	}
	if sink == nil {
		sink = func(*record.Record) {}
	}
	v := &vsim{lvl: lvl, start: levelStart, end: levelStart, src: src, sink: sink}
	// Request 0 says whether the level is multi-turn, as in engine.Run.
	v.first = src.Request(lvl.Index, 0)
	if v.first.Turns > 1 && v.first.HasArrival {
		return levelStart, "", fmt.Errorf("level %d: a replayed trace cannot have multi-turn conversations", lvl.Index)
	}
	c, err := newCore(p, v.emit)
	if err != nil {
		return levelStart, "", err
	}
	c.vemit = v
	v.c = c
	if c.cache != nil {
		v.bs = c.bs
	}
	end, err := v.run(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return end, engine.EndInterrupted, err
	case err != nil:
		return end, "", err
	}
	return end, v.reason(), nil
}

// reason is why the level's plan stopped sending.
func (v *vsim) reason() engine.EndReason {
	switch {
	case v.conv != nil:
		return v.conv.Reason()
	case v.closed != nil:
		return v.closed.Reason()
	case v.open != nil:
		return v.open.Reason()
	}
	return ""
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

	first    workload.Request // request 0, built to learn the kind of level
	closed   *engine.ClosedLoop
	open     *engine.OpenLoop
	next     engine.Planned // open loop: the next arrival
	hasNext  bool
	cap      int   // open loop: in-flight cap, 0 = none
	queued   []job // open loop: due but waiting for a slot
	qhead    int
	inflight int
	live     *seq // in-flight sequences, a list through lnext/lprev

	// Multi-turn levels.
	conv    *engine.Conversations
	turns   map[int]engine.Turn // in flight, by index
	follows followHeap          // later turns waiting for their due time
	nfollow uint64
}

// job is an open-loop request due but waiting for a slot; turn is set in a multi-turn level.
type job struct {
	engine.Planned
	turn  engine.Turn
	multi bool
}

func (v *vsim) run(ctx context.Context) (time.Duration, error) {
	t := v.start
	switch {
	case v.first.Turns > 1:
		v.conv = engine.NewConversations(v.lvl, v.first.Turns)
		v.turns = map[int]engine.Turn{}
		if v.lvl.Closed() {
			for range v.lvl.ShardConcurrency() {
				v.startConversation(t)
			}
		} else {
			v.cap = v.lvl.ShardMaxConcurrency()
		}
	case v.lvl.Closed():
		v.closed = engine.NewClosedLoop(v.lvl)
		for range v.lvl.ShardConcurrency() {
			v.closedNext(t)
		}
	default:
		v.open = engine.NewOpenLoop(v.lvl, v.src)
		v.cap = v.lvl.ShardMaxConcurrency()
		v.next, v.hasNext = v.open.Next()
	}
	if v.conv != nil && !v.lvl.Closed() {
		v.next.Due, v.hasNext = v.conv.NextStart()
	}
	v.c.kick(t)
	for iter := 0; ; iter++ {
		if iter&1023 == 0 && ctx.Err() != nil {
			v.interrupt(t)
			return v.end, ctx.Err()
		}
		tc, okc := v.c.next()
		ta, oka := v.start+v.next.Due, v.hasNext
		if len(v.follows) > 0 && (!oka || v.follows[0].at < ta) {
			ta, oka = v.follows[0].at, true
		}
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
		if v.conv != nil {
			v.converse(t)
		} else {
			for v.hasNext && v.start+v.next.Due == t {
				v.arrive(t)
			}
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
		v.queued = append(v.queued, job{Planned: p})
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
	if req.Turns > 1 {
		rec.Conversation, rec.Turn = req.Conversation, req.Turn+1
	}
	rec.ResponseID = responseID(v.lvl.Index, i)
	rec.Events.Base = rec.Sent
	rec.Events.Grow(req.OutputTokens)
	sr := SeqRequest{PromptTokens: req.InputTokens, MaxTokens: req.OutputTokens, IgnoreEOS: true}
	switch {
	case v.bs == 0:
	case req.Turns > 1:
		sr.PrefixHashes = conversationHashes(v.lvl.Index, req.Conversation, req.InputTokens/v.bs)
	case len(req.PrefixHashes) > 0:
		sr.PrefixHashes = traceHashes(req.PrefixHashes, req.BlockTokens, v.bs, req.InputTokens)
	case req.PrefixTokens >= v.bs:
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
			for _, j := range v.queued[v.qhead:] {
				if j.multi {
					v.conv.Abandon(j.turn)
				}
			}
			v.queued, v.qhead = nil, 0
		} else {
			p := v.queued[v.qhead]
			v.queued[v.qhead] = job{}
			v.qhead++
			if v.qhead == len(v.queued) {
				v.queued, v.qhead = v.queued[:0], 0
			}
			if p.multi {
				v.sendTurn(p.turn, &p.Request, t)
			} else {
				v.send(p.Index, p.Warmup, v.start+p.Due, t, &p.Request)
			}
		}
	}
	if v.conv != nil {
		v.followUp(rec, t)
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

// converse handles what a multi-turn level has due at t: conversation starts (open loop)
// and later turns whose think time is over.
func (v *vsim) converse(t time.Duration) {
	for v.hasNext && v.start+v.next.Due == t {
		if tt, ok := v.conv.Start(v.next.Due); ok {
			req := v.request(tt.Index)
			v.dispatch(tt, &req, t)
		}
		v.next.Due, v.hasNext = v.conv.NextStart()
	}
	for len(v.follows) > 0 && v.follows[0].at <= t {
		f := v.follows.pop()
		v.dispatch(f.turn, &f.req, t)
	}
	// A turn may have ended the level's starts (its quota reached).
	if v.hasNext && !v.lvl.Closed() {
		v.next.Due, v.hasNext = v.conv.NextStart()
	}
}

// dispatch sends a due turn at t: in a closed loop its worker's slot is its own; in an
// open loop it waits for a free slot under the cap, behind earlier ones.
func (v *vsim) dispatch(tt engine.Turn, req *workload.Request, t time.Duration) {
	if v.cap > 0 && v.inflight >= v.cap {
		v.queued = append(v.queued, job{Planned: engine.Planned{Index: tt.Index, Due: tt.Scheduled, Warmup: tt.Warmup, Request: *req}, turn: tt, multi: true})
		return
	}
	v.sendTurn(tt, req, t)
}

func (v *vsim) request(i int) workload.Request {
	if i == 0 {
		return v.first
	}
	return v.src.Request(v.lvl.Index, i)
}

// startConversation starts a closed-loop worker's next conversation at t, if any.
func (v *vsim) startConversation(t time.Duration) {
	tt, ok := v.conv.Start(t - v.start)
	if !ok {
		return
	}
	req := v.request(tt.Index)
	v.sendTurn(tt, &req, t)
}

func (v *vsim) sendTurn(tt engine.Turn, req *workload.Request, t time.Duration) {
	v.turns[tt.Index] = tt
	v.send(tt.Index, tt.Warmup, v.start+tt.Scheduled, t, req)
}

// followUp schedules the turn after rec's, which finished at t: due at its Done plus the
// think time (engine.Conversations decides whether it is sent). A closed-loop worker
// whose conversation ended starts the next one at t.
func (v *vsim) followUp(rec *record.Record, t time.Duration) {
	tt := v.turns[rec.Index]
	delete(v.turns, rec.Index)
	more := rec.Error == nil && tt.Turn+1 < v.conv.Turns()
	var req workload.Request
	var s time.Duration
	if more {
		req = v.src.Request(v.lvl.Index, tt.Index+1)
		// From Done as recorded (µs), so Scheduled is exactly Done + ThinkTime.
		s = rec.Done - v.start + req.ThinkTime
	}
	nt, ok := v.conv.Next(tt, !more, s)
	switch {
	case ok:
		v.nfollow++
		v.follows.push(follow{at: v.start + s, no: v.nfollow, turn: nt, req: req})
	case v.lvl.Closed():
		v.startConversation(t)
	}
}

// follow is a later turn waiting for its due time.
type follow struct {
	at   time.Duration
	no   uint64 // ties go in the order the turns were scheduled
	turn engine.Turn
	req  workload.Request
}

// followHeap is a min-heap of follows by (at, no).
type followHeap []follow

func (h followHeap) less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].no < h[j].no
}

func (h *followHeap) push(f follow) {
	*h = append(*h, f)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *followHeap) pop() follow {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = follow{}
	a = a[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && a.less(l, m) {
			m = l
		}
		if l+1 < n && a.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// conversationHashes are the block hashes of a conversation's prompt: every turn's prompt
// starts with the one before it (history, reply, then the new message), so block j is the
// same in every turn of the conversation and a later turn finds its history cached.
func conversationHashes(level, conv, blocks int) []uint64 {
	h := make([]uint64, blocks)
	x := splitmix64(uint64(level)<<32 ^ uint64(conv) ^ 0xc0ffee<<40)
	for i := range h {
		x = splitmix64(x ^ uint64(i))
		h[i] = x
	}
	return h
}

// traceHashes turns a trace's hashes of blocks of bt tokens into hashes of the engine's
// blocks of bs tokens. Trace hashes cover their whole prefix, so an engine block is keyed
// by the trace block holding its last token and its own position: equal keys then mean
// equal prompts up to the end of the block. Blocks past the hashed ones (unique text) or
// past the prompt get none.
func traceHashes(trace []uint64, bt, bs, promptTokens int) []uint64 {
	if bt <= 0 {
		bt = bs
	}
	n := min(promptTokens, len(trace)*bt) / bs
	h := make([]uint64, n)
	for j := range h {
		h[j] = splitmix64(trace[((j+1)*bs-1)/bt] ^ splitmix64(uint64(j)+0x7ace))
	}
	return h
}
