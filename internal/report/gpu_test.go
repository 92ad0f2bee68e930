package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmbench/llmbench/internal/gpumetrics"
)

func gpuLevel(jPerTok float64) *gpumetrics.Summary {
	e, p := 3767.5, 6279.0
	return &gpumetrics.Summary{Source: gpumetrics.SourceDCGM, URLs: []string{"http://n/metrics"}, Scrapes: 4, GPUs: 8,
		WindowS: 0.6, EnergyFrom: gpumetrics.FromCounter, EnergyJ: &e, PowerW: &p, JoulesPerOutputToken: &jPerTok}
}

// The ladder has a J/tok column where --gpu-metrics measured energy ("-" for a level
// without it), still within 100 columns; none without.
func TestLadderGPUColumn(t *testing.T) {
	s := ladderSummary(t, "ttft<=300ms,tpot:p99<=20ms", []int{1, 4, 16})
	var b bytes.Buffer
	ConsoleLadder(&b, s, ConsoleOptions{})
	if strings.Contains(b.String(), "J/tok") {
		t.Errorf("a J/tok column without GPU metrics:\n%s", b.String())
	}
	s.Levels[0].GPU = gpuLevel(1.5698)
	s.Levels[1].GPU = &gpumetrics.Summary{Source: gpumetrics.SourceDCGM, Note: "not measured: h/0: readings span 0.000-2.000 s, not the window 0.000-4.000 s"}
	b.Reset()
	ConsoleLadder(&b, s, ConsoleOptions{})
	lines := strings.Split(b.String(), "\n")
	var rows []string
	for _, ln := range lines {
		if utf8.RuneCountInString(ln) > 100 {
			t.Errorf("%d columns: %q", utf8.RuneCountInString(ln), ln)
		}
		if strings.Contains(ln, "J/tok") || strings.HasPrefix(strings.TrimSpace(ln), "0") || strings.HasPrefix(strings.TrimSpace(ln), "1") || strings.HasPrefix(strings.TrimSpace(ln), "2") {
			rows = append(rows, ln)
		}
	}
	if len(rows) < 4 || !strings.HasSuffix(strings.TrimRight(rows[0], " |"), "J/tok") ||
		!strings.HasSuffix(strings.TrimRight(rows[1], " |"), "1.570") || !strings.HasSuffix(strings.TrimRight(rows[2], " |"), "-") {
		t.Errorf("J/tok column:\n%s", b.String())
	}
}

// levels[].gpu goes to summary.json under the names scripts read, and back; a level without
// GPU metrics has no gpu key.
func TestSummaryJSONGPU(t *testing.T) {
	s := ladderSummary(t, "", []int{1, 4})
	s.Levels[0].GPU = gpuLevel(1.5698)
	var b bytes.Buffer
	if err := WriteJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Levels []map[string]json.RawMessage `json:"levels"`
	}
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	var g map[string]any
	if err := json.Unmarshal(raw.Levels[0]["gpu"], &g); err != nil {
		t.Fatal(err)
	}
	if g["power_w"] != 6279.0 || g["energy_j"] != 3767.5 || g["joules_per_output_token"] != 1.5698 {
		t.Errorf("levels[0].gpu = %v", g)
	}
	for _, k := range []string{"joules_per_request", "output_tokens_per_joule", "utilization"} {
		if _, ok := g[k]; ok {
			t.Errorf("levels[0].gpu.%s written without a basis", k)
		}
	}
	if _, ok := raw.Levels[1]["gpu"]; ok {
		t.Error("levels[1].gpu without GPU metrics")
	}
	back, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if g := back.Levels[0].GPU; g == nil || *g.JoulesPerOutputToken != 1.5698 || g.GPUs != 8 {
		t.Errorf("read back %+v", g)
	}
}

// report.html draws power and utilisation over time from levels[].gpu.series, a line per
// exporter, on the run's time axis; nothing without GPU series.
func TestGPUCharts(t *testing.T) {
	levels := []Level{{Concurrency: 1}, {Concurrency: 4}}
	if gpuCharts(nil, levels) != "" {
		t.Error("GPU charts without GPU metrics")
	}
	levels[0].GPU = &gpumetrics.Summary{Series: []gpumetrics.Columns{
		{URL: "http://a:9400/metrics", TS: []float64{1, 2, 3}, PowerW: []float64{4889, 4900, 4870}, Utilization: []float64{96.5, 97, 95}},
		{URL: "http://b:5000/metrics", TS: []float64{1.1, 2.1}, PowerW: []float64{1390, 1400}},
	}}
	levels[1].GPU = &gpumetrics.Summary{Series: []gpumetrics.Columns{{URL: "http://a:9400/metrics", TS: []float64{5, 14}, PowerW: []float64{5000, 5100}}}}
	out := string(gpuCharts(nil, levels))
	if !strings.Contains(out, `data-chart="gpu-power"`) || !strings.Contains(out, `data-chart="gpu-util"`) ||
		!strings.Contains(out, "http://b:5000/metrics") || strings.Count(out, "GPU utilisation (%), ") != 1 {
		t.Errorf("power of both exporters, utilisation of the one that gave it: %.600s", out)
	}
	if r := runSpan(nil, levels); r.Hi != 14 {
		t.Errorf("run span %+v, want to 14 s (the last GPU sample)", r)
	}
}
