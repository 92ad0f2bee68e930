package metrics

import (
	"math"
	"slices"

	"github.com/llmbench/llmbench/internal/record"
)

// Keys of the task metrics (an agentic level's levels[i].tasks): SLO terms (task<=60s,
// task:p99<=60s) and the console's and CSV's names.
const (
	KeyTask      = "task"
	KeyTaskTool  = "tool"
	KeyTaskModel = "model"
)

// TaskMetric is one figure of an agentic level's tasks, derived from a completed task: its
// names and its derivation, defined once here for summary.json, the CSV, the console and
// the SLO terms.
type TaskMetric struct {
	Key   string // "task": SLO terms
	JSON  string // "task_ms": the field of levels[i].tasks and the CSV column prefix
	Short string // "task": the console's label
	Bound bool   // may carry a per-task bound (task<=60s): a task is good within it
	Of    func(t *taskAcc) int64
}

// TaskRegistry is every task metric, in summary.json order.
var TaskRegistry = []*TaskMetric{
	// From the first call's due time to the last call's end: what the task's user waited.
	{Key: KeyTask, JSON: "task_ms", Short: "task", Bound: true, Of: func(t *taskAcc) int64 { return t.last - t.first }},
	// The tools' latencies, which the task spent between its calls.
	{Key: KeyTaskTool, JSON: "tool_ms", Short: "tool", Of: func(t *taskAcc) int64 { return t.tool }},
	// In the model: each step's span from its first send to its last end (a fan-out's
	// concurrent calls count once, as the task waited for them).
	{Key: KeyTaskModel, JSON: "model_ms", Short: "model", Of: func(t *taskAcc) int64 {
		var n int64
		for _, s := range t.steps {
			if s.done >= s.sent {
				n += s.done - s.sent
			}
		}
		return n
	}},
}

// LookupTask returns the task metric of a key ("task"; "task_ms" works too).
func LookupTask(key string) (*TaskMetric, bool) {
	for _, m := range TaskRegistry {
		if key == m.Key || key == m.JSON {
			return m, true
		}
	}
	return nil, false
}

// TaskStats are an agentic level's task figures (levels[i].tasks), recomputed from the
// records' task, call, sub, tool_s and final_call fields. A task counts when none of its
// calls was warm-up; it completed when its final call did and none failed.
type TaskStats struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Unfinished tasks were still running when the level ended (no final call, no failure:
	// an interrupted run, its calls in flight canceled).
	Unfinished   int     `json:"unfinished"`
	Task         Stats   `json:"task_ms"`
	Tool         Stats   `json:"tool_ms"`
	Model        Stats   `json:"model_ms"`
	CallsPerTask Stats   `json:"calls_per_task"` // model calls of a completed task (a count, not ms)
	TasksPerS    float64 `json:"tasks_per_s"`    // completed tasks over the level's measured window
	// CostPerTask is the level's cost (levels[i].cost) per completed task, USD; null when
	// the run was not priced or no task completed.
	CostPerTask *float64 `json:"cost_per_task"`
	// Good tasks met every per-task bound (task<=60s); null without one. GoodFraction is
	// over the completed and failed tasks, Goodput good tasks per second.
	Good         *int     `json:"good,omitempty"`
	GoodFraction *float64 `json:"good_fraction,omitempty"`
	Goodput      *float64 `json:"goodput,omitempty"`
	// ByPosition is each call position's figures: TTFT as the context grows.
	ByPosition []PositionStats `json:"ttft_by_position"`
}

// PositionStats are the figures of one call position of the level's measured tasks.
type PositionStats struct {
	Call      int   `json:"call"` // 1-based step in the task (a fan-out's sub-agents share theirs)
	Completed int   `json:"completed"`
	TTFT      Stats `json:"ttft_ms"`
	// InputTokensMean is the mean prompt (the context) of its completed calls; null when none.
	InputTokensMean *float64 `json:"input_tokens_mean"`
	// CachedPromptTokensMean is the mean prompt tokens the server served from its prefix
	// cache, over the completed calls whose server said (the simulator does); null when none.
	CachedPromptTokensMean *float64 `json:"cached_prompt_tokens_mean"`
}

type taskKey struct {
	repeat int32
	task   int32
}

// taskAcc is one task's calls as they come in, in any order.
type taskAcc struct {
	first, last int64 // µs: the earliest call's due time, the latest end
	tool        int64 // µs: the tools' latencies
	steps       []stepSpan
	calls       int
	warm        bool // a call was warm-up or cool-down: the task is not measured
	failed      bool
	final       bool // its final call completed
}

type stepSpan struct{ sent, done int64 }

type positionAcc struct {
	completed, said int
	input, cached   int64
	ttft            *Dist
}

// tasksAcc accumulates an agentic level's tasks. It holds one small entry per task until
// the level's figures are taken: tasks span many records, arriving in any order.
type tasksAcc struct {
	tasks map[taskKey]*taskAcc
	pos   []positionAcc
}

