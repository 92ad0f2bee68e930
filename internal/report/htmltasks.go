package report

import (
	"html/template"
	"strconv"

	"github.com/llmbench/llmbench/internal/chart"
)

// taskRow is one agentic level's task figures on report.html (levels[i].tasks).
type taskRow struct {
	Name, Completed, Failed, TasksS, CostPerTask string
	TaskP50, TaskP99, Model, Tool, Calls         string
}

// taskView fills report.html's tasks section: a row per agentic level, and TTFT against
// the context (each call position's mean prompt) as the task's context grows.
func taskView(s *Summary) (rows []taskRow, ttft template.HTML) {
	c := chart.Chart{Name: "tasks-ttft-context", Title: "TTFT vs context length", Width: 600, Height: 320,
		XLabel: "context (prompt tokens, mean at the call position)", YLabel: "TTFT (ms)"}
	for i := range s.Levels {
		t := s.Levels[i].Tasks
		if t == nil {
			continue
		}
		name := levelName(s.Levels, i)
		r := taskRow{Name: name, Completed: strconv.Itoa(t.Completed), Failed: strconv.Itoa(t.Failed),
			TasksS: fmtNum(t.TasksPerS), CostPerTask: usdText(t.CostPerTask),
			TaskP50: percentileCell(&t.Task, 50).Text, TaskP99: percentileCell(&t.Task, 99).Text,
			Model: meanText(t.Model.Count, t.Model.Mean), Tool: meanText(t.Tool.Count, t.Tool.Mean),
			Calls: meanText(t.CallsPerTask.Count, t.CallsPerTask.Mean)}
		rows = append(rows, r)
		p50 := chart.Series{Name: shortLevelName(s.Levels, i) + " TTFT P50", Color: levelColor(len(rows)-1, len(s.Levels)), Line: true}
		for _, p := range t.ByPosition {
			pc, ok := p.TTFT.Get(50)
			if !ok || p.InputTokensMean == nil || !finite(pc.Value) {
				continue
			}
			p50.Points = append(p50.Points, chart.Point{X: *p.InputTokensMean, Y: pc.Value,
				Title: name + ": call " + strconv.Itoa(p.Call) + ", context " + fmtNum(*p.InputTokensMean) + " tokens, TTFT P50 " + fmtNum(pc.Value) + " ms"})
		}
		c.Series = append(c.Series, p50)
	}
	if rows == nil {
		return nil, ""
	}
	if c.Empty() {
		return rows, template.HTML(`<div class="nodata">No call has TTFT figures.</div>`)
	}
	return rows, c.SVG()
}

func meanText(n int, mean float64) string {
	if n == 0 {
		return "-"
	}
	return fmtNum(mean)
}
