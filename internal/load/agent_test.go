package load

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// TestTaskTimeIsCallsPlusTools: a hand-built task of three calls, the tool taking 200 ms
// before the second and 500 ms before the third, runs its calls one after another, each
// due when the one before it ended plus the tool's latency; so the task's time, from its
// first call's due time to its last call's end, is the sum of its calls' E2E latencies and
// its tool latencies, and its records carry what recomputes it.
func TestTaskTimeIsCallsPlusTools(t *testing.T) {
	tools := []time.Duration{0, 200 * time.Millisecond, 500 * time.Millisecond}
	in := []int{800, 1100, 1450}
	src := funcSource(func(i int) workload.Request {
		c, p := i/3, i%3
		tc := workload.TaskCall{Task: c, Call: p, Fan: 1, Steps: 3, Requests: 3, Stride: 3, Last: p == 2,
			ToolLatency: tools[p], Shared: in[p], ToolCall: p < 2}
		return workload.Request{InputTokens: in[p], OutputTokens: 60, ThinkTime: tools[p], Task: tc}
	})
	recs, _ := simulate(t, simProfile(t, "h200-llama-3.1-8b"), Level{Concurrency: 1, Requests: 6}, src)
	if len(recs) != 6 {
		t.Fatalf("%d records, want 6 (two tasks of three calls)", len(recs))
	}
	for task := range 2 {
		calls := recs[task*3 : task*3+3]
		var sum time.Duration
		for p, r := range calls {
			if !r.OK() || int(r.Task) != task || int(r.Call) != p+1 || r.ToolTime != tools[p] || r.FinalCall != (p == 2) {
				t.Fatalf("task %d call %d: record %+v", task, p+1, r)
			}
			if p > 0 && r.Scheduled != calls[p-1].Done+tools[p] {
				t.Errorf("task %d call %d due at %v, want the previous end %v + tool %v", task, p+1, r.Scheduled, calls[p-1].Done, tools[p])
			}
			sum += r.Done - r.Sent + r.ToolTime
		}
		if got := calls[2].Done - calls[0].Scheduled; got != sum {
			t.Errorf("task %d took %v, want calls' E2E + tools = %v", task, got, sum)
		}
	}
	// The closed loop's next task starts when the first ends.
	if recs[3].Scheduled != recs[2].Done {
		t.Errorf("second task started at %v, want the first's end %v", recs[3].Scheduled, recs[2].Done)
	}
}

