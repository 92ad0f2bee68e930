// Package e2e runs llmbench end to end against real inference servers. Every test skips
// unless a server is configured, so `go test ./...` stays hermetic; .ci/ollama.sh and
// .ci/llamacpp.sh build and start Ollama and llama.cpp's llama-server with a tiny random
// model and run these tests against them.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/testproc"
)

// server is a server under test.
type server struct {
	url    string // base URL, no trailing slash
	model  string
	apiKey string // sent as a bearer token when set
}

// load is one run's workload: closed loop at concurrency, fixed prompt and output lengths.
type load struct {
	concurrency, requests, input, output int
}

// send sends body (none when nil) as JSON, with key as a bearer token (none when empty),
// and returns the response when it is 200 OK; the caller closes its body.
func (s server) send(ctx context.Context, method, path, key string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, s.url+path, r)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("%s %s: %w", method, path, &statusError{resp.StatusCode, strings.TrimSpace(string(b))})
	}
	return resp, nil
}

// statusError is a non-200 answer.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.msg) }

// post streams one request with the server's key and returns its non-empty lines (SSE or
// NDJSON).
func (s server) post(ctx context.Context, path string, body any) ([]string, error) {
	resp, err := s.send(ctx, http.MethodPost, path, s.apiKey, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}

// getJSON GETs path with key (none when empty) and decodes the answer into v.
func (s server) getJSON(ctx context.Context, path, key string, v any) error {
	return s.doJSON(ctx, http.MethodGet, path, key, nil, v)
}

// doJSON sends one request and decodes its answer into v; it gives up after 10 s.
func (s server) doJSON(ctx context.Context, method, path, key string, body, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := s.send(ctx, method, path, key, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// modelNames GETs a model listing and returns the name field of each entry of its list
// array: Ollama's /api/tags {"models": [{"name": …}]}, OpenAI's /v1/models {"data": [{"id": …}]}.
func (s server) modelNames(ctx context.Context, path, list, name string) ([]string, error) {
	var body map[string]json.RawMessage
	if err := s.getJSON(ctx, path, s.apiKey, &body); err != nil {
		return nil, err
	}
	var entries []map[string]any
	if err := json.Unmarshal(body[list], &entries); err != nil {
		return nil, fmt.Errorf("GET %s: %q: %w", path, list, err)
	}
	var names []string
	for _, e := range entries {
		if n, ok := e[name].(string); ok {
			names = append(names, n)
		}
	}
	return names, nil
}

// checkAtOnce runs n checks at once, each with its own prompt, taking turns among checks,
// and fails the test with every error.
func checkAtOnce(t *testing.T, n int, checks ...func(prompt string) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range errs {
		wg.Go(func() {
			errs[i] = checks[i%len(checks)](fmt.Sprintf("Request %d: write about the number %d.", i, 7919*i))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// checkOpenAIChat streams one /v1/chat/completions request for n tokens and checks that
// exactly n came back by the server's usage, one content event each, cut off by the limit
// ("length"), and the stream ended with [DONE].
func (s server) checkOpenAIChat(ctx context.Context, prompt string, n int) error {
	lines, err := s.post(ctx, "/v1/chat/completions", map[string]any{
		"model": s.model, "stream": true, "stream_options": map[string]any{"include_usage": true},
		"max_tokens": n, "messages": []map[string]string{{"role": "user", "content": prompt}},
	})
	if err != nil {
		return err
	}
	if len(lines) == 0 {
		return errors.New("/v1/chat/completions: empty stream")
	}
	var contentEvents, usage int
	var finish string
	for _, l := range lines {
		data, ok := strings.CutPrefix(l, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return fmt.Errorf("/v1/chat/completions: bad event %q: %w", data, err)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				contentEvents++
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			usage = c.Usage.CompletionTokens
		}
	}
	if usage != n || contentEvents != n || finish != "length" || lines[len(lines)-1] != "data: [DONE]" {
		return fmt.Errorf("/v1/chat/completions: completion_tokens %d, %d content events, finish_reason %q, last line %q; want %d, %d, length, [DONE]",
			usage, contentEvents, finish, lines[len(lines)-1], n, n)
	}
	return nil
}

// benchRun is one finished `llmbench run`: its measured records and summary.json.
type benchRun struct {
	api     string
	load    load
	recs    []rec
	summary map[string]any
}

// rec is one measured record, with its records.jsonl line as read generically (for fields
// this package's record type may not know yet).
type rec struct {
	record.Record
	raw map[string]any
}

// tpot is the request's decode pace as the client saw it: the time from the first token
// event to the last over the tokens that arrived after the first. Where the first event
// shared its receive stamp with later ones (record.TTFTUpperBound: the client read them
// together), the window starts at that shared stamp, so those tokens are not counted as
// gaps: dividing by N-1 would make such a request's pace look faster than the server's.
func (r rec) tpot() float64 {
	first, _ := r.FirstToken()
	last, _ := r.LastToken()
	after := 0
	r.Events.Each(func(_ int, t time.Duration, n int) {
		if t > first {
			after += n
		}
	})
	if after == 0 {
		return 0
	}
	return (last - first).Seconds() / float64(after)
}

func (r rec) ttft() float64 {
	f, _ := r.FirstToken()
	return (f - r.Sent).Seconds()
}

// runBench runs llmbench against s over api with workload l (and any extra flags) and
// reads what it wrote. An API the CLI does not accept (yet) skips the test.
func runBench(t *testing.T, s server, api string, l load, extra ...string) *benchRun {
	t.Helper()
	bin := llmbenchBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	args := []string{"run", "--url", s.url, "--api", api, "--model", s.model,
		"--concurrency", fmt.Sprint(l.concurrency), "--requests", fmt.Sprint(l.requests),
		"--input-tokens", fmt.Sprint(l.input), "--output-tokens", fmt.Sprint(l.output),
		"--output-dir", dir}
	args = append(args, extra...)
	shown := slices.Clone(args)
	if s.apiKey != "" {
		args = append(args, "--api-key", s.apiKey)
		shown = append(shown, "--api-key", "…")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := testproc.Run(t, cmd)
	t.Logf("llmbench %s (%.1f s)\n%s", strings.Join(shown, " "), time.Since(start).Seconds(), stdout.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 && strings.Contains(stderr.String(), "--api") &&
		strings.Contains(stderr.String(), api) && !strings.Contains(stderr.String(), "unknown flag") {
		t.Skipf("llmbench does not accept --api %s yet (usage error): %s", api, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		t.Fatalf("llmbench run: %v\nstderr:\n%s", err, stderr.String())
	}

	run := &benchRun{api: api, load: l}
	f, err := os.Open(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		var r rec
		if err := json.Unmarshal(sc.Bytes(), &r.Record); err != nil {
			t.Fatalf("records.jsonl line %d: %v", line, err)
		}
		if err := json.Unmarshal(sc.Bytes(), &r.raw); err != nil {
			t.Fatalf("records.jsonl line %d: %v", line, err)
		}
		if r.Warmup {
			continue
		}
		run.recs = append(run.recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &run.summary); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	return run
}

// level is summary.json's levels[0], the one level of every e2e run.
func (run *benchRun) level(t *testing.T) map[string]any {
	t.Helper()
	levels, _ := run.summary["levels"].([]any)
	if len(levels) != 1 {
		t.Fatalf("summary.json: %d levels, want 1", len(levels))
	}
	lvl, _ := levels[0].(map[string]any)
	return lvl
}

// checkExact: every measured request succeeded with exactly the requested output tokens by
// the server's count, streamed as one event per token (both servers send each token on its
// own, since the model never emits a partial UTF-8 token).
func (run *benchRun) checkExact(t *testing.T) {
	t.Helper()
	want := run.load
	if len(run.recs) != want.requests {
		t.Errorf("%d measured records, want %d", len(run.recs), want.requests)
	}
	failed := map[string]int{}
	for _, r := range run.recs {
		switch {
		case r.Error != nil:
			if failed[r.Error.Kind]++; failed[r.Error.Kind] <= 3 { // the first few of each kind
				t.Errorf("request %d failed: %s (status %d): %s", r.Index, r.Error.Kind, r.Error.Status, r.Error.Message)
			}
		case r.OutputTokens != want.output || r.OutputTokensSource != "usage":
			t.Errorf("request %d: output_tokens %d from %q, want %d from usage", r.Index, r.OutputTokens, r.OutputTokensSource, want.output)
		case r.Events.Len() != want.output:
			t.Errorf("request %d: %d token-carrying events, want %d (one per token)", r.Index, r.Events.Len(), want.output)
		}
	}
	if len(failed) > 0 {
		t.Errorf("failed requests by kind: %v of %d", failed, len(run.recs))
	}
	lvl := run.level(t)
	for key, want := range map[string]float64{
		"completed": float64(want.requests), "failed": 0, "total_output_tokens": float64(want.requests * want.output),
	} {
		if got, ok := lvl[key].(float64); !ok || got != want {
			t.Errorf("summary.json levels[0].%s = %v, want %v", key, lvl[key], want)
		}
	}
}

func (run *benchRun) logFigures(t *testing.T) {
	var ttft, tpot []float64
	for _, r := range run.recs {
		if r.OK() && r.OutputTokens > 1 {
			ttft = append(ttft, r.ttft())
			tpot = append(tpot, r.tpot())
		}
	}
	t.Logf("--api %s: %d requests, TTFT median %.2f ms, TPOT median %.3f ms (from records.jsonl)",
		run.api, len(run.recs), median(ttft)*1e3, median(tpot)*1e3)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

// llmbenchBinary builds ./cmd/llmbench once per test binary.
func llmbenchBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "llmbench-e2e-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "llmbench")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/llmbench")
		cmd.Dir = ".." // the module root
		if out, err := testproc.CombinedOutput(t, cmd); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/llmbench: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// These run without a server: the helpers the server tests rely on.

func TestNormalizeOllamaHost(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:11435":         "http://127.0.0.1:11435",
		"http://127.0.0.1:11435":  "http://127.0.0.1:11435",
		"0.0.0.0:8080":            "http://127.0.0.1:8080",
		":9000":                   "http://127.0.0.1:9000",
		"localhost":               "http://localhost:11434",
		"https://ollama.example/": "https://ollama.example:11434",
		"[::1]:5000":              "http://[::1]:5000",
	} {
		got, err := normalizeOllamaHost(in)
		if err != nil || got != want {
			t.Errorf("normalizeOllamaHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestMedian(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("odd median %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("even median %v", m)
	}
	if m := median(nil); !math.IsNaN(m) {
		t.Errorf("empty median %v", m)
	}
}

// llama3Tokenizer is the committed Llama 3 tokenizer's folder: tokenizer.json.gz, which the
// GGUF's vocabulary is built from (.ci/lib.sh), and tokenizer_config.json, whose
// chat_template the GGUF carries.
const llama3Tokenizer = "../internal/tokenizer/testdata/llama3"

// checkChatTemplate runs api with --tokenizer tok (llama3Tokenizer, or server), one message
// and then three turns per conversation, and checks that the server counts every prompt
// exactly as llmbench sized it: --input-tokens for one message, the turns' sum with their
// history.
func checkChatTemplate(t *testing.T, s server, api, tok string) {
	t.Helper()
	if v := os.Getenv("LLMBENCH_GGUF_TOKENIZER"); tok != "server" && v != "" && !strings.HasSuffix(v, "testdata/llama3/tokenizer.json.gz") {
		t.Skipf("LLMBENCH_GGUF_TOKENIZER=%s: the model's vocabulary is not the committed Llama 3 tokenizer this test sizes prompts with", v)
	}
	l := load{concurrency: 2, requests: 12, input: 150, output: 6}
	for _, turns := range []string{"1", "3"} {
		run := runBench(t, s, api, l, "--tokenizer", tok, "--turns", turns)
		for _, r := range run.recs {
			if !r.OK() {
				t.Errorf("--turns %s request %d failed", turns, r.Index)
				continue
			}
			if r.ServerPromptTokens != r.InputTokens || (turns == "1" && r.InputTokens != l.input) {
				t.Errorf("--turns %s request %d: input_tokens %d, server_prompt_tokens %d (want both %d with one turn)",
					turns, r.Index, r.InputTokens, r.ServerPromptTokens, l.input)
			}
		}
	}
}
