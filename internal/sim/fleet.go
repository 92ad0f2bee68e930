package sim

import (
	"container/heap"
	"context"
	"github.com/llmbench/llmbench/internal/route"
	"sync"
	"time"
)

// A deployment of several replicas is several engines behind a router. The router is the
// one policy both clocks use: Fleet (virtual clock, simulate) and EngineFleet (wall clock,
// serve) differ only in how they reach their engines.

// Fleet is a deployment's replicas on one virtual clock: the methods of Virtual (the
// load's VirtualServer) over Replicas engines, each request given to one by the
// deployment's router. The driver's request ids pass through unchanged. Not safe for
// concurrent use.
type Fleet struct {
	reps   []*Virtual
	route  *route.Router
	events fleetHeap // replicas with an event ahead, by (time, index)
	dirty  []int     // replicas submitted to or processed since the last Kick
	marked []bool    // in dirty
	due    []int     // Process's scratch
	out    func(int) int
	where  []int // replica of each sequence id submitted (PromptCached)
}

// NewFleet builds profile p's deployment on a virtual clock: p.Deployment.Replicas
// engines (each what NewVirtual builds), replica i seeded with p.Seed + i.
func NewFleet(p Profile) (*Fleet, error) {
	n := p.Deployment.replicas()
	f := &Fleet{reps: make([]*Virtual, n), route: route.New(p.Deployment.router(), n)}
	f.events.pos = make([]int, n)
	f.marked = make([]bool, n)
	for i := range f.reps {
		q := p
		q.Seed = p.Seed + int64(i)
		v, err := NewVirtual(q)
		if err != nil {
			return nil, err
		}
		f.reps[i] = v
		f.events.pos[i] = -1
	}
	f.out = func(i int) int { return f.reps[i].Live() }
	return f, nil
}

// Replicas is the number of engines.
func (f *Fleet) Replicas() int { return len(f.reps) }

// SeqsNeeded is the largest of the replicas' SeqsNeeded.
func (f *Fleet) SeqsNeeded() int {
	n := 0
	for _, r := range f.reps {
		n = max(n, r.SeqsNeeded())
	}
	return n
}

// Busy is the replicas' busy roofline-seconds (EngineStats.BusySeconds) and generated
// tokens, summed: what EstimateEnergy reads.
func (f *Fleet) Busy() (busy float64, tokens uint64) {
	for _, r := range f.reps {
		st := r.Stats()
		busy, tokens = busy+st.BusySeconds, tokens+st.GenerationTokens
	}
	return busy, tokens
}

// Replica is engine i, for inspection.
func (f *Fleet) Replica(i int) *Virtual { return f.reps[i] }

// BlockSize is the replicas' prefix-cache block in tokens; 0 without one.
func (f *Fleet) BlockSize() int { return f.reps[0].BlockSize() }

// Check is why every replica would refuse the request (they are alike); see Virtual.Check.
func (f *Fleet) Check(prompt, maxTokens int) error { return f.reps[0].Check(prompt, maxTokens) }

// Submit gives sequence id to the replica the router picks (see Virtual.Submit).
func (f *Fleet) Submit(id uint64, prompt int, hashes []uint64, maxTokens int, session string, t time.Duration) error {
	i := f.route.Pick(session, hashes, f.out)
	if err := f.reps[i].Submit(id, prompt, hashes, maxTokens, session, t); err != nil {
		return err
	}
	for uint64(len(f.where)) <= id {
		f.where = append(f.where, 0)
	}
	f.where[id] = i
	f.touch(i)
	return nil
}

// PromptCached is Virtual.PromptCached of the replica serving sequence id.
func (f *Fleet) PromptCached(id uint64) (int, bool) {
	if id >= uint64(len(f.where)) {
		return 0, false
	}
	return f.reps[f.where[id]].PromptCached(id)
}

func (f *Fleet) touch(i int) {
	if !f.marked[i] {
		f.marked[i] = true
		f.dirty = append(f.dirty, i)
	}
}

// settle moves the touched replicas to their next event in the heap.
func (f *Fleet) settle() {
	for _, i := range f.dirty {
		t, ok := f.reps[i].Next()
		f.events.set(i, t, ok)
	}
}

// Next is the earliest event of any replica.
func (f *Fleet) Next() (time.Duration, bool) {
	f.settle()
	if len(f.events.items) == 0 {
		return 0, false
	}
	return f.events.items[0].t, true
}

// Process handles every replica's events due at t, in replica order.
func (f *Fleet) Process(t time.Duration, emit func(id uint64, at time.Duration, n int, done bool)) {
	f.settle()
	f.due = f.due[:0]
	for len(f.events.items) > 0 && f.events.items[0].t <= t {
		f.due = append(f.due, heap.Pop(&f.events).(fleetEvent).rep)
	}
	for _, i := range f.due {
		f.touch(i)
		f.reps[i].Process(t, emit)
	}
}

