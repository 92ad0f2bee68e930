package sim

import "time"

// Virtual is the engine on a virtual clock that its caller owns: no goroutines and no
// sleeping, time moves when the caller says. The load generator's virtual-clock driver
// (load.RunVirtual, behind `llmbench simulate`) submits requests and asks for the
// engine's next event; the engine knows nothing of the load, records or workloads.
// Not safe for concurrent use.
type Virtual struct {
	c    *core
	emit func(id uint64, at time.Duration, n int, done bool) // Process's, while it runs
	seqs map[uint64]*seq                                     // live sequences by id (PromptCached)
	// done holds, by id, a finished sequence's cached prompt tokens until the id is reused.
	done []int32
}

// NewVirtual makes the engine of profile p on a virtual clock.
func NewVirtual(p Profile) (*Virtual, error) {
	c, err := newCore(p, nil)
	if err != nil {
		return nil, err
	}
	v := &Virtual{c: c, seqs: map[uint64]*seq{}}
	c.vemit = v
	return v, nil
}

// Stats is the engine's counters (power.go's busy time among them).
func (v *Virtual) Stats() EngineStats { return v.c.snapshot() }

// Busy is the engine's busy roofline-seconds and generated tokens: what EstimateEnergy reads.
func (v *Virtual) Busy() (busy float64, tokens uint64) {
	st := v.c.snapshot()
	return st.BusySeconds, st.GenerationTokens
}

// BlockSize is the prompt block of the engine's prefix cache, in tokens; 0 without one.
func (v *Virtual) BlockSize() int {
	if v.c.cache == nil {
		return 0
	}
	return v.c.bs
}

// Submit queues sequence id at t: a prompt of prompt tokens (with the hashes of its full
// blocks, for the prefix cache; may be nil), generating exactly maxTokens (ignore_eos, as
// the benchmark asks). An error is a request the server would refuse with 400. It does
// not start a step: Kick does, once everything due at t is in.
func (v *Virtual) Submit(id uint64, prompt int, hashes []uint64, maxTokens int, session string, t time.Duration) error {
	s, err := v.c.newSeq(&SeqRequest{PromptTokens: prompt, PrefixHashes: hashes, MaxTokens: maxTokens, IgnoreEOS: true, Session: session})
	if err != nil {
		return err
	}
	s.id = id
	v.seqs[id] = s
	v.c.submit(s, t)
	return nil
}

// PromptCached is how many prompt tokens of sequence id its admission found in the prefix
// cache (as a server's cached_tokens says): of a live sequence, or of a finished one until
// its id is submitted again. ok is false for an id never submitted.
func (v *Virtual) PromptCached(id uint64) (tokens int, ok bool) {
	if s, live := v.seqs[id]; live {
		return s.cached, true
	}
	if id < uint64(len(v.done)) {
		return int(v.done[id]), true
	}
	return 0, false
}

// Check is why Submit would refuse a request of prompt tokens and maxTokens, in any state
// of the engine (a request that can never fit); nil when it would take it.
func (v *Virtual) Check(prompt, maxTokens int) error { return v.c.check(prompt, maxTokens) }

// Next is the time of the engine's next event; ok is false when it has nothing to do.
func (v *Virtual) Next() (time.Duration, bool) { return v.c.next() }

// Process handles the engine's events due at t (the time Next returned), reporting each
// sequence's tokens to emit: n tokens of sequence id at at, done on its last.
func (v *Virtual) Process(t time.Duration, emit func(id uint64, at time.Duration, n int, done bool)) {
	v.emit = emit
	v.c.process(t)
	v.emit = nil
}

// Kick starts an engine step at t if the engine is free and has work.
func (v *Virtual) Kick(t time.Duration) { v.c.kick(t) }

// Live is the number of sequences submitted and not yet finished.
func (v *Virtual) Live() int { return v.c.nLive }

// SeqsNeeded is the smallest engine.max_num_seqs under which the engine would have made
// every admission it made so far: when it is at most the profile's own, the limit never held
// a sequence back, and the same run comes out under any limit from it up (a plan reuses the
// run for larger limits). It is the profile's limit plus one once the limit held one back.
func (v *Virtual) SeqsNeeded() int { return v.c.seqsNeeded }

func (v *Virtual) emitSeq(s *seq, t time.Duration, n int, done bool) {
	if done {
		for uint64(len(v.done)) <= s.id {
			v.done = append(v.done, 0)
		}
		v.done[s.id] = int32(min(s.cached, 1<<31-1))
		delete(v.seqs, s.id)
	}
	v.emit(s.id, t, n, done)
}
