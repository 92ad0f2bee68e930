package metrics

import (
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// call is a record of an agentic task's call: due and sent at sent, first token ttft
// later, done at done.
func call(task, c, sub int, sent, ttft, done, tool time.Duration, in int, final bool) record.Record {
	r := record.Record{Task: int32(task), Call: int16(c), Sub: int16(sub), Scheduled: sent, Sent: sent, Done: done,
		ToolTime: tool, FinalCall: final, InputTokens: in, OutputTokens: 2, OutputTokensSource: record.SourceUsage}
	r.Events.Base = sent
	r.Events.Append(sent+ttft, 1)
	r.Events.Append(done, 1)
	return r
}

// TestTaskFigures: a hand-built task of three calls with tools of 200 ms and 500 ms between
// them takes its calls' E2E latencies plus its tools; a task with a fan-out of two counts
// the step's span once in the model's time; a task whose call failed is failed; the
// positions' TTFT and context come from their calls; the task SLO terms judge them.
func TestTaskFigures(t *testing.T) {
	ms := time.Millisecond
	recs := []record.Record{
		// Task 0: 1 s + 200 ms tool + 2 s + 500 ms tool + 1.5 s = 5.2 s.
		call(0, 1, 0, 0, 100*ms, 1000*ms, 0, 1000, false),
		call(0, 2, 0, 1200*ms, 200*ms, 3200*ms, 200*ms, 2000, false),
		call(0, 3, 0, 3700*ms, 300*ms, 5200*ms, 500*ms, 3000, true),
		// Task 1: a first call, two sub-agents (one 1 s, one 3 s), the joining call.
		call(1, 1, 0, 0, 100*ms, 1000*ms, 0, 1000, false),
		call(1, 2, 1, 1000*ms, 100*ms, 2000*ms, 0, 1500, false),
		call(1, 2, 2, 1000*ms, 100*ms, 4000*ms, 0, 1500, false),
		call(1, 3, 0, 4000*ms, 300*ms, 5000*ms, 0, 2500, true),
		// Task 2 failed on its second call.
		call(2, 1, 0, 0, 100*ms, 1000*ms, 0, 1000, false),
	}
	bad := call(2, 2, 0, 1100*ms, 0, 1200*ms, 100*ms, 2000, false)
	bad.Error = &record.Error{Kind: record.KindHTTPStatus, Status: 500}
	recs = append(recs, bad)
	// Task 3 was cut off by the end of the run: unfinished, not failed.
	cut := call(3, 1, 0, 0, 100*ms, 500*ms, 0, 1000, false)
	cut.Error = &record.Error{Kind: record.KindCanceled, Message: "interrupted"}
	recs = append(recs, cut)
	slos, err := ParseSLOs("task<=5100ms,task:p100<=6s,ttft:p50<=1s")
	if err != nil {
		t.Fatal(err)
	}
	lv := Aggregate(recs, Config{SLOs: slos})
	ts := lv.Tasks
	if ts == nil {
		t.Fatal("no task figures")
	}
	if ts.Completed != 2 || ts.Failed != 1 || ts.Unfinished != 1 {
		t.Fatalf("completed %d failed %d unfinished %d, want 2, 1, 1", ts.Completed, ts.Failed, ts.Unfinished)
	}
	if ts.Task.Max != 5200 || ts.Task.Min != 5000 {
		t.Errorf("task_ms min %v max %v, want 5000 and 5200", ts.Task.Min, ts.Task.Max)
	}
	// Task 0: model 1000+2000+1500 = 4500, tool 700: their sum is its 5200 ms.
	if ts.Model.Max != 5000 || ts.Tool.Max != 700 || ts.Model.Min != 4500 {
		t.Errorf("model_ms %v..%v tool_ms max %v, want 4500..5000 (task 1: 1 s, the fan-out's 3 s, 1 s) and 700", ts.Model.Min, ts.Model.Max, ts.Tool.Max)
	}
	if ts.CallsPerTask.Min != 3 || ts.CallsPerTask.Max != 4 {
		t.Errorf("calls per task %v..%v, want 3..4", ts.CallsPerTask.Min, ts.CallsPerTask.Max)
	}
	if len(ts.ByPosition) != 3 || ts.ByPosition[1].Completed != 3 || ts.ByPosition[2].TTFT.Max != 300 || *ts.ByPosition[0].InputTokensMean != 1000 {
		t.Errorf("by position: %+v", ts.ByPosition)
	}
	if ts.Good == nil || *ts.Good != 1 || *ts.GoodFraction != 1.0/3 {
		t.Errorf("good tasks %v (fraction %v), want 1 of 3 within task<=5100ms", ts.Good, ts.GoodFraction)
	}
	if lv.SLO == nil || !lv.SLO.Pass || lv.SLO.Terms[0].Term != "task:p100<=6s" {
		t.Errorf("verdict %+v, want task:p100<=6s passed (the slowest of 2 tasks: a P100 needs no more)", lv.SLO)
	}
	// The task bound judges tasks, not requests: every completed request is good.
	if lv.GoodRequests != nil {
		t.Errorf("a task bound alone made %d good requests, want none judged", *lv.GoodRequests)
	}
	if ts.TasksPerS <= 0 {
		t.Errorf("tasks/s %v", ts.TasksPerS)
	}
	p := &Price{GPU: &GPUPrice{USDPerGPUHour: 3.6, GPUs: 1}}
	if c := p.Cost(lv, slos); c.PerTask == nil || *c.PerTask != 3.6/3600/ts.TasksPerS {
		t.Errorf("cost per task %v, want %v", c.PerTask, 3.6/3600/ts.TasksPerS)
	}
	if _, err := ParseSLOs("tsak<=60s"); err == nil {
		t.Error("a misspelt task term was taken")
	}
	if plain := Aggregate(recs[:0], Config{}); plain.Tasks != nil {
		t.Error("a level without tasks has task figures")
	}
}

// TestTaskWindow: a window judges the tasks that ended in it (plan's steady and SLO windows
// hold task terms as they hold per-call ones).
func TestTaskWindow(t *testing.T) {
	s := time.Second
	recs := []record.Record{
		call(0, 1, 0, 0, 100*time.Millisecond, 2*s, 0, 1000, true),     // a 2 s task ending at 2 s
		call(1, 1, 0, 10*s, 100*time.Millisecond, 19*s, 0, 1000, true), // a 9 s task ending at 19 s
	}
	slos, err := ParseSLOs("task:p100<=5s")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAggregator(Config{SLOs: slos})
	for i := range recs {
		a.Add(&recs[i])
	}
	if lv := a.Level(); lv.SLO == nil || lv.SLO.Pass {
		t.Errorf("whole level: verdict %+v, want task:p100<=5s failed by the 9 s task", lv.SLO)
	}
	if w := a.Window(0, 5*s); w.SLO == nil || !w.SLO.Pass || *w.SLO.Terms[0].Value != 2000 {
		t.Errorf("window 0-5 s: verdict %+v, want the 2 s task alone, passing", w.SLO)
	}
	if w := a.Window(10*s, 20*s); w.SLO == nil || w.SLO.Pass {
		t.Errorf("window 10-20 s: verdict %+v, want the 9 s task, failing", w.SLO)
	}
}
