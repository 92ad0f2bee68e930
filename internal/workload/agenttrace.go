package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// The agent session trace (dataset agent:PATH, docs/metrics.md "Agents"): recorded agent
// sessions, one JSON object per model call:
//
//	{"task": "s-17", "call": 1, "input_tokens": 2900, "output_tokens": 180}
//	{"task": "s-17", "call": 2, "sub": 1, "input_tokens": 3200, "output_tokens": 400}
//	{"task": "s-17", "call": 2, "sub": 2, "input_tokens": 3150, "output_tokens": 350}
//	{"task": "s-17", "call": 3, "input_tokens": 3850, "output_tokens": 90, "tool_ms": 0}
//	{"task": "s-17", "call": 4, "input_tokens": 4400, "output_tokens": 60, "tool_ms": 1250}
//
// task names a session (a string or a number); call is the 1-based step; sub (1..K) makes
// the step a fan-out of K concurrent calls; tool_ms is the tool's latency before the step
// (the largest of a fan-out's). Sessions replay in their order of first appearance, cycled;
// a call's prompt is taken to extend the context of the parent call before it (its prompt and
// answer) when it is at least that long, and to be a compacted new context otherwise.

type agentTraceRow struct {
	Task         any      `json:"task"`
	Call         *int     `json:"call"`
	Sub          int      `json:"sub"`
	InputTokens  *int     `json:"input_tokens"`
	OutputTokens *int     `json:"output_tokens"`
	ToolMs       *float64 `json:"tool_ms"`
}

type tracedCall struct {
	call, sub, in, out, line int
	tool                     time.Duration
}

// loadAgentTrace reads an agent session trace into its tasks' plans, in the order the
// sessions first appear.
func loadAgentTrace(path string) ([]taskPlan, error) {
	var order []string
	calls := map[string][]tracedCall{}
	err := forLines(path, func(line []byte, n int) error {
		var r agentTraceRow
		if err := strictUnmarshal(line, &r); err != nil {
			return fmt.Errorf("not a JSON object: %w", err)
		}
		var id string
		switch v := r.Task.(type) {
		case string:
			id = v
		case float64:
			id = fmt.Sprint(v)
		default:
			return errors.New(`"task" must name the session: a string or a number`)
		}
		switch {
		case r.Call == nil || *r.Call < 1:
			return errors.New(`"call" must be the call's 1-based step in its task`)
		case r.Sub < 0:
			return fmt.Errorf(`"sub" %d must be >= 0 (0 or absent for the parent's calls)`, r.Sub)
		case r.InputTokens == nil || r.OutputTokens == nil:
			return errors.New(`"input_tokens" and "output_tokens" are required`)
		}
		if err := errors.Join(tokenCount("input_tokens", *r.InputTokens, 1), tokenCount("output_tokens", *r.OutputTokens, 1)); err != nil {
			return err
		}
		c := tracedCall{call: *r.Call, sub: r.Sub, in: *r.InputTokens, out: *r.OutputTokens, line: n}
		if t := r.ToolMs; t != nil {
			if !(*t >= 0 && *t <= 1e9) || math.IsNaN(*t) {
				return fmt.Errorf(`"tool_ms" %v must be in 0..1e9`, *t)
			}
			c.tool = time.Duration(*t * float64(time.Millisecond))
		}
		if _, ok := calls[id]; !ok {
			order = append(order, id)
		}
		calls[id] = append(calls[id], c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	tasks := make([]taskPlan, 0, len(order))
	for _, id := range order {
		p, err := tracedPlan(calls[id])
		if err != nil {
			return nil, fmt.Errorf("workload: %s: task %q: %w", path, id, err)
		}
		tasks = append(tasks, p)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("workload: %s has no calls", path)
	}
	return tasks, nil
}

// tracedPlan is one recorded session as a task plan: its steps in order, checked whole.
func tracedPlan(cs []tracedCall) (taskPlan, error) {
	slices.SortStableFunc(cs, func(a, b tracedCall) int {
		if a.call != b.call {
			return a.call - b.call
		}
		return a.sub - b.sub
	})
	steps := cs[len(cs)-1].call
	var p taskPlan
	var ctx []segment // the last parent call's prompt and answer
	key, epoch := 0, 0
	next := func() int { key++; return key }
	tokens := func(s []segment) int {
		t := 0
		for _, g := range s {
			t += g.tokens
		}
		return t
	}
	// on is the prompt of in tokens on the context: the context and a message of the rest, or
	// (shorter than the context) a compacted one.
	on := func(in int, parent bool) (segs []segment, shared int) {
		have := tokens(ctx)
		switch {
		case ctx == nil:
			return []segment{{"user", in, next()}}, in
		case in < have:
			if parent {
				epoch++
			}
			return []segment{{"user", in, next()}}, 0
		case in == have:
			return ctx, have
		}
		return append(ctx[:len(ctx):len(ctx)], segment{"user", in - have, next()}), have
	}
	for i := 0; i < len(cs); {
		j := i
		for j < len(cs) && cs[j].call == cs[i].call {
			j++
		}
		step := cs[i:j]
		if want := len(p.stepsSeen()) + 1; step[0].call != want {
			return taskPlan{}, fmt.Errorf("line %d: call %d follows call %d (calls are 1, 2, 3, ... each once)", step[0].line, step[0].call, want-1)
		}
		fan := len(step)
		var tool time.Duration
		for k, c := range step {
			tool = max(tool, c.tool)
			if fan > 1 && c.sub != k+1 || fan == 1 && c.sub > 1 {
				return taskPlan{}, fmt.Errorf("line %d: call %d's sub-agents must be sub 1..%d, each once", c.line, c.call, fan)
			}
		}
		if fan > 1 && (step[0].call == 1 || step[0].call == steps) {
			return taskPlan{}, fmt.Errorf("line %d: call %d is a fan-out: a task's first and last calls are the parent's", step[0].line, step[0].call)
		}
		for _, c := range step {
			parent := fan == 1
			segs, shared := on(c.in, parent)
			last := c.call == steps
			tc := TaskCall{Call: c.call - 1, Fan: fan, ToolLatency: tool, Shared: shared, Epoch: epoch, Last: last, ToolCall: parent && !last}
			if !parent {
				tc.Sub = c.sub
			}
			if parent {
				tc.Shared = c.in
				ctx = append(segs[:len(segs):len(segs)], segment{"assistant", c.out, next()})
			}
			p.calls = append(p.calls, plannedCall{tc: tc, segs: segs, out: c.out})
		}
		i = j
	}
	for k := range p.calls {
		p.calls[k].tc.Steps, p.calls[k].tc.Requests = steps, len(p.calls)
	}
	return p, nil
}

// stepsSeen are the distinct steps planned so far.
func (p taskPlan) stepsSeen() []int {
	var out []int
	for _, c := range p.calls {
		if len(out) == 0 || out[len(out)-1] != c.tc.Call {
			out = append(out, c.tc.Call)
		}
	}
	return out
}
