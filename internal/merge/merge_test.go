package merge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/rundesc"
)

// mergeRunRecords is one synthetic unsharded run: two closed-loop levels with completed,
// failed, never-sent and warm-up requests, offsets from the run's t = 0. Request i's times
// are moved earlier by shift(i), to build a shard whose clock started that much later.
func mergeRunRecords(seed uint64, shift func(i int) time.Duration) []record.Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	var recs []record.Record
	clock := 40 * time.Millisecond
	for level := range 2 {
		for i := range 60 {
			r := record.Record{Level: level, Index: i, Warmup: i < 3, InputTokens: 16 + i%5}
			r.Scheduled = clock + time.Duration(rng.IntN(50_000))*time.Microsecond - shift(i)
			r.Sent = r.Scheduled + time.Duration(rng.IntN(300))*time.Microsecond
			r.ResponseID = "chatcmpl-" + string(rune('a'+level)) + "-" + string(rune('A'+i%26)) + string(rune('A'+i/26))
			r.Events.Base = r.Sent
			t := r.Sent + time.Duration(5_000+rng.IntN(40_000))*time.Microsecond
			n := 2 + rng.IntN(20)
			for k := range n {
				tokens := 1
				if k%7 == 3 {
					tokens = 2 // a coalesced read
				}
				r.Events.Append(t, tokens)
				t += time.Duration(1_000+rng.IntN(30_000)) * time.Microsecond
			}
			r.Done = t
			r.OutputTokens, r.OutputTokensSource = r.Events.Tokens(), record.SourceUsage
			switch i % 17 {
			case 5:
				r.Error = &record.Error{Kind: record.KindHTTPStatus, Status: 500, Message: "boom"}
				r.Events = record.Events{}
				r.OutputTokens = 0
			case 11: // never sent
				r.Error = &record.Error{Kind: record.KindConnect, Message: "refused"}
				r.Sent, r.Done, r.Events, r.OutputTokens = 0, r.Scheduled+time.Millisecond, record.Events{}, 0
			}
			recs = append(recs, r)
		}
		clock += 3 * time.Second
	}
	return recs
}

// writeShardDir writes one shard's results folder as run would: records with offsets from
// the shard's own start, and a summary.json describing it.
func writeShardDir(t *testing.T, dir string, sum *report.Summary, recs []record.Record) {
	t.Helper()
	err := errors.Join(os.MkdirAll(dir, 0o755), record.WriteFile(filepath.Join(dir, "records.jsonl"), recs), report.Save(dir, sum))
	if err != nil {
		t.Fatal(err)
	}
}

func shardSummary(start time.Time, startAt string, shard string, levels int) *report.Summary {
	load := rundesc.Load{Mode: rundesc.ModeRun, Requests: 60, IgnoreEOS: true, Shard: shard, StartAt: startAt,
		Levels: []rundesc.Level{{Concurrency: 8, Requests: 60}, {Concurrency: 16, Requests: 60}}}
	s := &report.Summary{Schema: report.SchemaV2, Version: "test", StartedAt: start.UTC(),
		RunStartUnix: float64(start.UnixMicro()) / 1e6, Seed: 7, EndReason: report.EndCompleted,
		Target:   report.NewTarget("http://127.0.0.1:8000", "openai-chat", "m"),
		Workload: rundesc.Workload{Dataset: "random", InputTokens: "16", OutputTokens: "uniform:2:21"},
		Load:     load, Percentiles: metrics.DefaultPercentiles, SLO: "ttft<=30ms,tpot:p99<=20ms"}
	for i := range levels {
		c := []int{8, 16}[i]
		s.Levels = append(s.Levels, report.Level{Name: "concurrency " + []string{"8", "16"}[i], Concurrency: c})
	}
	return s
}

