package calibrate

import (
	"math"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/gpumetrics"
)

// A probe whose levels had GPU telemetry gives the profile its measured power: the levels'
// energy over their GPU-seconds; a level without energy, or a simulator's estimate, counts
// for nothing.
func TestMeasuredPower(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	pts := []Point{
		{GPU: &gpumetrics.Summary{Source: gpumetrics.SourceDCGM, GPUs: 8, WindowS: 10, EnergyJ: f(8 * 10 * 600)}}, // 600 W a GPU
		{GPU: &gpumetrics.Summary{Source: gpumetrics.SourceDCGM, GPUs: 8, WindowS: 30, EnergyJ: f(8 * 30 * 400)}}, // 400 W
		{GPU: &gpumetrics.Summary{Source: gpumetrics.SourceDCGM, GPUs: 8, WindowS: 5}},                            // no energy
		{GPU: &gpumetrics.Summary{Source: gpumetrics.SourceEstimate, GPUs: 8, WindowS: 10, EnergyJ: f(8 * 10 * 999)}},
		{},
	}
	p := measuredPower(pts)
	if want := (600*10 + 400*30) / 40.0; math.Abs(p.WattsPerGPU-want) > 1e-9 || p.GPUs != 8 {
		t.Errorf("%+v, want %v W a GPU (weighted by GPU-seconds) on 8 GPUs", p, want)
	}
	if !strings.Contains(p.Source, "2 probe levels") || !strings.Contains(p.Source, gpumetrics.SourceDCGM) {
		t.Errorf("source %q", p.Source)
	}
	if p := measuredPower(pts[2:]); p.WattsPerGPU != 0 || p.Source != "" {
		t.Errorf("no measured energy: %+v, want none", p)
	}
}
