// Package engine runs one load level in real time against a Target: a closed loop of
// Concurrency workers, or an open loop that dispatches requests at absolute due times from
// a seeded plan. It sets each record's Level, Index, Scheduled, Warmup and InputTokens (and
// Conversation and Turn in a multi-turn level); the Target fills in the rest.
//
// # Multi-turn levels
//
// When the workload's requests carry Turns > 1, request i is turn i%Turns of conversation
// i/Turns and carries the earlier turns as history, so turn k is sent only after turn k-1
// finished, plus the think time (the request's ThinkTime): its Scheduled is turn k-1's
// Done + ThinkTime, and any wait beyond that (a slot, a late dispatcher) is schedule lag.
//
//   - Closed loop (Concurrency C): each worker is a user running one conversation at a
//     time: turn 0, its reply, the think time, turn 1, …; the next conversation starts
//     when the last turn ends (Scheduled = that instant). A worker in its think time still
//     holds its slot, as a real user does, so fewer than C requests may be in flight.
//   - Open loop (Rate R): conversation starts arrive by the plan at R per second (the
//     request rate is up to Turns times that); later turns are due at the previous turn's
//     end plus the think time. MaxConcurrency caps the requests of all turns in flight;
//     starts and turns waiting for a slot get one in the order they fell due.
//   - A failed turn ends its conversation: its later turns are never sent nor recorded.
//   - Requests counts requests of every turn. A conversation reserves, when it starts, the
//     measured requests it may send, and starts only while the level has some left; its
//     turns beyond its reservation are not sent (so the level's last conversation may be
//     cut short), and reservations it could not use (a failure, turns that fell in the
//     warm-up time) go back to the level for new conversations. An open-loop start that
//     finds nothing left to reserve is skipped. The level ends when Requests measured
//     requests were sent.
//   - A Duration level sends nothing scheduled at or after Duration, whichever turn it is:
//     conversations still going then are cut there.
//   - Warm-up and cool-down marks follow Level's rules turn by turn: by index, or by each
//     turn's own Scheduled.
//   - Shards split conversations, not requests: shard s runs the conversations c with
//     c % Shards == s (an open loop at the unsharded plan's start times).
//   - Cancellation stops sending at once, as in a single-turn level: turns in their think
//     time are not sent.
//
// Conversations holds these rules without a clock; the simulator drives the same code.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/workload"
)

// Target sends requests.
type Target interface {
	// Do sends one request and fills rec: Sent, Done, Events, ResponseID, OutputTokens,
	// OutputTokensSource, ServerPromptTokens, Error. start is the run's t = 0. Do must return
	// soon after ctx is cancelled, recording the request as failed (kind canceled) with the
	// timings it has.
	Do(ctx context.Context, start time.Time, req workload.Request, rec *record.Record)
}

// Run runs one level in real time; the level starts when Run is called. start is the run's
// t = 0, the origin of every record time. sink is called once per finished request, from
// any goroutine, so it must be safe for concurrent use; nil discards records.
//
// When the level stops sending (Requests sent, or Duration elapsed), Run waits for the
// requests in flight to finish rather than cancelling them: cutting them off would turn
// them into failures, or drop the slowest ones and flatter the figures. Their length is
// bounded by the Target's own timeouts and by ctx.
//
// When ctx is cancelled Run stops sending at once; the requests in flight see their ctx
// cancelled and are still reported to sink, and Run returns EndInterrupted. The error is
// non-nil only when the level could not be run at all (an invalid level or missing parts).
func Run(ctx context.Context, start time.Time, lvl Level, src workload.Source, t Target, sink func(*record.Record)) (EndReason, error) {
	if err := lvl.Validate(); err != nil {
		return "", fmt.Errorf("level %d: %w", lvl.Index, err)
	}
	if src == nil || t == nil {
		return "", errors.New("engine.Run: nil workload source or target")
	}
	if sink == nil {
		sink = func(*record.Record) {}
	}
	r := &runner{start: start, lvl: lvl, src: src, target: t, sink: sink}
	// Request 0 says what kind of level this is: a replayed trace carries arrivals, a
	// multi-turn workload its number of turns. It is built once and reused.
	first := src.Request(lvl.Index, 0)
	if first.Turns > 1 && first.HasArrival {
		return "", fmt.Errorf("level %d: a replayed trace cannot have multi-turn conversations", lvl.Index)
	}
	var reason EndReason
	switch {
	case first.Turns > 1:
		reason = r.conversations(ctx, first)
	case lvl.Closed():
		reason = r.closed(ctx, first)
	default:
		reason = r.open(ctx, first)
	}
	r.wg.Wait()
	if ctx.Err() != nil {
		return EndInterrupted, nil
	}
	return reason, nil
}

type runner struct {
	start, levelStart time.Time
	lvl               Level
	src               workload.Source
	target            Target
	sink              func(*record.Record)
	wg                sync.WaitGroup // requests in flight (and closed-loop workers)
}