// splitShards writes the run mergeRunRecords(seed) as n shards (index i % n) whose starts
// lie skews[k] after the run's t0, each with offsets from its own start.
func splitShards(t *testing.T, root string, seed uint64, t0 time.Time, skews []time.Duration, startAt string) []string {
	t.Helper()
	n := len(skews)
	all := mergeRunRecords(seed, func(i int) time.Duration { return skews[i%n] })
	var dirs []string
	for k := range n {
		var part []record.Record
		for _, r := range all {
			if r.Index%n == k {
				part = append(part, r)
			}
		}
		dir := filepath.Join(root, "shard-"+string(rune('0'+k)))
		writeShardDir(t, dir, shardSummary(t0.Add(skews[k]), startAt, rundesc.ShardString(k, n), 2), part)
		dirs = append(dirs, dir)
	}
	return dirs
}

// combine reads dirs and merges them as llmbench merge does.
func combine(t *testing.T, dirs []string, force bool) (*report.Summary, []record.Record, *Problems, error) {
	t.Helper()
	var sh []*Shard
	for _, d := range dirs {
		s, err := Read(d)
		if err != nil {
			t.Fatal(err)
		}
		sh = append(sh, s)
	}
	p := Check(sh, 50*time.Millisecond, time.Second)
	sum, recs, _, err := Combine(sh, force, p, "test")
	return sum, recs, p, err
}

// The merged figures are exactly those of one machine computing over the union: the same
// records on the same timeline give the same summary, bit for bit.
func TestCombineEqualsUnion(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	recs := mergeRunRecords(1, func(int) time.Duration { return 0 })
	root := t.TempDir()
	// Shard 1 started first, 2.5 ms before the others' t0 would be; shard 2 started 7 ms late.
	skews := []time.Duration{2500 * time.Microsecond, 0, 9500 * time.Microsecond}
	dirs := splitShards(t, root, 1, t0, skews, "2026-03-01T12:00:00Z")
	sum, got, p, err := combine(t, dirs, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts)+len(p.Warnings) > 0 {
		t.Errorf("unexpected problems: %+v", p)
	}
	if !sum.StartedAt.Equal(t0) || sum.Version != "test" {
		t.Errorf("started_at %s, version %q; want the earliest shard's %s, test", sum.StartedAt, sum.Version, t0)
	}
	if len(got) != len(recs) {
		t.Fatalf("%d merged records, want %d", len(got), len(recs))
	}
	// Every record is back at its original place on the timeline.
	byKey := map[[2]int]string{}
	for _, r := range recs {
		byKey[[2]int{r.Level, r.Index}] = string(record.AppendJSON(nil, &r))
	}
	for _, r := range got {
		if want := byKey[[2]int{r.Level, r.Index}]; string(record.AppendJSON(nil, &r)) != want {
			t.Errorf("merged record\n%s\nwant\n%s", record.AppendJSON(nil, &r), want)
		}
	}
	slos, _ := metrics.ParseSLOs("ttft<=30ms,tpot:p99<=20ms")
	cfg := metrics.Config{Percentiles: metrics.DefaultPercentiles, SLOs: slos}
	if len(sum.Levels) != 2 {
		t.Fatalf("%d levels, want 2", len(sum.Levels))
	}
	for level := range 2 {
		var mine []record.Record
		for _, r := range recs {
			if r.Level == level {
				mine = append(mine, r)
			}
		}
		want, _ := json.Marshal(metrics.Aggregate(mine, cfg))
		gotJS, _ := json.Marshal(sum.Levels[level].Level)
		if string(want) != string(gotJS) {
			t.Errorf("level %d:\n got %s\nwant %s", level, gotJS, want)
		}
		if c := sum.Levels[level].Concurrency; c != []int{8, 16}[level] {
			t.Errorf("level %d concurrency %d", level, c)
		}
	}
	if sum.Load.Shard != "" {
		t.Error("merged load still names a shard")
	}
	if ms, _ := json.Marshal(sum.Load.MergedShards); string(ms) != `["0/3","1/3","2/3"]` {
		t.Errorf("merged_shards = %s", ms)
	}
}

