package sim

import (
	"fmt"
	"slices"
	"time"
)

// The core is the engine without a clock: a discrete-event scheduler that both the
// wall-clock Engine and the virtual-clock Simulate drive. It is not safe for concurrent
// use. Times are offsets on the driver's timeline.
//
// Per step it does O(running) work with no allocation: it walks the running sequences
// once to schedule them and once to emit their tokens.

type seqState uint8

const (
	stWaiting    seqState = iota // queued for admission (colocated) or decode (disaggregated)
	stPrefillQ                   // disaggregated: queued for a prefill worker
	stPrefilling                 // disaggregated: in the prefill pool
	stRunning                    // in the decode batch (colocated: possibly mid-prefill)
	stFinished
	stAborted
	stInbox // arrived, not yet taken in by the scheduler (engine.recv_interval, dp_balance_wait)
)

// seq is one sequence's state in the engine.
type seq struct {
	// First and together, the fields the step's loops (schedule, account, finishStep) read
	// of every running sequence at every step: a cache line or two, not four.
	state       seqState
	target      int // tokens it will generate
	generated   int
	kvTokens    int // tokens whose KV is cached
	prefillLeft int // tokens to compute before its next token; 0 while decoding
	private     int // KV blocks it holds alone
	nref        int // leading prefix blocks it holds as shared cache entries
	stepTokens  int // tokens scheduled for it in the step in flight
	draft       int // tokens drafted for it in the step in flight (speculative decoding)

	no         uint64 // submission number: tie-breaker and RNG stream
	prompt     int
	hashes     []uint64
	reason     string
	cached     int // prompt tokens its (latest) admission found in the prefix cache
	noReg      bool
	resumed    bool          // preempted at least once: goes to the front of the decode queue
	prefillEnd time.Duration // disaggregated: when its prefill finishes
	arrived    uint64        // the engine's steps finished when it was submitted
	group      int           // its DP attention group (engine.dp_balance_wait)

	// Driver data.
	ch      chan Step
	pending int // wall clock: tokens not yet delivered (slow consumer)
	stop    func() bool
	id      uint64 // virtual clock: the driver's name for it
}

// cacheEntry is a prefix-cache block: held by refs sequences, or on the LRU list when 0.
type cacheEntry struct {
	hash       uint64
	refs       int
	prev, next *cacheEntry
}

type core struct {
	cost   CostModel
	noise  *stepNoise // nil without cost.step_noise
	cfg    EngineConfig
	disagg bool
	bs     int
	seed   uint64
	maxLen int // a request's prompt plus max_tokens; 0 = no limit but the cache
	// truncate cuts a prompt longer than maxLen to maxLen tokens rather than refusing it.
	truncate bool

	spec *specCost // nil without speculative decoding
	// The step in flight's speculative work: its verified draft positions and their
	// query-key pairs, and pass j of its drafting (the sequences drafting more than j).
	verifyTokens int
	verifyAttn   float64
	passes       []StepWork

	totalBlocks, freeBlocks int // freeBlocks includes cached blocks nobody holds

	cache            map[uint64]*cacheEntry // nil without prefix caching
	lruHead, lruTail *cacheEntry
	lruLen           int

	inbox    deque // arrived, not yet taken in (engine.recv_interval, dp_balance_wait)
	waiting  deque // colocated: admission queue; disaggregated: decode admission queue
	prefillQ deque // disaggregated: waiting for a prefill worker
	pool     prefillHeap
	running  []*seq

	busy    bool
	stepEnd time.Duration
	// sinceRecv counts the decode-only steps since the scheduler last took in arrivals; a
	// step with prefill work sets it to the interval (SGLang weighs such a step past it).
	sinceRecv   int
	stepPrefill bool   // the step in flight has prefill work
	steps       uint64 // steps finished
	// With engine.dp_balance_wait: each DP attention group's sequences submitted and not
	// finished, and those of each in the inbox.
	groupLoad, groupInbox []int
	nsub                  uint64
	nLive                 int // sequences submitted and not yet finished or aborted

	stats EngineStats
	// seqsNeeded is the smallest max_num_seqs that admits whatever this engine would admit
	// at every admission so far (the most sequences running when one waited, plus one):
	// at most the engine's own limit when that never held a sequence back.
	seqsNeeded int

	// emit reports n tokens of s at t; done is its last.
	emit func(s *seq, t time.Duration, n int, done bool)
	// vemit, when set, replaces emit with a direct call (the virtual clock's hot path),
	// and finished sequences are recycled.
	vemit *Virtual
	free  []*seq
}

