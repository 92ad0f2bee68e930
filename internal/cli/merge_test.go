package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/rundesc"
)

// writeShardDir writes one shard's results folder as run would: records with offsets from
// the shard's own start, and a summary.json describing it.
func writeShardDir(t *testing.T, dir string, sum *report.Summary, recs []record.Record) {
	t.Helper()
	err := errors.Join(os.MkdirAll(dir, 0o755), record.WriteFile(filepath.Join(dir, "records.jsonl"), recs), report.Save(dir, sum))
	if err != nil {
		t.Fatal(err)
	}
}

func mainCapture(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = Main(context.Background(), args, Stdio{In: strings.NewReader(""), Out: &o, Err: &e})
	return code, o.String(), e.String()
}

func readMerged(t *testing.T, dir string) (*report.Summary, []record.Record) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err := report.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return sum, readRecords(t, dir)
}

func TestMergeUsage(t *testing.T) {
	if code, _, stderr := mainCapture("merge", "x"); code != ExitUsage || !strings.Contains(stderr, "--output-dir") {
		t.Errorf("no --output-dir: exit %d, %s", code, stderr)
	}
	if code, _, stderr := mainCapture("merge", "--output-dir", t.TempDir()); code != ExitUsage {
		t.Errorf("no DIR: exit %d, %s", code, stderr)
	}
	code, _, stderr := mainCapture("merge", "--output-dir", t.TempDir(), filepath.Join(t.TempDir(), "nope"))
	if code != ExitFailure || !strings.Contains(stderr, "summary.json") {
		t.Errorf("missing folder: exit %d, %s", code, stderr)
	}
}

// The command's side of merge: exit 1 on conflicts, which --force turns into warnings on
// stderr, and the merged folder with its console summary.
func TestMergeCommand(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	root := t.TempDir()
	var dirs []string
	for k := range 2 {
		r := record.Record{Level: 0, Index: k, Scheduled: time.Millisecond, Sent: time.Millisecond,
			Done: 30 * time.Millisecond, InputTokens: 8, OutputTokens: 2, OutputTokensSource: record.SourceUsage}
		r.Events.Base = r.Sent
		r.Events.Append(10*time.Millisecond, 1)
		r.Events.Append(20*time.Millisecond, 1)
		sum := &report.Summary{Schema: report.SchemaV2, StartedAt: t0, Seed: int64(7 + k), EndReason: report.EndCompleted,
			Load:   rundesc.Load{Mode: rundesc.ModeRun, Shard: rundesc.ShardString(k, 2), Levels: []rundesc.Level{{Concurrency: 1}}},
			Levels: []report.Level{{Name: "concurrency 1", Concurrency: 1}}, Percentiles: metrics.DefaultPercentiles}
		dirs = append(dirs, filepath.Join(root, "shard-"+strconv.Itoa(k)))
		writeShardDir(t, dirs[k], sum, []record.Record{r})
	}
	out := filepath.Join(root, "merged")
	code, _, stderr := mainCapture(append([]string{"merge", "--output-dir", out}, dirs...)...)
	if flat := strings.Join(strings.Fields(stderr), " "); code != ExitFailure || !strings.Contains(flat, "differ in seed: 7 vs 8") || !strings.Contains(stderr, "--force") {
		t.Errorf("seeds differ: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := mainCapture(append([]string{"merge", "--output-dir", out, "--force"}, dirs...)...)
	if code != 0 || !strings.Contains(stderr, "warning (--force): ") || !strings.Contains(stdout, "Merged 2 shards (2 requests)") {
		t.Fatalf("--force: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, f := range []string{"records.jsonl", "summary.json", "summary.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if sum, recs := readMerged(t, out); len(recs) != 2 || len(sum.Load.MergedShards) != 2 || sum.Levels[0].Completed != 2 {
		t.Errorf("merged %d records, shards %v, %d completed", len(recs), sum.Load.MergedShards, sum.Levels[0].Completed)
	}
}
