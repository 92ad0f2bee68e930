// Package e2e runs llmbench end to end against real inference servers. Every test skips
// unless a server is configured, so `go test ./...` stays hermetic; .ci/ollama.sh builds
// and starts Ollama with a tiny random model and runs these tests against it.
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
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// The workload of every run: small enough for a 2-core CI machine, long enough for TPOT.
const (
	concurrency  = 2
	requests     = 8
	inputTokens  = 32
	outputTokens = 24
)

type ollama struct {
	url   string // base URL, no trailing slash
	model string
}

// ollamaTarget returns the server to test. LLMBENCH_OLLAMA_URL is an explicit request to
// test, so an unusable server fails the test; a plain OLLAMA_HOST is often a developer's
// own Ollama, so a missing model skips instead.
func ollamaTarget(t *testing.T) ollama {
	t.Helper()
	model := os.Getenv("LLMBENCH_OLLAMA_MODEL")
	if model == "" {
		model = "llmbench-tiny"
	}
	raw, explicit := os.Getenv("LLMBENCH_OLLAMA_URL"), true
	if raw == "" {
		raw, explicit = os.Getenv("OLLAMA_HOST"), false
	}
	if raw == "" {
		t.Skip("no Ollama: set LLMBENCH_OLLAMA_URL (or OLLAMA_HOST) to a server that has model " + model + "; .ci/ollama.sh test starts one")
	}
	base, err := normalizeOllamaHost(raw)
	if err != nil {
		t.Fatal(err)
	}
	o := ollama{url: base, model: model}
	models, err := o.tags(t.Context())
	switch {
	case err != nil && explicit:
		t.Fatalf("Ollama at %s: %v", base, err)
	case err != nil:
		t.Skipf("OLLAMA_HOST=%s does not answer (%v); set LLMBENCH_OLLAMA_URL to test against it", raw, err)
	case !slices.Contains(models, model) && !slices.Contains(models, model+":latest"):
		if explicit {
			t.Fatalf("Ollama at %s has no model %s (has %v); .ci/ollama.sh start creates it", base, model, models)
		}
		t.Skipf("Ollama at OLLAMA_HOST=%s has no model %s; .ci/ollama.sh start creates it", raw, model)
	}
	return o
}

// normalizeOllamaHost turns OLLAMA_HOST's forms ("host:port", "http://host:port",
// "0.0.0.0:port", ":port") into a base URL a client can dial.
func normalizeOllamaHost(s string) (string, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("Ollama host %q: %w", s, err)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "11434"
	}
	u.Host = net.JoinHostPort(host, port)
	return strings.TrimRight(u.String(), "/"), nil
}

func (o ollama) tags(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.url+"/api/tags", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET /api/tags: %s: %s", resp.Status, b)
	}
	var body struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET /api/tags: %w", err)
	}
	var names []string
	for _, m := range body.Models {
		names = append(names, m.Name)
	}
	return names, nil
}

// post streams one request and returns its non-empty lines (SSE or NDJSON).
func (o ollama) post(ctx context.Context, path string, body any) ([]string, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.url+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("POST %s: %s: %s", path, resp.Status, b)
	}
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

