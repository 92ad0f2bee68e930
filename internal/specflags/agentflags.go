package specflags

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/workload"
)

// agentFlags are the flags of the agentic workload (--workload agentic), as typed.
type agentFlags struct {
	workload                       string
	calls, toolLatency, toolResult string
}

// bind binds the agentic workload's flags, its counts straight to a.
func (f *agentFlags) bind(fs specFlagSet, a *workload.Agent) {
	specVar(fs, fs.StringVar, &f.workload, "workload", "chat", "chat (requests, or conversations with --turns) or agentic (tasks: loops of tool calls, docs/metrics.md#agents)", "Workload.Agent",
		func(c specRun) []string {
			return Str(map[bool]string{false: "chat", true: "agentic"}[c.Workload.Agent.On()])
		})
	specVar(fs, fs.StringVar, &f.calls, "calls-per-task", "4", "agentic: the task's model calls: N, uniform:A:B, normal:MEAN:STD or lognormal:MEAN:STD", "Workload.Agent.Calls",
		func(c specRun) []string { return agentDist(c, c.Workload.Agent.Calls) })
	specVar(fs, fs.StringVar, &f.toolLatency, "tool-latency", "500", "agentic: each tool's latency in ms before the next call: N (0: none), uniform:A:B, normal:MEAN:STD or lognormal:MEAN:STD", "Workload.Agent.ToolLatency",
		func(c specRun) []string { return agentDist(c, c.Workload.Agent.ToolLatency) })
	specVar(fs, fs.StringVar, &f.toolResult, "tool-result-tokens", "300", "agentic: each tool result's tokens, appended to the context with the answer (and each sub-agent's brief)", "Workload.Agent.ToolResultTokens",
		func(c specRun) []string { return agentDist(c, c.Workload.Agent.ToolResultTokens) })
	specVar(fs, fs.IntVar, &a.FanOut, "fan-out", 0, "agentic: K sub-agents the first answer starts, concurrently, on the task's context; the task continues when all K are back", "Workload.Agent.FanOut")
	specVar(fs, fs.IntVar, &a.CompactAt, "compact-at", 0, "agentic: before a call whose context passed this many tokens (0: never), a call summarises it in --compact-to tokens, the new context", "Workload.Agent.CompactAt")
	specVar(fs, fs.IntVar, &a.CompactTo, "compact-to", 0, "agentic: with --compact-at, the summary's tokens", "Workload.Agent.CompactTo")
}

// agent is the agentic workload the flags describe, a with its distributions; the zero
// Agent for chat.
func (f *agentFlags) agent(fs *pflag.FlagSet, a workload.Agent) (workload.Agent, error) {
	var errs []error
	switch f.workload {
	case "chat", "":
		inBindOrder(fs, func(flag *pflag.Flag) { // those that set the Agent's fields, which chat has none of
			if strings.HasPrefix(strings.Join(flag.Annotations[specFields], ","), "Workload.Agent.") && flag.Changed {
				errs = append(errs, fmt.Errorf("--%s: shapes agentic tasks; add --workload agentic", flag.Name))
			}
		})
		return workload.Agent{}, errors.Join(errs...)
	case "agentic":
	default:
		return workload.Agent{}, fmt.Errorf("--workload %q: want chat or agentic", f.workload)
	}
	a, err := a.WithDists(f.calls, f.toolLatency, f.toolResult)
	return a, NamedFlags(err, agentFlagNames)
}
