package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/schedule"
)

// Stage is one stage of a staged level (--stages): its load, its span within the level,
// and the figures of the requests scheduled in it (records' stage), derived as a level's
// are. A stage's requests may finish after it ends; a ramp's figures mix the loads it
// passed through.
type Stage struct {
	Stage  int     `json:"stage"` // 1-based, records' stage
	Kind   string  `json:"kind"`  // rate (requests/s) or concurrency
	From   float64 `json:"from"`  // the load at the stage's start
	To     float64 `json:"to"`    // and at its end (From for a held stage)
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"` // offsets from the level's start, seconds
	metrics.Level
}

// Why a staged level, and a ramp, have no steady state of their own.
const (
	levelVaries = "the load changes within the level (--stages): each held stage is judged on its own (levels[].stages[])"
	rampVaries  = "a ramp never settles: its figures mix the loads it passed through"
)

// StagesOf are st's stages with their loads and spans, and no figures yet.
func StagesOf(st schedule.Stages) []Stage {
	out := make([]Stage, len(st.Stages))
	for i, s := range st.Stages {
		start, end := st.Bounds(i + 1)
		out[i] = Stage{Stage: i + 1, Kind: st.Kind, From: s.From, To: s.To, StartS: start.Seconds(), EndS: end.Seconds()}
	}
	return out
}

// Stages are level i's stages (StagesOf its schedule, or a summary's) with their figures
// from the records collected; nil when the level has none.
func (c *Collector) Stages(i int, stages []Stage) []Stage {
	if len(stages) == 0 {
		return nil
	}
	out := make([]Stage, len(stages))
	for k, s := range stages {
		out[k] = s
		if a := c.stages[i][s.Stage]; a != nil {
			if s.From != s.To {
				a.Varies(rampVaries)
			}
			out[k].Level = a.Level()
			if s.From == s.To && s.Kind == schedule.StageRate {
				c.judgeBacklog(i, &out[k])
			}
		} else {
			out[k].Level = metrics.NewAggregator(c.cfg).Level()
		}
	}
	return out
}

// failByStage fails a staged level's verdict when a held stage's backlog grew (its own
// verdict failed as oversaturated): the level's requests may meet the SLOs while one of
// its loads could not be kept up with.
func failByStage(l *Level) {
	for _, s := range l.Stages {
		if s.From == s.To && metrics.Behind(s.SLO) {
			metrics.FailBehind(l.SLO, fmt.Sprintf("stage %d (%s) could not keep up: %s", s.Stage, s.Load(), strings.TrimPrefix(s.SLO.Reason, metrics.OversaturatedPrefix)))
			return
		}
	}
}

// stagesPeak is the stages' highest load as the ladder says it: "c=16", "16 req/s".
func stagesPeak(ss []Stage) string {
	m := 0.0
	for _, s := range ss {
		m = max(m, s.From, s.To)
	}
	if ss[0].Kind == schedule.StageConcurrency {
		return "c=" + strconv.FormatFloat(m, 'f', -1, 64)
	}
	return strconv.FormatFloat(m, 'f', -1, 64) + " req/s"
}

// Load is the stage's load as the console says it: "2/s", "2→16/s", "c=4", "c=2→8".
func (s Stage) Load() string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	v := num(s.From)
	if s.To != s.From {
		v += "→" + num(s.To)
	}
	if s.Kind == schedule.StageConcurrency {
		return "c=" + v
	}
	return v + "/s"
}

// stages writes the By Stage table: each stage's load, span and medians and tails.
func (b *consoleBlock) stages(ss []Stage) {
	if len(ss) == 0 {
		return
	}
	b.w.WriteString(consoleRule("By Stage", '-') + "\n")
	fmt.Fprintf(b.w, "%-3s %-11s %-11s %6s %5s %8s %8s %8s %9s %8s %-6s %s\n", "#", "load", "span", "done", "fail", "TTFT P50", "TTFT P99", "TPOT P50", "E2EL P99", "tok/s", "steady", "SLO")
	pct := func(s *Stage, key string, p float64) string {
		st, ok := s.Metrics.Get(key)
		if !ok || st.Count == 0 {
			return "-"
		}
		v, ok := st.Get(p)
		if !ok {
			return "-"
		}
		return consoleFloat(v.Value)
	}
	span := func(s *Stage) string {
		d := func(x float64) string { return (time.Duration(x * float64(time.Second))).Round(time.Second).String() }
		return d(s.StartS) + "-" + d(s.EndS)
	}
	for i := range ss {
		s := &ss[i]
		fmt.Fprintf(b.w, "%-3d %-11s %-11s %6d %5d %8s %8s %8s %9s %8s %-6s %s\n", s.Stage, s.Load(), span(s), s.Completed, s.Failed,
			pct(s, metrics.KeyTTFT, 50), pct(s, metrics.KeyTTFT, 99), pct(s, metrics.KeyTPOT, 50), pct(s, metrics.KeyE2EL, 99), consoleFloat(s.OutputThroughput),
			s.steadyWord(), verdictOf(s.SLO))
	}
	b.w.WriteString(console.Wrap("Per stage: the requests scheduled in it; a ramp never settles, so its figures mix the loads it passed through (docs/metrics.md).", 0, 2, console.Width) + "\n")
	for i := range ss {
		if s := &ss[i]; s.From == s.To && s.SteadyState != nil && !s.SteadyState.Reached {
			b.w.WriteString(console.Wrap(fmt.Sprintf("stage %d (%s): no steady state: %s", s.Stage, s.Load(), s.SteadyState.Reason), 0, 2, console.Width) + "\n")
		}
	}
}

