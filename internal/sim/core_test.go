package sim

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// arrival is a test request submitted at a virtual time.
type arrival struct {
	at  time.Duration
	req SeqRequest
}

// tokenLog is what a test driver saw of one sequence.
type tokenLog struct {
	times  []time.Duration
	tokens int
	done   bool
	s      *seq
}

// drive runs the core over arrivals on a virtual clock, checking the KV invariants at
// every event, and returns each request's tokens in arrival order.
func drive(t *testing.T, p Profile, arrivals []arrival) ([]*tokenLog, *core) {
	t.Helper()
	logs := make([]*tokenLog, len(arrivals))
	bySeq := map[*seq]*tokenLog{}
	c, err := newCore(p, func(s *seq, at time.Duration, n int, done bool) {
		l := bySeq[s]
		if l.done {
			t.Fatalf("tokens after done")
		}
		l.times = append(l.times, at)
		l.tokens += n
		l.done = done
	})
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	for steps := 0; ; steps++ {
		if steps > 10_000_000 {
			t.Fatal("runaway simulation")
		}
		tc, okc := c.next()
		if !okc && next == len(arrivals) {
			break
		}
		now := tc
		if next < len(arrivals) && (!okc || arrivals[next].at <= tc) {
			now = arrivals[next].at
		}
		if okc && tc == now {
			c.process(now)
		}
		for next < len(arrivals) && arrivals[next].at == now {
			r := arrivals[next].req
			s, err := c.newSeq(&r)
			if err != nil {
				t.Fatalf("request %d: %v", next, err)
			}
			logs[next] = &tokenLog{s: s}
			bySeq[s] = logs[next]
			c.submit(s, now)
			next++
		}
		c.kick(now)
		checkKV(t, c)
	}
	if c.nLive != 0 {
		t.Fatalf("%d sequences never finished", c.nLive)
	}
	return logs, c
}

// checkKV asserts that block accounting is consistent and within capacity.
func checkKV(t *testing.T, c *core) {
	t.Helper()
	if c.freeBlocks < 0 || c.freeBlocks > c.totalBlocks {
		t.Fatalf("free blocks %d outside 0..%d", c.freeBlocks, c.totalBlocks)
	}
	held := 0
	for _, s := range c.running {
		held += s.private
		if s.private+s.nref < c.blocksFor(s.kvTokens) {
			t.Fatalf("sequence holds %d blocks for %d cached tokens", s.private+s.nref, s.kvTokens)
		}
	}
	for _, e := range c.cache {
		if e.refs > 0 {
			held++
		}
	}
	if held != c.totalBlocks-c.freeBlocks {
		t.Fatalf("sequences hold %d blocks, accounting says %d", held, c.totalBlocks-c.freeBlocks)
	}
	if c.lruLen > c.freeBlocks {
		t.Fatalf("%d evictable cached blocks but only %d free", c.lruLen, c.freeBlocks)
	}
}

