// Package load generates the benchmark's load: one load level at a time, a closed loop of
// Concurrency slots, or an open loop that dispatches requests at absolute due times from a
// seeded plan (or a trace's arrivals), under an optional in-flight cap, single requests or
// multi-turn conversations. Dispatch decides what to send when, with no clock of its own;
// Run drives it on the wall clock against a Target (the HTTP client), RunVirtual on a
// virtual clock against the simulated inference engine. It sets each record's Level,
// Index, Scheduled, Warmup and InputTokens (and Conversation and Turn in a multi-turn
// level); the Target fills in the rest.
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
package load

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
// Run is Dispatch's wall-clock driver: one goroutine keeps the time and asks Dispatch what
// to send, each request runs in a goroutine of its own, so a slow request never delays
// the next dispatch, and a request's slot frees (the next is dispatched) before its record
// is handed to sink.
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
		return "", errors.New("load.Run: nil workload source or target")
	}
	if sink == nil {
		sink = func(*record.Record) {}
	}
	// Request 0 says what kind of level this is: a replayed trace carries arrivals, a
	// multi-turn workload its number of turns. It is built once and reused.
	first := src.Request(lvl.Index, 0)
	if err := workloadFits(lvl, first); err != nil {
		return "", err
	}
	pctx, stopPrefetch := context.WithCancel(ctx)
	defer stopPrefetch()
	d := NewDispatch(lvl, prefetch(pctx, lvl, src, first), first)
	r := &runner{start: start, lvl: lvl, target: t, sink: sink, finished: make(chan finished, 64)}
	r.levelStart = time.Now()
	r.levelOff = r.levelStart.Sub(start)
	reason := r.loop(ctx, d)
	r.wg.Wait()
	if ctx.Err() != nil {
		return EndInterrupted, nil
	}
	return reason, nil
}

// workloadFits reports what keeps lvl from running its workload, whose request 0 is first.
func workloadFits(lvl Level, first workload.Request) error {
	switch {
	case first.Turns > 1 && first.HasArrival:
		return fmt.Errorf("level %d: a replayed trace cannot have multi-turn conversations", lvl.Index)
	case first.HasArrival && lvl.Stages.Staged():
		return fmt.Errorf("level %d: a replayed trace keeps its own arrival times, so it takes no stages (scale them with --trace-speed, shift them with --trace-offset)", lvl.Index)
	case lvl.Closed() && lvl.Stages.Staged() && (first.Turns > 1 || first.Task.IsTask()):
		return fmt.Errorf("level %d: concurrency stages change a closed loop's slots between requests, and a conversation or agentic task holds its slot across several: stage such a workload by rate instead", lvl.Index)
	}
	return nil
}

type runner struct {
	start, levelStart time.Time
	levelOff          time.Duration // levelStart - start
	lvl               Level
	target            Target
	sink              func(*record.Record)
	finished          chan finished
	wg                sync.WaitGroup // requests whose records are not yet handed to sink
}

// finished is a request's end as its goroutine tells the dispatching one.
type finished struct {
	send    *Send
	outcome Outcome
	service time.Duration // ServiceOf its record
	done    time.Duration // its recorded end, from the level's start
	freed   time.Duration // when its slot freed, from the level's start
}

// loop keeps the level's time: it sends what Dispatch says at the instants it says, and
// what each finished request frees, until the level is over.
func (r *runner) loop(ctx context.Context, d *Dispatch) EndReason {
	launch := func(s Send) { r.launch(ctx, s) }
	d.Start(launch)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for !d.Done() {
		var due <-chan time.Time
		if at, ok := d.NextDue(); ok {
			wait := time.Until(r.levelStart.Add(at))
			if wait <= 0 {
				d.Due(time.Since(r.levelStart), launch)
				continue
			}
			timer.Reset(wait)
			due = timer.C
		}
		select {
		case f := <-r.finished:
			d.Finished(f.send, f.outcome, f.service, f.done, f.freed, launch)
		case <-due:
			d.Due(time.Since(r.levelStart), launch)
		case <-ctx.Done():
			d.Interrupt()
			for d.InFlight() > 0 { // they see ctx cancelled, and end soon
				f := <-r.finished
				d.Finished(f.send, f.outcome, f.service, f.done, f.freed, func(Send) {})
			}
			return EndInterrupted
		}
	}
	return d.Reason()
}

