package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/fidelity"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/testtier"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// startServe runs `llmbench serve` in-process on a free port and returns its URL and a stop
// function that waits for it to exit (which flushes the truth file).
func startServe(t *testing.T, args ...string) (url string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var errBuf bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), Stdio{In: strings.NewReader(""), Out: pw, Err: &errBuf})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if !strings.HasPrefix(line, "listening on ") {
		cancel()
		t.Fatalf("serve: %q %v (exit %d) %s", line, err, <-done, errBuf.String())
	}
	go io.Copy(io.Discard, pr)
	stop = func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exit %d: %s", code, errBuf.String())
		}
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "listening on ")), stop
}

// Three shards of one run, started together against one serve, merge into the whole plan:
// every request once, the merged figures consistent with the shards', and the merged run's
// records still join to the server's ground truth with non-negative event-time errors.
func TestShardsAgainstServe(t *testing.T) {
	testtier.Long(t, "runs a server and three shards for about two seconds")
	// The shards wait 3 s for their start time.
	t.Parallel()
	if _, err := tokenizer.Load("o200k_base"); err != nil { // cached: the shards start at once
		t.Fatal(err)
	}
	root := t.TempDir()
	truth := filepath.Join(root, "truth.jsonl")
	url, stop := startServe(t, "--sim", "textbook", "--truth", truth)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	const shards, requests, outTokens = 3, 30, 8
	startAt := time.Now().Add(3000 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	dirs := make([]string, shards)
	outs := make([]string, shards)
	codes := make([]int, shards)
	for i := range shards {
		dirs[i] = filepath.Join(root, fmt.Sprintf("shard-%d", i))
		wg.Go(func() {
			var o, e bytes.Buffer
			codes[i] = Main(context.Background(), []string{"run", "--url", url, "--concurrency", "6",
				"--requests", fmt.Sprint(requests), "--input-tokens", "16", "--output-tokens", fmt.Sprint(outTokens),
				"--shard", fmt.Sprintf("%d/%d", i, shards), "--start-at", startAt, "--no-progress", "--test-request=false", // every truth line is a record's
				"--output-dir", dirs[i]}, Stdio{In: strings.NewReader(""), Out: &o, Err: &e})
			outs[i] = o.String() + e.String()
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("shard %d exit %d:\n%s", i, c, outs[i])
		}
	}

	merged := filepath.Join(root, "merged")
	code, stdout, stderr := mainCapture(append([]string{"merge", "--output-dir", merged}, dirs...)...)
	if code != 0 {
		t.Fatalf("merge exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if stderr != "" {
		t.Logf("merge warnings (a loaded machine can wake a shard late):\n%s", stderr)
	}
	sum, recs := readMerged(t, merged)
	seen := make([]int, requests)
	for _, r := range recs {
		if r.Level != 0 || r.Index < 0 || r.Index >= requests {
			t.Fatalf("merged record outside the plan: level %d index %d", r.Level, r.Index)
		}
		seen[r.Index]++
		if !r.OK() || r.OutputTokens != outTokens {
			t.Errorf("request %d: error %v, %d tokens", r.Index, r.Error, r.OutputTokens)
		}
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("request %d appears %d times in the merged run", i, n)
		}
	}
	// The merged level against the shards': counts and tokens add up, the window covers
	// every shard's, and the peak concurrency is the plan's at most.
	l := sum.Levels[0]
	var completed, tokens int
	var longest float64
	peak := 0
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := report.ReadJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		completed += s.Levels[0].Completed
		tokens += s.Levels[0].TotalOutputTokens
		longest = max(longest, s.Levels[0].DurationS)
		peak = max(peak, s.Levels[0].PeakConcurrency)
	}
	if l.Completed != requests || completed != requests || l.TotalOutputTokens != tokens || tokens != requests*outTokens {
		t.Errorf("merged %d completed, %d tokens; shards %d, %d", l.Completed, l.TotalOutputTokens, completed, tokens)
	}
	if l.DurationS < longest || l.PeakConcurrency < peak || l.PeakConcurrency > 6 {
		t.Errorf("merged duration %.3f s, peak %d; shards' longest %.3f s, peak %d", l.DurationS, l.PeakConcurrency, longest, peak)
	}
	if l.Concurrency != 6 || sum.Levels[0].Metrics.Stat("ttft").Count != requests {
		t.Errorf("merged level: concurrency %d, %d TTFT samples", l.Concurrency, sum.Levels[0].Metrics.Stat("ttft").Count)
	}

	stop()
	stopped = true
	code, stdout, stderr = mainCapture("fidelity", "--records", merged, "--truth", truth, "--json")
	if code != 0 {
		t.Fatalf("fidelity exit %d: %s", code, stderr)
	}
	var rep fidelity.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.Records != requests || rep.Matched != requests || rep.CountMismatch != 0 || rep.UnmatchedTruth != 0 {
		t.Errorf("join: %+v", rep)
	}
	events := 0
	for _, r := range recs {
		events += r.Events.Len()
	}
	if rep.Events != events || events < requests {
		t.Errorf("%d events paired, want %d", rep.Events, events)
	}
	// One machine, one wall clock: requests reach the server after they were sent, and
	// events arrive after the server wrote them: with kernel stamps (the kernel stamps them
	// inside the server's write, before its own stamp) by no more than some µs early, with
	// read stamps mostly after (but for the few the server stamped late).
	early := rep.Early > rep.Events/10
	if rep.KernelStamped > 0 {
		early = rep.EventTime.P50 < -0.05
	}
	if rep.ClockWarning != "" || rep.EventTime.P50 < -0.05 || rep.SendDelay.Min < -0.002 || early {
		t.Errorf("event time %+v, send delay %+v, warning %q, %d kernel-stamped", rep.EventTime, rep.SendDelay, rep.ClockWarning, rep.KernelStamped)
	}
	if runtime.GOOS == "linux" && rep.KernelStamped != 0 && rep.KernelStamped != requests {
		t.Errorf("%d of %d records kernel-stamped: all or none", rep.KernelStamped, requests)
	}
}

func TestFidelityCommand(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := record.Record{ResponseID: "x", Sent: 10 * time.Millisecond}
	r.Events.Base = r.Sent
	r.Events.Append(30*time.Millisecond, 1)
	r.Events.Append(50*time.Millisecond+500*time.Microsecond, 1)
	writeShardDir(t, dir, &report.Summary{Schema: report.SchemaV2, StartedAt: start}, []record.Record{r})
	truth := filepath.Join(dir, "truth.jsonl")
	su := start.UnixMicro()
	line := fmt.Sprintf(`{"id":"x","received_unix":%d.010000,"event_unix":[%d.029800,%d.050000]}`+"\n", su/1e6, su/1e6, su/1e6)
	if err := os.WriteFile(truth, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := mainCapture("fidelity", "--records", dir, "--truth", truth)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Events 0.2 and 0.5 ms late; TTFT 20 vs 19.8 ms; one ITL sample 20.5 vs 20.2 ms.
	for _, s := range []string{"1 read, 1 joined", "event time                  2    0.350    0.200    0.350",
		"TTFT                        1    0.200", "ITL (per token)             1    0.300"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("output lacks %q:\n%s", s, stdout)
		}
	}
	// --start overrides summary.json: 1 ms later shifts every event error by 1 ms.
	code, stdout, _ = mainCapture("fidelity", "--records", filepath.Join(dir, "records.jsonl"), "--truth", truth,
		"--start", start.Add(time.Millisecond).Format(time.RFC3339Nano), "--json")
	var rep fidelity.Report
	if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil || !fidelityNear(rep.EventTime.Max, 1.5) {
		t.Errorf("--start: exit %d, %v, %+v", code, err, rep.EventTime)
	}
	// A warm-up record is left out unless --include-warmup.
	warm := t.TempDir()
	r.Warmup = true
	writeShardDir(t, warm, &report.Summary{Schema: report.SchemaV2, StartedAt: start}, []record.Record{r})
	for _, c := range []struct {
		flag       string
		warm, pair int
	}{{"--json", 1, 0}, {"--include-warmup", 0, 2}} {
		code, stdout, stderr := mainCapture("fidelity", "--records", warm, "--truth", truth, "--json", c.flag)
		rep = fidelity.Report{}
		if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil || rep.Warmup != c.warm || rep.Events != c.pair {
			t.Errorf("%s: exit %d, %v, %s: warm-up %d, events %d; want %d, %d", c.flag, code, err, stderr, rep.Warmup, rep.Events, c.warm, c.pair)
		}
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fidelity"}, ExitUsage, "--records: give"},
		{[]string{"fidelity", "--records", dir}, ExitUsage, "--truth: give"},
		{[]string{"fidelity", "--records", dir, "--truth", truth, "--start", "yesterday"}, ExitUsage, "--start"},
		{[]string{"fidelity", "--records", dir, "--truth", filepath.Join(dir, "nope")}, ExitFailure, "--truth"},
		{[]string{"fidelity", "--records", t.TempDir(), "--truth", truth}, ExitFailure, "summary.json"},
		{[]string{"fidelity", "--records", filepath.Join(dir, "nope"), "--truth", truth}, ExitFailure, "name a run's results folder"},
	} {
		code, _, stderr := mainCapture(c.args...)
		// The message wraps where its paths end, which a temporary folder's name moves.
		if code != c.code || !strings.Contains(strings.Join(strings.Fields(stderr), " "), c.want) {
			t.Errorf("%v: exit %d, %s; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

func fidelityNear(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
