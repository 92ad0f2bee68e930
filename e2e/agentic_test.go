package e2e

// An agentic tool loop on real servers: tasks of a few calls, each answer followed by a
// tool's latency and its result appended to the task's context, the calls offering tools
// (--tools). What the tiny model answers is the server's business (docs/real-servers.md: on
// llama-server it answers text); these tests check what llmbench must do whatever it is:
// every call of every task recorded, in order, with its tool-call tokens, and each task's
// time the sum of its calls' end-to-end latencies and its tools' latencies.

import (
	"math"
	"sort"
	"testing"
	"time"
)

// TestLlamaCppAgenticToolLoop: tasks of 3 calls, 50 ms tools, 32-token results, 2 at a
// time, over chat completions offering 2 functions.
func TestLlamaCppAgenticToolLoop(t *testing.T) {
	s := llamacppTarget(t)
	run := runBench(t, s, "openai-chat", load{concurrency: 2, requests: 12, input: 64, output: 16}, agenticFlags...)
	run.checkTasks(t, 3, 50*time.Millisecond)
	run.checkToolCalls(t)
}

// TestOllamaAgenticToolLoop: the same against Ollama, on a model whose template takes tools.
func TestOllamaAgenticToolLoop(t *testing.T) {
	o := ollamaTarget(t)
	o.model = createToolsModel(t, o)
	run := runBench(t, o, "openai-chat", load{concurrency: 2, requests: 12, input: 64, output: 16}, agenticFlags...)
	run.checkTasks(t, 3, 50*time.Millisecond)
	run.checkToolCalls(t)
}

var agenticFlags = []string{"--workload", "agentic", "--calls-per-task", "3", "--tool-latency", "50",
	"--tool-result-tokens", "32", "--tools", "2"}

// checkTasks: every task's calls are 1..calls, recorded without error, the last marked
// final; each call after the first waited its tool's latency after the call before ended;
// the task took the sum of its calls' end-to-end latencies and tool latencies (to the
// scheduling slack of a live run); summary.json counts the tasks completed.
func (run *benchRun) checkTasks(t *testing.T, calls int, tool time.Duration) {
	t.Helper()
	tasks := map[int][]rec{}
	for _, r := range run.recs {
		if r.Error != nil {
			t.Errorf("task %d call %d failed: %+v", r.Task, r.Call, r.Error)
		}
		tasks[int(r.Task)] = append(tasks[int(r.Task)], r)
	}
	if len(tasks) == 0 {
		t.Fatal("no task recorded")
	}
	done := 0
	for id, rs := range tasks {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Call < rs[j].Call })
		if len(rs) != calls || !rs[len(rs)-1].FinalCall {
			t.Errorf("task %d: %d calls (final %t), want %d with the last final", id, len(rs), rs[len(rs)-1].FinalCall, calls)
			continue
		}
		done++
		var model, tools time.Duration
		for i, r := range rs {
			if int(r.Call) != i+1 {
				t.Errorf("task %d: call %d at position %d", id, r.Call, i+1)
			}
			model += r.Done - r.Sent
			if i > 0 {
				tools += r.ToolTime
				if r.ToolTime != tool || r.Sent-rs[i-1].Done < tool {
					t.Errorf("task %d call %d: tool %v, sent %v after the call before ended; want %v at least", id, r.Call, r.ToolTime, r.Sent-rs[i-1].Done, tool)
				}
			}
		}
		span := rs[len(rs)-1].Done - rs[0].Sent
		// A live run sends each call when its tool is done; what it adds is the dispatcher's
		// lateness, a few ms on a loaded machine per call.
		if slack := span - model - tools; slack < 0 || slack > time.Duration(calls)*20*time.Millisecond {
			t.Errorf("task %d took %v: its calls %v and tools %v leave %v", id, span, model, tools, slack)
		}
	}
	level := run.summary["levels"].([]any)[0].(map[string]any)
	tk, _ := level["tasks"].(map[string]any)
	if got, _ := tk["completed"].(float64); int(math.Round(got)) != done {
		t.Errorf("summary.json levels[0].tasks.completed %v, want the %d tasks recorded whole", tk["completed"], done)
	}
	t.Logf("%d tasks of %d calls recorded whole", done, calls)
}
