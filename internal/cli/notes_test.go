package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/workload"
)

// adaptNotes say each way the ladder met the dataset, in the order the console gives them,
// and nothing for a dataset that fits.
func TestAdaptNotes(t *testing.T) {
	ladder := []load.Level{{Index: 0, Concurrency: 1, Requests: 10}, {Index: 1, Concurrency: 8, Requests: 400, Warmup: 8}}
	s := bench.Spec{Levels: ladder, Seed: 7}
	s.Workload.Dataset = "sharegpt:x"
	notes := adaptNotes(&s, s.FitToSource(workload.Info{Dataset: "sharegpt:x", Rows: 100, Skipped: map[string]int{"empty": 2}}))
	want := []string{"dataset sharegpt:x: 100 usable rows; skipped: 2 empty; 0 rows with a zero length raised to 1",
		"warning: dataset sharegpt:x has 100 usable rows for levels of up to 408 requests: rows are reused (each about 4.1 times; a server's prefix cache may then serve repeats)",
		"note: dataset sharegpt:x has 100 usable rows; level 0 sends 10 (each level's request count, its default from the load, as no --requests was given): a seeded sample of the rows; --requests 100 sends every row"}
	if fmt.Sprint(notes) != fmt.Sprint(want) {
		t.Errorf("notes:\n%q\nwant\n%q", notes, want)
	}
	s = bench.Spec{Levels: ladder[:1], DefaultLoad: true, Seed: 7}
	if notes := adaptNotes(&s, s.FitToSource(workload.Info{Rows: 60, Trace: true, Span: 30 * time.Second})); len(notes) != 1 || notes[0] != "replaying the trace's 60 arrivals over 30s (no --concurrency or --rate given)" {
		t.Errorf("a trace replayed: %q", notes)
	}
	s = bench.Spec{Levels: []load.Level{{Index: 0, Concurrency: 1, Requests: 10}}}
	if notes := adaptNotes(&s, s.FitToSource(workload.Info{Rows: 10})); len(notes) != 0 {
		t.Errorf("a dataset that fits: %q", notes)
	}
}

// undecidedNote names the short levels, one or several, and is empty when none is.
func TestUndecidedNote(t *testing.T) {
	slos, err := metrics.ParseSLOs("tpot:p99<=50ms")
	if err != nil {
		t.Fatal(err)
	}
	s := bench.Spec{Levels: []load.Level{{Index: 0, Requests: 10}}}
	if n := undecidedNote(&s); n != "" {
		t.Errorf("no SLOs: %q", n)
	}
	s.Judge.Metrics.SLOs = slos
	if n := undecidedNote(&s); !strings.Contains(n, "; level 0 (10) (requests), so its verdict will be undecided") {
		t.Errorf("one level: %q", n)
	}
	s.Levels = append(s.Levels, load.Level{Index: 1, Requests: 20})
	if n := undecidedNote(&s); !strings.Contains(n, "; levels 0 (10), 1 (20) (requests), so their verdicts will be undecided") {
		t.Errorf("two levels: %q", n)
	}
}

// SLOs with no verdict term are noted after the run; a gate is not.
func TestConcludingNotes(t *testing.T) {
	for _, tc := range []struct {
		slo  string
		want int
	}{{"ttft<=1s", 1}, {"ttft<=1s,goodput>=0.9", 0}} {
		slos, err := metrics.ParseSLOs(tc.slo)
		if err != nil {
			t.Fatal(err)
		}
		s := bench.Spec{Judge: bench.Judge{Metrics: metrics.Config{SLOs: slos}}}
		if notes := concludingNotes(&s, bench.UncountedChats{}); len(notes) != tc.want {
			t.Errorf("--slo %s: %q", tc.slo, notes)
		}
	}
	chats := bench.UncountedChats{N: 3, First: errors.New("refused"), Source: "server"}
	if notes := concludingNotes(&bench.Spec{}, chats); fmt.Sprint(notes) != "[warning: 3 chat prompts could not be counted as server formats them, so their input tokens count message text alone (first: refused)]" {
		t.Errorf("uncounted chats: %q", notes)
	}
}

// liveNotes word each note a live run tells, a dataset that fits saying nothing.
func TestLiveNotes(t *testing.T) {
	s := bench.Spec{Levels: []load.Level{{Index: 0, Concurrency: 1, Requests: 10}}}
	for _, tc := range []struct {
		note bench.Note
		want string
	}{
		{bench.PortLimit{Rate: 1e9, Ports: 28232, PerSecond: 470.5}, "[warning: --keep-alive=false at 1e+09 req/s: each request opens a new connection, and 28232 local ports sustain about 470 new connections/s"},
		{bench.ChatByText{Err: errors.New("no route")}, "[note: chat prompts are sized by their message text: no route; the server adds"},
		{s.FitToSource(workload.Info{Rows: 10}), "[]"},
	} {
		if got := fmt.Sprint(liveNotes(&s, tc.note)); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%T: %q, want %q...", tc.note, got, tc.want)
		}
	}
}

// localGPUNote names the nvidia-smi read, and nothing when none is.
func TestLocalGPUNote(t *testing.T) {
	if n := localGPUNote(nil); n != "" {
		t.Errorf("none: %q", n)
	}
	if n := localGPUNote(&gpumetrics.Local{Path: "/usr/bin/nvidia-smi"}); !strings.HasPrefix(n, "GPU metrics: the local /usr/bin/nvidia-smi (") {
		t.Errorf("one: %q", n)
	}
}
