package load

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/workload"
)

// VirtualServer is an inference engine on a virtual clock that its driver owns: the
// simulator's (sim.Virtual). RunVirtual moves its time.
type VirtualServer interface {
	// BlockSize is the prompt block of its prefix cache in tokens; 0 without one.
	BlockSize() int
	// Submit queues request id at t: prompt tokens with the hashes of its full blocks,
	// exactly maxTokens to generate, of session (its conversation or task; "" for none). An error is a request the server would refuse (400).
	Submit(id uint64, prompt int, hashes []uint64, maxTokens int, session string, t time.Duration) error
	// Check is the error Submit would give a request of these lengths whatever the
	// server's state (one it can never take), so a request can be refused when it is sent
	// and still reach the server later (WithNetwork).
	Check(prompt, maxTokens int) error
	// Next is the time of its next event; ok is false when it has nothing to do.
	Next() (t time.Duration, ok bool)
	// Process handles the events due at t, reporting n tokens of request id at at (done on
	// its last) to emit.
	Process(t time.Duration, emit func(id uint64, at time.Duration, n int, done bool))
	// Kick starts its next step at t if it is free and has work.
	Kick(t time.Duration)
	// Live is the number of requests submitted and not finished.
	Live() int
}

// RunVirtual runs one level against srv on a virtual clock: the same dispatch as Run
// (Dispatch), with no goroutines and no sleeping, and the records a live run against the
// simulator's server would give with a zero-latency network (every request asks for
// exactly its output tokens, as the benchmark's ignore_eos does). levelStart is the level's
// start on the run's virtual timeline; RunVirtual returns the level's end (its last
// request's Done) and why it ended. sink, if not nil, gets each record as its request
// finishes. When ctx is cancelled the requests in flight are reported as cancelled and
// ctx's error is returned.
//
// With a prefix cache, a request's prompt blocks are keyed as a server keys them: a
// trace's block hashes, a shared prefix group's, or a conversation's, whose turns each
// extend the one before, so that a later turn finds its history cached.
func RunVirtual(ctx context.Context, lvl Level, levelStart time.Duration, src workload.Source, srv VirtualServer,
	sink func(*record.Record), opts ...VirtualOption) (end time.Duration, reason EndReason, err error) {
	if err := lvl.Validate(); err != nil {
		return levelStart, "", fmt.Errorf("level %d: %w", lvl.Index, err)
	}
	if src == nil || srv == nil {
		return levelStart, "", errors.New("load.RunVirtual: nil workload source or server")
	}
	if sink == nil {
		sink = func(*record.Record) {}
	}
	first := src.Request(lvl.Index, 0)
	if err := workloadFits(lvl, first); err != nil {
		return levelStart, "", err
	}
	v := &vrun{lvl: lvl, start: levelStart, end: levelStart, srv: srv, sink: sink, bs: srv.BlockSize(),
		d: NewDispatch(lvl, src, first)}
	for _, o := range opts {
		o(v)
	}
	v.emitFn = v.emit
	v.outFn = func(s Send) { v.pending = append(v.pending, s) }
	return v.run(ctx)
}

// A VirtualOption changes how RunVirtual records its requests.
type VirtualOption func(*vrun)

// FirstAndLastTokens records each request's first token and its end, the tokens between
// carried by the last event, instead of every token: a level whose figures need no
// per-token gap (ITL, chunk gaps; metrics.Config.NeedsTokenEvents) keeps its TTFT, TPOT
// and E2EL exact and runs several times faster, its records a few bytes each.
func FirstAndLastTokens() VirtualOption { return func(v *vrun) { v.coarse = true } }

// Answered has RunVirtual pass each record, with the request it answers, to shape before
// the sink: what a live client would have recorded of the answer can depend on what the
// request asked (its tools and tool_choice).
func Answered(shape func(*workload.Request, *record.Record)) VirtualOption {
	return func(v *vrun) { v.shape = shape }
}

// vrun is one level on the virtual clock.
type vrun struct {
	lvl    Level
	d      *Dispatch
	srv    VirtualServer
	sink   func(*record.Record)
	start  time.Duration // the level's start on the run's timeline
	end    time.Duration
	bs     int                                     // block size for synthetic prefix hashes; 0 without prefix caching
	coarse bool                                    // FirstAndLastTokens
	shape  func(*workload.Request, *record.Record) // Answered

	live    []vreq   // in flight, by id
	tok     []vtok   // their token state, by id
	free    []uint64 // ids to reuse
	pending []Send   // to submit at the current time (a worklist, not recursion)
	now     time.Duration
	outFn   func(Send)
	emitFn  func(id uint64, at time.Duration, n int, done bool)
}

