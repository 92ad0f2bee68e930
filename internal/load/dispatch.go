package load

import (
	"container/heap"
	"math"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/workload"
)

// Dispatch is a level's dispatch policy with no clock: a driver says what time it is and
// which requests finished, and Dispatch hands it (out) what to send, one at a time, as it
// decides, so that the first is on its way while the next is being built. The policies — a closed loop,
// an open loop (a plan or a replayed trace) under an optional in-flight cap, multi-turn
// conversations of either — are written here once; Run drives them on the wall clock and
// RunVirtual on the simulator's virtual clock, so live runs and simulations cannot drift
// apart. Times are offsets from the level's start. Not safe for concurrent use.
type Dispatch struct {
	lvl   Level
	src   workload.Source
	first *workload.Request // request 0, built to learn the kind of level; used once

	closed *ClosedLoop
	open   *OpenLoop
	next   Planned // open loop: the next arrival
	has    bool    // next is set

	conv     *Conversations
	turns    map[int]Turn // multi-turn: in flight, by index
	startDue time.Duration
	hasStart bool // open-loop conversations: startDue is set
	follows  dueHeap[follow]
	nfollow  uint64
	// Agentic tasks: a fan-out step's calls still in flight, by task; and a task's first
	// request, built to learn its size (Conversations.size) and then sent.
	joins   map[int]*join
	started map[int]workload.Request

	// slots: a closed loop with concurrency stages, whose slots come and go with them;
	// now is the latest instant the driver has told.
	slots bool
	now   time.Duration

	cap      int    // in-flight cap (open loop), 0 = none
	inflight int    // sent and not finished
	queue    []Send // due, waiting for a slot under the cap
	qhead    int

	reason      EndReason // set when Dispatch itself ended the level (a capped queue at Duration, a stopping rule)
	interrupted bool
	rules       stopRules // stop.go
}

// Send is one request to send now: index, mark, due time and the request.
type Send struct {
	Index     int
	Warmup    bool
	Scheduled time.Duration // when it was due (an offset from the level's start)
	Request   workload.Request
	turn      Turn // multi-turn levels
	multi     bool
	repeat    int   // Level.Repeat
	stage     int16 // a staged level's stage of Scheduled
	arrival   int32 // its arrival's number as the over-saturation rule counts them; 0: none
}

// NewDispatch plans a validated level; first is the source's request 0, which says what
// kind of level it is (a trace carries arrivals, a multi-turn workload its turns). An
// open loop's first request is built here, so that building it is not its lateness.
func NewDispatch(lvl Level, src workload.Source, first workload.Request) *Dispatch {
	d := &Dispatch{lvl: lvl, src: src, first: &first, rules: newStopRules(lvl)}
	switch {
	case first.Task.IsTask():
		// An agentic task is a conversation of its own size whose steps may fan out
		// (followUp joins them); its tool latency is the turn's think time.
		d.conv = NewConversations(lvl, first.Task.Stride)
		d.conv.size = d.taskSize
		d.turns, d.joins, d.started = map[int]Turn{}, map[int]*join{}, map[int]workload.Request{0: first}
		d.first = nil
		if !lvl.Closed() {
			d.cap = lvl.ShardMaxConcurrency()
			d.startDue, d.hasStart = d.conv.NextStart()
		}
	case first.Turns > 1:
		d.conv = NewConversations(lvl, first.Turns)
		d.turns = map[int]Turn{}
		if !lvl.Closed() {
			d.cap = lvl.ShardMaxConcurrency()
			d.startDue, d.hasStart = d.conv.NextStart()
		}
	case lvl.Closed():
		d.closed = NewClosedLoop(lvl)
		d.slots = lvl.Stages.Staged()
	default:
		d.open = newOpenLoop(lvl, src, first)
		d.first = nil                              // the plan took it
		d.rules.sat = d.rules.sat && !d.open.trace // a trace's own rate varies: it is replayed whole
		d.cap = lvl.ShardMaxConcurrency()
		d.next, d.has = d.open.Next()
	}
	return d
}

