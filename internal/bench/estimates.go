package bench

import (
	"sync"

	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/sim"
)

// Estimates are what a simulation estimated of each level's GPUs, by level (a repeated
// level's runs summed), for the ladder to report as levels[].gpu where no exporter was
// scraped. Safe for concurrent use.
type Estimates struct {
	mu      sync.Mutex
	byLevel map[int]sim.Energy
}

func (e *Estimates) add(level int, en sim.Energy) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byLevel == nil {
		e.byLevel = map[int]sim.Energy{}
	}
	sum := e.byLevel[level]
	sum.GPUs, sum.Measured = en.GPUs, en.Measured
	sum.Span += en.Span
	sum.Joules += en.Joules
	sum.Tokens += en.Tokens
	e.byLevel[level] = sum
}

// Summary is level's estimate in levels[].gpu's terms; nil when none was made.
func (e *Estimates) Summary(level int) *gpumetrics.Summary {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	en, ok := e.byLevel[level]
	e.mu.Unlock()
	if !ok || en.Span <= 0 || en.GPUs == 0 {
		return nil
	}
	j, w := en.Joules, en.Joules/en.Span.Seconds()
	perGPU := w / float64(en.GPUs)
	s := &gpumetrics.Summary{Source: gpumetrics.SourceEstimate, GPUs: en.GPUs, WindowS: en.Span.Seconds(), EnergyFrom: "estimate",
		EnergyJ: &j, PowerW: &w, PowerPerGPUW: &perGPU,
		Note: "a cost-model estimate, not measured: docs/simulator.md"}
	if en.Measured {
		s.Source, s.EnergyFrom = gpumetrics.SourceCalibrated, "calibrated power"
		s.Note = "the calibration's measured mean power: docs/simulator.md"
	}
	if en.Tokens > 0 {
		jt, tj := j/float64(en.Tokens), float64(en.Tokens)/j
		s.JoulesPerOutputToken, s.OutputTokensPerJoule = &jt, &tj
	}
	return s
}
