package load

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/workload"
)

// turnWorkload is the real multi-turn workload in lengths-only mode, as simulate builds it.
func turnWorkload(t testing.TB, turns int, think time.Duration, in, out int) workload.Source {
	t.Helper()
	src, err := workload.New(workload.Config{InputTokens: workload.Fixed(in), OutputTokens: workload.Fixed(out),
		Turns: turns, ThinkTime: think, Seed: 3, LengthsOnly: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// replayTarget answers each request after exactly the time the simulator took for it.
type replayTarget struct {
	took map[int]time.Duration
}

func (r replayTarget) Do(ctx context.Context, start time.Time, req workload.Request, rec *record.Record) {
	rec.Sent = record.Since(start, time.Now())
	d, ok := r.took[rec.Index]
	if !ok {
		rec.Error = &record.Error{Kind: record.KindHTTPStatus, Status: 404, Message: "the simulator never sent this request"}
	} else {
		time.Sleep(d)
	}
	rec.Done = record.Since(start, time.Now())
}

// TestSimulateTurnsFollowThePlan: the simulator sends a multi-turn level exactly as
// Run does. Run against a target that answers each request in the time the
// simulator took for it must reproduce the simulator's records: the same indices, marks,
// due times and send times. And every later turn is due at the previous one's Done plus
// the think time.
func TestSimulateTurnsFollowThePlan(t *testing.T) {
	const turns, think = 3, 400 * time.Millisecond
	p := simProfile(t, "h200-llama-3.1-8b")
	src := turnWorkload(t, turns, think, 600, 120)
	for _, lvl := range []Level{
		{Concurrency: 4, Requests: 30, Warmup: 2},
		{Rate: 6, Requests: 40, Seed: 4},
		{Rate: 12, Arrival: schedule.Arrival{Kind: schedule.Gamma, Burstiness: 0.5}, Requests: 40, MaxConcurrency: 3, Seed: 8},
		{Rate: 5, Duration: 3 * time.Second, WarmupTime: 500 * time.Millisecond, Cooldown: time.Second, Seed: 2},
		{Concurrency: 3, Duration: 3 * time.Second, WarmupTime: 700 * time.Millisecond},
		{Rate: 8, Requests: 24, Shard: 1, Shards: 2, Seed: 6},
	} {
		t.Run(fmt.Sprintf("%+v", lvl), func(t *testing.T) {
			sim, _ := simulate(t, p, lvl, src)
			if len(sim) < 6 {
				t.Fatalf("%d records", len(sim))
			}
			byIdx := map[int]*record.Record{}
			took := map[int]time.Duration{}
			for _, r := range sim {
				if !r.OK() || r.Turn != r.Index%turns+1 || r.Conversation != r.Index/turns {
					t.Fatalf("record %d: conversation %d turn %d error %v", r.Index, r.Conversation, r.Turn, r.Error)
				}
				if lvl.Shards > 1 && r.Conversation%lvl.Shards != lvl.Shard {
					t.Errorf("shard %d sent conversation %d", lvl.Shard, r.Conversation)
				}
				byIdx[r.Index] = r
				took[r.Index] = r.Done - r.Sent
			}
			for _, r := range sim {
				if r.Turn == 1 {
					continue
				}
				prev, ok := byIdx[r.Index-1]
				if !ok {
					t.Fatalf("record %d sent without the turn before it", r.Index)
				}
				if r.Scheduled != prev.Done+think || r.Sent < r.Scheduled {
					t.Errorf("record %d scheduled %v sent %v; previous turn done %v", r.Index, r.Scheduled, r.Sent, prev.Done)
				}
			}
			var mu sync.Mutex
			var live []*record.Record
			synctest.Test(t, func(t *testing.T) {
				if _, err := Run(t.Context(), time.Now(), lvl, src, replayTarget{took}, func(r *record.Record) {
					mu.Lock()
					live = append(live, r)
					mu.Unlock()
				}); err != nil {
					t.Fatal(err)
				}
			})
			if len(live) != len(sim) {
				t.Errorf("Run sent %d requests, the simulator %d", len(live), len(sim))
			}
			for _, r := range live {
				s, ok := byIdx[r.Index]
				if !ok {
					t.Errorf("Run sent %d, the simulator did not", r.Index)
					continue
				}
				if r.Scheduled != s.Scheduled || r.Sent != s.Sent || r.Done != s.Done || r.Warmup != s.Warmup || r.Turn != s.Turn || r.Conversation != s.Conversation {
					t.Errorf("request %d: run scheduled %v sent %v done %v warm %v turn %d/%d; simulate %v %v %v %v %d/%d",
						r.Index, r.Scheduled, r.Sent, r.Done, r.Warmup, r.Conversation, r.Turn, s.Scheduled, s.Sent, s.Done, s.Warmup, s.Conversation, s.Turn)
				}
			}
		})
	}
}

// TestSimulateTurnsPrefixCache: with prefix caching, a later turn finds its history in the
// cache, so its TTFT stays near the first turn's instead of growing with the history.
func TestSimulateTurnsPrefixCache(t *testing.T) {
	const turns = 4
	src := turnWorkload(t, turns, time.Second, 1000, 200)
	// One user at a time, so each turn's TTFT is its own prefill and nothing else.
	lvl := Level{Concurrency: 1, Requests: 16}
	ttft := func(caching bool) []time.Duration {
		p := simProfile(t, "h200-llama-3.1-8b")
		p.Engine.PrefixCaching = caching
		recs, _ := simulate(t, p, lvl, src)
		sum := make([]time.Duration, turns)
		n := make([]int, turns)
		for _, r := range recs {
			ft, _ := r.FirstToken()
			sum[r.Turn-1] += ft - r.Sent
			n[r.Turn-1]++
		}
		for k := range sum {
			sum[k] /= time.Duration(n[k])
		}
		return sum
	}
	cold, warm := ttft(false), ttft(true)
	t.Logf("mean TTFT by turn: no prefix cache %v, prefix cache %v", cold, warm)
	// Records keep whole microseconds, so the same prefill sent at another instant can read
	// 1 µs apart.
	if d := warm[0] - cold[0]; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("first turns: TTFT %v with the cache, %v without; nothing to hit yet", warm[0], cold[0])
	}
	for k := 1; k < turns; k++ {
		if cold[k] <= cold[k-1] {
			t.Errorf("no cache: turn %d TTFT %v not above turn %d's %v (longer history)", k+1, cold[k], k, cold[k-1])
		}
		// A later turn prefills only the reply and the new message (1,200 tokens against
		// the first turn's 1,000), however long the history.
		if warm[k] >= cold[k]*3/4 || warm[k] > warm[0]*3/2 {
			t.Errorf("turn %d: TTFT %v with the cache, %v without, first turn %v", k+1, warm[k], cold[k], warm[0])
		}
	}
}

// TestTraceHashes: a trace's blocks map onto the engine's: equal hashed prefixes give
// equal engine blocks up to the last one they cover, and nothing beyond the prompt or the
// hashed blocks.
func TestTraceHashes(t *testing.T) {
	a := traceHashes([]uint64{1, 2, 3}, 64, 16, 150) // 150 of 192 hashed tokens
	b := traceHashes([]uint64{1, 2, 9}, 64, 16, 192)
	if len(a) != 9 || len(b) != 12 {
		t.Fatalf("%d and %d blocks, want 9 and 12", len(a), len(b))
	}
	for j := range 8 {
		if a[j] != b[j] {
			t.Errorf("block %d differs within the shared 128 tokens", j)
		}
	}
	if a[8] == b[8] {
		t.Error("block 8 lies in trace blocks that differ, yet hashes alike")
	}
	seen := map[uint64]bool{}
	for _, h := range b {
		if seen[h] {
			t.Error("two blocks of one prompt share a hash")
		}
		seen[h] = true
	}
	if n := len(traceHashes([]uint64{1}, 100, 16, 1000)); n != 6 {
		t.Errorf("%d blocks past a 100-token hashed prefix, want 6 (96 tokens)", n)
	}
	// A trace request's hashes reach the cache: the second of two alike prompts hits it.
	p := simProfile(t, "h200-llama-3.1-8b")
	p.Engine.PrefixCaching = true
	src := funcSource(func(i int) workload.Request {
		return workload.Request{InputTokens: 2048, OutputTokens: 4, PrefixHashes: []uint64{5, 6, 7, 8}, BlockTokens: 512}
	})
	recs, _ := simulate(t, p, Level{Concurrency: 1, Requests: 2}, src)
	first := func(r *record.Record) time.Duration { ft, _ := r.FirstToken(); return ft - r.Sent }
	if a, b := first(recs[0]), first(recs[1]); b >= a/4 {
		t.Errorf("TTFT %v then %v: the repeated trace prompt missed the cache", a, b)
	}
}