func newCore(p Profile, emit func(*seq, time.Duration, int, bool)) (*core, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	cost, err := p.NewCostModel()
	if err != nil {
		return nil, err
	}
	kv, err := p.KVCacheTokens()
	if err != nil {
		return nil, err
	}
	c := &core{
		cost: cost, cfg: p.Engine, disagg: p.Engine.Prefill == PrefillDisaggregated,
		bs: p.Engine.BlockSize, seed: uint64(p.Seed), emit: emit, maxLen: p.MaxSeqLen(), truncate: p.Deployment.TruncatePrompts,
		noise: newStepNoise(p.Cost.StepNoise, p.Seed),
	}
	if c.spec, err = p.newSpecCost(cost); err != nil {
		return nil, err
	}
	if c.spec != nil {
		c.passes = make([]StepWork, p.Speculative.DraftTokens)
	}
	c.totalBlocks = kv / c.bs
	c.freeBlocks = c.totalBlocks
	if p.Engine.PrefixCaching {
		c.cache = map[uint64]*cacheEntry{}
	}
	if p.Engine.DPBalanceWait > 0 {
		c.groupLoad, c.groupInbox = make([]int, p.Deployment.dp()), make([]int, p.Deployment.dp())
	}
	return c, nil
}

// splitmix64 is a tiny, well-mixed hash: per-sequence random lengths without a shared
// RNG whose state would depend on call order elsewhere.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// newSeq checks r and returns its sequence; the n-th submission's random length depends
// only on the seed and n, so a run is reproducible.
func (c *core) newSeq(r *SeqRequest) (*seq, error) {
	if err := c.check(r.PromptTokens, r.MaxTokens); err != nil {
		return nil, err
	}
	prompt := r.PromptTokens
	if c.truncate && prompt > c.maxLen {
		prompt = c.maxLen // its last maxLen tokens: a prefix it shared is gone
		r.PrefixHashes = nil
	}
	c.nsub++
	var s *seq
	if n := len(c.free); n > 0 {
		s = c.free[n-1]
		c.free = c.free[:n-1]
		*s = seq{no: c.nsub, prompt: prompt, target: r.MaxTokens, reason: "length"}
	} else {
		s = &seq{no: c.nsub, prompt: prompt, target: r.MaxTokens, reason: "length"}
	}
	if c.cache != nil {
		s.hashes = r.PrefixHashes
	}
	if !r.IgnoreEOS {
		s.target = 1 + int(splitmix64(c.seed^splitmix64(c.nsub))%uint64(r.MaxTokens))
		if s.target < r.MaxTokens {
			s.reason = "stop"
		}
	}
	return s, nil
}

// check is why the engine would refuse a request of prompt tokens and maxTokens to
// generate, whatever its state; nil when it would take it.
func (c *core) check(prompt, maxTokens int) error {
	if prompt < 1 {
		return fmt.Errorf("prompt of %d tokens: need at least 1", prompt)
	}
	if maxTokens < 1 {
		return fmt.Errorf("max_tokens %d: need at least 1", maxTokens)
	}
	if c.truncate {
		prompt = min(prompt, c.maxLen)
		maxTokens = min(maxTokens, c.maxLen) // the server shifts its context as it generates
	} else if c.maxLen > 0 && prompt+maxTokens > c.maxLen {
		return fmt.Errorf("prompt of %d tokens plus max_tokens %d exceeds the model's maximum length %d (max_model_len)", prompt, maxTokens, c.maxLen)
	}
	if need := c.blocksFor(prompt + maxTokens); need > c.totalBlocks {
		return fmt.Errorf("prompt of %d tokens plus max_tokens %d exceeds the KV cache of %d tokens", prompt, maxTokens, c.totalBlocks*c.bs)
	}
	return nil
}

func (c *core) blocksFor(tokens int) int { return (tokens + c.bs - 1) / c.bs }

// submit queues s at t. It does not start a step: the driver calls kick once everything
// due at t has been processed, so requests arriving together join the same step.
func (c *core) submit(s *seq, t time.Duration) {
	c.nLive++
	s.prefillLeft = s.prompt
	if c.gated() {
		s.state = stInbox
		s.arrived = c.steps
		if c.groupLoad != nil {
			// A new request goes to the DP group with the fewest sequences: on a closed loop,
			// the group where one just finished.
			s.group = 0
			for g, n := range c.groupLoad {
				if n < c.groupLoad[s.group] {
					s.group = g
				}
			}
			c.groupLoad[s.group]++
			c.groupInbox[s.group]++
		}
		c.inbox.pushBack(s)
		return
	}
	c.admit(s, t)
}