// newRecord is a record with the engine's fields set; scheduled is the instant it was due.
func (r *runner) newRecord(i int, warm bool, scheduled time.Time, req *workload.Request) *record.Record {
	return &record.Record{
		Level:       r.lvl.Index,
		Index:       i,
		Warmup:      warm,
		Scheduled:   record.Since(r.start, scheduled),
		InputTokens: req.InputTokens,
	}
}

// send sends one request; it returns the instant the target finished, which is when a
// slot frees. report hands the record on; they are apart so a slot frees before the sink
// (which may write to disk) runs.
func (r *runner) send(ctx context.Context, rec *record.Record, req workload.Request) time.Time {
	if p := r.lvl.Progress; p != nil {
		p.sent.Add(1)
	}
	if ctx.Err() != nil {
		// Dispatched but interrupted before the target saw it: still reported, never sent.
		rec.Error = &record.Error{Kind: record.KindCanceled, Message: "interrupted before it was sent"}
		rec.Done = record.Since(r.start, time.Now())
	} else {
		r.target.Do(ctx, r.start, req, rec)
	}
	return time.Now()
}

func (r *runner) report(rec *record.Record) {
	r.sink(rec)
	if p := r.lvl.Progress; p != nil {
		p.done.Add(1)
	}
}

// closed runs ShardConcurrency workers; each sends its next request when its last ends.
// Requests are built ahead, in the order the workers claim them, so building a prompt is
// not part of the schedule lag when many slots free at once (a round of requests ending).
func (r *runner) closed(ctx context.Context, first workload.Request) EndReason {
	cl := NewClosedLoop(r.lvl)
	pctx, stopPrefetch := context.WithCancel(ctx)
	defer stopPrefetch()
	ahead := min(lookahead, max(16, 2*r.lvl.ShardConcurrency()))
	if t := r.lvl.Total(); t > 0 {
		ahead = min(ahead, t)
	}
	built := make(chan workload.Request, ahead)
	shard, n := r.lvl.sharded()
	go func() {
		defer close(built)
		for k := 0; ; k++ {
			i := shard + n*k // the order ClosedLoop.Next hands out indices
			req := first
			if i != 0 {
				req = r.src.Request(r.lvl.Index, i)
			}
			select {
			case built <- req:
			case <-pctx.Done():
				return
			}
		}
	}()
	r.levelStart = time.Now()
	var mu sync.Mutex // guards cl and built: workers claim indices, and their requests, in turn
	for range r.lvl.ShardConcurrency() {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			freed := r.levelStart
			for ctx.Err() == nil {
				mu.Lock()
				i, warm, ok := cl.Next(freed.Sub(r.levelStart))
				var req workload.Request
				if ok {
					req, ok = <-built
				}
				mu.Unlock()
				if !ok {
					return
				}
				// Scheduled is when the slot freed: whatever delays the send after that
				// (reporting the last request, waiting for a build) is schedule lag.
				rec := r.newRecord(i, warm, freed, &req)
				freed = r.send(ctx, rec, req)
				r.report(rec)
			}
		}()
	}
	r.wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return cl.Reason()
}

// lookahead is how many planned requests are built ahead of their due times, so a slow
// Source (prompt synthesis) does not make the dispatcher late.
const lookahead = 256

// open dispatches each request at its absolute due time, one goroutine per request, so a
// slow request never delays the next dispatch.
func (r *runner) open(ctx context.Context, first workload.Request) EndReason {
	plan := newOpenLoop(r.lvl, r.src, first)
	pctx, stopPlan := context.WithCancel(ctx)
	defer stopPlan()
	items := make(chan Planned, lookahead)
	// The first request is built before the level's clock starts, so the cost of setting
	// up the plan and source is not counted as the first request's lag.
	if p, ok := plan.Next(); ok {
		items <- p
	}
	r.levelStart = time.Now()
	go func() {
		defer close(items)
		for {
			p, ok := plan.Next()
			if !ok {
				return
			}
			select {
			case items <- p:
			case <-pctx.Done():
				return
			}
		}
	}()
	var sem chan struct{}
	if n := r.lvl.ShardMaxConcurrency(); n > 0 {
		sem = make(chan struct{}, n)
	}
	var levelEnd <-chan time.Time // when a slot wait must give up
	if r.lvl.Duration > 0 {
		end := time.NewTimer(time.Until(r.levelStart.Add(r.lvl.Duration)))
		defer end.Stop()
		levelEnd = end.C
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	drain := func() {
		stopPlan()
		for range items { // let the producer exit
		}
	}
	for p := range items {
		due := r.levelStart.Add(p.Due)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				drain()
				return EndInterrupted
			}
		}
		if ctx.Err() != nil {
			drain()
			return EndInterrupted
		}
		if sem != nil {
			// No free slot: wait for one. The wait is part of this request's schedule lag
			// (Scheduled stays the due time), and later requests queue behind it in order.
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				drain()
				return EndInterrupted
			case <-levelEnd:
				drain()
				return EndDuration
			}
		}
		rec := r.newRecord(p.Index, p.Warmup, due, &p.Request)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.send(ctx, rec, p.Request)
			if sem != nil {
				<-sem
			}
			r.report(rec)
		}()
	}
	return plan.Reason() // items is closed: the producer is done with plan
}
