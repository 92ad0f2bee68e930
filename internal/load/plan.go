package load

import (
	"time"

	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/workload"
)

// This file holds the pure part of a level: which request indices are sent, when they are
// due, which are excluded from metrics, and when sending stops. Run drives it on the wall
// clock; the virtual-clock simulator can drive the same code, so both send the same plan.

// EndReason says why a level ended.
type EndReason string

// End reasons.
const (
	EndRequests    EndReason = "requests"    // the measured requests were sent and finished
	EndDuration    EndReason = "duration"    // the level's duration elapsed
	EndTrace       EndReason = "trace"       // a replayed trace ran out of requests
	EndInterrupted EndReason = "interrupted" // the caller's context was cancelled
)

// phases classifies requests in the order they are scheduled. Not safe for concurrent use.
type phases struct {
	lvl      Level
	quota    int // measured requests to send; 0 = not bounded by count
	measured int
	reason   EndReason // set once sending has stopped
}

// next classifies request i scheduled at offset s from the level start: warm reports that
// it is excluded from metrics, ok that it is sent at all (false once the level has stopped).
func (p *phases) next(i int, s time.Duration) (warm, ok bool) {
	if p.reason != "" {
		return false, false
	}
	l := p.lvl
	if l.Duration > 0 && s >= l.Duration {
		p.reason = EndDuration
		return false, false
	}
	if i < l.Warmup || s < l.WarmupTime || (l.Duration > 0 && s >= l.Duration-l.Cooldown) {
		return true, true
	}
	if p.quota > 0 {
		p.measured++
		if p.measured == p.quota {
			p.reason = EndRequests // this one is still sent; the next is not
		}
	}
	return false, true
}

// Planned is one open-loop request: its index in the level, its due time as an offset from
// the level's start, whether it is excluded from metrics, and the request itself.
type Planned struct {
	Index   int
	Due     time.Duration
	Warmup  bool
	Request workload.Request
}

// OpenLoop yields an open-loop level's requests in index order. It walks the unsharded
// level's plan and keeps this shard's indices, so every shard sees the same due times and
// the same warm-up and stopping decisions. Not safe for concurrent use.
type OpenLoop struct {
	lvl      Level
	src      workload.Source
	plan     *arrivals
	trace    bool              // due times come from the requests (a replayed trace)
	first    *workload.Request // request 0, built to probe for a trace; used once
	i        int               // next index of the unsharded level
	ph       phases
	shard, n int
}

// NewOpenLoop starts the plan of an open-loop level (lvl.Rate > 0, validated).
func NewOpenLoop(lvl Level, src workload.Source) *OpenLoop {
	return newOpenLoop(lvl, src, src.Request(lvl.Index, 0))
}

// newOpenLoop is NewOpenLoop with request 0 already built.
func newOpenLoop(lvl Level, src workload.Source, first workload.Request) *OpenLoop {
	o := &OpenLoop{lvl: lvl, src: src, ph: phases{lvl: lvl, quota: lvl.Requests}}
	o.shard, o.n = lvl.sharded()
	o.trace, o.first = first.HasArrival, &first
	if !o.trace {
		o.plan = newArrivals(lvl)
	}
	return o
}

// arrivals are an open loop's due times: its arrival plan at its rate or, for a level with
// rate stages, at one request per second warped onto the stages (schedule.Stages.Warp), so
// that a ramp's arrivals are the same process at the rate of each instant.
type arrivals struct {
	plan   *schedule.Plan
	stages schedule.Stages
	end    time.Duration
}

func newArrivals(l Level) *arrivals {
	if l.Stages.Staged() {
		return &arrivals{plan: schedule.NewPlan(l.Arrival, 1, l.Seed), stages: l.Stages, end: l.Stages.Total()}
	}
	return &arrivals{plan: schedule.NewPlan(l.Arrival, l.Rate, l.Seed)}
}

// Next is the next arrival's due time; past a staged level's end, that end (which ends it).
func (a *arrivals) Next() time.Duration {
	d := a.plan.Next()
	if !a.stages.Staged() {
		return d
	}
	if t, ok := a.stages.Warp(d); ok {
		return t
	}
	return a.end
}

// Next returns this shard's next request; ok is false when the level sends no more.
func (o *OpenLoop) Next() (p Planned, ok bool) {
	for {
		i := o.i
		var req workload.Request
		var due time.Duration
		if o.trace {
			if n := o.src.Len(); n > 0 && i >= n && o.ph.reason == "" {
				o.ph.reason = EndTrace
			}
			if o.ph.reason != "" {
				return Planned{}, false
			}
			req = o.request(i)
			due = req.Arrival
		} else {
			due = o.plan.Next()
		}
		warm, ok := o.ph.next(i, due)
		if !ok {
			return Planned{}, false
		}
		o.i++
		if i%o.n != o.shard {
			continue
		}
		if !o.trace {
			req = o.request(i)
		}
		return Planned{Index: i, Due: due, Warmup: warm, Request: req}, true
	}
}

func (o *OpenLoop) request(i int) workload.Request {
	if i == 0 && o.first != nil {
		r := *o.first
		o.first = nil
		return r
	}
	return o.src.Request(o.lvl.Index, i)
}

// Reason is why the plan stopped; empty while it has more to send.
func (o *OpenLoop) Reason() EndReason { return o.ph.reason }

// ClosedLoop hands out a closed-loop level's request indices as slots free up: this shard
// takes the indices i % Shards == Shard, so shards never overlap. Not safe for concurrent use.
type ClosedLoop struct {
	ph       phases
	k        int // this shard's requests handed out so far
	shard, n int
}

// NewClosedLoop starts a closed-loop level (lvl.Concurrency > 0, validated).
func NewClosedLoop(lvl Level) *ClosedLoop {
	c := &ClosedLoop{ph: phases{lvl: lvl, quota: lvl.ShardRequests()}}
	c.shard, c.n = lvl.sharded()
	return c
}

// Next claims the next request for a slot that freed at offset s from the level's start.
func (c *ClosedLoop) Next(s time.Duration) (i int, warm, ok bool) {
	i = c.shard + c.n*c.k
	warm, ok = c.ph.next(i, s)
	if ok {
		c.k++
	}
	return i, warm, ok
}

// Reason is why the level stopped sending; empty while it has more to send.
func (c *ClosedLoop) Reason() EndReason { return c.ph.reason }
