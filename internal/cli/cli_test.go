package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/testtier"
)

// runCLI runs llmbench with args and returns its exit code and output.
//
// Main takes its streams per call, so commands run concurrently in one test binary: the
// tests that spend seconds waiting on the real clock (live runs, a server, shards waiting
// for their start time) call t.Parallel, so that their waits overlap instead of adding up.
// Such a test sets no environment (t.Setenv refuses in one) and holds no wall-clock bound.
func runCLI(t testing.TB, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(ctx, args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), unfoldErrors(errb.String())
}

// unfoldErrors joins the lines an error ("llmbench: ...") was folded into for the
// console (console.FoldNotes indents them under its text), so that a test finds its words whole.
func unfoldErrors(stderr string) string {
	return strings.ReplaceAll(stderr, "\n"+strings.Repeat(" ", len("llmbench: ")), " ")
}

// startInProcessSim serves the simulator of profile (a name or a YAML file) on loopback
// until stop, its prompts counted by countTokens: a target of a test's own profile.
func startInProcessSim(ctx context.Context, profile string, seed int64, countTokens func(string) int, chat *chattemplate.Template) (url string, p sim.Profile, stop func(), err error) {
	if p, err = sim.LoadProfile(profile); err != nil {
		return "", p, nil, err
	}
	p.Seed = seed
	url, stop, err = bench.ServeSimulator(ctx, p, countTokens, chat)
	return url, p, stop, err
}

func readSummaryT(t *testing.T, dir string) *report.Summary {
	t.Helper()
	s, err := report.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestUsageErrorsAllAtOnce(t *testing.T) {
	code, _, stderr := runCLI(t, context.Background(), "run", "--concurrency", "0,x", "--rate", "-1",
		"--arrival", "weibull", "--input-tokens", "uniform:9", "--slo", "latency<5", "--api", "grpc",
		"--url", "ftp://x", "--warmup", "soon")
	if code != ExitUsage {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, ExitUsage, stderr)
	}
	for _, want := range []string{"--concurrency", "--rate", "--arrival", "--input-tokens", "--slo", "--api", "--url", "--warmup", "llmbench --help"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not mention %s:\n%s", want, stderr)
		}
	}
}

func TestUnknownFlagIsUsageError(t *testing.T) {
	if code, _, _ := runCLI(t, context.Background(), "run", "--no-such-flag"); code != ExitUsage {
		t.Fatalf("exit code %d, want %d", code, ExitUsage)
	}
}