// admit queues s, taken in by the scheduler at t, for prefill.
func (c *core) admit(s *seq, t time.Duration) {
	if c.disagg {
		s.state = stPrefillQ
		c.prefillQ.pushBack(s)
		c.startPrefills(t)
		return
	}
	s.state = stWaiting
	c.waiting.pushBack(s)
}

// next is the time of the next event: the end of the step in flight or of a prefill.
func (c *core) next() (time.Duration, bool) {
	t, ok := c.stepEnd, c.busy
	if len(c.pool) > 0 && (!ok || c.pool[0].prefillEnd < t) {
		t, ok = c.pool[0].prefillEnd, true
	}
	return t, ok
}

// process handles the events due at t (the value next returned).
func (c *core) process(t time.Duration) {
	if c.busy && c.stepEnd <= t {
		c.finishStep(c.stepEnd)
	}
	for len(c.pool) > 0 && c.pool[0].prefillEnd <= t {
		s := c.pool.pop()
		if s.state == stAborted {
			continue
		}
		c.finishPrefill(s, s.prefillEnd)
	}
	if c.disagg {
		c.startPrefills(t)
	}
}

// startPrefills hands queued sequences to free prefill workers (disaggregated).
func (c *core) startPrefills(t time.Duration) {
	for c.prefillQ.len() > 0 && (c.cfg.PrefillWorkers == 0 || len(c.pool) < c.cfg.PrefillWorkers) {
		s := c.prefillQ.popFront()
		if s.state == stAborted {
			continue
		}
		s.state = stPrefilling
		s.prefillEnd = t + c.noise.apply(c.cost.Prefill(s.prefillLeft)+c.spec.prefill(s.prefillLeft))
		c.pool.push(s)
	}
}

// finishPrefill: the prefill pool produced s's next token; its KV moves to the decode
// engine's admission queue.
func (c *core) finishPrefill(s *seq, t time.Duration) {
	c.stats.PromptTokens += uint64(s.prefillLeft)
	s.kvTokens = s.prefillLeft
	s.prefillLeft = 0
	s.generated++
	c.stats.GenerationTokens++
	if s.generated >= s.target {
		c.finish(s)
		c.emitTo(s, t, 1, true)
		return
	}
	c.emitTo(s, t, 1, false)
	s.state = stWaiting
	if s.resumed {
		c.waiting.pushFront(s)
	} else {
		c.waiting.pushBack(s)
	}
}

// emitTo reports tokens to the driver; a finished sequence is recycled on the virtual
// clock, where nothing else refers to it afterwards.
func (c *core) emitTo(s *seq, t time.Duration, n int, done bool) {
	if c.vemit == nil {
		c.emit(s, t, n, done)
		return
	}
	c.vemit.emitSeq(s, t, n, done)
	if done {
		c.free = append(c.free, s)
	}
}

// gated says arrivals wait in the inbox for the scheduler to take them in.
func (c *core) gated() bool { return c.cfg.RecvInterval > 1 || c.cfg.DPBalanceWait > 0 }

// receive takes in the arrivals at t when the scheduler would, every gate set being open;
// an idle engine takes them in at once.
//   - recv_interval (SGLang): its counter runs with the steps whether or not anything
//     arrived, so it opens every recv_interval decode-only steps, and after a step with
//     prefill work (an idle engine's loop spins through its interval in no time).
//   - dp_balance_wait (TensorRT-LLM's attention-DP balance): it opens when the inbox holds
//     a request for every DP group, or when the oldest has waited that many steps; then
//     every group prefills in the same step.
func (c *core) receive(t time.Duration) {
	if !c.gated() {
		return // submit admitted every arrival
	}
	idle := len(c.running) == 0 && c.waiting.len() == 0 && c.prefillQ.len() == 0 && len(c.pool) == 0
	recv := idle || c.cfg.RecvInterval <= 1 || c.sinceRecv >= c.cfg.RecvInterval
	if recv && c.cfg.RecvInterval > 1 {
		c.sinceRecv = 0
	}
	for c.inbox.len() > 0 && c.inbox.front().state == stAborted {
		c.inbox.popFront()
	}
	if !recv || c.inbox.len() == 0 {
		return
	}
	if w := c.cfg.DPBalanceWait; w > 0 && !idle && slices.Contains(c.groupInbox, 0) && c.steps-c.inbox.front().arrived < uint64(w) {
		return
	}
	clear(c.groupInbox)
	for c.inbox.len() > 0 {
		if s := c.inbox.popFront(); s.state != stAborted {
			c.admit(s, t)
		}
	}
}

