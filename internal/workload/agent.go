package workload

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/fielderr"
)

// Agent shapes an agentic workload (Config.Agent, On when it has Calls): each task is a loop of model calls
// whose answers are tool calls; after each non-final call the tool takes ToolLatency and its
// result, of ToolResultTokens, is appended to the context with the answer, so the context
// grows call by call. With FanOut K > 0 the task's first answer spawns K sub-agents, each a
// call on the parent's context plus its own brief, run concurrently and joined: the parent's
// next call carries their K answers as its tool result. A context past CompactAt tokens is
// compacted before the next call: a call on it answers a summary of CompactTo tokens, which
// is then the whole context (a new one, which the prefix cache has not seen). Lengths are exact token counts, drawn per task from the seed.
type Agent struct {
	Calls            Dist // the parent's model calls per task
	ToolLatency      Dist // milliseconds, before each call after the first; zero: none
	ToolResultTokens Dist // each tool result, and each sub-agent's brief
	FanOut           int  // sub-agents after the first call; 0 for none
	CompactAt        int  // context tokens past which it is compacted; 0 never
	CompactTo        int  // the summary's tokens
}

// WithDists is a with its distributions read by ParseDist (a tool latency of "0": none);
// each that does not read is a *fielderr.Error on its field (Calls, ToolLatency,
// ToolResultTokens), the others set.
func (a Agent) WithDists(calls, toolLatency, toolResults string) (Agent, error) {
	var errs []error
	for _, d := range []struct {
		field, s string
		dst      *Dist
	}{{"Calls", calls, &a.Calls}, {"ToolLatency", toolLatency, &a.ToolLatency}, {"ToolResultTokens", toolResults, &a.ToolResultTokens}} {
		if d.field == "ToolLatency" && strings.TrimSpace(d.s) == "0" {
			continue // tools that take no time
		}
		v, err := ParseDist(d.s)
		if err != nil {
			errs = append(errs, &fielderr.Error{Field: d.field, Err: err})
			continue
		}
		*d.dst = v
	}
	return a, errors.Join(errs...)
}

// On says the workload is agentic.
func (a Agent) On() bool { return !a.Calls.IsZero() }

// MaxCallsCap bounds a normal Calls (mean + 4 standard deviations, at most this),
// so every task's requests fit the level's index space.
const MaxCallsCap = 1000

// maxCalls is the most parent calls a task can have.
func (a Agent) maxCalls() int {
	switch a.Calls.Kind {
	case DistUniform:
		return int(a.Calls.B)
	case DistNormal, DistLognormal:
		return min(MaxCallsCap, int(math.Ceil(a.Calls.A+4*a.Calls.B)))
	}
	return int(a.Calls.A)
}

// Stride is the number of request indices each task owns: task c is requests
// c*Stride .. c*Stride+Stride-1, of which its first Requests are sent (its calls, the
// sub-agents and, with compaction, a summarising call before any call but the first).
func (a Agent) Stride() int {
	n := a.maxCalls() + a.FanOut
	if a.CompactAt > 0 {
		n += a.maxCalls() - 1
	}
	return n
}

// validate lists every problem of an agentic configuration; those of fields set together
// are *fielderr.Error on the Config's fields (Agent.CompactAt, ...).
func (a Agent) validate() []error {
	var errs []error
	add := func(format string, v ...any) { errs = append(errs, fmt.Errorf(format, v...)) }
	if err := a.Calls.Validate(); err != nil {
		add("calls per task: %v", err)
	}
	if !a.ToolLatency.IsZero() {
		if err := a.ToolLatency.Validate(); err != nil {
			add("tool latency: %v (milliseconds; 0 for none)", err)
		}
	}
	if a.ToolResultTokens.IsZero() {
		errs = append(errs, fielderr.New("Agent.ToolResultTokens", "required for an agentic workload"))
	} else if err := a.ToolResultTokens.Validate(); err != nil {
		add("tool result tokens: %v", err)
	}
	if a.FanOut < 0 || a.FanOut > 256 {
		add("fan-out: %d must be in 0..256", a.FanOut)
	}
	if a.CompactAt < 0 || a.CompactTo < 0 {
		errs = append(errs, fielderr.New("Agent.CompactAt,Agent.CompactTo", "%d and %d must not be negative", a.CompactAt, a.CompactTo))
	} else if a.CompactAt > 0 && (a.CompactTo <= 0 || a.CompactTo >= a.CompactAt) {
		errs = append(errs, fielderr.New("Agent.CompactTo", "%d must be in 1..%d (below CompactAt)", a.CompactTo, a.CompactAt-1))
	} else if a.CompactAt == 0 && a.CompactTo > 0 {
		errs = append(errs, fielderr.New("Agent.CompactAt", "required by CompactTo %d", a.CompactTo))
	}
	return errs
}