// TestOllamaServer checks the server and model without llmbench, so that a failure of the
// tests below is known to be llmbench's: both APIs return exactly max_tokens tokens (no
// early EOS, no repeat abort) with one stream event per token.
func TestOllamaServer(t *testing.T) {
	o := ollamaTarget(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2*concurrency)
	for i := range errs {
		wg.Go(func() {
			prompt := fmt.Sprintf("Request %d: write about the number %d.", i, 7919*i)
			if i%2 == 0 {
				errs[i] = o.checkOpenAIChat(ctx, prompt)
			} else {
				errs[i] = o.checkNativeChat(ctx, prompt)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func (o ollama) checkOpenAIChat(ctx context.Context, prompt string) error {
	lines, err := o.post(ctx, "/v1/chat/completions", map[string]any{
		"model": o.model, "stream": true, "stream_options": map[string]any{"include_usage": true},
		"max_tokens": outputTokens, "messages": []map[string]string{{"role": "user", "content": prompt}},
	})
	if err != nil {
		return err
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
	if usage != outputTokens || contentEvents != outputTokens || finish != "length" || lines[len(lines)-1] != "data: [DONE]" {
		return fmt.Errorf("/v1/chat/completions: completion_tokens %d, %d content events, finish_reason %q, last line %q; want %d, %d, length, [DONE]",
			usage, contentEvents, finish, lines[len(lines)-1], outputTokens, outputTokens)
	}
	return nil
}

func (o ollama) checkNativeChat(ctx context.Context, prompt string) error {
	lines, err := o.post(ctx, "/api/chat", map[string]any{
		"model": o.model, "stream": true, "options": map[string]any{"num_predict": outputTokens},
		"messages": []map[string]string{{"role": "user", "content": prompt}},
	})
	if err != nil {
		return err
	}
	var contentEvents int
	var final struct {
		Done         bool   `json:"done"`
		DoneReason   string `json:"done_reason"`
		EvalCount    int    `json:"eval_count"`
		EvalDuration int64  `json:"eval_duration"`
		Message      struct{ Content string }
	}
	for _, l := range lines {
		if err := json.Unmarshal([]byte(l), &final); err != nil {
			return fmt.Errorf("/api/chat: bad line %q: %w", l, err)
		}
		if final.Message.Content != "" {
			contentEvents++
		}
	}
	if !final.Done || final.DoneReason != "length" || final.EvalCount != outputTokens || contentEvents != outputTokens || final.EvalDuration <= 0 {
		return fmt.Errorf("/api/chat: done %v, done_reason %q, eval_count %d, %d content lines, eval_duration %d; want true, length, %d, %d, > 0",
			final.Done, final.DoneReason, final.EvalCount, contentEvents, final.EvalDuration, outputTokens, outputTokens)
	}
	return nil
}

// TestOllamaOpenAIChat: llmbench run over /v1/chat/completions gets exactly the requested
// output tokens on every request, counted from the server's usage.
func TestOllamaOpenAIChat(t *testing.T) {
	o := ollamaTarget(t)
	run := runBench(t, o, "openai-chat")
	run.checkExact(t)
	run.logFigures(t)
}

// TestOllamaNative: the same over Ollama's own /api/chat, plus the client-vs-server check:
// the client's TPOT is within 10% of Ollama's eval_duration / eval_count.
func TestOllamaNative(t *testing.T) {
	o := ollamaTarget(t)
	run := runBench(t, o, "ollama")
	run.checkExact(t)
	run.logFigures(t)

	var client, server, ttft, prefill []float64
	for _, r := range run.recs {
		if r.Server == nil || r.Server.OutputTokens <= 0 || r.Server.Decode <= 0 {
			t.Fatalf("request %d: no server timings (eval_count, eval_duration) in its record: %+v", r.Index, r.Server)
		}
		server = append(server, r.Server.Decode.Seconds()/float64(r.Server.OutputTokens))
		client = append(client, r.tpot())
		ttft = append(ttft, r.ttft())
		prefill = append(prefill, r.Server.Prefill.Seconds())
	}
	c, s := median(client), median(server)
	t.Logf("TTFT median: client %.2f ms, Ollama prompt_eval_duration %.2f ms", median(ttft)*1e3, median(prefill)*1e3)
	t.Logf("TPOT median: client %.3f ms, Ollama eval_duration/eval_count %.3f ms (client/server %.3f)", c*1e3, s*1e3, c/s)
	// Ollama's eval_duration runs from the first token's sampling until the runner has
	// flushed the last one: eval_count-1 decode steps plus the flush over eval_count tokens.
	// The client's figure is ~N/(N-1) larger (4% for 24 tokens) before any network or
	// client cost, and smaller when the first token is delivered late: 10% covers both.
	if math.Abs(c/s-1) > 0.10 {
		t.Errorf("client TPOT %.3f ms is not within 10%% of the server's %.3f ms", c*1e3, s*1e3)
	}
}

// benchRun is one finished `llmbench run`: its measured records and summary.json.
type benchRun struct {
	api     string
	recs    []rec
	summary map[string]any
}

type rec struct{ record.Record }

func (r rec) tpot() float64 {
	f, _ := r.FirstToken()
	l, _ := r.LastToken()
	return (l - f).Seconds() / float64(r.OutputTokens-1)
}

func (r rec) ttft() float64 {
	f, _ := r.FirstToken()
	return (f - r.Sent).Seconds()
}

// runBench runs llmbench against o over api and reads what it wrote. An API the CLI does
// not accept (yet) skips the test.
func runBench(t *testing.T, o ollama, api string) *benchRun {
	t.Helper()
	bin := llmbenchBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	args := []string{"run", "--url", o.url, "--api", api, "--model", o.model,
		"--concurrency", fmt.Sprint(concurrency), "--requests", fmt.Sprint(requests),
		"--input-tokens", fmt.Sprint(inputTokens), "--output-tokens", fmt.Sprint(outputTokens),
		"--output-dir", dir}
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("llmbench %s\n%s", strings.Join(args, " "), stdout.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 && strings.Contains(stderr.String(), api) {
		t.Skipf("llmbench does not accept --api %s yet (usage error): %s", api, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		t.Fatalf("llmbench run: %v\nstderr:\n%s", err, stderr.String())
	}

	run := &benchRun{api: api}
	f, err := os.Open(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		var r record.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("records.jsonl line %d: %v", line, err)
		}
		if r.Warmup {
			continue
		}
		run.recs = append(run.recs, rec{r})
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

// checkExact: every measured request succeeded with exactly outputTokens tokens by the
// server's count, streamed as one event per token (Ollama sends each token on its own).
func (run *benchRun) checkExact(t *testing.T) {
	t.Helper()
	if len(run.recs) != requests {
		t.Errorf("%d measured records, want %d", len(run.recs), requests)
	}
	for _, r := range run.recs {
		switch {
		case r.Error != nil:
			t.Errorf("request %d failed: %s (status %d): %s", r.Index, r.Error.Kind, r.Error.Status, r.Error.Message)
		case r.OutputTokens != outputTokens || r.OutputTokensSource != "usage":
			t.Errorf("request %d: output_tokens %d from %q, want %d from usage", r.Index, r.OutputTokens, r.OutputTokensSource, outputTokens)
		case r.Events.Len() != outputTokens:
			t.Errorf("request %d: %d token-carrying events, want %d (one per token)", r.Index, r.Events.Len(), outputTokens)
		}
	}
	levels, _ := run.summary["levels"].([]any)
	if len(levels) != 1 {
		t.Fatalf("summary.json: %d levels, want 1", len(levels))
	}
	lvl, _ := levels[0].(map[string]any)
	for key, want := range map[string]float64{
		"completed": requests, "failed": 0, "total_output_tokens": requests * outputTokens,
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
		if out, err := cmd.CombinedOutput(); err != nil {
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