// TestFanOutJoins: with --fan-out 4 the task's first answer starts four sub-agent calls at
// once, on the parent's context (the prefix cache serves them its blocks), and the parent's
// next call is due only when the last of them is back.
func TestFanOutJoins(t *testing.T) {
	src, err := workload.New(workload.Config{InputTokens: workload.Fixed(2000), OutputTokens: workload.Fixed(100), Seed: 1, LengthsOnly: true,
		Agent: workload.Agent{Calls: workload.Fixed(3), ToolLatency: workload.Fixed(300), ToolResultTokens: workload.Fixed(200), FanOut: 4}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := simProfile(t, "h200-llama-3.1-8b")
	p.Engine.PrefixCaching = true
	bs := p.Engine.BlockSize
	recs, _ := simulate(t, p, Level{Concurrency: 1, Requests: 7}, src)
	if len(recs) != 7 {
		t.Fatalf("%d records, want 7 (3 calls and 4 sub-agents)", len(recs))
	}
	first, subs, next := recs[0], recs[1:5], recs[5]
	var lastSub time.Duration
	for k, r := range subs {
		if int(r.Call) != 2 || int(r.Sub) != k+1 || r.Sent != first.Done {
			t.Errorf("sub-agent %d: call %d sub %d sent at %v, want call 2 sub %d at the first call's end %v", k+1, r.Call, r.Sub, r.Sent, k+1, first.Done)
		}
		if !r.HasCachedPromptTokens || int(r.CachedPromptTokens) < 2000/bs*bs {
			t.Errorf("sub-agent %d: %d prompt tokens from the cache (said: %v), want the parent's context", k+1, r.CachedPromptTokens, r.HasCachedPromptTokens)
		}
		lastSub = max(lastSub, r.Done)
	}
	if int(next.Call) != 3 || next.Sub != 0 || next.Scheduled != lastSub || next.ToolTime != 0 {
		t.Errorf("the parent's next call: call %d sub %d due at %v (tool %v), want call 3 at the last sub-agent's end %v", next.Call, next.Sub, next.Scheduled, next.ToolTime, lastSub)
	}
	if last := recs[6]; last.Scheduled != next.Done+300*time.Millisecond || !last.FinalCall {
		t.Errorf("the last call due at %v (final %v), want %v", last.Scheduled, last.FinalCall, next.Done+300*time.Millisecond)
	}
	// Its prompt: the context, the answer and the four answers joined, then a tool result.
	if want := 2000 + 100 + 4*100; next.InputTokens != want {
		t.Errorf("joined call's prompt %d tokens, want %d", next.InputTokens, want)
	}
}

// TestTTFTByPositionFollowsTheCostModel: alone on the engine, each call of a task is one
// prefill step of its whole context, so its TTFT is the cost model's step for that prompt and
// rises with the context call by call; with prefix caching the step prefills only what the
// cache did not hold (the record says how much it held), so TTFT grows far less.
func TestTTFTByPositionFollowsTheCostModel(t *testing.T) {
	src, err := workload.New(workload.Config{InputTokens: workload.Fixed(1000), OutputTokens: workload.Fixed(50), Seed: 1, LengthsOnly: true,
		Agent: workload.Agent{Calls: workload.Fixed(6), ToolLatency: workload.Fixed(100), ToolResultTokens: workload.Fixed(500)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, caching := range []bool{false, true} {
		p := simProfile(t, "h200-llama-3.1-8b")
		p.Engine.PrefixCaching = caching
		cost, err := p.NewCostModel()
		if err != nil {
			t.Fatal(err)
		}
		recs, _ := simulate(t, p, Level{Concurrency: 1, Requests: 6}, src)
		var prev time.Duration
		for k, r := range recs {
			if want := 1000 + k*550; r.InputTokens != want {
				t.Fatalf("call %d: context %d tokens, want %d", k+1, r.InputTokens, want)
			}
			cached := 0
			if caching {
				cached = int(r.CachedPromptTokens)
				if k > 0 && cached < r.InputTokens-550-16 {
					t.Errorf("call %d: %d of %d prompt tokens cached, want the previous context's", k+1, cached, r.InputTokens)
				}
			}
			n := r.InputTokens - cached
			want := cost.Step(sim.StepWork{PrefillSeqs: 1, PrefillTokens: n, PrefillAttn: float64(n) * (float64(cached) + float64(n)/2), PrefillContext: int64(cached)})
			ft, _ := r.FirstToken()
			ttft := ft - r.Sent
			if d := ttft - want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("caching %v, call %d (context %d, %d cached): TTFT %v, want the cost model's prefill step %v", caching, k+1, r.InputTokens, cached, ttft, want)
			}
			if !caching && k > 0 && ttft <= prev {
				t.Errorf("call %d: TTFT %v did not rise with the context from %v", k+1, ttft, prev)
			}
			prev = ttft
			t.Logf("caching %v, call %d: context %d, cached %d, TTFT %v", caching, k+1, r.InputTokens, cached, ttft)
		}
	}
}

// TestSimulateTasksFollowThePlan: the simulator sends an agentic level exactly as Run does:
// Run against a target answering each call in the time the simulator took for it
// reproduces the simulator's records — indices, tasks, calls, due and send times, marks —
// in closed and open loops, with fan-outs, bounded by count or by time.
func TestSimulateTasksFollowThePlan(t *testing.T) {
	src, err := workload.New(workload.Config{InputTokens: workload.Fixed(600), OutputTokens: workload.Fixed(40), Seed: 2, LengthsOnly: true,
		Agent: workload.Agent{Calls: workload.Dist{Kind: "uniform", A: 1, B: 4}, ToolLatency: workload.Dist{Kind: "uniform", A: 50, B: 400},
			ToolResultTokens: workload.Fixed(100), FanOut: 3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := simProfile(t, "h200-llama-3.1-8b")
	for _, lvl := range []Level{
		{Concurrency: 3, Requests: 40, Warmup: 2},
		{Rate: 2, Requests: 40, Seed: 4},
		{Rate: 3, Duration: 4 * time.Second, WarmupTime: 500 * time.Millisecond, Seed: 2},
		{Concurrency: 2, Duration: 3 * time.Second},
	} {
		t.Run(fmt.Sprintf("%+v", lvl), func(t *testing.T) {
			sim, _ := simulate(t, p, lvl, src)
			fanned := false
			for _, r := range sim {
				fanned = fanned || r.Sub > 0
			}
			if len(sim) < 10 || !fanned {
				t.Fatalf("%d records (a fan-out among them: %v)", len(sim), fanned)
			}
			byIdx := map[int]*record.Record{}
			took := map[int]time.Duration{}
			for _, r := range sim {
				if !r.OK() || r.Call == 0 {
					t.Fatalf("record %d: call %d error %v", r.Index, r.Call, r.Error)
				}
				byIdx[r.Index] = r
				took[r.Index] = r.Done - r.Sent
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
				if r.Scheduled != s.Scheduled || r.Sent != s.Sent || r.Done != s.Done || r.Warmup != s.Warmup || r.Task != s.Task || r.Call != s.Call || r.Sub != s.Sub {
					t.Errorf("request %d: run %v %v %v warm %v task %d call %d.%d; simulate %v %v %v %v %d %d.%d",
						r.Index, r.Scheduled, r.Sent, r.Done, r.Warmup, r.Task, r.Call, r.Sub, s.Scheduled, s.Sent, s.Done, s.Warmup, s.Task, s.Call, s.Sub)
				}
			}
		})
	}
}
