package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/report"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestInterruptEchoIsOneInterrupt: a process group's copy of the interrupt (timeout(1)
// signals the process and its group) arrives at once and must not cut the writing short;
// a person's second Ctrl-C later exits, naming the command that rebuilds the reports.
func TestInterruptEchoIsOneInterrupt(t *testing.T) {
	dir := t.TempDir()
	writingResults(dir)
	defer resultsDir.Store(nil)
	clock := &fakeClock{now: time.Unix(1000, 0)}
	// read says Interrupts has read the clock for the signal just sent: a send completes
	// before its receiver looks at the time, so the test moves the clock only after that.
	read := make(chan struct{}, 1)
	now := func() time.Time { t := clock.Now(); read <- struct{}{}; return t }
	sigs := make(chan os.Signal)
	var (
		stderr    syncBuffer
		exited    = make(chan int, 1)
		cancelled = make(chan struct{})
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Interrupts(sigs, func() { close(cancelled) }, &stderr, func(code int) { exited <- code }, now)
	}()
	// send delivers a further signal, failing if an earlier one made Interrupts exit.
	send := func(sig os.Signal) {
		t.Helper()
		select {
		case sigs <- sig:
			<-read
		case <-done:
			t.Fatalf("an echo of the interrupt exited at once (code %d): the run's results would be lost", <-exited)
		}
	}
	sigs <- syscall.SIGINT
	<-read
	<-cancelled
	send(syscall.SIGINT) // the group's copy, at the same instant
	clock.add(signalEcho / 2)
	send(syscall.SIGTERM)
	clock.add(signalEcho)
	send(syscall.SIGINT) // a person insisting
	<-done
	if code := <-exited; code != ExitInterrupted {
		t.Errorf("exit code %d, want %d", code, ExitInterrupted)
	}
	if want := "\n  llmbench report " + dir + "\n"; !strings.Contains(stderr.String(), want) {
		t.Errorf("the forced exit does not say %s:\n%s", want, stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestInterruptedTwiceKeepsTheRun: a run interrupted by a signal and its echo writes what it
// measured: summary.json (end reason interrupted, the level measured), summary.csv and
// report.html.
func TestInterruptedTwiceKeepsTheRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	go Interrupts(sigs, cancel, &syncBuffer{}, func(code int) { t.Errorf("exited with %d on an echo", code) }, time.Now)
	go func() {
		// Once some requests are measured: each takes about 0.7 s on the default simulator.
		for !bytes.Contains(readOr(filepath.Join(out, "records.jsonl")), []byte("\n")) {
			time.Sleep(20 * time.Millisecond)
		}
		sigs <- syscall.SIGINT
		sigs <- syscall.SIGINT
	}()
	code, _, stderr := runCLI(t, ctx, "run", "--concurrency", "4", "--requests", "1000", "--output-tokens", "16",
		"--output-dir", out, "--quiet", "--no-progress")
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, ExitInterrupted, stderr)
	}
	sum := readSummaryT(t, out)
	if sum.EndReason != report.EndInterrupted || len(sum.Levels) != 1 || sum.Levels[0].Completed == 0 {
		t.Errorf("summary.json: end_reason %q, %d levels (want interrupted, the level measured)", sum.EndReason, len(sum.Levels))
	}
	for _, f := range []string{"summary.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

func readOr(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

// TestUnwrittenResultsNameTheReportCommand: when the records are written but the summary
// files cannot be (here report.html is a folder, as a full disk or a read-only file would
// fail it), the error names the command that writes them from the records, and that
// command does.
func TestUnwrittenResultsNameTheReportCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run it") // a space: the command must quote it
	if err := os.MkdirAll(filepath.Join(out, "report.html", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--concurrency", "2", "--requests", "8",
		"--input-tokens", "64", "--output-tokens", "16", "--output-dir", out, "--quiet")
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d\n%s", code, ExitFailure, stderr)
	}
	want := "llmbench report '" + out + "'"
	if !strings.Contains(stderr, "\n  "+want+"\n") {
		t.Fatalf("the error does not give the command that writes the results (%s) on a line of its own:\n%s", want, stderr)
	}
	if err := os.RemoveAll(filepath.Join(out, "report.html")); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, t.Context(), "report", out, "--quiet"); code != ExitOK {
		t.Fatalf("%s: exit %d\n%s", want, code, stderr)
	}
	sum := readSummaryT(t, out)
	if len(sum.Levels) != 1 || sum.Levels[0].Completed != 8 {
		t.Errorf("the rebuilt summary has %d levels (want 1 with 8 requests)", len(sum.Levels))
	}
	for _, f := range []string{"summary.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s not written by %s: %v", f, want, err)
		}
	}
}

// TestInterruptedAskingForModels: an interrupt while the server is asked for its models (no
// --model, a slow server) is an interrupt, exit 130, not a server that did not answer.
func TestInterruptedAskingForModels(t *testing.T) {
	asked := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		select {
		case asked <- struct{}{}:
		default:
		}
		<-r.Context().Done() // answers only once the client gives up
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-asked; cancel() }()
	code, _, stderr := runCLI(t, ctx, "run", "--url", srv.URL, "--concurrency", "1", "--requests", "4",
		"--output-dir", filepath.Join(t.TempDir(), "run"), "--quiet", "--no-progress")
	if code != ExitInterrupted || !strings.Contains(stderr, "interrupted while asking the server for its models") {
		t.Errorf("exit %d, want %d, saying it was interrupted:\n%s", code, ExitInterrupted, stderr)
	}
}
