package report

import (
	"fmt"
	"strconv"

	"github.com/llmbench/llmbench/internal/metrics"
)

// tasks prints an agentic level's task figures (levels[i].tasks): how many tasks completed,
// their time split between the model and the tools, the calls they took, their rate and
// cost, and per call position the context, what the prefix cache served of it, and TTFT.
func (b *consoleBlock) tasks(t *metrics.TaskStats) {
	if t == nil {
		return
	}
	b.w.WriteString(consoleRule("Agentic Tasks", '-') + "\n")
	b.line("Tasks completed:", strconv.Itoa(t.Completed), fmt.Sprintf("(%d failed, %d unfinished at the level's end)", t.Failed, t.Unfinished))
	b.line("Tasks/s:", consoleFloat(t.TasksPerS))
	if t.CostPerTask != nil {
		b.line("Cost per task:", strconv.FormatFloat(*t.CostPerTask, 'g', 4, 64))
	}
	if t.Good != nil {
		b.line("Good tasks (per-task SLO):", strconv.Itoa(*t.Good))
	}
	var cells lowCells
	val := func(st metrics.Stats, p float64) string { return cells.cell(st, p, consoleFloat) }
	defer cells.footnote(b.w, "")
	b.w.WriteString(fmt.Sprintf("%-24s %12s %12s %12s\n", "per task", "mean", "P50", "P99"))
	for _, r := range []struct {
		name string
		st   metrics.Stats
	}{{"task (ms)", t.Task}, {"in the model (ms)", t.Model}, {"in tools (ms)", t.Tool}, {"model calls", t.CallsPerTask}} {
		mean := "-"
		if r.st.Count > 0 {
			mean = consoleFloat(r.st.Mean)
		}
		b.w.WriteString(fmt.Sprintf("%-24s %12s %12s %12s\n", r.name, mean, val(r.st, 50), val(r.st, 99)))
	}
	b.w.WriteString(fmt.Sprintf("%-5s %9s %11s %11s %10s %10s\n", "call", "completed", "context tok", "cached tok", "TTFT P50", "TTFT P99"))
	for _, p := range t.ByPosition {
		in, cached := "-", "-"
		if p.InputTokensMean != nil {
			in = strconv.FormatFloat(*p.InputTokensMean, 'f', 0, 64)
		}
		if p.CachedPromptTokensMean != nil {
			cached = strconv.FormatFloat(*p.CachedPromptTokensMean, 'f', 0, 64)
		}
		b.w.WriteString(fmt.Sprintf("%-5d %9d %11s %11s %10s %10s\n", p.Call, p.Completed, in, cached, val(p.TTFT, 50), val(p.TTFT, 99)))
	}
}
