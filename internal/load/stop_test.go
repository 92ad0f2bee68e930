package load

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// textbookCapacity is the textbook profile's capacity in requests/s for 512-token prompts
// and 100-token outputs, worked by hand: prefill is disaggregated (10.24 ms a request, on
// its own), and a decode step of b sequences takes 8 × (1 + 0.12 (b − 1)) ms for b tokens,
// so decode throughput grows with the batch up to its cap of 256 sequences: 256 tokens per
// 8 × (1 + 0.12 × 255) = 252.8 ms, 1012.66 tokens/s. Each request decodes 99 tokens (its
// first comes from prefill): 1012.66 / 99 = 10.229 requests/s.
const textbookCapacity = 256 / (8 * (1 + 0.12*255) / 1000) / 99

// TestOversaturationLadder: on the textbook profile, a Poisson rate ladder past capacity
// is stopped as oversaturated within two levels of capacity and never below 90% of it,
// for every seed; the levels below stop only by their length.
func TestOversaturationLadder(t *testing.T) {
	p := simProfile(t, "textbook")
	fracs := []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2}
	capIdx := 5 // the first level at or above capacity
	seeds := 60
	for seed := range seeds {
		stopped := -1
		var at time.Duration
		for i, f := range fracs {
			lvl := Level{Index: i, Rate: f * textbookCapacity, Arrival: schedule.Arrival{Kind: "poisson"},
				Duration: 300 * time.Second, Seed: int64(1000*seed + i), DetectSaturation: true}
			var last time.Duration
			_, reason, err := simulateLevel(context.Background(), p, lvl, 0, fixedSource{in: 512, out: 100},
				func(r *record.Record) { last = max(last, r.Scheduled) })
			if err != nil {
				t.Fatal(err)
			}
			if reason == EndOversaturated {
				stopped, at = i, last
				break
			}
			if reason != EndDuration {
				t.Fatalf("seed %d, %.2f × capacity: end reason %q", seed, f, reason)
			}
		}
		if stopped < 0 {
			t.Fatalf("seed %d: no level stopped as oversaturated", seed)
		}
		t.Logf("seed %d: stopped at %.2f × capacity (%.2f req/s), after %.1f s", seed, fracs[stopped], fracs[stopped]*textbookCapacity, at.Seconds())
		if fracs[stopped] < 0.9 || stopped > capIdx+2 {
			t.Errorf("seed %d: stopped at %.2f × capacity (level %d): want at or above 0.9 and at most level %d", seed, fracs[stopped], stopped, capIdx+2)
		}
	}
}

// linear16Capacity is bench/linear16.yaml's capacity in requests/s for 512 → 100-token
// requests: 16 sequences decode 16 tokens per 8 × (1 + 0.11 × 15) = 21.2 ms step, 99 tokens
// each (the first comes with the prefill), 7.62 req/s, less the prefill chunks that join
// the steps: measured over 300 s at 14 req/s, 7.2 req/s.
const linear16Capacity = 7.1

// disagg16Capacity is bench/disagg16.yaml's capacity in requests/s for 512 → 100-token
// requests: 16 sequences decode 16 tokens per 8 × (1 + 0.12 × 15) = 22.4 ms step, 99 tokens
// each (the first comes from the prefill pool), 7.2 req/s; measured over 60 s at 14 req/s,
// 7.17 req/s.
const disagg16Capacity = 7.1

