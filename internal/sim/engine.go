package sim

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Engine runs the simulated engine on the wall clock, for serve and the in-process target.
// Step k ends at the engine's epoch plus the virtual time the core computed for it; the
// loop wakes at that absolute instant, so a late wake-up never accumulates, and on Linux
// it wakes by a timerfd as well as a Go timer, since Go's timers alone wake up to 1.1 ms
// late there (alarm_linux.go).
type Engine struct {
	err   error // the profile could not be used; Submit reports it
	mu    sync.Mutex
	c     *core
	epoch time.Time
	wake  chan struct{}
	done  bool
	live  map[*seq]struct{}
	fine  bool // wake by a fineTimer too (off only in tests on a fake clock)
}

// ErrStopped is returned by Submit once the engine's Start context has ended.
var ErrStopped = errors.New("sim: engine stopped")

// NewEngine builds an engine for p. An invalid profile makes every Submit fail with the
// reason; LoadProfile has already validated the profiles it returns. Its loop waits on a
// kernel timer on Linux, which a testing/synctest bubble's fake clock does not drive: tests
// in a bubble use NewEngineOnGoTimers.
func NewEngine(p Profile) *Engine { return newEngine(p, true) }

// NewEngineOnGoTimers is NewEngine paced by Go's timers alone, which a synctest bubble's
// fake clock drives exactly (on the real clock they wake up to 1.1 ms late: alarm_linux.go).
func NewEngineOnGoTimers(p Profile) *Engine { return newEngine(p, false) }

// newEngine is NewEngine; fine=false paces by Go's timers alone.
func newEngine(p Profile, fine bool) *Engine {
	e := &Engine{epoch: time.Now(), wake: make(chan struct{}, 1), live: map[*seq]struct{}{}, fine: fine}
	e.c, e.err = newCore(p, e.emit)
	return e
}

func (e *Engine) now() time.Duration { return time.Since(e.epoch) }

// advance processes every event due by now, each at its own due time, and starts the
// next step at the instant the previous one ended (not when the loop woke).
func (e *Engine) advance(now time.Duration) {
	for {
		t, ok := e.c.next()
		if !ok || t > now {
			return
		}
		e.c.process(t)
		e.c.kick(t)
	}
}

// Start runs the step loop until ctx ends; then every unfinished sequence's channel is
// closed without a Done step and later Submits fail.
func (e *Engine) Start(ctx context.Context) {
	if e.err != nil {
		<-ctx.Done()
		return
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var fine *fineTimer // nil: the Go timer alone
	if e.fine {
		fine = newFineTimer()
		defer fine.close()
	}
	for {
		e.mu.Lock()
		e.advance(e.now())
		t, ok := e.c.next()
		e.mu.Unlock()
		var tc <-chan time.Time
		if ok {
			d := time.Until(e.epoch.Add(t))
			timer.Reset(d)
			fine.set(d)
			tc = timer.C
		} else {
			fine.stop()
		}
		select {
		case <-ctx.Done():
			e.shutdown()
			return
		case <-e.wake:
		case <-tc:
		case <-fine.C():
		}
	}
}

func (e *Engine) shutdown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done = true
	for s := range e.live {
		e.c.abort(s)
		e.drop(s)
	}
}

// drop forgets s and closes its channel without a Done step. Called with mu held.
func (e *Engine) drop(s *seq) {
	delete(e.live, s)
	close(s.ch)
	if s.stop != nil {
		s.stop()
	}
}

// Submit queues a sequence. The channel receives a Step for every engine step that emitted
// tokens for it, at that step's end, and is closed after the Done step. Cancelling ctx
// aborts the sequence (its KV blocks are freed) and closes the channel without a Done step.
// A slow reader never blocks the engine: steps it has not taken are merged into the next.
func (e *Engine) Submit(ctx context.Context, r SeqRequest) (<-chan Step, error) {
	if e.err != nil {
		return nil, e.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return nil, ErrStopped
	}
	s, err := e.c.newSeq(&r)
	if err != nil {
		return nil, err
	}
	// One slot is always kept for the Done step (see emit), so a small buffer suffices.
	s.ch = make(chan Step, min(r.MaxTokens, 31)+1)
	now := e.now()
	e.advance(now)
	e.c.submit(s, now)
	e.c.kick(now)
	e.live[s] = struct{}{}
	s.stop = context.AfterFunc(ctx, func() { e.cancel(s) })
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return s.ch, nil
}

func (e *Engine) cancel(s *seq) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.live[s]; !ok {
		return
	}
	e.advance(e.now())
	if _, ok := e.live[s]; !ok {
		return // it finished in the steps just caught up (and its channel is closed)
	}
	e.c.abort(s)
	e.drop(s)
	e.c.kick(e.now()) // freed blocks may admit a waiting sequence
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// emit delivers tokens; called by the core with mu held. Non-final steps are sent only
// while a slot stays free for the Done step; otherwise they are merged into the next send.
func (e *Engine) emit(s *seq, t time.Duration, n int, done bool) {
	at := e.epoch.Add(t)
	if done {
		s.ch <- Step{At: at, Tokens: s.pending + n, Done: true, FinishReason: s.reason, Cached: s.cached}
		s.pending = 0
		delete(e.live, s)
		close(s.ch)
		if s.stop != nil {
			s.stop()
		}
		return
	}
	if len(s.ch) < cap(s.ch)-1 {
		s.ch <- Step{At: at, Tokens: s.pending + n, Cached: s.cached}
		s.pending = 0
		return
	}
	s.pending += n
}

// Stats is a snapshot for /metrics.
func (e *Engine) Stats() EngineStats {
	if e.err != nil {
		return EngineStats{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c.snapshot()
}
