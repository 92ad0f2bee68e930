package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/testproc"
	"github.com/llmbench/llmbench/internal/testtier"
)

// buildBinary builds cmd/llmbench once per test binary run.
func buildBinary(t *testing.T) string {
	t.Helper()
	testtier.Long(t, "builds the binary")
	built.Lock()
	defer built.Unlock()
	if built.bin != "" {
		return built.bin
	}
	dir, err := os.MkdirTemp("", "llmbench-cli-test-")
	if err != nil {
		t.Fatal(err)
	}
	built.dir = dir // TestMain removes it
	bin := filepath.Join(dir, "llmbench")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/llmbench")
	if out, err := testproc.CombinedOutput(t, cmd); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	built.bin = bin
	return bin
}

// built is the binary buildBinary built, kept for the test binary's other tests: each go
// build re-links it, about 2.5 s of CPU that the same source always repeats.
var built struct {
	sync.Mutex
	bin, dir string
}

// The tests run at testtier.GCPercent (many in-process simulations on a small heap), and
// remove the binary buildBinary built.
func TestMain(m *testing.M) {
	code := testtier.Main(m)
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// The first SIGINT stops the run, keeps every finished request and writes a summary that
// says it was interrupted; the process exits 130.
func TestSIGINTKeepsResults(t *testing.T) { interruptKeepsResults(t, 1) }

// TestSIGINTEchoKeepsResults: timeout(1), a shell's job control and supervisors signal the
// process and its group, so one interrupt arrives twice within moments; the copy must not
// cut the writing short (the build before this test lost the run in 10 of 10 tries).
func TestSIGINTEchoKeepsResults(t *testing.T) { interruptKeepsResults(t, 2) }

// interruptKeepsResults interrupts a run with that many SIGINTs 2 ms apart and checks that
// it kept everything measured.
func interruptKeepsResults(t *testing.T, signals int) {
	bin := buildBinary(t)
	srv := pacedServer(t, 5*time.Millisecond, 5*time.Millisecond)
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--url", srv.URL, "--concurrency", "4", "--requests", "100000",
		"--output-tokens", "8", "--input-tokens", "16", "--output-dir", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := testproc.Start(t, cmd); err != nil {
		t.Fatal(err)
	}
	recordsPath := filepath.Join(dir, "records.jsonl")
	deadline := time.Now().Add(30 * time.Second)
	var before int
	for {
		b, _ := os.ReadFile(recordsPath)
		if before = bytes.Count(b, []byte("\n")); before >= 20 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no records after 30 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range signals {
		if i > 0 {
			time.Sleep(2 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("exit: %v, want code %d; stderr:\n%s", err, ExitInterrupted, stderr.String())
	}
	s := readSummaryT(t, dir)
	if s.EndReason != report.EndInterrupted || len(s.Levels) != 1 || !s.Levels[0].Partial {
		t.Errorf("end_reason %q, %d levels, partial %v", s.EndReason, len(s.Levels), s.Levels[0].Partial)
	}
	f, err := os.Open(recordsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := record.ReadAll(f)
	if err != nil {
		t.Fatalf("records.jsonl is not valid after the interrupt: %v", err)
	}
	if len(recs) < before {
		t.Errorf("%d records after the interrupt, %d before it", len(recs), before)
	}
	ok, canceled := 0, 0
	for _, r := range recs {
		switch {
		case r.OK():
			ok++
		case r.Error.Kind == record.KindCanceled:
			canceled++
		default:
			t.Errorf("record %d failed: %+v", r.Index, r.Error)
		}
	}
	if got := s.Levels[0].Completed; got != ok {
		t.Errorf("summary counts %d completed, records hold %d", got, ok)
	}
	if canceled > 4 {
		t.Errorf("%d canceled requests; at most the 4 in flight should be", canceled)
	}
	for _, name := range []string{"summary.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s not written after the interrupt: %v", name, err)
		}
	}
}

// A key given by flag, by environment or in a header never reaches any output file, the
// console or an error message, even when the server echoes it back.
func TestSecretsStaySecret(t *testing.T) {
	const flagKey, envKey, hdrSecret = "sk-flag-8c1f2d", "sk-env-77aa01", "hdr-secret-5e6f"
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		if n.Add(1)%2 == 0 {
			// Servers do echo keys: "Incorrect API key provided: sk-…".
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s (header %s)"}}`, strings.TrimPrefix(auth, "Bearer "), r.Header.Get("X-Api-Token"))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n", "hi")
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		args []string
		key  string
	}{
		{"flag", []string{"--api-key", flagKey}, flagKey},
		{"env", nil, envKey},
		{"file", []string{"--api-key-file", writeTemp(t, flagKey+"\n")}, flagKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "env" {
				t.Setenv("OPENAI_API_KEY", envKey)
			} else {
				t.Setenv("OPENAI_API_KEY", "")
			}
			dir := t.TempDir()
			args := append([]string{"run", "--url", srv.URL, "--concurrency", "2", "--requests", "6",
				"--output-tokens", "1", "--input-tokens", "8", "--header", "X-Api-Token: " + hdrSecret,
				"--output-dir", dir, "--result-format", "vllm", "--test-request=false"}, tc.args...)
			code, stdout, stderr := runCLI(t, context.Background(), args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			outputs := map[string][]byte{"stdout": []byte(stdout), "stderr": []byte(stderr)}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				outputs[e.Name()] = b
			}
			if len(outputs) < 7 {
				t.Errorf("expected records, summaries, report and vllm.json; got %d outputs", len(outputs))
			}
			for name, b := range outputs {
				for _, secret := range []string{tc.key, hdrSecret} {
					if bytes.Contains(b, []byte(secret)) {
						t.Errorf("%s contains the secret %q", name, secret)
					}
				}
			}
			var s struct {
				Levels []struct{ Errors map[string]int } `json:"levels"`
			}
			json.Unmarshal(outputs["summary.json"], &s)
			if len(s.Levels) != 1 || s.Levels[0].Errors["http_status"] == 0 {
				t.Errorf("the echoing failures were not counted: %+v", s.Levels)
			}
		})
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