func TestProblems(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		edit  func(t *testing.T, dirs []string) []string
		force bool
		fails bool
		want  []string // in the conflicts, warnings or error
	}{
		{name: "clean"},
		{name: "workload differs", fails: true, edit: func(t *testing.T, dirs []string) []string {
			s := shardSummary(t0, "2026-03-01T12:00:00Z", "1/3", 2)
			s.Workload.InputTokens = "32"
			rewriteSummary(t, dirs[1], s)
			return dirs
		}, want: []string{`differ in workload: input_tokens "16" vs "32"`, "--force"}},
		{name: "forced", force: true, edit: func(t *testing.T, dirs []string) []string {
			s := shardSummary(t0, "2026-03-01T12:00:00Z", "1/3", 2)
			s.Seed = 8
			rewriteSummary(t, dirs[1], s)
			return dirs
		}, want: []string{"differ in seed: 7 vs 8"}},
		{name: "same shard twice", fails: true, edit: func(t *testing.T, dirs []string) []string {
			return []string{dirs[0], dirs[1], dirs[2], dirs[1]}
		}, want: []string{"are both shard 1/3", "request 1 is in both"}},
		{name: "shard missing", edit: func(t *testing.T, dirs []string) []string {
			return dirs[:2]
		}, want: []string{"shards 2/3 are missing"}},
		{name: "not a shard", fails: true, edit: func(t *testing.T, dirs []string) []string {
			rewriteSummary(t, dirs[0], shardSummary(t0, "2026-03-01T12:00:00Z", "", 2))
			return dirs
		}, want: []string{"is not a shard"}},
		{name: "late clock", edit: func(t *testing.T, dirs []string) []string {
			rewriteSummary(t, dirs[2], shardSummary(t0.Add(80*time.Millisecond), "2026-03-01T12:00:00Z", "2/3", 2))
			return dirs
		}, want: []string{"started 80ms from its --start-at", "span 80ms"}},
		{name: "no start-at", edit: func(t *testing.T, dirs []string) []string {
			for k, d := range dirs {
				rewriteSummary(t, d, shardSummary(t0.Add(time.Duration(k)*300*time.Millisecond), "", rundesc.ShardString(k, 3), 2))
			}
			return dirs
		}, want: []string{"without --start-at and 600ms apart"}},
		// A shard scheduled after the others had finished (one 2-CPU node, two pods of 2
		// CPUs): its load never overlapped theirs.
		{name: "started after the others", fails: true, edit: func(t *testing.T, dirs []string) []string {
			rewriteSummary(t, dirs[1], shardSummary(t0.Add(4500*time.Millisecond), "2026-03-01T12:00:00Z", "1/3", 2))
			return dirs
		}, want: []string{"started 4.5s from its --start-at", "span 4.5s", "more than --max-start-spread 1s"}},
		{name: "target differs", fails: true, edit: func(t *testing.T, dirs []string) []string {
			s := shardSummary(t0, "2026-03-01T12:00:00Z", "2/3", 2)
			s.Target = report.NewTarget("http://10.0.0.9:8000", "openai-chat", "m")
			rewriteSummary(t, dirs[2], s)
			return dirs
		}, want: []string{"differ in target", "10.0.0.9"}},
		{name: "in-process simulators on their own ports", edit: func(t *testing.T, dirs []string) []string {
			for k, d := range dirs {
				s := shardSummary(t0, "2026-03-01T12:00:00Z", rundesc.ShardString(k, 3), 2)
				s.Load.SimProfile = "textbook"
				s.Target = report.NewTarget(fmt.Sprintf("http://127.0.0.1:%d", 40000+k), "openai-chat", "m")
				rewriteSummary(t, d, s)
			}
			return dirs
		}},
		{name: "price differs", fails: true, edit: func(t *testing.T, dirs []string) []string {
			s := shardSummary(t0, "2026-03-01T12:00:00Z", "1/3", 2)
			s.Price = &metrics.Price{GPU: &metrics.GPUPrice{USDPerGPUHour: 3.5, GPUs: 8}, Source: "--gpu-price, --gpus"}
			rewriteSummary(t, dirs[1], s)
			return dirs
		}, want: []string{"differ in price", `"gpus":8`}},
		{name: "priced alike", edit: func(t *testing.T, dirs []string) []string {
			for k, d := range dirs {
				s := shardSummary(t0, "2026-03-01T12:00:00Z", rundesc.ShardString(k, 3), 2)
				s.Price = &metrics.Price{GPU: &metrics.GPUPrice{USDPerGPUHour: 3.5, GPUs: 8}, Source: "--gpu-price, --gpus"}
				rewriteSummary(t, d, s)
			}
			return dirs
		}},
		{name: "levels differ", fails: true, edit: func(t *testing.T, dirs []string) []string {
			rewriteSummary(t, dirs[0], shardSummary(t0, "2026-03-01T12:00:00Z", "0/3", 1))
			return dirs
		}, want: []string{"has 1 levels"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dirs := splitShards(t, root, 2, t0, []time.Duration{0, 0, 0}, "2026-03-01T12:00:00Z")
			if c.edit != nil {
				dirs = c.edit(t, dirs)
			}
			sum, _, p, err := combine(t, dirs, c.force)
			if (err != nil) != c.fails {
				t.Fatalf("error %v, want failure %v", err, c.fails)
			}
			all := strings.Join(append(p.Conflicts, p.Warnings...), "\n")
			if err != nil {
				all += "\n" + err.Error()
			}
			for _, s := range c.want {
				if !strings.Contains(all, s) {
					t.Errorf("problems lack %q:\n%s", s, all)
				}
			}
			if len(c.want) == 0 && all != "" {
				t.Errorf("unexpected problems: %s", all)
			}
			// The shards' price is the merged run's, and prices its levels.
			if c.name == "priced alike" && (sum.Price == nil || sum.Price.GPU.GPUs != 8 || sum.Levels[0].Cost == nil || sum.Levels[0].Cost.USDPerHour != 28) {
				t.Errorf("merged price %+v, cost %+v", sum.Price, sum.Levels[0].Cost)
			}
			if err == nil && len(c.want) > 0 {
				if w, _ := json.Marshal(sum.Load.MergeWarnings); !strings.Contains(string(w), c.want[len(c.want)-1]) {
					t.Errorf("summary's merge_warnings %s lack the warning", w)
				}
			}
		})
	}
}