// TaskCall places a request in an agentic task (Requests > 0; the zero value otherwise).
type TaskCall struct {
	Task int // the task's number in the (unsharded) level
	Call int // 0-based step of the task: a parent call, or the fan-out's K concurrent calls
	Sub  int // 1..K: which sub-agent of a fan-out step; 0 for the parent's calls
	// Fan is how many requests the step has (K at a fan-out step, else 1): the step after it
	// waits for all of them.
	Fan   int
	Steps int // steps in the task
	// Stride is the request indices each task owns (Agent.Stride): request i is call
	// i%Stride of task i/Stride.
	Stride int
	// Requests is the task's model calls, sub-agents' included: its requests are indices
	// Task*Stride .. Task*Stride+Requests-1.
	Requests int
	Last     bool // the task's final call
	// ToolLatency is the tool's time before this call (the request's ThinkTime too): 0 for
	// the first call, the sub-agents and the call that joins them.
	ToolLatency time.Duration
	// Shared is how many leading prompt tokens lie on the task's context, which every later
	// call extends (all of them for a parent call; the parent's context for a sub-agent, whose
	// brief follows); Epoch counts the compactions before it (each starts a new context).
	Shared, Epoch int
	// ToolCall says the answer is to be a tool call (every call but the final one). The tool
	// definitions sent on the wire (the run's tools) attach to such requests.
	ToolCall bool
}

// IsTask says the request is a call of an agentic task.
func (t TaskCall) IsTask() bool { return t.Requests > 0 }

// segment is one message of a task's context: who says it, how many tokens, and its key
// (the same key is the same text in every call that carries it).
type segment struct {
	who    string // "user" or "assistant"
	tokens int
	key    int
}

// taskPlan is a task's calls, drawn from (seed, level, task) alone.
type taskPlan struct {
	calls []plannedCall
}

type plannedCall struct {
	tc   TaskCall
	segs []segment // the prompt
	out  int
}

// plan draws task c of a level: the parent's calls, the fan-out after its first, and the
// context each call is sent with.
func (a Agent) plan(seed int64, level, c int, in, out Dist) taskPlan {
	r := newRand(seed, purposeAgent, int64(level)<<32^int64(c), 0)
	n := min(a.Calls.Sample(r), a.maxCalls())
	k := 0
	if n >= 2 {
		k = a.FanOut
	}
	p := taskPlan{}
	key := 0
	next := func() int { key++; return key }
	ctx := []segment{{"user", in.Sample(r), next()}}
	epoch := 0
	tokens := func(s []segment) int {
		t := 0
		for _, g := range s {
			t += g.tokens
		}
		return t
	}
	add := func(tc TaskCall, segs []segment, o int) {
		tc.Task, tc.Stride, tc.Epoch = c, a.Stride(), epoch
		if tc.Shared == 0 {
			tc.Shared = tokens(segs)
		}
		p.calls = append(p.calls, plannedCall{tc: tc, segs: segs, out: o})
	}
	step := 0
	var tool time.Duration
	for j := 0; j < n; j++ {
		if a.CompactAt > 0 && j > 0 && tokens(ctx) > a.CompactAt {
			// The model writes the summary: a call on the whole context answering CompactTo
			// tokens, after the tool; the summary is then the new context.
			add(TaskCall{Call: step, Fan: 1, ToolLatency: tool}, ctx, a.CompactTo)
			step, tool = step+1, 0
			ctx = []segment{{"user", a.CompactTo, next()}}
			epoch++
		}
		o := out.Sample(r)
		last := j == n-1
		add(TaskCall{Call: step, Fan: 1, Last: last, ToolLatency: tool, ToolCall: !last}, ctx, o)
		step++
		if last {
			break
		}
		ctx = append(ctx[:len(ctx):len(ctx)], segment{"assistant", o, next()})
		if j == 0 && k > 0 {
			// The sub-agents: each on the parent's context and its own brief; their answers
			// are the parent's tool result, and the parent continues when the last is back.
			shared := tokens(ctx)
			var result segment
			result.who = "user"
			for s := 1; s <= k; s++ {
				brief := segment{"user", a.ToolResultTokens.Sample(r), next()}
				so := out.Sample(r)
				segs := append(ctx[:len(ctx):len(ctx)], brief)
				add(TaskCall{Call: step, Sub: s, Fan: k, Shared: shared}, segs, so)
				result.tokens += so
			}
			result.key = next()
			ctx = append(ctx, result)
			step++
			tool = 0
			continue
		}
		ctx = append(ctx, segment{"user", a.ToolResultTokens.Sample(r), next()})
		tool = 0
		if !a.ToolLatency.IsZero() {
			tool = time.Duration(a.ToolLatency.Sample(r)) * time.Millisecond
		}
	}
	for i := range p.calls {
		p.calls[i].tc.Steps, p.calls[i].tc.Requests = step, len(p.calls)
	}
	return p
}