// Usage errors, cobra's own included, are *UsageError; other failures are not.
func TestUsageErrorsAreTyped(t *testing.T) {
	exec := func(args ...string) error {
		root := newRoot(Stdio{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
		root.SetArgs(args)
		err := findCommand(root, args)
		if err == nil {
			err = root.Execute()
		}
		return err
	}
	for _, args := range [][]string{
		{"nope"}, {"rn"}, {"--nope"}, {"run", "--nope"}, {"simulate", "-Z"}, {"simulate", "--no-progress=maybe"},
		{"simulate", "--output-dir"}, {"report"}, {"report", "a", "b"}, {"dataset", "x"}, {"merge"},
		{"simulate", "--concurrency", "0"},
	} {
		var ue *UsageError
		if err := exec(args...); !errors.As(err, &ue) {
			t.Errorf("%q: error %v (%T), want a *UsageError", args, err, err)
		}
	}
	var ue *UsageError
	if err := exec("report", t.TempDir()); err == nil || errors.As(err, &ue) {
		t.Errorf("report of an empty folder: error %v, want a failure that is not a usage error", err)
	}
	for _, args := range [][]string{{}, {"help"}, {"help", "run"}, {"run", "--help"}} {
		if err := exec(args...); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// The textbook ladder: the design's table of TPOT and throughput, the SLO limit at 16, and
// a search that finds 23 (TPOT = 8 x (1 + 0.12 (c - 1)) <= 30 ms).
func TestSimulateTextbookLadderAndSearch(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook",
		"--concurrency", "1,4,16,64", "--requests", "400", "--input-tokens", "512", "--output-tokens", "100",
		"--slo", "tpot:p99<=30ms", "--output-dir", dir) // 400 requests: a P99 needs 368 for a verdict
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	s := readSummaryT(t, dir)
	wantTPOT := []float64{8.00, 10.88, 22.40, 68.48}
	wantTput := []float64{125, 368, 718, 943}
	for i, l := range s.Levels {
		p50, _ := l.Metrics.Stat("tpot").Get(50)
		if d := p50.Value/wantTPOT[i] - 1; d > 0.02 || d < -0.02 {
			t.Errorf("level %d TPOT P50 %.2f, want %.2f", i, p50.Value, wantTPOT[i])
		}
		if d := l.OutputThroughput/wantTput[i] - 1; d > 0.02 || d < -0.02 {
			t.Errorf("level %d throughput %.1f, want %.0f", i, l.OutputThroughput, wantTput[i])
		}
	}
	if s.SLOLimit == nil || s.SLOLimit.Concurrency != 16 {
		t.Errorf("slo_limit %+v, want concurrency 16", s.SLOLimit)
	}
	if !strings.Contains(stdout, "SLO limit") || !strings.Contains(stdout, "Sweet spot") {
		t.Errorf("console does not mark the sweet spot and SLO limit:\n%s", stdout)
	}

	dir2 := t.TempDir()
	code, stdout, stderr = runCLI(t, context.Background(), "simulate", "--sim", "textbook",
		"--search", "concurrency", "--slo", "tpot:p50<=30ms", "--output-tokens", "100", "--output-dir", dir2)
	if code != 0 {
		t.Fatalf("search exit %d\n%s\n%s", code, stdout, stderr)
	}
	if s := readSummaryT(t, dir2); s.SLOLimit == nil || s.SLOLimit.Concurrency != 23 {
		t.Errorf("search slo_limit %+v, want concurrency 23", s.SLOLimit)
	}
}

func TestExitCode3WhenNoLevelMeetsSLOs(t *testing.T) {
	code, _, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook",
		"--concurrency", "16,64", "--output-tokens", "20", "--slo", "tpot:p50<=5ms", "--output-dir", t.TempDir())
	if code != ExitSLOFailed {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitSLOFailed, stderr)
	}
}

// TestExitCode3WhenNotKeptUpOrUndecided: a level stopped as oversaturated fails its
// verdict though the requests that finished met the SLOs (a queue past the first token:
// TTFT stays flat), and a P99 judged on one sample is undecided; both exit 3.
func TestExitCode3WhenNotKeptUpOrUndecided(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		verdict string
	}{
		{"oversaturated", []string{"--sim", "../../bench/disagg16.yaml", "--rate", "14", "--duration", "60s",
			"--input-tokens", "512", "--output-tokens", "100", "--slo", "ttft:p99<=1s"}, "Verdict:                                 fail (oversaturated: "},
		{"one sample", []string{"--sim", "textbook", "--concurrency", "64", "--requests", "1", "--slo", "ttft:p99<=1s"},
			"Verdict:                                 undecided (ttft on 1 sample; p99 needs at least 368"},
	} {
		dir := t.TempDir()
		code, stdout, stderr := runCLI(t, context.Background(), append([]string{"simulate", "--output-dir", dir}, tc.args...)...)
		if code != ExitSLOFailed {
			t.Errorf("%s: exit %d, want %d; stderr %s", tc.name, code, ExitSLOFailed, stderr)
		}
		if !strings.Contains(stdout, tc.verdict) {
			t.Errorf("%s: console lacks %q:\n%s", tc.name, tc.verdict, stdout)
		}
		s := summaryMap(t, dir)
		if pass, reason := path(s, "levels", 0, "slo", "pass"), path(s, "levels", 0, "slo", "reason"); pass != false || reason == nil {
			t.Errorf("%s: summary.json slo.pass %v, slo.reason %v; want false and a reason", tc.name, pass, reason)
		}
	}
}

// report recomputes the same figures from the records, in either format.
func TestReportRoundTrip(t *testing.T) {
	for _, format := range record.Formats() {
		t.Run(string(format), func(t *testing.T) { testReportRoundTrip(t, format) })
	}
}

func testReportRoundTrip(t *testing.T, format record.Format) {
	dir, out := t.TempDir(), t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook",
		"--concurrency", "2,8", "--requests", "40", "--output-tokens", "uniform:10:60", "--input-tokens", "normal:300:50",
		"--slo", "ttft<=20ms,tpot:p90<=15ms", "--records", string(format), "--output-dir", dir); code != 0 { // a P90 needs 36
		t.Fatalf("simulate: %s", stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, format.FileName())); err != nil {
		t.Fatalf("simulate --records %s: %v", format, err)
	}
	if code, _, stderr := runCLI(t, context.Background(), "report", dir, "--output-dir", out); code != 0 {
		t.Fatalf("report: %s", stderr)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	b, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if !bytes.Equal(a, b) {
		t.Errorf("report did not reproduce summary.json:\n%s\n----\n%s", a, b)
	}
	// The page comes from the same aggregation whether the run or report fed it.
	for _, f := range []string{"summary.csv", "report.html"} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("report did not reproduce %s (%v)", f, err)
		}
	}

	// A killed writer's unterminated last line is left out and noted, by the figures and
	// the page alike.
	recs := filepath.Join(dir, format.FileName())
	f, err := os.OpenFile(recs, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if format == record.FormatCompact {
		f.Write([]byte{40, 0, 1, 2}) // a frame of 40 bytes, cut after 3
	} else {
		f.WriteString(`{"level":1,"index":99999,"warm`)
	}
	f.Close()
	code, _, stderr := runCLI(t, context.Background(), "report", dir, "--output-dir", out)
	if code != 0 || !strings.Contains(stderr, "truncated") {
		t.Fatalf("report of a truncated records.jsonl: exit %d, stderr %s", code, stderr)
	}
	if b, _ = os.ReadFile(filepath.Join(out, "summary.json")); !bytes.Equal(a, b) {
		t.Error("the truncated line changed the figures")
	}
	if page, _ := os.ReadFile(filepath.Join(out, "report.html")); !bytes.Contains(page, []byte("truncated")) {
		t.Error("report.html does not note the truncated line")
	}
}