// Record is a new record of s with the dispatcher's fields set: level, index, repeat, warm-up
// mark, intended input tokens and, in a multi-turn level, conversation and turn. scheduled
// is s's due time on the run's timeline.
func (s *Send) Record(level int, scheduled time.Duration) *record.Record {
	rec := &record.Record{Level: level, Index: s.Index, Warmup: s.Warmup, Repeat: int32(s.repeat), Stage: s.stage,
		Scheduled: scheduled.Truncate(time.Microsecond), InputTokens: s.Request.InputTokens}
	switch tc := s.Request.Task; {
	case tc.IsTask():
		rec.Task, rec.Call, rec.Sub = int32(tc.Task), int16(tc.Call+1), int16(tc.Sub)
		rec.ToolTime, rec.FinalCall = tc.ToolLatency, tc.Last
	case s.multi:
		rec.Conversation, rec.Turn = s.turn.Conversation, s.turn.Turn+1
	}
	return rec
}

// Start is what is sent at the level's start (t = 0): a closed loop's slots, each with
// its first request or conversation. An open loop sends at its due times (Due).
func (d *Dispatch) Start(out func(Send)) {
	if !d.lvl.Closed() {
		return
	}
	if d.slots {
		d.fillSlots(0, 0, out)
		return
	}
	for range d.lvl.ShardConcurrency() {
		if d.conv != nil {
			d.startConversation(0, out)
		} else {
			d.closedNext(0, out)
		}
	}
}

// NextDue is when something next falls due: an arrival, a conversation start, a turn
// after its think time, or (a capped queue under a Duration) the level's end. ok is false
// when only finishing requests can make anything happen.
func (d *Dispatch) NextDue() (at time.Duration, ok bool) {
	if d.interrupted {
		return 0, false
	}
	consider := func(t time.Duration) {
		if !ok || t < at {
			at, ok = t, true
		}
	}
	if d.has {
		consider(d.next.Due)
	}
	if d.hasStart {
		consider(d.startDue)
	}
	if len(d.follows) > 0 {
		consider(d.follows[0].at)
	}
	if d.queued() > 0 && d.lvl.Duration > 0 {
		consider(d.lvl.Duration)
	}
	if d.slots && d.closed.Reason() == "" {
		if t, rises := d.slotRise(); rises {
			consider(t)
		}
	}
	return at, ok
}

// slotRise is when a closed loop with concurrency stages next has a slot more than it has
// requests in flight.
func (d *Dispatch) slotRise() (time.Duration, bool) {
	// This shard's m-th slot (w % Shards == Shard) opens when the stages reach worker
	// Shard + (m-1)·Shards, 0-based.
	shard, n := d.lvl.sharded()
	return d.lvl.Stages.Rise(d.now, shard+d.inflight*n+1)
}

// fillSlots sends a request into each slot that the concurrency stages opened by now,
// each due when its slot opened, but no earlier than floor (a slot that just freed).
func (d *Dispatch) fillSlots(now, floor time.Duration, out func(Send)) {
	for {
		at, ok := d.slotRise()
		if !ok || at > now {
			break
		}
		before := d.inflight
		d.closedNext(max(at, floor), out)
		if d.inflight == before {
			break // the level sends no more
		}
	}
	d.now = max(d.now, now)
}