func smallProfile(t *testing.T, prefill string, kvTokens int) Profile {
	p := mustProfile(t, "textbook")
	p.Engine.Prefill = prefill
	p.Engine.KVCacheTokens = kvTokens
	p.Engine.MaxBatchedTokens = 512
	p.Engine.MaxNumSeqs = 16
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKVPressure overloads a small KV cache: usage never exceeds capacity, sequences are
// preempted and recomputed, and every ignore_eos request still gets exactly max_tokens.
func TestKVPressure(t *testing.T) {
	for _, prefill := range []string{PrefillColocated, PrefillDisaggregated} {
		t.Run(prefill, func(t *testing.T) {
			p := smallProfile(t, prefill, 2048)
			var arr []arrival
			for i := range 60 {
				arr = append(arr, arrival{at: time.Duration(i%7) * time.Millisecond,
					req: SeqRequest{PromptTokens: 100 + 37*(i%11), MaxTokens: 50 + 29*(i%13), IgnoreEOS: true}})
			}
			logs, c := drive(t, p, arr)
			for i, l := range logs {
				if l.tokens != arr[i].req.MaxTokens || !l.done {
					t.Errorf("request %d: %d tokens (done %v), want exactly %d", i, l.tokens, l.done, arr[i].req.MaxTokens)
				}
			}
			if c.stats.Preemptions == 0 {
				t.Error("no preemptions under KV pressure")
			}
			if c.freeBlocks != c.totalBlocks {
				t.Errorf("%d of %d blocks free at the end", c.freeBlocks, c.totalBlocks)
			}
			t.Logf("%d preemptions", c.stats.Preemptions)
		})
	}
}

// TestFIFOAdmission: with room for two sequences at a time, requests start in
// submission order whatever their lengths.
func TestFIFOAdmission(t *testing.T) {
	p := smallProfile(t, PrefillColocated, 100000)
	p.Engine.MaxNumSeqs = 2
	var arr []arrival
	for i := range 10 {
		arr = append(arr, arrival{req: SeqRequest{PromptTokens: 500 - 40*i, MaxTokens: 5 + 3*(i%4), IgnoreEOS: true}})
	}
	logs, _ := drive(t, p, arr)
	for i := 1; i < len(logs); i++ {
		if logs[i].times[0] < logs[i-1].times[0] {
			t.Errorf("request %d's first token (%v) came before request %d's (%v)", i, logs[i].times[0], i-1, logs[i-1].times[0])
		}
	}
}

// TestPreemptNewestRequeuesFront: when a running sequence needs a block and none is free,
// the newest running sequence is preempted and put at the head of the waiting queue.
func TestPreemptNewestRequeuesFront(t *testing.T) {
	p := smallProfile(t, PrefillColocated, 64) // 4 blocks of 16
	c, err := newCore(p, func(*seq, time.Duration, int, bool) {})
	if err != nil {
		t.Fatal(err)
	}
	mk := func() *seq {
		s, err := c.newSeq(&SeqRequest{PromptTokens: 16, MaxTokens: 16, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		c.submit(s, 0)
		return s
	}
	a, b, later := mk(), mk(), mk()
	// Two prefills of one block each, then decodes: a and b soon need a second block each,
	// and the third sequence, admitted too, holds the rest.
	for c.stats.Preemptions == 0 {
		tc, ok := c.next()
		if !ok {
			c.kick(0)
			continue
		}
		c.process(tc)
		c.kick(tc)
		checkKV(t, c)
	}
	if later.state != stWaiting || c.waiting.front() != later {
		t.Fatalf("preempted: a %v b %v later %v; waiting head is the newest? %v", a.state, b.state, later.state, c.waiting.len() > 0 && c.waiting.front() == later)
	}
	if later.kvTokens != 0 || later.prefillLeft != later.prompt+later.generated {
		t.Errorf("preempted sequence keeps %d cached tokens, will prefill %d (want 0 and %d)", later.kvTokens, later.prefillLeft, later.prompt+later.generated)
	}
	if a.state != stRunning || b.state != stRunning {
		t.Errorf("older sequences not running: %v %v", a.state, b.state)
	}
}

// TestRandomLengthsSeeded: without ignore_eos a sequence stops at a seeded random length
// within max_tokens ("stop"), the same for the same seed.
func TestRandomLengthsSeeded(t *testing.T) {
	lengths := func(seed int64) []int {
		p := smallProfile(t, PrefillColocated, 100000)
		p.Seed = seed
		var arr []arrival
		for range 50 {
			arr = append(arr, arrival{req: SeqRequest{PromptTokens: 10, MaxTokens: 40}})
		}
		logs, _ := drive(t, p, arr)
		var out []int
		for _, l := range logs {
			out = append(out, l.tokens)
		}
		return out
	}
	a, b, c := lengths(1), lengths(1), lengths(2)
	same, differ, short := true, false, 0
	for i := range a {
		if a[i] < 1 || a[i] > 40 {
			t.Fatalf("length %d outside 1..40", a[i])
		}
		same = same && a[i] == b[i]
		differ = differ || a[i] != c[i]
		if a[i] < 40 {
			short++
		}
	}
	if !same || !differ || short < 40 {
		t.Errorf("seeded lengths: same seed equal %v, other seed differs %v, %d of 50 stopped early", same, differ, short)
	}
}

// TestDisaggregatedDecodeNeverWaits: a long prompt arriving mid-decode stalls the running
// sequence's next token when prefill is colocated, and not at all when disaggregated.
func TestDisaggregatedDecodeNeverWaits(t *testing.T) {
	gap := func(prefill string) time.Duration {
		p := smallProfile(t, prefill, 100000)
		p.Engine.MaxBatchedTokens = 8192
		arr := []arrival{
			{at: 0, req: SeqRequest{PromptTokens: 10, MaxTokens: 60, IgnoreEOS: true}},
			{at: 100 * time.Millisecond, req: SeqRequest{PromptTokens: 4000, MaxTokens: 2, IgnoreEOS: true}},
		}
		logs, _ := drive(t, p, arr)
		var worst time.Duration
		ts := logs[0].times
		for i := 1; i < len(ts); i++ {
			worst = max(worst, ts[i]-ts[i-1])
		}
		return worst
	}
	colo, dis := gap(PrefillColocated), gap(PrefillDisaggregated)
	// Colocated: the 4000-token prefill (80 ms) shares a step with the decode.
	if colo < 80*time.Millisecond {
		t.Errorf("colocated: largest inter-token gap %v, want the 80 ms prefill in it", colo)
	}
	if dis > 8960*time.Microsecond {
		t.Errorf("disaggregated: largest inter-token gap %v, want at most one two-sequence decode step", dis)
	}
}

// TestPrefixCaching: requests sharing a prompt prefix skip its prefill once it is cached.
func TestPrefixCaching(t *testing.T) {
	p := smallProfile(t, PrefillColocated, 100000)
	p.Engine.PrefixCaching = true
	hashes := make([]uint64, 30) // 480 tokens of shared prefix
	for i := range hashes {
		hashes[i] = uint64(7)<<32 | uint64(i)
	}
	var arr []arrival
	for i := range 5 {
		arr = append(arr, arrival{at: time.Duration(i) * time.Second, req: SeqRequest{PromptTokens: 500, MaxTokens: 3, IgnoreEOS: true, PrefixHashes: hashes}})
	}
	logs, c := drive(t, p, arr)
	ttft := func(i int) time.Duration { return logs[i].times[0] - arr[i].at }
	if ttft(0) != 10*time.Millisecond {
		t.Errorf("first request TTFT %v, want 500 × 0.02 ms", ttft(0))
	}
	for i := 1; i < 5; i++ {
		if ttft(i) != 400*time.Microsecond { // 20 uncached tokens
			t.Errorf("request %d TTFT %v, want 0.4 ms (prefix cached)", i, ttft(i))
		}
	}
	if c.stats.PrefixHits != 4*480 || c.stats.PrefixQueries != 5*500 {
		t.Errorf("prefix hits %d of %d queried tokens", c.stats.PrefixHits, c.stats.PrefixQueries)
	}
	// Cached blocks nobody holds still count as free, and are evicted when needed.
	if c.freeBlocks != c.totalBlocks || c.lruLen != 30 {
		t.Errorf("free %d of %d, %d evictable cached", c.freeBlocks, c.totalBlocks, c.lruLen)
	}
}

func TestSubmitRejects(t *testing.T) {
	p := smallProfile(t, PrefillColocated, 1024)
	c, _ := newCore(p, nil)
	for _, r := range []SeqRequest{{PromptTokens: 0, MaxTokens: 5}, {PromptTokens: 5, MaxTokens: 0}, {PromptTokens: 1000, MaxTokens: 100}} {
		if _, err := c.newSeq(&r); err == nil {
			t.Errorf("%+v accepted", r)
		}
	}
}

// TestTruncatePrompts: a deployment that cuts long prompts (Ollama past num_ctx) serves a
// prompt past max_model_len as one of max_model_len tokens; one that refuses them refuses.
func TestTruncatePrompts(t *testing.T) {
	p := smallProfile(t, PrefillColocated, 1024)
	p.Deployment.MaxModelLen = 256
	c, _ := newCore(p, nil)
	if _, err := c.newSeq(&SeqRequest{PromptTokens: 1000, MaxTokens: 16}); err == nil || !strings.Contains(err.Error(), "max_model_len") {
		t.Errorf("refusing deployment took a 1000-token prompt over max_model_len 256: %v", err)
	}
	p.Deployment.TruncatePrompts = true
	c, _ = newCore(p, nil)
	s, err := c.newSeq(&SeqRequest{PromptTokens: 1000, MaxTokens: 16, IgnoreEOS: true, PrefixHashes: []uint64{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if s.prompt != 256 || s.target != 16 || len(s.hashes) != 0 {
		t.Errorf("cut prompt: %d tokens, %d to generate, prefix %v; want 256, 16 and no prefix (its start is gone)", s.prompt, s.target, s.hashes)
	}
	if s, err := c.newSeq(&SeqRequest{PromptTokens: 100, MaxTokens: 16}); err != nil || s.prompt != 100 {
		t.Errorf("a prompt within max_model_len is served whole: %v", err)
	}
}

// TestBatchBeyondTheTokenBudget: TensorRT-LLM runs more sequences than its step's token
// budget (MLPerf's H200 Llama-2-70B: batch 2048, max_num_tokens 1536); vLLM refuses to
// start so. With engine.kind tensorrt-llm each step decodes the oldest sequences the budget
// allows, no step exceeds it, and every request still gets all its tokens; with vLLM's kind
// the profile is refused and says which engine runs it.
func TestBatchBeyondTheTokenBudget(t *testing.T) {
	p := smallProfile(t, PrefillColocated, 100000)
	p.Engine.MaxNumSeqs, p.Engine.MaxBatchedTokens = 16, 8
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "engine.kind: tensorrt-llm") {
		t.Fatalf("vLLM's kind: %v, want a refusal naming the engine that runs it", err)
	}
	p.Engine.Kind = EngineTensorRTLLM
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	var arr []arrival
	for range 12 {
		arr = append(arr, arrival{req: SeqRequest{PromptTokens: 4, MaxTokens: 20, IgnoreEOS: true}})
	}
	logs, c := drive(t, p, arr)
	for i, l := range logs {
		if l.tokens != 20 || !l.done {
			t.Errorf("request %d: %d tokens (done %v), want 20", i, l.tokens, l.done)
		}
	}
	// A step's tokens come out at its end: never more than the budget at one instant.
	perStep := map[time.Duration]int{}
	for _, l := range logs {
		for _, at := range l.times {
			perStep[at]++
		}
	}
	for at, n := range perStep {
		if n > 8 {
			t.Errorf("%d tokens at %v: a step past its budget of 8", n, at)
		}
	}
	if len(perStep) < 30 {
		t.Errorf("%d steps for 240 tokens at 8 a step", len(perStep))
	}
	if c.freeBlocks != c.totalBlocks {
		t.Errorf("%d of %d blocks free at the end", c.freeBlocks, c.totalBlocks)
	}
}

// firstTokenStep is the step of request 0's (A's) whose end brought request i's first
// token, counting from 1.
func firstTokenStep(t *testing.T, logs []*tokenLog, i int) int {
	t.Helper()
	for k, at := range logs[0].times {
		if at == logs[i].times[0] {
			return k + 1
		}
	}
	t.Fatalf("request %d's first token (%v) is at none of A's steps", i, logs[i].times[0])
	return 0
}

// TestRecvInterval: with engine.recv_interval 10, a request arriving while another decodes
// waits for the scheduler's next intake, 10 decode-only steps after the last; one arriving
// during a step with prefill work is taken in at the next step; an idle engine takes a
// request in at once.
func TestRecvInterval(t *testing.T) {
	run := func(interval int) []*tokenLog {
		p := smallProfile(t, PrefillColocated, 100000)
		p.Engine.RecvInterval = interval
		// A decodes alone; B arrives during A's 4th step; C during the step that prefills B.
		a := SeqRequest{PromptTokens: 100, MaxTokens: 40, IgnoreEOS: true}
		probe, _ := drive(t, p, []arrival{{req: a}})
		at := func(step int) time.Duration { return probe[0].times[step-2] + time.Microsecond }
		arr := []arrival{{req: a}, {at: at(4), req: SeqRequest{PromptTokens: 50, MaxTokens: 5, IgnoreEOS: true}}}
		logs, _ := drive(t, p, arr)
		// C arrives during the step that prefills B (B's first token ends it).
		bFirst := logs[1].times[0]
		arr = append(arr, arrival{at: bFirst - time.Microsecond, req: SeqRequest{PromptTokens: 50, MaxTokens: 5, IgnoreEOS: true}})
		logs, _ = drive(t, p, arr)
		return logs
	}
	step := func(logs []*tokenLog, i int) int { return firstTokenStep(t, logs, i) }
	every := run(0)
	if b, c := step(every, 1), step(every, 2); b != 5 || c != 6 {
		t.Errorf("every step: B's first token at step %d, C's at %d; want 5 and 6 (each the step after its arrival)", b, c)
	}
	ten := run(10)
	// Step 1 prefills A, so the intake before step 2 resets the count; steps 2–11 decode.
	if b, c := step(ten, 1), step(ten, 2); b != 12 || c != 13 {
		t.Errorf("recv_interval 10: B's first token at step %d, C's at %d; want 12 (10 decode-only steps after the intake before step 2) and 13 (the step after B's prefill)", b, c)
	}
	if every[0].times[0] != ten[0].times[0] {
		t.Errorf("an idle engine's request: first token at %v with recv_interval 10, %v without; want the same", ten[0].times[0], every[0].times[0])
	}
}

// TestDPBalanceWait: with DP attention over 4 groups and engine.dp_balance_wait 10, a new
// request is held until there is one for every group, all four then prefilling in the
// same step, or until it has waited 10 steps.
func TestDPBalanceWait(t *testing.T) {
	m, _ := ModelPreset("gpt-oss-120b")
	g, _ := GPUPreset("h100")
	p := Profile{Name: "t", Model: m, GPU: g, Seed: 1, Engine: defaultEngine(), Deployment: defaultDeployment(), Cost: CostConfig{Kind: CostRoofline, Roofline: DefaultRooflineParams()}}
	p.Engine.DPBalanceWait = 10
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "engine.dp_balance_wait: balances new requests over DP attention groups") {
		t.Errorf("dp_balance_wait without dp: %v", err)
	}
	p.Deployment.DP = 4
	short := SeqRequest{PromptTokens: 64, MaxTokens: 4, IgnoreEOS: true}
	a := SeqRequest{PromptTokens: 64, MaxTokens: 40, IgnoreEOS: true}
	probe, _ := drive(t, p, []arrival{{req: a}})
	during := func(step int) time.Duration { return probe[0].times[step-2] + time.Microsecond }
	firstStep := func(logs []*tokenLog, i int) int { return firstTokenStep(t, logs, i) }
	four := []arrival{{req: a}, {at: during(3), req: short}, {at: during(4), req: short}, {at: during(5), req: short}, {at: during(6), req: short}}
	lone := []arrival{{req: a}, {at: during(3), req: short}}
	// While the arrivals are held A runs alone, so its steps are the probe's until they are
	// taken in. Without the wait each starts at the step after its arrival: B at 4, the
	// others after it (B's prefill stretches step 4 over their arrivals).
	p.Engine.DPBalanceWait = 0
	logs, _ := drive(t, p, four)
	if b, e := firstStep(logs, 1), firstStep(logs, 4); b != 4 || e <= b {
		t.Errorf("no wait: B's first token at A's step %d (want 4), E's at %d (want later)", b, e)
	}
	for _, c := range []struct {
		wait     int
		arrivals []arrival
		want     []int // each later request's first token, by A's step
	}{
		{10, four, []int{7, 7, 7, 7}}, // held until the fourth, then all in one step
		{10, lone, []int{13}},         // arrived with 2 steps done: taken in after 12
	} {
		p.Engine.DPBalanceWait = c.wait
		logs, _ := drive(t, p, c.arrivals)
		var got []int
		for i := 1; i < len(logs); i++ {
			got = append(got, firstStep(logs, i))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("dp_balance_wait %d, %d arrivals: first tokens at A's steps %v, want %v", c.wait, len(c.arrivals)-1, got, c.want)
		}
	}
}