// kick starts a step at t if the engine is free and has work.
func (c *core) kick(t time.Duration) {
	if c.busy {
		return
	}
	c.receive(t)
	w := c.schedule()
	if w.DecodeSeqs == 0 && w.PrefillTokens == 0 {
		return
	}
	c.busy = true
	c.stepPrefill = w.PrefillTokens > 0
	var draft time.Duration
	if c.spec != nil {
		// The verify's positions are computed as prefill tokens are, in the same pass.
		draft = c.spec.draftTime(c.passes, w)
		w.PrefillTokens += c.verifyTokens
		w.PrefillAttn += c.verifyAttn
	}
	step, share, gpu := stepAndShare(c.cost, w)
	c.stepEnd = t + c.noise.apply(step+draft)
	if gpu {
		d := (c.stepEnd - t).Seconds()
		c.stats.BusySeconds += share * d
		c.stats.StepSeconds += d
	}
	if c.disagg {
		c.startPrefills(t) // preempted sequences went back to the prefill queue
	}
}

// schedule picks the next step's work, vLLM-style: running sequences first, oldest first,
// each taking one decode token or its next prefill chunk; a sequence that needs a KV block
// when none is free preempts the newest running one. Then, if nothing was preempted,
// waiting sequences are admitted in FIFO order while the sequence limit, the token budget
// and the free blocks allow; admission never skips the head of the queue.
func (c *core) schedule() StepWork {
	var w StepWork
	if c.spec != nil {
		c.verifyTokens, c.verifyAttn = 0, 0
		clear(c.passes)
	}
	budget := c.cfg.MaxBatchedTokens
	preempted := false
	for i := 0; i < len(c.running) && budget > 0; i++ {
		s := c.running[i]
		n := c.decodeTokens(s, budget)
		if s.prefillLeft > 0 {
			n = min(s.prefillLeft, budget)
		}
		need := 0
		if held := (s.private + s.nref) * c.bs; s.kvTokens+n > held {
			need = c.blocksFor(s.kvTokens + n - held)
		}
		for need > c.freeBlocks && s.state == stRunning {
			c.preempt(c.running[len(c.running)-1])
			preempted = true
		}
		if s.state != stRunning {
			break // s was the newest: nothing after it is left
		}
		c.allocate(s, need)
		c.account(&w, s, n)
		budget -= n
	}
	if preempted {
		return w
	}
	for budget > 0 && c.waiting.len() > 0 {
		c.seqsNeeded = max(c.seqsNeeded, len(c.running)+1)
		if len(c.running) >= c.cfg.MaxNumSeqs {
			break
		}
		s := c.waiting.front()
		if s.state == stAborted {
			c.waiting.popFront()
			continue
		}
		hits, revive := 0, 0
		if s.kvTokens == 0 && len(s.hashes) > 0 {
			hits, revive = c.lookup(s)
		}
		n := c.decodeTokens(s, budget)
		if s.prefillLeft > 0 {
			n = min(s.prefillLeft-hits*c.bs, budget)
		}
		need := c.blocksFor(s.kvTokens+hits*c.bs+n) - hits
		if need+revive > c.freeBlocks {
			break
		}
		c.waiting.popFront()
		if s.kvTokens == 0 && len(s.hashes) > 0 {
			c.stats.PrefixQueries += uint64(s.prompt)
			c.stats.PrefixHits += uint64(hits * c.bs)
			c.takeRefs(s, hits)
			s.kvTokens = hits * c.bs
			s.cached = s.kvTokens
			s.prefillLeft -= hits * c.bs
		}
		c.allocate(s, need)
		s.state = stRunning
		c.running = append(c.running, s)
		c.account(&w, s, n)
		budget -= n
	}
	return w
}