// Due is what falls due by now (the instant NextDue said, or later on a late wall
// clock): arrivals, conversation starts and later turns, in that order; those that find no
// slot under the cap wait for one, behind earlier ones.
func (d *Dispatch) Due(now time.Duration, out func(Send)) {
	if d.interrupted {
		return
	}
	if d.lvl.Duration > 0 && now >= d.lvl.Duration && d.queued() > 0 {
		d.dropQueue() // the level's time is up for requests still waiting for a slot
	}
	if d.slots {
		d.fillSlots(now, 0, out)
		return
	}
	for d.has && d.next.Due <= now {
		p := d.next
		d.has = false
		// Sent before the next is planned: planning builds its request.
		if d.dispatch(Send{Index: p.Index, Warmup: p.Warmup, Scheduled: p.Due, Request: p.Request}, out) {
			return
		}
		d.next, d.has = d.open.Next()
	}
	for d.hasStart && d.startDue <= now {
		if tt, ok := d.conv.Start(d.startDue); ok {
			if d.dispatch(d.turnSend(tt, d.request(tt.Index)), out) {
				return
			}
		}
		d.startDue, d.hasStart = d.conv.NextStart()
	}
	for len(d.follows) > 0 && d.follows[0].at <= now {
		f := heap.Pop(&d.follows).(follow)
		if d.dispatch(d.turnSend(f.turn, f.req), out) {
			return
		}
	}
	// A turn may have ended the level's starts (its quota reached).
	if d.hasStart {
		d.startDue, d.hasStart = d.conv.NextStart()
	}
}

// Outcome is how a finished request ended, as far as the dispatch policy and its stopping
// rules care.
type Outcome uint8

// The outcomes of a request.
const (
	Succeeded   Outcome = iota
	Failed              // any failure but the next
	Unreachable         // it never got a connection to the target (record.KindConnect)
)

// OutcomeOf is rec's outcome.
func OutcomeOf(rec *record.Record) Outcome {
	switch {
	case rec.Error == nil:
		return Succeeded
	case rec.Error.Kind == record.KindConnect:
		return Unreachable
	}
	return Failed
}

// ServiceOf is how long a finished request was served, as the over-saturation rule counts
// it: from its first token to its end less its longest wait between two tokens (its decode,
// which queueing does not lengthen: a wait for a decode slot after a disaggregated prefill,
// or a preempted sequence's wait to resume, is a queue the server holds past the first
// token, not its pace), or from its sending to its end when it came without token events;
// 0 when it failed. With only its first and last token known, the span between them.
func ServiceOf(rec *record.Record) time.Duration {
	if rec.Error != nil {
		return 0
	}
	if first, ok := rec.FirstToken(); ok && rec.Done > first {
		var longest int64
		if rec.Events.Len() > 2 {
			rec.Events.EachGap(func(gap int64, _ int) { longest = max(longest, gap) })
		}
		return max(rec.Done-first-time.Duration(longest)*time.Microsecond, 0)
	}
	return max(rec.Done-rec.Sent, 0)
}

// Finished is told that s finished (how: o, served for service: ServiceOf) and its slot
// freed at now; done is its recorded end, from which a next turn's think time counts. It
// returns what that sends now: a closed loop's next request, a request that waited for the
// slot.
func (d *Dispatch) Finished(s *Send, o Outcome, service, done, now time.Duration, out func(Send)) {
	d.inflight--
	if d.interrupted {
		return
	}
	failed := o != Succeeded
	if r := d.rules.finished(o, service, done-s.Scheduled-service, int(s.arrival)); r != "" {
		d.halt(r)
		return
	}
	if d.slots {
		// The freed slot is refilled only while the stages still hold it.
		d.now = max(d.now, now)
		d.fillSlots(now, now, out)
		return
	}
	if d.closed != nil {
		d.closedNext(now, out)
		return
	}
	if d.queued() > 0 {
		if d.lvl.Duration > 0 && now >= d.lvl.Duration {
			d.dropQueue()
		} else {
			q := d.queue[d.qhead]
			d.queue[d.qhead] = Send{}
			d.qhead++
			if d.qhead == len(d.queue) {
				d.queue, d.qhead = d.queue[:0], 0
			}
			d.send(q, out)
		}
	}
	if s.multi {
		d.followUp(s, failed, done, now, out)
	}
}