// task builds request i of an agentic level: call i%Stride of task i/Stride. An index past
// the task's own requests (a task with fewer calls than the most) is an empty request that
// a dispatcher never sends.
func (s *source) task(level, i int) Request {
	a := s.cfg.Agent
	st := a.Stride()
	if s.tasks != nil {
		st = s.taskStride
	}
	c, p := i/st, i%st
	var plan taskPlan
	if s.tasks != nil {
		plan = s.tasks[c%len(s.tasks)] // recorded sessions, cycled
	} else {
		plan = a.plan(s.cfg.Seed, level, c, s.cfg.InputTokens, s.cfg.OutputTokens)
	}
	if p >= len(plan.calls) {
		return Request{Task: TaskCall{Task: c, Requests: len(plan.calls), Stride: st}}
	}
	pc := plan.calls[p]
	pc.tc.Task, pc.tc.Stride = c, st
	req := Request{Task: pc.tc, OutputTokens: pc.out, ThinkTime: pc.tc.ToolLatency}
	for _, g := range pc.segs {
		req.InputTokens += g.tokens
	}
	if s.syn == nil {
		return req
	}
	// Text: each segment's message drawn from its key, so a context's messages are the same
	// text in every call of the task that carries them.
	texts := make([]string, len(pc.segs))
	req.InputTokens = 0
	for j, g := range pc.segs {
		r := newRand(s.cfg.Seed, purposeAgent, int64(level)<<32^int64(c), int64(g.key)+1)
		var b strings.Builder
		s.syn.write(&b, g.tokens, identity(s.cfg.Seed, -1<<20-level, c<<12^g.key), true, r, nil)
		text, got := s.syn.exact(s.syn.start(b.String()), g.tokens, r)
		texts[j] = text
		req.InputTokens += got
		req.Messages = append(req.Messages, Message{Role: g.who, Content: chatText(text)})
	}
	req.Prompt = strings.Join(texts, s.syn.sep())
	if s.cfg.Chat != nil {
		// What the server counts: the conversation as the template formats it.
		if n, ok := s.chatCount(req.Messages); ok {
			req.InputTokens = n
		}
	}
	return req
}

// agentErrors are the combinations an agentic workload does not take.
func (c Config) agentErrors(kind string) []error {
	var errs []error
	if !c.Agent.On() && kind != DatasetAgent {
		return nil
	}
	if kind != DatasetRandom && kind != DatasetAgent {
		errs = append(errs, fmt.Errorf("workload agentic: tasks are synthesised (the random dataset) or replayed (agent:PATH), not made of %s", kind))
	}
	if c.Turns > 1 || c.ThinkTime > 0 {
		errs = append(errs, fielderr.New("Turns,ThinkTime,Agent", "are chat's; a task's calls and tool latency are Agent.Calls and Agent.ToolLatency"))
	}
	if c.PrefixTokens > 0 {
		errs = append(errs, errors.New("workload agentic: shared prefixes do not combine with tasks (each task's context is its calls' shared prefix)"))
	}
	return errs
}