// A merge started beside its shards waits for each to finish: a summary that still says
// "running", or none yet, keeps it waiting; when the time is up it names those it waited for.
func TestAwait(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	root := t.TempDir()
	dirs := splitShards(t, root, 2, t0, []time.Duration{0, 0, 0}, "2026-03-01T12:00:00Z")
	if err := Await(t.Context(), dirs, time.Millisecond); err != nil {
		t.Fatalf("finished shards: %v", err)
	}
	running := shardSummary(t0, "2026-03-01T12:00:00Z", "1/3", 2)
	running.EndReason = report.EndRunning
	rewriteSummary(t, dirs[1], running)
	absent := filepath.Join(root, "shard-9")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	err := Await(ctx, append(dirs, absent), time.Millisecond)
	if err == nil {
		t.Fatal("Await returned with a shard running and one absent")
	}
	for _, want := range []string{"2 of 4 shards", dirs[1] + " (its run is still running)", absent + " (no summary.json yet)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// The running shard finishes while Await waits.
	done := make(chan error, 1)
	go func() { done <- Await(t.Context(), dirs, time.Millisecond) }()
	time.Sleep(5 * time.Millisecond)
	rewriteSummary(t, dirs[1], shardSummary(t0, "2026-03-01T12:00:00Z", "1/3", 2))
	if err := <-done; err != nil {
		t.Fatalf("after the shard finished: %v", err)
	}
}

func rewriteSummary(t *testing.T, dir string, s *report.Summary) {
	t.Helper()
	if err := report.Save(dir, s); err != nil {
		t.Fatal(err)
	}
}