// Interrupt stops the level: nothing more is sent, and turns waiting for their time or a
// slot are abandoned. Requests in flight are the driver's to cancel.
func (d *Dispatch) Interrupt() {
	d.interrupted = true
	d.has, d.hasStart = false, false
	for _, f := range d.follows {
		d.conv.Abandon(f.turn)
	}
	d.follows = nil
	d.dropQueue()
}

// halt stops the level for reason r (a stopping rule): as Interrupt, but the requests in
// flight are left to finish.
func (d *Dispatch) halt(r EndReason) {
	d.Interrupt()
	d.reason = r
}

// Done reports whether the level is over: nothing in flight, and nothing that could
// still be sent.
func (d *Dispatch) Done() bool {
	if d.inflight > 0 {
		return false
	}
	_, pending := d.NextDue()
	return !pending && d.queued() == 0
}

// InFlight is the number of requests sent and not yet finished.
func (d *Dispatch) InFlight() int { return d.inflight }

// Reason is why the level stopped sending: its plan's reason, EndDuration when the
// level's time ran out on requests waiting for a slot, or a stopping rule's (stop.go).
func (d *Dispatch) Reason() EndReason {
	switch {
	case d.reason != "":
		return d.reason
	case d.conv != nil:
		return d.conv.Reason()
	case d.closed != nil:
		if r := d.closed.Reason(); r != "" || !d.slots {
			return r
		}
		return EndDuration // the stages closed every slot before their end
	}
	return d.open.Reason()
}

func (d *Dispatch) queued() int { return len(d.queue) - d.qhead }

func (d *Dispatch) dropQueue() {
	for _, q := range d.queue[d.qhead:] {
		if q.multi {
			d.conv.Abandon(q.turn)
		}
	}
	if d.queued() > 0 && d.conv == nil && !d.interrupted {
		d.reason = EndDuration
	}
	d.queue, d.qhead = nil, 0
}

// request is request i of the level (request 0 as built to learn the level's kind).
func (d *Dispatch) request(i int) workload.Request {
	if r, ok := d.started[i]; ok {
		delete(d.started, i)
		return r
	}
	if i == 0 && d.first != nil {
		r := *d.first
		d.first = nil
		return r
	}
	return d.src.Request(d.lvl.Index, i)
}

// send hands s out and counts it in flight.
func (d *Dispatch) send(s Send, out func(Send)) {
	d.inflight++
	s.repeat = d.lvl.Repeat
	if st := d.lvl.Stages; st.Staged() {
		s.stage = int16(min(st.Index(s.Scheduled), math.MaxInt16))
	}
	if s.multi {
		d.turns[s.Index] = s.turn
	}
	out(s)
}

// dispatch sends s, an arrival, now, or queues it behind earlier ones when the cap is
// reached; it reports whether the over-saturation rule then stopped the level.
func (d *Dispatch) dispatch(s Send, out func(Send)) (stopped bool) {
	s.arrival = d.rules.next()
	if d.cap > 0 && d.inflight >= d.cap {
		d.queue = append(d.queue, s)
	} else {
		d.send(s, out)
	}
	if r := d.rules.arrived(d.inflight + d.queued()); r != "" {
		d.halt(r)
		return true
	}
	return false
}

// closedNext gives a closed-loop slot that freed at now its next request, if the level
// has one; it is due at now.
func (d *Dispatch) closedNext(now time.Duration, out func(Send)) {
	if i, warm, ok := d.closed.Next(now); ok {
		d.send(Send{Index: i, Warmup: warm, Scheduled: now, Request: d.request(i)}, out)
	}
}

func (d *Dispatch) turnSend(tt Turn, req workload.Request) Send {
	return Send{Index: tt.Index, Warmup: tt.Warmup, Scheduled: tt.Scheduled, Request: req, turn: tt, multi: true}
}

