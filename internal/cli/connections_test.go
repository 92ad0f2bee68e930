package cli

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
	"github.com/llmbench/llmbench/internal/testtier"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// readRecords reads dir/records.jsonl.
func readRecords(t *testing.T, dir string) []record.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := record.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// closedLoop48 runs a closed loop of 4 × 12 requests against url and reads it back.
func closedLoop48(t *testing.T, url string, extra ...string) (*metricsRun, string) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"run", "--url", url, "--concurrency", "4", "--requests", "48",
		"--input-tokens", "64", "--output-tokens", "16", "--no-progress", "--output-dir", dir}, extra...)
	code, _, stderr := runCLI(t, t.Context(), args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	return &metricsRun{sum: readSummaryT(t, dir), recs: readRecords(t, dir)}, stderr
}

// Against a server that closes every connection right after its response (as llama.cpp's
// does), a closed loop of 4 × 12 requests completes 48 of 48, with keep-alive (re-sends
// counted, the habit noticed once) and without.
func TestServerThatClosesEveryConnection(t *testing.T) {
	t.Parallel() // live closed loops, waiting on the real clock
	if _, err := tokenizer.Load("o200k_base"); err != nil {
		t.Fatal(err)
	}
	closing, stop := startServe(t, "--sim", "textbook", "--close-after", "0s")
	defer stop()
	for _, keepAlive := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep-alive=%v", keepAlive), func(t *testing.T) {
			r, stderr := closedLoop48(t, closing, fmt.Sprintf("--keep-alive=%v", keepAlive))
			lvl := r.sum.Levels[0]
			if lvl.Completed != 48 || lvl.Failed != 0 {
				t.Fatalf("completed %d failed %d (%v), want 48 and 0", lvl.Completed, lvl.Failed, lvl.Errors)
			}
			retried := 0
			for _, rec := range r.recs {
				if rec.Retried {
					retried++
				}
			}
			tgt := r.sum.Target
			notes := strings.Count(stderr, "closed each connection right after its response")
			if keepAlive {
				if !tgt.ClosesConnections || tgt.ClosedConnections < 3 || notes != 1 {
					t.Errorf("target %+v, %d notes on stderr: want the habit seen and said once\n%s", tgt, notes, stderr)
				}
			} else if retried != 0 || tgt.ClosesConnections || tgt.ClosedConnections != 0 || notes != 0 {
				t.Errorf("--keep-alive=false: %d re-sent, target %+v, %d notes; want none", retried, tgt, notes)
			}
			var load map[string]any
			b, _ := json.Marshal(r.sum.Load)
			json.Unmarshal(b, &load)
			if load["keep_alive"] != keepAlive {
				t.Errorf("summary load keep_alive = %v, want %v", load["keep_alive"], keepAlive)
			}
		})
	}
}

type metricsRun struct {
	sum  *report.Summary
	recs []record.Record
}

// p50 is s's P50 (the default percentiles include 50).
func p50(t *testing.T, s metrics.Stats) float64 {
	t.Helper()
	p, ok := s.Get(50)
	if !ok {
		t.Fatal("no P50")
	}
	return p.Value
}

// --tokenizer server asks the target's /tokenize the way it sends the benchmark: over TLS
// with --ca-cert, with the API key. Without the key the run stops before it starts, with
// the call named once, what to do, and no usage hint (it is not a usage error).
func TestTokenizerServerWithKeyOverTLS(t *testing.T) {
	tok, err := tokenizer.Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	const key = "k-tokenize-test"
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	eng := sim.NewEngine(p)
	go eng.Start(t.Context())
	// The simulator counts prompts with o200k, the tokenizer behind this /tokenize.
	gen, err := server.New(eng, server.Options{ModelName: "textbook", APIKey: key, CountTokens: func(s string) int { return len(tok.Encode(s)) }})
	if err != nil {
		t.Fatal(err)
	}
	tokenized := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tokenize" {
			gen.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}`)
			return
		}
		var req struct {
			Content string `json:"content"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		tokenized++
		json.NewEncoder(w).Encode(map[string]any{"tokens": tok.Encode(req.Content)})
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--url", srv.URL, "--ca-cert", ca, "--tokenizer", "server", "--concurrency", "2",
		"--requests", "4", "--input-tokens", "50", "--output-tokens", "4", "--no-progress", "--metrics-url", "none"}

	dir := t.TempDir()
	code, _, stderr := runCLI(t, t.Context(), append(args, "--api-key", key, "--output-dir", dir)...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, r := range readRecords(t, dir) {
		if r.Error != nil || r.ServerPromptTokens != 50 {
			t.Errorf("request %d: error %+v, server counted %d prompt tokens, want 50", r.Index, r.Error, r.ServerPromptTokens)
		}
	}
	if tokenized == 0 {
		t.Error("/tokenize was never asked")
	}

	code, _, stderr = runCLI(t, t.Context(), append(args, "--api-key", "", "--output-dir", t.TempDir())...)
	want := "--tokenizer server: /tokenize: HTTP 401 Invalid API Key: give the key with --api-key"
	if code != ExitFailure || !strings.Contains(stderr, want) || strings.Count(stderr, "/tokenize") != 1 || strings.Contains(stderr, "--help") {
		t.Errorf("without the key: exit %d, stderr:\n%s\nwant exit %d and %q alone", code, stderr, ExitFailure, want)
	}
}

