package bench

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
)

// fakeLevels answers every request of a level in 10 ms, with 4 tokens.
func fakeLevels(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error) {
	for i := range lvl.Requests {
		r := &record.Record{Level: lvl.Index, Index: i, Sent: time.Duration(i) * time.Millisecond}
		r.Done = r.Sent + 10*time.Millisecond
		r.Events.Base = r.Sent
		r.Events.Append(r.Sent+2*time.Millisecond, 1)
		r.Events.Append(r.Done, 3)
		r.OutputTokens = 4
		sink(r)
	}
	return load.EndRequests, nil
}

func testConfig(t *testing.T) Config {
	var levels []load.Level
	for i, c := range []int{1, 2} {
		levels = append(levels, FinishLevel(load.Level{Concurrency: c}, i, 3, 1, 1))
	}
	return Config{Spec: Spec{Levels: levels, Repeat: 1, Seed: 1,
		Output: Output{Dir: filepath.Join(t.TempDir(), "run"), Records: record.FormatJSONL}},
		Console: Console{Out: io.Discard}}
}

// TestRunLadder: a ladder runs each level once, in order, and leaves a run's files.
func TestRunLadder(t *testing.T) {
	cfg := testConfig(t)
	out, err := Run(context.Background(), cfg, time.Now(), fakeLevels)
	if err != nil || out.Err != nil {
		t.Fatalf("Run: %v, %v", err, out.Err)
	}
	var names []string
	for _, l := range out.Summary.Levels {
		names = append(names, l.Name)
		if l.Completed != 3 {
			t.Errorf("%s: %d completed, want 3", l.Name, l.Completed)
		}
	}
	if !slices.Equal(names, []string{"concurrency 1", "concurrency 2"}) || out.Summary.EndReason != report.EndCompleted {
		t.Errorf("levels %v, end %q", names, out.Summary.EndReason)
	}
	if got := RunFiles(cfg.Output.Dir); !slices.Equal(got, []string{"records.jsonl", "report.html", "summary.csv", "summary.json"}) {
		t.Errorf("run files %v", got)
	}
}

// TestRunFieldErrors: a configuration's problems come back all at once, each naming its
// field, and nothing is written.
func TestRunFieldErrors(t *testing.T) {
	cfg := testConfig(t)
	cfg.Repeat, cfg.Search, cfg.Output.Records = 0, "tokens", "xml"
	_, err := Run(context.Background(), cfg, time.Now(), fakeLevels)
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *fielderr.Error
		if errors.As(e, &fe) {
			fields = append(fields, fe.Field)
		}
	}
	if !slices.Equal(fields, []string{"Output.Records", "Repeat", "Search"}) {
		t.Errorf("fields %v (%v)", fields, err)
	}
	if _, err := os.Stat(cfg.Output.Dir); err == nil {
		t.Error("an invalid run created its folder")
	}
}
