package gpumetrics

import (
	"strings"
	"testing"
)

// The console block prints what was measured and says why energy was not, never a 0 in its
// place; a level with every scrape failed shows the count and the error alone.
func TestWriteConsole(t *testing.T) {
	var b strings.Builder
	WriteConsole(&b, nil)
	if b.Len() != 0 {
		t.Errorf("a block for nothing scraped: %q", b.String())
	}
	util := Stat{Mean: 96.5, Max: 100}
	s := &Summary{Source: SourceDCGM, URLs: []string{"http://n:9400/metrics"}, Scrapes: 6, GPUs: 8,
		Utilization: &util, Note: "not measured: gpu-node-07/3: readings span 0.000-2.000 s, not the window 0.000-4.000 s"}
	WriteConsole(&b, s)
	want := `------------GPU Metrics (8 GPUs, DCGM)------------
Scrapes (failed):                        6 (0)
GPU energy:                              not measured: gpu-node-07/3: readings span 0.000-2.000 s, not the window 0.000-4.000 s
Mean GPU utilization (%):                96.5
Max GPU utilization (%):                 100.0
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	WriteConsole(&b, &Summary{Source: SourceUnknown, Scrapes: 3, FailedScrapes: 3, LastError: "GET u: connection refused", Note: "no GPU readings: GET u: connection refused"})
	if got := b.String(); !strings.Contains(got, "Scrapes (failed):                        3 (3)\nLast scrape error:                       GET u: connection refused\n") ||
		strings.Contains(got, "GPU energy") || strings.Contains(got, "(0 GPUs") {
		t.Errorf("all scrapes failed:\n%s", got)
	}
}