// --result-format vllm writes one vLLM result per level — vllm.json for one level,
// vllm-<index>.json for each level of a ladder — with the per-request arrays, from run and
// from report alike.
func TestVLLMFilesPerLevel(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--concurrency", "1,4",
		"--requests", "8", "--output-tokens", "5", "--result-format", "vllm", "--output-dir", dir); code != 0 {
		t.Fatalf("simulate: %s", stderr)
	}
	for i, c := range []int{1, 4} {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("vllm-%d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			MaxConcurrency int       `json:"max_concurrency"`
			NumPrompts     int       `json:"num_prompts"`
			TTFTs          []float64 `json:"ttfts"`
			ITLs           [][]float64
			Backend        string `json:"backend"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.MaxConcurrency != c || v.NumPrompts != 8 || len(v.TTFTs) != 8 || v.Backend == "" {
			t.Errorf("vllm-%d.json: %+v (%v)", i, v, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "vllm.json")); err == nil {
		t.Error("a ladder wrote vllm.json")
	}
	out := t.TempDir()
	if code, _, stderr := runCLI(t, t.Context(), "report", dir, "--output-dir", out, "--result-format", "vllm"); code != 0 {
		t.Fatalf("report: %s", stderr)
	}
	for i := range 2 {
		a, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("vllm-%d.json", i)))
		b, _ := os.ReadFile(filepath.Join(out, fmt.Sprintf("vllm-%d.json", i)))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("report's vllm-%d.json differs from the run's", i)
		}
	}
	one := t.TempDir()
	if code, _, stderr := runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--concurrency", "2",
		"--requests", "4", "--output-tokens", "5", "--result-format", "vllm", "--output-dir", one); code != 0 {
		t.Fatalf("simulate: %s", stderr)
	}
	if _, err := os.Stat(filepath.Join(one, "vllm.json")); err != nil {
		t.Errorf("one level: %v", err)
	}
}

// A run never replaces another: a folder holding a run is refused (with --overwrite the
// earlier run's files go, both record formats included), an empty folder is used, and
// report --output-dir makes a whole run folder that report and compare read again.
func TestNothingOverwritten(t *testing.T) {
	dir := t.TempDir() // exists and is empty: used as given
	args := []string{"simulate", "--sim", "textbook", "--concurrency", "2", "--requests", "4", "--output-tokens", "3", "--output-dir", dir}
	if code, _, stderr := runCLI(t, t.Context(), args...); code != 0 {
		t.Fatalf("into an empty folder: exit %d %s", code, stderr)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "records.bin"))
	code, _, stderr := runCLI(t, t.Context(), args...)
	if code != ExitUsage || !strings.Contains(stderr, "already holds a run") || !strings.Contains(stderr, "--overwrite") {
		t.Errorf("into a run: exit %d, %s", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "records.bin")); !bytes.Equal(before, after) {
		t.Error("the refused run touched the records")
	}
	if code, _, stderr := runCLI(t, t.Context(), append(args, "--overwrite", "--records", "jsonl")...); code != 0 {
		t.Fatalf("--overwrite: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "records.bin")); err == nil {
		t.Error("--overwrite left the earlier run's records.bin beside the new records.jsonl")
	}
	out := filepath.Join(t.TempDir(), "copy")
	if code, _, stderr := runCLI(t, t.Context(), "report", dir, "--output-dir", out); code != 0 {
		t.Fatalf("report --output-dir: %s", stderr)
	}
	for _, f := range []string{"records.jsonl", "summary.json", "summary.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("report --output-dir: %v", err)
		}
	}
	if code, _, stderr := runCLI(t, t.Context(), "report", out); code != 0 {
		t.Errorf("report of report's folder: %s", stderr)
	}
	if code, _, stderr := runCLI(t, t.Context(), "compare", dir, out); code != 0 {
		t.Errorf("compare with report's folder: exit %d %s", code, stderr)
	}
}

// Re-sends cost the client time, never TTFT: against a server that closes every
// connection, with keep-alive and without, TTFT is within 10 % of what a server of the same
// profile that keeps its connections gives (the textbook profile's TTFT is milliseconds of
// prefill).
func TestReSendsCostNoTTFT(t *testing.T) {
	testtier.Accuracy(t, "TTFT within 10 % of a well-behaved server's, on the real clock")
	if _, err := tokenizer.Load("o200k_base"); err != nil {
		t.Fatal(err)
	}
	closing, stop := startServe(t, "--sim", "textbook", "--close-after", "0s")
	defer stop()
	plain, stopPlain := startServe(t, "--sim", "textbook")
	defer stopPlain()
	ref, _ := closedLoop48(t, plain)
	for _, keepAlive := range []bool{true, false} {
		r, _ := closedLoop48(t, closing, fmt.Sprintf("--keep-alive=%v", keepAlive))
		got, want := p50(t, r.sum.Levels[0].Metrics.Stat("ttft")), p50(t, ref.sum.Levels[0].Metrics.Stat("ttft"))
		if got > want*1.1+1 {
			t.Errorf("--keep-alive=%v: TTFT P50 %.2f ms against %.2f ms from a server that keeps connections", keepAlive, got, want)
		}
	}
}