// vreq is a request in flight.
type vreq struct {
	send Send
	rec  *record.Record
}

// vtok is a request's token state, apart from its vreq: emit runs for every token of every
// request in a step, and with FirstAndLastTokens touches only this small, dense state, not
// the large vreq and record, whose cache misses dominated the loop.
type vtok struct {
	started bool // its first token is recorded
	// held are tokens not yet recorded (FirstAndLastTokens), the latest emitted at heldAt.
	held   int
	heldAt time.Duration
}

func (v *vrun) run(ctx context.Context) (time.Duration, EndReason, error) {
	t := v.start
	v.now = t
	v.d.Start(v.outFn)
	v.submit()
	v.srv.Kick(t)
	for iter := 0; ; iter++ {
		if iter&1023 == 0 && ctx.Err() != nil {
			v.interrupt(t)
			return v.end, EndInterrupted, ctx.Err()
		}
		tc, okc := v.srv.Next()
		ta, oka := v.d.NextDue()
		ta += v.start
		switch {
		case okc && (!oka || tc <= ta):
			t = tc
		case oka:
			t = ta
		default:
			if n := v.srv.Live(); n > 0 {
				return v.end, "", fmt.Errorf("sim: engine stalled with %d sequences unfinished", n)
			}
			return v.end, v.d.Reason(), nil
		}
		v.now = t
		if okc && tc == t {
			v.srv.Process(t, v.emitFn) // completions send closed-loop follow-ups at t
		}
		if oka && ta == t {
			v.d.Due(t-v.start, v.outFn)
			v.submit()
		}
		v.srv.Kick(t)
	}
}

// submit sends what is pending at the current time, and what their ends send.
func (v *vrun) submit() {
	t := v.now
	for i := 0; i < len(v.pending); i++ { // finish may append
		s := v.pending[i]
		rec := s.Record(v.lvl.Index, v.start+s.Scheduled)
		rec.Sent = t.Truncate(time.Microsecond)
		rec.ServerPromptTokens, rec.OutputTokensSource = s.Request.InputTokens, record.SourceUsage
		rec.ResponseID = responseID(v.lvl.Index, s.Index)
		rec.Events.Base = rec.Sent
		if v.coarse {
			rec.Events.Grow(2)
		} else {
			rec.Events.Grow(s.Request.OutputTokens)
		}
		id := v.id()
		v.live[id] = vreq{send: s, rec: rec}
		if err := v.srv.Submit(id, s.Request.InputTokens, v.hashes(&s.Request), s.Request.OutputTokens, s.Request.Session(), t); err != nil {
			// The server would answer 400: a failed request, not a failed simulation. What
			// its end sends joins the pending ones.
			rec.Done = rec.Sent
			rec.Error = &record.Error{Kind: record.KindHTTPStatus, Status: 400, Message: err.Error()}
			v.finish(id, t)
		}
	}
	v.pending = v.pending[:0]
}

func (v *vrun) id() uint64 {
	if n := len(v.free); n > 0 {
		id := v.free[n-1]
		v.free = v.free[:n-1]
		return id
	}
	v.live, v.tok = append(v.live, vreq{}), append(v.tok, vtok{})
	return uint64(len(v.live) - 1)
}

// hashes are the request's prompt block hashes as the server's prefix cache keys them.
func (v *vrun) hashes(req *workload.Request) []uint64 {
	switch {
	case v.bs == 0:
		return nil
	case req.Task.IsTask():
		return taskHashes(v.lvl.Index, &req.Task, v.bs, req.InputTokens)
	case req.Turns > 1:
		return conversationHashes(v.lvl.Index, req.Conversation, req.InputTokens/v.bs)
	case len(req.PrefixHashes) > 0:
		return traceHashes(req.PrefixHashes, req.BlockTokens, v.bs, req.InputTokens)
	case req.PrefixTokens >= v.bs:
		return prefixHashes(req.PrefixGroup, req.PrefixTokens/v.bs)
	}
	return nil
}

// emit records tokens; on the last one the request is done and its slot frees at t.
func (v *vrun) emit(id uint64, t time.Duration, n int, done bool) {
	tk := &v.tok[id]
	if v.coarse && !done && tk.started {
		tk.held, tk.heldAt = tk.held+n, t
		return
	}
	rec := v.live[id].rec
	rec.Events.Append(t, tk.held+n)
	tk.started, tk.held = true, 0
	if !done {
		return
	}
	rec.Done = t.Truncate(time.Microsecond)
	rec.OutputTokens = rec.Events.Tokens()
	if c, ok := v.srv.(cacheReporter); ok && rec.Call > 0 && v.bs > 0 {
		// An agentic task's call says what the prefix cache served of it, as a server's
		// cached_tokens would (the task figures' reuse per call).
		if n, ok := c.PromptCached(id); ok {
			rec.CachedPromptTokens, rec.HasCachedPromptTokens = int32(n), true
		}
	}
	v.finish(id, t)
	v.submit()
}

