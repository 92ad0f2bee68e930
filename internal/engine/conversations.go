package engine

import (
	"context"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/workload"
)

// convRun runs a multi-turn level on the wall clock: Conversations decides, under
// one lock; each conversation runs in one goroutine, waiting out the think time between
// its turns.
type convRun struct {
	*runner
	cv      *Conversations
	mu      sync.Mutex // guards cv
	stopped chan struct{}
	stop    sync.Once
	sem     chan struct{} // open loop: the in-flight cap; nil = none
	end     chan struct{} // open loop: closed when a Duration level's time is up
}

func (r *runner) conversations(ctx context.Context, first workload.Request) EndReason {
	c := &convRun{runner: r, cv: NewConversations(r.lvl, first.Turns), stopped: make(chan struct{})}
	if r.lvl.Closed() {
		c.closed(ctx)
	} else {
		if reason := c.open(ctx, first); reason != "" {
			return reason
		}
	}
	r.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cv.Reason()
}

// next asks for the turn after t, which finished at done; req is t's request and
// becomes the next one's.
func (c *convRun) next(t Turn, rec *record.Record, done time.Time, req *workload.Request) (Turn, bool) {
	more := rec.Error == nil && t.Turn+1 < c.cv.Turns()
	var s time.Duration
	if more {
		// Built before the think time rather than after it, so building is not lateness.
		*req = c.src.Request(c.lvl.Index, t.Index+1)
		s = done.Sub(c.levelStart) + req.ThinkTime
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	nt, ok := c.cv.Next(t, !more, s)
	c.checkStopped()
	return nt, ok
}

// checkStopped wakes the open-loop dispatcher once the level starts no more
// conversations. Called with mu held.
func (c *convRun) checkStopped() {
	if c.cv.Reason() != "" {
		c.stop.Do(func() { close(c.stopped) })
	}
}

func (c *convRun) abandon(t Turn) {
	c.mu.Lock()
	c.cv.Abandon(t)
	c.mu.Unlock()
}

func (c *convRun) record(t Turn, req *workload.Request) *record.Record {
	rec := c.newRecord(t.Index, t.Warmup, c.levelStart.Add(t.Scheduled), req)
	rec.Conversation, rec.Turn = t.Conversation, t.Turn+1
	return rec
}

// sleepUntil waits for the instant at; false when ctx ended first.
func sleepUntil(ctx context.Context, at time.Time) bool {
	wait := time.Until(at)
	if wait <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// closed runs ShardConcurrency workers, each a user holding its slot through one
// conversation at a time, think times included.
func (c *convRun) closed(ctx context.Context) {
	c.levelStart = time.Now()
	for range c.lvl.ShardConcurrency() {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			freed := c.levelStart
			for ctx.Err() == nil {
				c.mu.Lock()
				t, ok := c.cv.Start(freed.Sub(c.levelStart))
				c.checkStopped()
				c.mu.Unlock()
				if !ok {
					return
				}
				// Built after the slot freed, so the build time is schedule lag, as in
				// the single-turn closed loop.
				req := c.src.Request(c.lvl.Index, t.Index)
				for {
					rec := c.record(t, &req)
					freed = c.send(ctx, rec, req)
					c.report(rec)
					nt, ok := c.next(t, rec, freed, &req)
					if !ok {
						break
					}
					if !sleepUntil(ctx, c.levelStart.Add(nt.Scheduled)) {
						c.abandon(nt)
						return
					}
					t = nt
				}
			}
		}()
	}
}

// open dispatches conversation starts at the plan's due times; each conversation then
// runs in its own goroutine. It returns EndInterrupted when interrupted, and "" when the
// plan stopped (then the reason is the plan's).
func (c *convRun) open(ctx context.Context, first workload.Request) EndReason {
	if n := c.lvl.ShardMaxConcurrency(); n > 0 {
		c.sem = make(chan struct{}, n)
	}
	c.end = make(chan struct{})
	c.levelStart = time.Now()
	if c.lvl.Duration > 0 {
		t := time.AfterFunc(time.Until(c.levelStart.Add(c.lvl.Duration)), func() { close(c.end) })
		defer t.Stop()
	}
	built, req := 0, first // the next start's request, built ahead of its due time
	for {
		c.mu.Lock()
		due, ok := c.cv.NextStart()
		idx := c.cv.nextIndex()
		c.mu.Unlock()
		if !ok {
			return ""
		}
		if idx != built {
			built, req = idx, c.src.Request(c.lvl.Index, idx)
		}
		if wait := time.Until(c.levelStart.Add(due)); wait > 0 {
			tm := time.NewTimer(wait)
			select {
			case <-tm.C:
			case <-ctx.Done():
				tm.Stop()
				return EndInterrupted
			case <-c.stopped:
				tm.Stop()
				return ""
			}
		}
		if ctx.Err() != nil {
			return EndInterrupted
		}
		c.mu.Lock()
		t, ok := c.cv.Start(due)
		c.checkStopped()
		c.mu.Unlock()
		if !ok {
			continue // skipped, or stopped: NextStart says which
		}
		c.wg.Add(1)
		go c.converse(ctx, t, req)
		built = -1
	}
}

// acquire takes an in-flight slot; "" when it got one.
func (c *convRun) acquire(ctx context.Context) EndReason {
	if c.sem == nil {
		return ""
	}
	select {
	case c.sem <- struct{}{}:
		return ""
	case <-ctx.Done():
		return EndInterrupted
	case <-c.end:
		return EndDuration
	}
}

// converse sends t and the conversation's later turns. Each waits for an in-flight slot
// under the cap in its own goroutine, so overdue starts and turns get slots in the order
// they fell due (a channel's waiting senders are served first come, first served); the
// wait is schedule lag.
func (c *convRun) converse(ctx context.Context, t Turn, req workload.Request) {
	defer c.wg.Done()
	if c.acquire(ctx) != "" {
		c.abandon(t)
		return
	}
	for {
		rec := c.record(t, &req)
		done := c.send(ctx, rec, req)
		if c.sem != nil {
			<-c.sem
		}
		c.report(rec)
		nt, ok := c.next(t, rec, done, &req)
		if !ok {
			return
		}
		if !sleepUntil(ctx, c.levelStart.Add(nt.Scheduled)) || c.acquire(ctx) != "" {
			c.abandon(nt)
			return
		}
		t = nt
	}
}