// add takes any record of the level, warm-up ones included (they exclude their task).
func (a *tasksAcc) add(r *record.Record) {
	if r.Call <= 0 {
		return
	}
	if a.tasks == nil {
		a.tasks = map[taskKey]*taskAcc{}
	}
	k := taskKey{r.Repeat, r.Task}
	t := a.tasks[k]
	if t == nil {
		t = &taskAcc{first: math.MaxInt64, last: math.MinInt64}
		a.tasks[k] = t
	}
	t.calls++
	t.warm = t.warm || r.Warmup
	t.first = min(t.first, us(r.Scheduled))
	t.last = max(t.last, us(r.Done))
	t.tool += us(r.ToolTime)
	step := int(r.Call) - 1
	for len(t.steps) <= step {
		t.steps = append(t.steps, stepSpan{sent: math.MaxInt64, done: math.MinInt64})
	}
	s := &t.steps[step]
	s.sent, s.done = min(s.sent, us(r.Sent)), max(s.done, us(r.Done))
	if r.Error != nil {
		// Cut off by the end of the run (canceled): the task is unfinished, not failed.
		t.failed = t.failed || r.Error.Kind != record.KindCanceled
		return
	}
	t.final = t.final || r.FinalCall
	if r.Warmup {
		return
	}
	for len(a.pos) <= step {
		a.pos = append(a.pos, positionAcc{ttft: NewDist()})
	}
	p := &a.pos[step]
	p.completed++
	p.input += int64(r.InputTokens)
	if r.HasCachedPromptTokens {
		p.said++
		p.cached += int64(r.CachedPromptTokens)
	}
	registryIndex[KeyTTFT].Samples(r, func(num, den int64, w uint64) { p.ttft.AddRatio(num, den, w) })
}

// result is nil for a level without tasks. limits are the per-task bounds by TaskRegistry
// index, µs (-1 for none); dists receives each task metric's distribution by key (SLO
// verdicts on them); dur is the level's measured window in seconds.
func (a *tasksAcc) result(ps []float64, slos []SLO, dur float64, dists map[string]*Dist) *TaskStats {
	if a.tasks == nil {
		return nil
	}
	limits := taskLimits(slos)
	ds := make([]*Dist, len(TaskRegistry))
	for i := range ds {
		ds[i] = NewDist()
	}
	calls := NewDist()
	ts := &TaskStats{}
	good, bounded := 0, slices.ContainsFunc(limits, func(l int64) bool { return l >= 0 })
	for _, t := range a.tasks {
		switch {
		case t.warm:
			continue
		case t.failed:
			ts.Failed++
			continue
		case !t.final:
			ts.Unfinished++
			continue
		}
		ts.Completed++
		ok := true
		for i, m := range TaskRegistry {
			v := m.Of(t)
			ds[i].AddRatio(v, 1, 1)
			if limits[i] >= 0 && v > limits[i] {
				ok = false
			}
		}
		calls.AddRatio(int64(t.calls)*1000, 1, 1) // Stats are of ms: a count stored as if µs
		if ok {
			good++
		}
	}
	for i, m := range TaskRegistry {
		dists[m.Key] = ds[i]
	}
	ts.Task, ts.Tool, ts.Model = StatsOf(ds[0], ps), StatsOf(ds[1], ps), StatsOf(ds[2], ps)
	ts.CallsPerTask = StatsOf(calls, ps)
	if dur > 0 {
		ts.TasksPerS = float64(ts.Completed) / dur
	}
	if bounded {
		ts.Good = ptr(good)
		if judged := ts.Completed + ts.Failed; judged > 0 {
			ts.GoodFraction = ptr(float64(good) / float64(judged))
		}
		if dur > 0 {
			ts.Goodput = ptr(float64(good) / dur)
		}
	}
	ts.ByPosition = make([]PositionStats, len(a.pos))
	for i, p := range a.pos {
		st := PositionStats{Call: i + 1, Completed: p.completed, TTFT: StatsOf(p.ttft, ps)}
		if p.completed > 0 {
			st.InputTokensMean = ptr(float64(p.input) / float64(p.completed))
		}
		if p.said > 0 {
			st.CachedPromptTokensMean = ptr(float64(p.cached) / float64(p.said))
		}
		ts.ByPosition[i] = st
	}
	return ts
}

// windowDists puts into dists, by task metric key, the distributions of the measured
// tasks that completed with their last call's end in [from, to) µs; nothing without tasks.
func (a *tasksAcc) windowDists(from, to int64, dists map[string]*Dist) {
	if a.tasks == nil {
		return
	}
	ds := make([]*Dist, len(TaskRegistry))
	for i, m := range TaskRegistry {
		ds[i] = NewDist()
		dists[m.Key] = ds[i]
	}
	for _, t := range a.tasks {
		if t.warm || t.failed || !t.final || t.last < from || t.last >= to {
			continue
		}
		for i, m := range TaskRegistry {
			ds[i].AddRatio(m.Of(t), 1, 1)
		}
	}
}

// taskLimits are the per-task bounds of slos by TaskRegistry index, µs; -1 for none.
func taskLimits(slos []SLO) []int64 {
	out := make([]int64, len(TaskRegistry))
	for i := range out {
		out[i] = -1
	}
	for _, s := range slos {
		if s.Kind != SLOBound {
			continue
		}
		for i, m := range TaskRegistry {
			if m.Key == s.Metric {
				if lim := us(s.Limit); out[i] < 0 || lim < out[i] {
					out[i] = lim
				}
			}
		}
	}
	return out
}

// isTaskMetric says key names a task metric (its SLO terms judge tasks, not requests).
func isTaskMetric(key string) bool {
	_, ok := LookupTask(key)
	return ok
}
