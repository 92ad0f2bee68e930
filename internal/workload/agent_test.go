package workload

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/fielderr"
)

func agentSource(t *testing.T, a Agent, lengthsOnly bool) Source {
	t.Helper()
	cfg := Config{InputTokens: Fixed(800), OutputTokens: Fixed(60), Seed: 5, LengthsOnly: lengthsOnly, Agent: a}
	if lengthsOnly {
		return mustNew(t, cfg, nil)
	}
	return mustNew(t, cfg, loadTok(t, "o200k_base"))
}

// TestAgentTaskShape: a task's calls follow one another on a context that grows by each
// answer and tool result, the fan-out's sub-agents share the parent's context with briefs
// of their own, the call that joins them carries their answers, tools sit between the
// parent's calls only, and a compaction replaces the context by its summary.
func TestAgentTaskShape(t *testing.T) {
	a := Agent{Calls: Fixed(5), ToolLatency: Fixed(250), ToolResultTokens: Fixed(100), FanOut: 3, CompactAt: 1400, CompactTo: 300}
	src := agentSource(t, a, true)
	if a.Stride() != 12 {
		t.Fatalf("stride %d, want 5 calls + 3 sub-agents + 4 summaries", a.Stride())
	}
	type want struct {
		call, sub, fan, in int
		tool               time.Duration
		last               bool
	}
	for i, w := range []want{
		{0, 0, 1, 800, 0, false},
		{1, 1, 3, 800 + 60 + 100, 0, false}, {1, 2, 3, 960, 0, false}, {1, 3, 3, 960, 0, false},
		{2, 0, 1, 800 + 60 + 3*60, 0, false},                      // 1040: the sub-agents' answers joined
		{3, 0, 1, 1040 + 60 + 100, 250 * time.Millisecond, false}, // 1200
		{4, 0, 1, 1200 + 60 + 100, 250 * time.Millisecond, false}, // 1360: not yet past 1400
		{5, 0, 1, 1520, 250 * time.Millisecond, false},            // 1520 passed 1400: the summarising call
		{6, 0, 1, 300, 0, true},                                   // on the summary alone
	} {
		r := src.Request(2, 12+i) // task 1 of level 2
		tc := r.Task
		if tc.Task != 1 || tc.Call != w.call || tc.Sub != w.sub || tc.Fan != w.fan || r.InputTokens != w.in ||
			tc.ToolLatency != w.tool || r.ThinkTime != w.tool || tc.Last != w.last || tc.Requests != 9 || tc.Steps != 7 || tc.ToolCall != (!w.last && w.sub == 0 && w.call != 5) {
			t.Errorf("request %d: %+v (input %d), want %+v", i, tc, r.InputTokens, w)
		}
		if want := map[bool]int{false: 60, true: 300}[w.call == 5]; r.OutputTokens != want {
			t.Errorf("request %d: %d output tokens, want %d", i, r.OutputTokens, want)
		}
	}
	if sub, parent := src.Request(2, 13).Task, src.Request(2, 12).Task; sub.Shared != 860 || sub.Epoch != 0 || parent.Shared != 800 {
		t.Errorf("sub-agent shares %d tokens (epoch %d), parent %d: want 860 and 800", sub.Shared, sub.Epoch, parent.Shared)
	}
	if sum, last := src.Request(2, 19).Task, src.Request(2, 20).Task; sum.Epoch != 0 || last.Epoch != 1 {
		t.Errorf("the summarising call's epoch %d, the compacted call's %d: want 0 (on the old context) and 1", sum.Epoch, last.Epoch)
	}
	if a, b := src.Request(2, 12), src.Request(2, 12); a.InputTokens != b.InputTokens || a.Task != b.Task {
		t.Error("a request is not a function of (level, index)")
	}
}

// TestAgentOneCallHasNoFanOut: a task of one call has no fan-out, and the indices past a
// task's own requests are empty.
func TestAgentOneCallHasNoFanOut(t *testing.T) {
	src := agentSource(t, Agent{Calls: Dist{Kind: "uniform", A: 1, B: 3}, ToolLatency: Fixed(10), ToolResultTokens: Fixed(10), FanOut: 2}, true)
	seen := map[int]bool{}
	for c := range 40 {
		first := src.Request(0, c*5).Task
		seen[first.Requests] = true
		if first.Requests == 1 && !first.Last {
			t.Errorf("task %d: one call, not the last", c)
		}
		if first.Requests != 1 && first.Requests != 4 && first.Requests != 5 {
			t.Errorf("task %d: %d requests, want 1 (no fan-out), 2+2 or 3+2", c, first.Requests)
		}
		if past := src.Request(0, c*5+first.Requests); first.Requests < 5 && past.Task.Fan != 0 {
			t.Errorf("task %d: index past its requests is a call: %+v", c, past.Task)
		}
	}
	if len(seen) != 3 {
		t.Errorf("task sizes %v, want all three of uniform:1:3", seen)
	}
}

// TestAgentText: with text, each call's messages are its context's, the same text in every
// call that carries them, alternating user and assistant, and counted exactly.
func TestAgentText(t *testing.T) {
	src := agentSource(t, Agent{Calls: Fixed(3), ToolLatency: Fixed(10), ToolResultTokens: Fixed(40), FanOut: 2}, false)
	first, sub, join := src.Request(0, 0), src.Request(0, 1), src.Request(0, 3)
	if len(first.Messages) != 1 || len(sub.Messages) != 3 || len(join.Messages) != 3 {
		t.Fatalf("messages %d, %d, %d, want 1, 3 (context, answer, brief), 3 (context, answer, results)", len(first.Messages), len(sub.Messages), len(join.Messages))
	}
	if sub.Messages[0] != first.Messages[0] || join.Messages[1] != sub.Messages[1] || sub.Messages[1].Role != "assistant" || join.Messages[2].Role != "user" {
		t.Error("the calls do not share their context's messages")
	}
	if sub.InputTokens != 800+60+40 || !strings.HasPrefix(join.Prompt, first.Prompt) {
		t.Errorf("sub-agent prompt %d tokens, want 900; the join's prompt starts with the first's: %v", sub.InputTokens, strings.HasPrefix(join.Prompt, first.Prompt))
	}
}

