package compare

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/report"
)

// Verdicts follow a figure's kind, not its name: a throughput that falls is a regression
// whatever it is called, a tally never is.
func TestRegressionsByKind(t *testing.T) {
	rel := func(v float64) *float64 { return &v }
	yes := true
	c := Comparison{Levels: []Level{{Load: "concurrency 4", Figures: []Figure{
		{Name: "served (req/s)", Relative: rel(-0.2), Kind: metrics.KindThroughput},
		{Name: "throughput of errors", Relative: rel(3), Kind: metrics.KindCount},
		{Name: "TTFT P50 (ms)", Relative: rel(0.3), Significant: &yes, Kind: metrics.KindLatency},
		{Name: "TTFT P99 (ms)", Relative: rel(0.3), Kind: metrics.KindLatency}, // untested: no verdict
	}}}}
	got := regressions(c, 0.1)
	want := []string{"concurrency 4 served (req/s) -20.0%", "concurrency 4 TTFT P50 (ms) +30.0%"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("regressions = %q, want %q", got, want)
	}
}

func TestConfigValidateListsEveryProblem(t *testing.T) {
	neg := -0.5
	err := Config{Alpha: 1, Threshold: &neg}.Validate()
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var f *fielderr.Error
		if errors.As(e, &f) {
			fields = append(fields, f.Field)
		}
	}
	if !reflect.DeepEqual(fields, []string{"Alpha", "Threshold"}) {
		t.Errorf("problems with %v, want Alpha and Threshold (%v)", fields, err)
	}
	if err := (Config{Alpha: 0.05}).Validate(); err != nil {
		t.Error(err)
	}
}

// Across repeated runs (--repeat) throughputs are tested too: a significant rise is an
// improvement, a significant fall a regression.
func TestTestedThroughputFallIsTheRegression(t *testing.T) {
	rel := func(v float64) *float64 { return &v }
	yes := true
	c := Comparison{Levels: []Level{{Load: "rate 10/s", Figures: []Figure{
		{Name: "output throughput (tok/s)", Relative: rel(0.3), Significant: &yes, Test: "welch_across_runs", Kind: metrics.KindThroughput},
		{Name: "request throughput (req/s)", Relative: rel(-0.3), Significant: &yes, Test: "welch_across_runs", Kind: metrics.KindThroughput},
	}}}}
	got := regressions(c, 0.1)
	want := []string{"rate 10/s request throughput (req/s) -30.0%"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("regressions = %q, want %q", got, want)
	}
}

// TestDifferencesReadWell: what two runs did differently is said in words with units, not
// as Go's printing of the fields ("10 " against "0 ").
func TestDifferencesReadWell(t *testing.T) {
	var a, b report.Summary
	a.Load.Warmup, b.Load.Warmup = 10, 0
	b.Load.WarmupTime = "5s"
	got := differences(&a, &b)
	want := `warm-up differ ("10 requests" in A, "0 requests, 5s" in B)`
	if !slices.Contains(got, want) {
		t.Errorf("differences = %q, want among them %q", got, want)
	}
}

// GPU figures are compared where both levels have them: J/token without a verdict (no
// test), output tokens per joule falling beyond the threshold a regression; an estimate is
// named and not judged; a level without --gpu-metrics has none of them.
func TestCompareGPUFigures(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	gpu := func(jPerTok, tokPerJ, w float64) *gpumetrics.Summary {
		return &gpumetrics.Summary{JoulesPerOutputToken: f(jPerTok), OutputTokensPerJoule: f(tokPerJ), PowerW: f(w)}
	}
	a := report.Level{Concurrency: 4, GPU: gpu(1.25, 0.8, 4889)}
	b := report.Level{Concurrency: 4, GPU: gpu(2.5, 0.4, 5000)}
	l := compareLevels(&a, &b, 0, 0, 0.05)
	byName := map[string]Figure{}
	for _, fg := range l.Figures {
		byName[fg.Name] = fg
	}
	jt, tj, pw := byName["GPU energy per output token (J)"], byName["output tokens per GPU joule"], byName["GPU power, all GPUs (W)"]
	if jt.A == nil || *jt.A != 1.25 || *jt.B != 2.5 || *jt.Relative != 1 || *tj.Relative != -0.5 || *pw.Delta != 111 {
		t.Errorf("figures %+v %+v %+v", jt, tj, pw)
	}
	got := regressions(Comparison{Levels: []Level{l}}, 0.1)
	if !slices.Contains(got, "concurrency 4 output tokens per GPU joule -50.0%") || len(got) != 1 {
		t.Errorf("regressions %q", got)
	}
	// A simulated level's power is an estimate: the figures say whose, and a measured run
	// against it is no regression however far apart they are.
	a.GPU.Source, b.GPU.Source = gpumetrics.SourceDCGM, gpumetrics.SourceEstimate
	l = compareLevels(&a, &b, 0, 0, 0.05)
	sa := &report.Summary{Levels: []report.Level{a}}
	sb := &report.Summary{Levels: []report.Level{b}}
	if w := differences(sa, sb); !slices.Contains(w, `GPU figures' sources (no verdict on them) differ ("dcgm-exporter" in A, "simulator estimate" in B)`) {
		t.Errorf("warnings %q: want the GPU sources named", w)
	}
	if got := regressions(Comparison{Levels: []Level{l}}, 0.1); len(got) != 0 {
		t.Errorf("measured against estimated J/token judged: %q", got)
	}
	b.GPU = nil
	for _, fg := range compareLevels(&a, &b, 0, 0, 0.05).Figures {
		if strings.Contains(fg.Name, "GPU") {
			t.Errorf("%s compared without GPU metrics in B", fg.Name)
		}
	}
}

// The JSON form holds the whole comparison, indented, as a script reads it back.
func TestWriteJSON(t *testing.T) {
	rel := func(v float64) *float64 { return &v }
	c := Comparison{Levels: []Level{{Load: "rate 2/s", Figures: []Figure{{Name: "TTFT P50 (ms)", Relative: rel(0.25), Kind: metrics.KindLatency}}}},
		Regressions: []string{"rate 2/s TTFT P50 (ms) +25.0%"}}
	var b strings.Builder
	if err := WriteJSON(&b, c); err != nil {
		t.Fatal(err)
	}
	var back Comparison
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("read back %+v (%v), want %+v", back, err, c)
	}
	if !strings.Contains(b.String(), "\n  \"") {
		t.Errorf("not indented:\n%s", b.String())
	}
}

// ParseFormat knows Write's formats by name, and Write writes each as its own writer does.
func TestWriteFormats(t *testing.T) {
	c := Comparison{Levels: []Level{{Load: "rate 2/s", Figures: []Figure{{Name: "TTFT P50 (ms)", Kind: metrics.KindLatency}}}}}
	for name, write := range map[string]func(io.Writer, Comparison) error{
		"table":    func(w io.Writer, c Comparison) error { WriteText(w, c); return nil },
		"markdown": func(w io.Writer, c Comparison) error { WriteMarkdown(w, c); return nil },
		"json":     WriteJSON,
	} {
		f, err := ParseFormat(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got, want strings.Builder
		if err := Write(&got, c, f); err != nil {
			t.Fatal(err)
		}
		if err := write(&want, c); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: Write wrote\n%s\nwant\n%s", name, got.String(), want.String())
		}
	}
	if _, err := ParseFormat("xml"); err == nil || err.Error() != `"xml" is not table, json or markdown` {
		t.Errorf("xml: %v", err)
	}
}