// account adds s's n scheduled tokens to the step's work.
func (c *core) account(w *StepWork, s *seq, n int) {
	s.stepTokens = n
	if s.prefillLeft > 0 {
		w.PrefillSeqs++
		w.PrefillTokens += n
		w.PrefillAttn += float64(n) * (float64(s.kvTokens) + float64(n)/2)
		w.PrefillContext += int64(s.kvTokens)
		return
	}
	w.DecodeSeqs++
	w.DecodeContext += int64(s.kvTokens + 1)
	if k := n - 1; k > 0 {
		// Drafting k tokens, then verifying them with the last one: k more query positions,
		// the i-th attending to the context and the i drafted before it.
		s.draft = k
		ctx := float64(s.kvTokens + 1)
		c.verifyTokens += k
		c.verifyAttn += float64(k)*ctx + float64(k*(k+1))/2
		for j := range k {
			c.passes[j].DecodeSeqs++
			c.passes[j].DecodeContext += int64(s.kvTokens + 1 + j)
		}
	}
}

// decodeTokens is the step tokens s takes if it is decoding: 1, or with speculative
// decoding the last token and the K drafted after it — fewer when the budget is short, or
// when s needs fewer to reach max_tokens: drafts past it would be thrown away, and their KV
// could exceed what check let the request hold (a request filling the cache would then
// preempt itself forever).
func (c *core) decodeTokens(s *seq, budget int) int {
	if c.spec == nil || s.prefillLeft > 0 {
		return 1
	}
	return 1 + min(len(c.passes), budget-1, s.target-s.generated-1)
}

// finishStep emits the step's tokens at t and retires finished sequences.
func (c *core) finishStep(t time.Duration) {
	c.busy = false
	c.steps++
	if c.stepPrefill {
		c.sinceRecv = c.cfg.RecvInterval
	} else {
		c.sinceRecv++
	}
	run := c.running
	k := 0 // running sequences kept, compacted in place (written only when they move)
	for i, s := range run {
		n := s.stepTokens
		keep := true
		if n > 0 {
			s.stepTokens = 0
			emit := 1
			switch {
			case s.prefillLeft > 0:
				s.kvTokens += n
				s.prefillLeft -= n
				c.stats.PromptTokens += uint64(n)
				if c.cache != nil {
					c.register(s)
				}
				if s.prefillLeft > 0 {
					emit = 0 // mid-prefill: no token yet
				}
			case s.draft > 0:
				// The accepted run and the verify's own next token, never past max_tokens; the
				// KV of the rejected positions is dropped.
				l := c.spec.accepted(c.seed, s.no, s.generated, s.draft)
				c.stats.SpecDrafts++
				c.stats.SpecDraftTokens += uint64(s.draft)
				c.stats.SpecAcceptedTokens += uint64(l)
				emit = min(l+1, s.target-s.generated)
				s.kvTokens += emit
				s.draft = 0
			default:
				s.kvTokens += n
			}
			if emit > 0 {
				s.generated += emit
				c.stats.GenerationTokens += uint64(emit)
				if s.generated >= s.target {
					c.finish(s)
					c.emitTo(s, t, emit, true)
					keep = false
				} else {
					c.emitTo(s, t, emit, false)
				}
			}
		}
		if keep {
			if k != i {
				run[k] = s
			}
			k++
		}
	}
	clear(run[k:])
	c.running = run[:k]
}

// finish releases a finished sequence.
func (c *core) finish(s *seq) {
	c.release(s)
	s.state = stFinished
	c.nLive--
	if c.groupLoad != nil {
		c.groupLoad[s.group]--
	}
}

// preempt evicts the newest running sequence s (recompute): its KV is freed and it
// requeues at the front, to prefill its prompt and the tokens generated so far again.
func (c *core) preempt(s *seq) {
	c.running = c.running[:len(c.running)-1]
	c.release(s)
	s.kvTokens = 0
	s.prefillLeft = s.prompt + s.generated
	s.stepTokens = 0
	s.draft = 0
	s.resumed = true
	c.stats.Preemptions++
	if c.disagg {
		s.state = stPrefillQ
		c.prefillQ.pushFront(s)
		return
	}
	s.state = stWaiting
	c.waiting.pushFront(s)
}

// abort drops s wherever it is and frees its KV blocks.
func (c *core) abort(s *seq) {
	switch s.state {
	case stFinished, stAborted:
		return
	case stRunning:
		for i, r := range c.running {
			if r == s {
				copy(c.running[i:], c.running[i+1:])
				c.running[len(c.running)-1] = nil
				c.running = c.running[:len(c.running)-1]
				break
			}
		}
		c.release(s)
	}
	// Queued or prefilling sequences hold no decode KV; the queues skip aborted entries.
	if c.groupLoad != nil {
		c.groupLoad[s.group]--
		if s.state == stInbox {
			c.groupInbox[s.group]--
		}
	}
	s.state = stAborted
	c.nLive--
}