// TestAgentConfigErrors: every bad agentic setting is named, with what to do.
func TestAgentConfigErrors(t *testing.T) {
	cfg := Config{InputTokens: Fixed(100), OutputTokens: Fixed(10), Turns: 3, PrefixTokens: 10,
		Agent: Agent{Calls: Fixed(3), FanOut: -1, CompactAt: 100, CompactTo: 200}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Agent.ToolResultTokens: required", "fan-out: -1", "Agent.CompactTo: 200 must be in 1..99", "Turns,ThinkTime,Agent: are chat's", "shared prefixes do not combine"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestAgentTrace: recorded sessions replay as tasks in their order of first appearance,
// cycled: each call with its recorded lengths and tool latency, a fan-out's sub-agents on the
// parent's context, a prompt shorter than the context a compaction.
func TestAgentTrace(t *testing.T) {
	src := mustNew(t, Config{Dataset: "agent:testdata/agent-sessions.jsonl", Seed: 1, LengthsOnly: true}, nil)
	type want struct {
		call, sub, fan, in, out, shared, epoch int
		tool                                   time.Duration
		last                                   bool
	}
	// Stride 6: the longest session's calls (s-17: 4 parent calls and 2 sub-agents).
	for i, w := range []want{
		{0, 0, 1, 2900, 180, 2900, 0, 0, false},
		{1, 1, 2, 3200, 400, 3080, 0, 0, false},
		{1, 2, 2, 3150, 350, 3080, 0, 0, false},
		{2, 0, 1, 3850, 90, 3850, 0, 0, false},
		{3, 0, 1, 4400, 60, 4400, 0, 1250 * time.Millisecond, false},
		{4, 0, 1, 700, 60, 700, 1, 300 * time.Millisecond, true}, // shorter than the context: compacted
	} {
		r := src.Request(0, i)
		tc := r.Task
		if tc.Task != 0 || tc.Call != w.call || tc.Sub != w.sub || tc.Fan != w.fan || r.InputTokens != w.in || r.OutputTokens != w.out ||
			tc.Shared != w.shared || tc.Epoch != w.epoch || r.ThinkTime != w.tool || tc.Last != w.last || tc.Requests != 6 || tc.Steps != 5 {
			t.Errorf("s-17 request %d: %+v (in %d out %d think %v), want %+v", i, tc, r.InputTokens, r.OutputTokens, r.ThinkTime, w)
		}
	}
	if r := src.Request(0, 7); r.Task.Task != 1 || r.InputTokens != 1300 || r.ThinkTime != 800*time.Millisecond || !r.Task.Last {
		t.Errorf("task 42's second call: %+v (in %d)", r.Task, r.InputTokens)
	}
	if r := src.Request(0, 8); r.Task.Requests != 2 || r.Task.Fan != 0 {
		t.Errorf("past task 42's calls: %+v, want an empty request", r.Task)
	}
	if r := src.Request(0, 12); r.Task.Task != 2 || r.InputTokens != 2900 {
		t.Errorf("task 2 replays the first session: %+v (in %d)", r.Task, r.InputTokens)
	}
	for body, want := range map[string]string{
		`{"task": "a", "call": 2, "input_tokens": 10, "output_tokens": 5}`:  "call 2 follows call 0",
		`{"task": "a", "call": 1, "input_tokens": 10}`:                      `"input_tokens" and "output_tokens" are required`,
		`{"task": true, "call": 1, "input_tokens": 10, "output_tokens": 5}`: `"task" must name the session`,
		"{\"task\": \"a\", \"call\": 1, \"sub\": 1, \"input_tokens\": 10, \"output_tokens\": 5}\n{\"task\": \"a\", \"call\": 1, \"sub\": 2, \"input_tokens\": 10, \"output_tokens\": 5}": "a task's first and last calls are the parent's",
		`{"task": "a", "call": 1, "input_tokens": 10, "output_tokens": 5, "tool_ms": -3}`:                                                                                                `"tool_ms" -3 must be in 0..1e9`,
	} {
		path := t.TempDir() + "/s.jsonl"
		if err := os.WriteFile(path, []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := New(Config{Dataset: "agent:" + path, LengthsOnly: true}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
}

// TestAgentWithDists: the distributions read, a tool latency of 0 none, and each that does
// not read an error on its field, the others set.
func TestAgentWithDists(t *testing.T) {
	a, err := Agent{FanOut: 2}.WithDists("uniform:2:6", "0", "100")
	if err != nil || a.Calls.String() != "uniform:2:6" || !a.ToolLatency.IsZero() || a.ToolResultTokens.String() != "100" || a.FanOut != 2 {
		t.Errorf("WithDists = %+v, %v", a, err)
	}
	a, err = Agent{}.WithDists("x", "500", "y")
	fields := fielderr.Fields(err)
	if !slices.Equal(fields, []string{"Calls", "ToolResultTokens"}) || a.ToolLatency.String() != "500" {
		t.Errorf("bad calls and results: problems on %v, %+v", fields, a)
	}
}