// startConversation starts a closed-loop worker's next conversation at now, if any.
func (d *Dispatch) startConversation(now time.Duration, out func(Send)) {
	if tt, ok := d.conv.Start(now); ok {
		d.send(d.turnSend(tt, d.request(tt.Index)), out)
	}
}

// followUp plans the turn after s's, which ended at done: due at done plus the think time
// (Conversations decides whether it is sent). A closed-loop worker whose conversation
// ended starts the next one at now. An agentic task's step of several calls (a fan-out)
// is followed once its last call is back, from the latest end among them.
func (d *Dispatch) followUp(s *Send, failed bool, done, now time.Duration, out func(Send)) {
	tt := d.turns[s.Index]
	delete(d.turns, s.Index)
	tc := s.Request.Task
	if tc.Fan > 1 {
		j := d.joins[tt.Conversation]
		if j == nil {
			return // the task ended (interrupted) while the step was in flight
		}
		j.pending--
		j.failed = j.failed || failed
		j.done = max(j.done, done)
		if tt.Index > j.last.Index {
			j.last = tt
		}
		if j.pending > 0 {
			return
		}
		delete(d.joins, tt.Conversation)
		tt, failed, done = j.last, j.failed, j.done
	}
	more := !failed && tt.Turn+1 < d.conv.Turns()
	if tc.IsTask() {
		more = !failed && !tc.Last
	}
	var req workload.Request
	var due time.Duration
	if more {
		// Built now rather than when due, so building is not lateness.
		req = d.src.Request(d.lvl.Index, tt.Index+1)
		due = done + req.ThinkTime
	}
	nt, ok := d.conv.Next(tt, !more, due)
	switch {
	case ok:
		d.follow(nt, req, due)
		if fan := req.Task.Fan; fan > 1 {
			j := &join{pending: 1, last: nt}
			for k := 1; k < fan; k++ {
				r := d.src.Request(d.lvl.Index, nt.Index+1)
				if nt, ok = d.conv.Next(nt, false, due); !ok {
					break
				}
				d.follow(nt, r, due)
				j.pending++
			}
			d.joins[tt.Conversation] = j
		}
	case d.lvl.Closed():
		d.startConversation(now, out)
	}
}

func (d *Dispatch) follow(t Turn, req workload.Request, due time.Duration) {
	d.nfollow++
	heap.Push(&d.follows, follow{at: due, no: d.nfollow, turn: t, req: req})
}

// join is a fan-out step of an agentic task: its calls not yet back, whether any failed,
// the latest end among those back, and the step's last call.
type join struct {
	pending int
	failed  bool
	done    time.Duration
	last    Turn
}

// taskSize is the number of requests of the agentic task whose first request is index
// first (kept to be sent).
func (d *Dispatch) taskSize(first int) int {
	r, ok := d.started[first]
	if !ok {
		r = d.src.Request(d.lvl.Index, first)
		d.started[first] = r
	}
	return r.Task.Requests
}

// follow is a later turn waiting for its due time.
type follow struct {
	at   time.Duration
	no   uint64 // ties go in the order the turns were scheduled
	turn Turn
	req  workload.Request
}

func (f follow) due() (time.Duration, uint64) { return f.at, f.no }

// dueHeap is a min-heap, for container/heap, of what is due at a time: by that time, then
// by the order it was scheduled in.
type dueHeap[T interface {
	due() (time.Duration, uint64)
}] []T

func (h dueHeap[T]) Len() int { return len(h) }
func (h dueHeap[T]) Less(i, j int) bool {
	a, na := h[i].due()
	b, nb := h[j].due()
	return a < b || a == b && na < nb
}
func (h dueHeap[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap[T]) Push(x any)   { *h = append(*h, x.(T)) }
func (h *dueHeap[T]) Pop() any {
	a := *h
	x := a[len(a)-1]
	var zero T
	a[len(a)-1] = zero // what it held is not kept alive
	*h = a[:len(a)-1]
	return x
}