// Kick starts a step at t on every replica that has work and is free.
func (f *Fleet) Kick(t time.Duration) {
	for _, i := range f.dirty {
		f.reps[i].Kick(t)
		f.marked[i] = false
	}
	f.settle()
	f.dirty = f.dirty[:0]
}

// Live is the number of sequences submitted and not finished, over all replicas.
func (f *Fleet) Live() int {
	n := 0
	for _, v := range f.reps {
		n += v.Live()
	}
	return n
}

// fleetHeap orders the replicas that have an event ahead by its time, then index; pos[i]
// is replica i's place in items, -1 when it has none.
type fleetHeap struct {
	items []fleetEvent
	pos   []int
}

type fleetEvent struct {
	t   time.Duration
	rep int
}

func (h *fleetHeap) Len() int { return len(h.items) }
func (h *fleetHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return a.t < b.t || (a.t == b.t && a.rep < b.rep)
}
func (h *fleetHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i].rep] = i
	h.pos[h.items[j].rep] = j
}
func (h *fleetHeap) Push(x any) {
	e := x.(fleetEvent)
	h.pos[e.rep] = len(h.items)
	h.items = append(h.items, e)
}
func (h *fleetHeap) Pop() any {
	e := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	h.pos[e.rep] = -1
	return e
}

// set puts replica i's next event at t, or takes it out when it has none.
func (h *fleetHeap) set(i int, t time.Duration, ok bool) {
	k := h.pos[i]
	switch {
	case !ok && k >= 0:
		heap.Remove(h, k)
	case ok && k >= 0:
		if h.items[k].t != t {
			h.items[k].t = t
			heap.Fix(h, k)
		}
	case ok:
		heap.Push(h, fleetEvent{t: t, rep: i})
	}
}

// EngineFleet is a deployment's replicas on the wall clock, for serve: Replicas engines
// behind the deployment's router (the same policy as Fleet's). It implements the server's
// Generator; Stats sums the replicas.
type EngineFleet struct {
	engines []*Engine
	mu      sync.Mutex // the router's
	route   *route.Router
	out     func(int) int
}

// NewEngineFleet builds profile p's deployment on the wall clock: p.Deployment.Replicas
// engines (each what NewEngine builds), replica i seeded with p.Seed + i. An invalid
// profile makes every Submit fail with the reason, as NewEngine's does.
func NewEngineFleet(p Profile) *EngineFleet { return newEngineFleet(p, true) }

// newEngineFleet is NewEngineFleet; fine=false paces by Go's timers alone (newEngine), as a
// testing/synctest bubble needs.
func newEngineFleet(p Profile, fine bool) *EngineFleet {
	n := p.Deployment.replicas()
	f := &EngineFleet{engines: make([]*Engine, n), route: route.New(p.Deployment.router(), n)}
	for i := range f.engines {
		q := p
		q.Seed = p.Seed + int64(i)
		f.engines[i] = newEngine(q, fine)
	}
	f.out = func(i int) int { return f.engines[i].outstanding() }
	return f
}

// Start runs every replica's step loop until ctx ends, and returns once all have stopped.
func (f *EngineFleet) Start(ctx context.Context) {
	var wg sync.WaitGroup
	for _, e := range f.engines {
		wg.Go(func() { e.Start(ctx) })
	}
	wg.Wait()
}

// Submit gives the request to the replica the router picks (see Engine.Submit).
func (f *EngineFleet) Submit(ctx context.Context, r SeqRequest) (<-chan Step, error) {
	if len(f.engines) == 1 {
		return f.engines[0].Submit(ctx, r)
	}
	// Held across the engine's Submit, so that concurrent requests see each other's counts.
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.engines[f.route.Pick(r.Session, r.PrefixHashes, f.out)].Submit(ctx, r)
}

// Stats sums the replicas' snapshots; KV usage is their mean (replicas are alike).
func (f *EngineFleet) Stats() EngineStats {
	var s EngineStats
	for _, e := range f.engines {
		st := e.Stats()
		s.Running += st.Running
		s.Waiting += st.Waiting
		s.KVUsage += st.KVUsage / float64(len(f.engines))
		s.Preemptions += st.Preemptions
		s.PromptTokens += st.PromptTokens
		s.GenerationTokens += st.GenerationTokens
		s.PrefixHits += st.PrefixHits
		s.PrefixQueries += st.PrefixQueries
	}
	return s
}

// ReplicaStats is each replica's snapshot, in replica order.
func (f *EngineFleet) ReplicaStats() []EngineStats {
	out := make([]EngineStats, len(f.engines))
	for i, e := range f.engines {
		out[i] = e.Stats()
	}
	return out
}

// outstanding is the engine's sequences submitted and not finished (as of its last step
// boundary), for the router.
func (e *Engine) outstanding() int {
	if e.err != nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c.nLive
}