// steadyWord is the stage's steady state in a word: yes, no, or ramp (none sought).
func (s *Stage) steadyWord() string {
	switch {
	case s.From != s.To:
		return "ramp"
	case s.SteadyState == nil:
		return "-"
	case s.SteadyState.Reached:
		return "yes"
	}
	return "no"
}

// verdictOf is a verdict in a word; "-" without SLOs.
func verdictOf(v *metrics.Verdict) string {
	if v == nil {
		return "-"
	}
	switch {
	case v.Pass:
		return "pass"
	case v.Undecided:
		return "undecided"
	}
	return "FAIL"
}

// span is a staged level's request as its backlog counts it.
type span struct {
	stage           int16
	scheduled, done time.Duration
}

// judgeBacklog fails held rate stage s of level i when the level's backlog (requests due
// and not finished, every stage's) grew through the stage's second half: a server that
// keeps up holds it about level (Little's law), and no stopping rule ends a staged level
// as oversaturated. The stage's own steady state cannot see this when the backlog has
// grown to more requests in flight than a steady state needs per slot. Held in flight
// Poisson-like (variance = mean), the backlog must grow by a quarter and by 4 standard
// deviations besides.
func (c *Collector) judgeBacklog(i int, s *Stage) {
	var lo, hi time.Duration = -1, -1 // the stage's first and last due times
	for _, sp := range c.spans[i] {
		if sp.stage == int16(s.Stage) {
			if lo < 0 || sp.scheduled < lo {
				lo = sp.scheduled
			}
			hi = max(hi, sp.scheduled)
		}
	}
	if lo < 0 || hi <= lo {
		return
	}
	mid := lo + (hi-lo)/2
	backlog := func(t time.Duration) int {
		n := 0
		for _, sp := range c.spans[i] {
			if sp.scheduled <= t && t < sp.done {
				n++
			}
		}
		return n
	}
	bm, be := backlog(mid), backlog(hi)
	if float64(be) <= 1.25*float64(bm)+4*math.Sqrt(float64(bm))+2 {
		return
	}
	why := fmt.Sprintf("the backlog grew from %d to %d requests in flight over the stage's second half: the server does not keep up with %s", bm, be, s.Load())
	s.SteadyState = &metrics.SteadyState{Reason: why, Advice: "lower the stage's rate"}
	metrics.FailBehind(s.SLO, why)
}

// predictionInterval writes the 90 % interval of each predicted figure (a simulation's),
// beside the figure.
func (b *consoleBlock) predictionInterval(iv *predict.Interval, lv *metrics.Level) {
	if iv == nil {
		return
	}
	b.w.WriteString(consoleRule("Prediction Interval (90%)", '-') + "\n")
	for _, f := range predict.Figures {
		r, ok := iv.Get(f)
		if !ok {
			continue
		}
		v, _ := predict.Value(lv, f)
		label := "Output token throughput (tok/s):"
		if m, st, ok := strings.Cut(f, "."); ok {
			label = fmt.Sprintf("%s %s (ms):", strings.ToUpper(st[:1])+st[1:], strings.ToUpper(strings.TrimSuffix(m, "_ms")))
		}
		fmt.Fprintf(b.w, "%-40s %-10s (90%% PI %s-%s)\n", label, consoleFloat(v), consoleFloat(r[0]), consoleFloat(r[1]))
	}
	b.w.WriteString(console.Wrap("from "+iv.Basis+": how far the simulator was measured from real servers (docs/simulator.md#prediction-intervals).", 0, 2, console.Width) + "\n")
}