// TestOversaturationWithinAMinute: a slot-bound server's growing backlog is found within a
// 60 s level well past its capacity (10 and 14 req/s, about 1.4 and 2 ×), and a level at
// 0.9 × capacity is not stopped, over 60 seeds each: where requests queue before their first
// token (linear16) and where they queue after it, for a decode slot (disagg16: TTFT stays
// flat and the decode pace keeps slowing, so only the throughput shows the server full).
func TestOversaturationWithinAMinute(t *testing.T) {
	for _, prof := range []struct {
		file     string
		capacity float64
	}{{"linear16", linear16Capacity}, {"disagg16", disagg16Capacity}} {
		t.Run(prof.file, func(t *testing.T) {
			p, err := sim.LoadProfile("../../bench/" + prof.file + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			oversaturationWithinAMinute(t, p, prof.capacity)
		})
	}
}

func oversaturationWithinAMinute(t *testing.T, p sim.Profile, capacity float64) {
	for _, tc := range []struct {
		rate    float64
		atLeast int // levels of 60 stopped as oversaturated
		atMost  int
	}{{0.9 * capacity, 0, 1}, {10, 57, 60}, {14, 57, 60}} {
		stopped := 0
		var after time.Duration
		for seed := range 60 {
			lvl := Level{Rate: tc.rate, Arrival: schedule.Arrival{Kind: "poisson"}, Duration: time.Minute,
				Seed: int64(1000*seed + 7), DetectSaturation: true}
			var last time.Duration
			_, reason, err := simulateLevel(context.Background(), p, lvl, 0, fixedSource{in: 512, out: 100},
				func(r *record.Record) { last = max(last, r.Scheduled) })
			if err != nil {
				t.Fatal(err)
			}
			switch reason {
			case EndOversaturated:
				stopped++
				after += last
			case EndDuration:
			default:
				t.Fatalf("%.2f req/s, seed %d: end reason %q", tc.rate, seed, reason)
			}
		}
		t.Logf("%.2f req/s: %d of 60 levels stopped as oversaturated, after %.1f s on average", tc.rate, stopped, after.Seconds()/float64(max(stopped, 1)))
		if stopped < tc.atLeast || stopped > tc.atMost {
			t.Errorf("%.2f req/s: %d of 60 levels stopped as oversaturated, want %d to %d", tc.rate, stopped, tc.atLeast, tc.atMost)
		}
	}
}

// TestPaceSettled: the short wait needs the server's pace to have settled; a pace that keeps
// slowing (a batch still filling) is left to the long wait.
func TestPaceSettled(t *testing.T) {
	build := func(service func(i int) float64) *series {
		var s series
		var m mark
		for i := range 400 {
			m.served += service(i)
			m.nServed++
			m.backlog = float64(i)
			s.add(m)
		}
		return &s
	}
	if !build(func(int) float64 { return 2 }).settled() {
		t.Error("a steady pace: not settled")
	}
	if build(func(i int) float64 { return 2 + float64(i)/50 }).settled() {
		t.Error("a pace slowing from 2 s to 10 s: settled")
	}
	if (&series{}).settled() {
		t.Error("an empty series: settled")
	}
}

// TestServiceOf: a request's service is its decode less its longest wait between tokens
// (a wait for a decode slot is queueing, not pace); with its first and last token alone,
// the span between them; without tokens, sending to end; a failed one, none.
func TestServiceOf(t *testing.T) {
	ms := time.Millisecond
	rec := func(tokens ...time.Duration) *record.Record {
		r := &record.Record{Sent: 0, Done: 1000 * ms}
		r.Events.Base = r.Sent
		for _, at := range tokens {
			r.Events.Append(at, 1)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    *record.Record
		want time.Duration
	}{
		{"waited 600 ms for a decode slot", rec(10*ms, 610*ms, 620*ms, 630*ms), 390 * ms},
		{"first and last token only", rec(10*ms, 990*ms), 990 * ms},
		{"no tokens", rec(), 1000 * ms},
		{"failed", func() *record.Record {
			r := rec(10 * ms)
			r.Error = &record.Error{Kind: record.KindHTTPStatus}
			return r
		}(), 0},
	} {
		if got := ServiceOf(tc.r); got != tc.want {
			t.Errorf("%s: ServiceOf = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMaxErrorRate: a level whose requests fail past the limit stops after the minimum
// count; one under it runs to its end. Closed loop on the virtual clock.
func TestMaxErrorRate(t *testing.T) {
	p := simProfile(t, "textbook")
	// Prompts longer than the engine's batch fail (400) at once.
	src := funcSource(func(i int) workload.Request {
		if i%10 < 4 { // 40% fail
			return workload.Request{InputTokens: 1 << 30, OutputTokens: 10}
		}
		return workload.Request{InputTokens: 64, OutputTokens: 10}
	})
	for _, tc := range []struct {
		limit float64
		want  EndReason
		n     int // records
	}{{0.3, EndMaxErrorRate, ErrorMinimum}, {0.5, EndRequests, 200}} {
		lvl := Level{Concurrency: 1, Requests: 200, MaxErrorRate: tc.limit}
		n := 0
		_, reason, err := simulateLevel(context.Background(), p, lvl, 0, src, func(*record.Record) { n++ })
		if err != nil {
			t.Fatal(err)
		}
		if reason != tc.want || n != tc.n {
			t.Errorf("limit %g: end reason %q after %d requests, want %q after %d", tc.limit, reason, n, tc.want, tc.n)
		}
	}
}

// fleetLongOutputs is 8 replicas of Llama-2-70B in FP8 on H200 (MLPerf's Server deployment
// shape) serving requests that decode hundreds of tokens: filling it from empty takes as
// long as its longest requests, 20-40 s, while 1,000 arrivals come within 17 s.
const fleetLongOutputs = `model: llama-2-70b
gpu: h200
deployment: {tp: 1, replicas: 8, weight_dtype: fp8, kv_dtype: fp8}
engine: {kind: tensorrt-llm, max_batched_tokens: 1536, max_num_seqs: 2048}
`

// fleetLongCapacity is fleetLongOutputs' capacity in requests/s for fleetLongSource's
// requests, measured in a closed loop of 2,400 (40,000 requests, seed 1): 66-68 req/s.
const fleetLongCapacity = 66

// b200NVFP4 is one replica of MLPerf's B200 Llama-2-70B deployment (NVFP4 weights, fp8 KV
// cache, TensorRT-LLM's batch of 2,048 and 3,584 tokens a step); b200NVFP4Capacity its
// capacity for fleetLongSource's requests, measured in a closed loop of 2,048 (40,000
// requests after 8,000, seed 1): 27.1 req/s.
const (
	b200NVFP4 = `model: llama-2-70b
gpu: b200
deployment: {tp: 1, weight_dtype: nvfp4, kv_dtype: fp8}
engine: {kind: tensorrt-llm, max_batched_tokens: 3584, max_num_seqs: 2048}
`
	b200NVFP4Capacity = 27.1
)

// fleetLongSource draws inputs uniform in 1..1024 and outputs uniform in 1..585 tokens
// (mean 293, MLPerf's Llama-2-70B Server runs' TOKENS_PER_SAMPLE), the same for every seed.
func fleetLongSource(i int) workload.Request {
	r := rand.New(rand.NewPCG(7, uint64(i)))
	return workload.Request{InputTokens: 1 + r.IntN(1024), OutputTokens: 1 + r.IntN(585)}
}

// TestOversaturationNotWhileFilling: a fleet that keeps up is not stopped while it fills,
// however many arrivals that takes (before the rule weighed the fill, a fleet at 0.9 × its
// capacity was stopped within 5-17 s), and one past its capacity still is. 20 seeds each
// were measured (stop.go); a few run here.
func TestOversaturationNotWhileFilling(t *testing.T) {
	p, err := sim.ParseProfile([]byte(fleetLongOutputs), ".")
	if err != nil {
		t.Fatal(err)
	}
	one := p
	one.Deployment.Replicas = 1
	b200, err := sim.ParseProfile([]byte(b200NVFP4), ".")
	if err != nil {
		t.Fatal(err)
	}
	// Seeds 603, 303 and 803 are levels the rule stopped at 0.66, 0.9 and 0.95 × capacity
	// while its pace counted as steady, before it asked for waits that grow as well.
	for _, tc := range []struct {
		what    string
		p       sim.Profile
		rate    float64
		dur     time.Duration
		stopped bool
		seeds   []int64
	}{
		{"0.66 × the fleet's capacity", p, 0.66 * fleetLongCapacity, 2 * time.Minute, false, []int64{603}},
		{"0.95 × the fleet's capacity", p, 0.95 * fleetLongCapacity, 5 * time.Minute, false, []int64{3, 803}},
		{"0.9 × the fleet's capacity", p, 0.9 * fleetLongCapacity, 2 * time.Minute, false, []int64{303}},
		{"1.3 × the fleet's capacity", p, 1.3 * fleetLongCapacity, 5 * time.Minute, true, []int64{3, 103}},
		// One replica at the fleet's rate, 5 × its capacity: its batch grows without a slot
		// cap, every request slowing, and its first requests take minutes to finish.
		{"one replica at 0.66 × the fleet's capacity", one, 0.66 * fleetLongCapacity, 5 * time.Minute, true, []int64{3, 103}},
		// A B200 at 88 % of its capacity fills for longer than a minute, its backlog climbing
		// faster at the end while its pace already counts as steady: stopped after 26 s
		// before, where it keeps up for 600 s (docs/metrics.md).
		{"one B200 at 0.88 × its capacity", b200, 0.88 * b200NVFP4Capacity, 2 * time.Minute, false, []int64{1}},
	} {
		for _, seed := range tc.seeds {
			lvl := Level{Rate: tc.rate, Arrival: schedule.Arrival{Kind: "poisson"}, Duration: tc.dur,
				Seed: seed, DetectSaturation: true}
			srv, err := sim.NewFleet(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			var last time.Duration
			_, reason, err := RunVirtual(context.Background(), lvl, 0, funcSource(fleetLongSource), srv,
				func(r *record.Record) { last = max(last, r.Scheduled) })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s, seed %d: %s after %.1f s", tc.what, seed, reason, last.Seconds())
			if (reason == EndOversaturated) != tc.stopped {
				t.Errorf("%s, seed %d: end reason %q, want stopped %v", tc.what, seed, reason, tc.stopped)
			}
		}
	}
}

// TestParseMaxErrorRate: a fraction or a percentage strictly between 0 and 1; none is off.
func TestParseMaxErrorRate(t *testing.T) {
	for s, want := range map[string]float64{"": 0, " ": 0, "0.3": 0.3, "30%": 0.3, " 5 % ": 0.05} {
		if got, err := ParseMaxErrorRate(s); err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("%q: %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"0", "1", "100%", "-0.1", "x", "NaN"} {
		if _, err := ParseMaxErrorRate(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

// TestOversaturationWaitsTenSeconds: a backlog that grows from the start is judged after
// 1,000 arrivals at a low rate, but not before 10 s of arrivals at a high one, where 1,000
// are a few seconds, shorter than a fast fleet's batches take to settle.
func TestOversaturationWaitsTenSeconds(t *testing.T) {
	stopAt := func(rate float64) int {
		s := newStopRules(Level{Rate: rate, DetectSaturation: true})
		done := 0
		for i := 1; i <= 20000; i++ {
			n := s.next()
			if s.arrived(i-done) != "" {
				return i
			}
			if i%2 == 0 { // half of what arrives is served, a second each, in arrival order
				done++
				// It arrived at arrival i/2 and finishes at arrival i: a queue that grows.
				inSystem := time.Duration(float64(i) / 2 / rate * float64(time.Second))
				s.finished(Succeeded, time.Second, inSystem-time.Second, int(n)/2)
			}
		}
		return 0
	}
	if at := stopAt(10); at == 0 || at > 1100 {
		t.Errorf("at 10 req/s stopped at arrival %d, want within about 1,000", at)
	}
	if at := stopAt(270); at < 2700 || at > 3000 {
		t.Errorf("at 270 req/s stopped at arrival %d, want soon after 2,700 (10 s)", at)
	}
}