// launch sends s in a goroutine of its own.
func (r *runner) launch(ctx context.Context, s Send) {
	rec := s.Record(r.lvl.Index, r.levelOff+s.Scheduled)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		freed := r.send(ctx, rec, s.Request)
		r.finished <- finished{send: &s, outcome: OutcomeOf(rec), service: ServiceOf(rec), done: rec.Done - r.levelOff, freed: freed.Sub(r.levelStart)}
		r.report(rec)
	}()
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

// lookahead is how many requests are built ahead of their due times, so that a slow
// Source (prompt synthesis) does not make the dispatcher late.
const lookahead = 256

// prefetch builds a single-turn level's requests ahead, in the order Dispatch will ask for
// them (a closed loop's slots claim indices in order; an open loop's plan takes its
// shard's, a trace every one), so that many slots freeing at once, or a high rate, do not
// wait for prompt synthesis. The first lookahead are built before it returns, before the
// level's clock starts, and the rest in a goroutine as they are taken: a Source that asks
// the target (--tokenizer server's /tokenize) would otherwise burst hundreds of calls at
// the server during the level's first seconds (llama.cpp's server on one core decoded at
// half its speed for 2 s of every open loop, and the backlog it left took 15 s to clear).
// A multi-turn or agentic level asks in an order that depends on its replies: its requests
// are built on demand.
func prefetch(ctx context.Context, lvl Level, src workload.Source, first workload.Request) workload.Source {
	if first.Turns > 1 || first.Task.IsTask() {
		return src
	}
	shard, n := lvl.sharded()
	if first.HasArrival {
		shard, n = 0, 1 // a trace's plan reads every request's arrival
	}
	ahead := lookahead
	if lvl.Closed() {
		ahead = min(lookahead, max(16, 2*lvl.ShardConcurrency()))
	}
	total := -1 // indices to build: unbounded
	if t := lvl.Total(); t > 0 && lvl.Duration == 0 && !first.HasArrival {
		total = t
	}
	if first.HasArrival {
		total = src.Len()
	}
	if total >= 0 {
		ahead = min(ahead, max(total, 1))
	}
	p := &prefetched{src: src, ch: make(chan built, ahead)}
	k, made := 0, 0
	// build makes the next index's request; false when there is none left.
	build := func() (built, bool) {
		for total < 0 || made < total {
			i := shard + n*k
			k++
			if total >= 0 && first.HasArrival && i >= total {
				return built{}, false
			}
			made++
			if i == 0 {
				continue // Dispatch has it
			}
			return built{i: i, req: src.Request(lvl.Index, i)}, true
		}
		return built{}, false
	}
	for len(p.ch) < ahead && ctx.Err() == nil {
		b, ok := build()
		if !ok {
			close(p.ch)
			return p
		}
		p.ch <- b // never blocks: the channel holds ahead
	}
	go func() {
		defer close(p.ch)
		for {
			b, ok := build()
			if !ok {
				return
			}
			select {
			case p.ch <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	return p
}

// prefetched is a Source whose requests come built from prefetch's goroutine; one asked
// out of the expected order is built on the spot.
type prefetched struct {
	src  workload.Source
	ch   chan built
	head *built
}

type built struct {
	i   int
	req workload.Request
}

func (p *prefetched) Request(level, i int) workload.Request {
	for {
		if p.head == nil {
			b, ok := <-p.ch
			if !ok {
				return p.src.Request(level, i)
			}
			p.head = &b
		}
		switch h := p.head; {
		case h.i == i:
			p.head = nil
			return h.req
		case h.i < i:
			p.head = nil // passed over (a plan stopped there)
		default:
			return p.src.Request(level, i)
		}
	}
}

func (p *prefetched) Len() int { return p.src.Len() }