// pacedServer streams n tokens per request: the first after ttft, then one every itl.
func pacedServer(t *testing.T, ttft, itl time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"paced","object":"model"}]}`)
			return
		}
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.MaxTokens < 1 {
			http.Error(w, `{"error":{"message":"bad body"}}`, 400)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		start := time.Now()
		for i := 0; i < body.MaxTokens; i++ {
			due := start.Add(ttft + time.Duration(i)*itl) // absolute due times: no drift
			time.Sleep(time.Until(due))
			fmt.Fprintf(w, "data: {\"id\":\"c-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"},\"finish_reason\":null}]}\n\n")
			fl.Flush()
		}
		fmt.Fprintf(w, "data: {\"id\":\"c-1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n")
		fmt.Fprintf(w, "data: {\"id\":\"c-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":32,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", body.MaxTokens)
		fl.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A real-time run against a server with known timing measures it: the point of this test is
// real time, so it sleeps, with tolerances for a loaded 2-core machine.
func TestRunMeasuresKnownTiming(t *testing.T) {
	testtier.Accuracy(t, "TTFT, TPOT and ITL of a paced server on the real clock")
	srv := pacedServer(t, 60*time.Millisecond, 15*time.Millisecond)
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "run", "--url", srv.URL, "--concurrency", "4",
		"--requests", "12", "--output-tokens", "12", "--input-tokens", "32", "--output-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	s := readSummaryT(t, dir)
	l := s.Levels[0]
	if l.Completed != 12 || l.Failed != 0 {
		t.Fatalf("completed %d failed %d", l.Completed, l.Failed)
	}
	ttft, _ := l.Metrics.Stat("ttft").Get(50)
	tpot, _ := l.Metrics.Stat("tpot").Get(50)
	itl, _ := l.Metrics.Stat("itl").Get(50)
	if ttft.Value < 60 || ttft.Value > 90 {
		t.Errorf("TTFT P50 %.2f ms, want 60..90", ttft.Value)
	}
	for name, v := range map[string]float64{"TPOT": tpot.Value, "ITL": itl.Value} {
		if v < 13 || v > 20 {
			t.Errorf("%s P50 %.2f ms, want ~15", name, v)
		}
	}
	if s.Target.Model != "paced" {
		t.Errorf("model %q: not taken from /v1/models", s.Target.Model)
	}
	// On Linux the kernel stamped the events: the client's read lag is reported, and the
	// note for kernels that give no stamps stays away.
	if runtime.GOOS == "linux" && (l.ReadLag == nil || l.ReadLag.Count == 0 || strings.Contains(stderr, "no receive timestamps")) {
		t.Errorf("read lag %+v; stderr:\n%s", l.ReadLag, stderr)
	}
	f, _ := os.Open(filepath.Join(dir, "records.jsonl"))
	defer f.Close()
	recs, err := record.ReadAll(f)
	if err != nil || len(recs) != 12 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for _, r := range recs {
		if r.OutputTokens != 12 || r.OutputTokensSource != record.SourceUsage || r.Events.Len() != 12 {
			t.Errorf("record %d: %d tokens from %s, %d events", r.Index, r.OutputTokens, r.OutputTokensSource, r.Events.Len())
		}
	}
}

// Nothing listening: the test request fails with its hint and exit 4, before anything is
// written; without it, a level without one successful request is exit 4; and a timed level
// stops after its first requests all failed to connect, not after thousands of them.
func TestNoServerAnswersIsExit4(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runCLI(t, context.Background(), "run", "--url", url, "--model", "m",
		"--concurrency", "1", "--requests", "2", "--output-dir", out)
	if code != ExitLevelErrors || !strings.Contains(stderr, "the test request failed, so nothing was measured") ||
		!strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, "hint: nothing listens there") {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitLevelErrors, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a run that measured nothing left %s", out)
	}
	code, _, stderr = runCLI(t, context.Background(), "run", "--url", url, "--model", "m", "--test-request=false",
		"--concurrency", "1", "--requests", "2", "--output-dir", t.TempDir())
	if code != ExitLevelErrors || !strings.Contains(stderr, "no request of concurrency 1 succeeded") {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitLevelErrors, stderr)
	}
	dir := t.TempDir()
	t0 := time.Now()
	code, stdout, stderr := runCLI(t, context.Background(), "run", "--url", url, "--model", "m", "--test-request=false",
		"--concurrency", "4", "--duration", "3s", "--output-dir", dir)
	if code != ExitLevelErrors || !strings.Contains(stderr, "failed to connect (is the server up at --url?)") ||
		!strings.Contains(stdout, "unreachable") || time.Since(t0) > 2*time.Second {
		t.Fatalf("dead server, --duration 3s: exit %d after %v\n%s\n%s", code, time.Since(t0), stdout, stderr)
	}
	if recs := readRecords(t, dir); len(recs) > 20 {
		t.Errorf("%d requests sent to nothing; the level should stop after its first %d", len(recs), 10)
	}
	if s := readSummaryT(t, dir); s.Levels[0].EndReason != report.EndUnreachable {
		t.Errorf("end reason %q", s.Levels[0].EndReason)
	}
}

// The in-process simulator over real HTTP agrees with the virtual clock: the same engine,
// paced in wall time. Real time is the point, so the test takes a few seconds.
func TestLiveRunAgreesWithSimulate(t *testing.T) {
	testtier.Accuracy(t, "live TPOT and throughput within 10 % of the virtual clock's")
	args := []string{"--sim", "textbook", "--concurrency", "4,16", "--requests", "16", "--input-tokens", "512", "--output-tokens", "100"}
	simDir, runDir := t.TempDir(), t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), append([]string{"simulate", "--output-dir", simDir}, args...)...); code != 0 {
		t.Fatal(stderr)
	}
	code, stdout, stderr := runCLI(t, context.Background(), append([]string{"run", "--output-dir", runDir}, args...)...)
	if code != 0 {
		t.Fatal(stderr)
	}
	if !strings.Contains(stdout, "built-in simulator") {
		t.Errorf("run without --url does not say it benchmarks the simulator:\n%s", stdout)
	}
	sim, live := readSummaryT(t, simDir), readSummaryT(t, runDir)
	for i := range sim.Levels {
		s, l := sim.Levels[i], live.Levels[i]
		sp, _ := s.Metrics.Stat("tpot").Get(50)
		lp, _ := l.Metrics.Stat("tpot").Get(50)
		for name, pair := range map[string][2]float64{
			"TPOT P50":          {sp.Value, lp.Value},
			"output throughput": {s.OutputThroughput, l.OutputThroughput},
		} {
			// Measured within 1% on an idle machine; 10% leaves room for a loaded CI host,
			// whose timer lateness makes requests miss step boundaries.
			if d := pair[1]/pair[0] - 1; d > 0.10 || d < -0.10 {
				t.Errorf("level %d %s: live %.2f vs simulated %.2f (%.1f%%)", i, name, pair[1], pair[0], 100*d)
			}
		}
	}
}

// TestTestRequestWarmsAndIsNotMeasured: by default one request goes first, unrecorded: a
// server that loads its model on first use (150 ms here, as Ollama does) puts that into no
// measured TTFT; with --test-request=false the first measured request carries it.
func TestTestRequestWarmsAndIsNotMeasured(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("test-request=%v", on), func(t *testing.T) {
			var served atomic.Int32
			srv := httptest.NewServer(generationOnly(func(w http.ResponseWriter, r *http.Request) {
				if served.Add(1) == 1 {
					time.Sleep(150 * time.Millisecond) // the model loads
				}
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n"+
					"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":1}}\n\n"+
					"data: [DONE]\n\n")
			}))
			defer srv.Close()
			dir := t.TempDir()
			code, stdout, stderr := runCLI(t, context.Background(), "run", "--url", srv.URL, "--model", "m",
				"--concurrency", "1", "--requests", "3", "--input-tokens", "16", "--output-tokens", "1",
				"--no-progress", "--output-dir", dir, fmt.Sprintf("--test-request=%v", on))
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			recs := readRecords(t, dir)
			if len(recs) != 3 || int(served.Load()) != 3+map[bool]int{true: 1}[on] {
				t.Fatalf("%d records, %d requests served", len(recs), served.Load())
			}
			if got := strings.Contains(stdout, "Test request: ok in "); got != on {
				t.Errorf("test request line shown %v, want %v:\n%s", got, on, stdout)
			}
			slow := 0
			for _, r := range recs {
				if ft, ok := r.FirstToken(); ok && ft-r.Sent > 100*time.Millisecond {
					slow++
				}
			}
			if want := map[bool]int{false: 1}[on]; slow != want {
				t.Errorf("%d measured requests carry the model load, want %d", slow, want)
			}
		})
	}
}