func (c *core) allocate(s *seq, blocks int) {
	if blocks <= 0 {
		return
	}
	c.freeBlocks -= blocks
	s.private += blocks
	// Free blocks that are really cached prefixes nobody holds are evicted, oldest first,
	// only when the never-cached free blocks run out.
	for c.lruLen > c.freeBlocks {
		e := c.lruHead
		c.lruRemove(e)
		delete(c.cache, e.hash)
	}
}

// release returns s's blocks: private ones to the free pool, shared ones to their cache
// entries (which stay cached, evictable, when nobody holds them).
func (c *core) release(s *seq) {
	c.freeBlocks += s.private
	s.private = 0
	for i := 0; i < s.nref; i++ {
		e := c.cache[s.hashes[i]]
		e.refs--
		if e.refs == 0 {
			c.lruPush(e)
			c.freeBlocks++
		}
	}
	s.nref = 0
	s.noReg = false
}

// lookup counts s's leading prompt blocks found in the cache (always leaving at least one
// prompt token to compute, which produces the first token) and how many of those are
// unheld cached blocks that taking them would remove from the free pool.
func (c *core) lookup(s *seq) (hits, revive int) {
	max := min(len(s.hashes), (s.prompt-1)/c.bs)
	for hits < max {
		e, ok := c.cache[s.hashes[hits]]
		if !ok {
			break
		}
		if e.refs == 0 {
			revive++
		}
		hits++
	}
	return hits, revive
}

func (c *core) takeRefs(s *seq, hits int) {
	for i := 0; i < hits; i++ {
		e := c.cache[s.hashes[i]]
		if e.refs == 0 {
			c.lruRemove(e)
			c.freeBlocks--
		}
		e.refs++
	}
	s.nref = hits
}

// register turns s's newly computed full prompt blocks into shared cache entries.
func (c *core) register(s *seq) {
	full := min(s.kvTokens/c.bs, len(s.hashes))
	for !s.noReg && s.nref < full {
		h := s.hashes[s.nref]
		if _, ok := c.cache[h]; ok {
			s.noReg = true // computed twice concurrently; keep ours private
			break
		}
		c.cache[h] = &cacheEntry{hash: h, refs: 1}
		s.private--
		s.nref++
	}
}

func (c *core) lruPush(e *cacheEntry) {
	e.prev, e.next = c.lruTail, nil
	if c.lruTail != nil {
		c.lruTail.next = e
	} else {
		c.lruHead = e
	}
	c.lruTail = e
	c.lruLen++
}

func (c *core) lruRemove(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.lruHead = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.lruTail = e.prev
	}
	e.prev, e.next = nil, nil
	c.lruLen--
}

// snapshot is the engine's state for /metrics.
func (c *core) snapshot() EngineStats {
	st := c.stats
	st.Running = len(c.running)
	if c.disagg {
		st.Running += len(c.pool)
	}
	st.Waiting = c.nLive - st.Running
	if c.totalBlocks > 0 {
		st.KVUsage = float64(c.totalBlocks-c.freeBlocks) / float64(c.totalBlocks)
	}
	return st
}

// deque is a ring buffer of sequences: FIFO with requeueing at the front.
type deque struct {
	buf        []*seq
	head, size int
}

func (d *deque) len() int { return d.size }

func (d *deque) grow() {
	n := max(16, 2*len(d.buf))
	b := make([]*seq, n)
	for i := 0; i < d.size; i++ {
		b[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = b, 0
}

func (d *deque) pushBack(s *seq) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.size)%len(d.buf)] = s
	d.size++
}

func (d *deque) pushFront(s *seq) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = s
	d.size++
}

func (d *deque) front() *seq { return d.buf[d.head] }

func (d *deque) popFront() *seq {
	s := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return s
}

// prefillHeap orders the prefill pool by end time, then submission.
type prefillHeap []*seq

func (h prefillHeap) less(i, j int) bool {
	if h[i].prefillEnd != h[j].prefillEnd {
		return h[i].prefillEnd < h[j].prefillEnd
	}
	return h[i].no < h[j].no
}

func (h *prefillHeap) push(s *seq) {
	*h = append(*h, s)
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

func (h *prefillHeap) pop() *seq {
	a := *h
	s := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = nil
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a.less(l, m) {
			m = l
		}
		if r < n && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return s
}