// cacheReporter is a virtual server that says how many prompt tokens of a sequence its
// prefix cache served (sim.Virtual, sim.Fleet).
type cacheReporter interface {
	PromptCached(id uint64) (int, bool)
}

// finish reports request id's record, frees its id, and has the dispatcher queue what its
// end sends at t.
func (v *vrun) finish(id uint64, t time.Duration) {
	// In place, not a copy: a copy's address, taken below, would move it to the heap, one
	// allocation a request. Nothing below takes an id (what Finished sends waits in pending).
	r := &v.live[id]
	if r.rec.Done > v.end {
		v.end = r.rec.Done
	}
	v.report(&r.send, r.rec)
	// From Done as recorded (µs), so a next turn's Scheduled is exactly Done + think time.
	v.d.Finished(&r.send, OutcomeOf(r.rec), ServiceOf(r.rec), r.rec.Done-v.start, t-v.start, v.outFn)
	v.live[id], v.tok[id] = vreq{}, vtok{}
	v.free = append(v.free, id)
}

// report hands a request's record to the sink, shaped (Answered).
func (v *vrun) report(s *Send, rec *record.Record) {
	if v.shape != nil {
		v.shape(&s.Request, rec)
	}
	v.sink(rec)
}

// interrupt reports the requests in flight as cancelled at t, as Run does.
func (v *vrun) interrupt(t time.Duration) {
	v.d.Interrupt()
	for id := range v.live {
		rec := v.live[id].rec
		if rec == nil {
			continue
		}
		if tk := v.tok[id]; tk.held > 0 {
			rec.Events.Append(tk.heldAt, tk.held)
		}
		rec.Done = t.Truncate(time.Microsecond)
		rec.OutputTokens = rec.Events.Tokens()
		rec.Error = &record.Error{Kind: record.KindCanceled, Message: "interrupted"}
		v.report(&v.live[id].send, rec)
		v.live[id], v.tok[id] = vreq{}, vtok{}
	}
}

func responseID(level, i int) string {
	b := make([]byte, 0, 24)
	b = append(b, "cmpl-sim-"...)
	b = strconv.AppendInt(b, int64(level), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(i), 10)
	return string(b)
}

// prefixHashes are the block hashes of a shared prefix: equal for every request of the
// group, so the prefix cache sees them as one prompt prefix.
func prefixHashes(group, blocks int) []uint64 {
	h := make([]uint64, blocks)
	x := mix64(uint64(group) + 0x5eed)
	for i := range h {
		x = mix64(x ^ uint64(i))
		h[i] = x
	}
	return h
}

// conversationHashes are the block hashes of a conversation's prompt: every turn's prompt
// starts with the one before it (history, reply, then the new message), so block j is the
// same in every turn of the conversation and a later turn finds its history cached.
func conversationHashes(level, conv, blocks int) []uint64 {
	h := make([]uint64, blocks)
	x := mix64(uint64(level)<<32 ^ uint64(conv) ^ 0xc0ffee<<40)
	for i := range h {
		x = mix64(x ^ uint64(i))
		h[i] = x
	}
	return h
}

// taskHashes are the block hashes of an agentic task's call: the blocks on the task's
// context (its first Shared tokens) are the context's, the same in every call that carries
// them, as a conversation's are; a sub-agent's blocks past them (its brief) are its own. A
// compaction (Epoch) starts a new context.
func taskHashes(level int, tc *workload.TaskCall, bs, prompt int) []uint64 {
	h := make([]uint64, prompt/bs)
	x := mix64(uint64(level)<<32 ^ uint64(tc.Task) ^ uint64(tc.Epoch)<<24 ^ 0xa9e47<<40)
	for i := range h {
		x = mix64(x ^ uint64(i))
		if (i+1)*bs > tc.Shared {
			x = mix64(x ^ uint64(tc.Sub)<<48) // off the context: this call's own, and all after
		}
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
		h[j] = mix64(trace[((j+1)*bs-1)/bt] ^ mix64(uint64(j)+0x7ace))
	}
	return h
}

// mix64 is splitmix64's finaliser: a tiny, well-mixed hash for synthetic block keys.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
