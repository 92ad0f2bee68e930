package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// promptServer answers every chat request with one token and keeps the prompts it was sent,
// in the order they came.
func promptServer(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var prompts []string
	srv := httptest.NewServer(generationOnly(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		mu.Lock()
		for _, m := range body.Messages {
			prompts = append(prompts, m.Content)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n"+
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":1}}\n\n"+
			"data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(prompts)
		prompts = prompts[:0]
		return out
	}
}

// run --url without --seed draws a seed per run: two runs in a row send different prompts,
// record different seeds and say each on the console; --seed N repeats a run exactly and
// prints no seed line. The test request's prompt is none of the measured ones.
func TestRunDrawsSeedPerRun(t *testing.T) {
	srv, sent := promptServer(t)
	run := func(extra ...string) (seed int64, stdout string, prompts []string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "r")
		args := append([]string{"run", "--url", srv.URL, "--model", "m", "--concurrency", "1", "--requests", "3",
			"--input-tokens", "16", "--output-tokens", "1", "--no-progress", "--output-dir", dir}, extra...)
		code, stdout, stderr := runCLI(t, t.Context(), args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		return readSummaryT(t, dir).Seed, stdout, sent()
	}
	s1, out1, p1 := run()
	s2, out2, p2 := run()
	if s1 == s2 || s1 == 1 {
		t.Errorf("seeds %d and %d: want two drawn seeds", s1, s2)
	}
	for _, c := range []struct {
		seed int64
		out  string
	}{{s1, out1}, {s2, out2}} {
		if want := "--seed " + strconv.FormatInt(c.seed, 10) + " repeats it"; !strings.Contains(c.out, want) {
			t.Errorf("console does not say %q:\n%s", want, c.out)
		}
	}
	if len(p1) != 4 || len(p2) != 4 {
		t.Fatalf("sent %d and %d prompts, want 4 each (test request + 3)", len(p1), len(p2))
	}
	for _, p := range p1 {
		if slices.Contains(p2, p) {
			t.Errorf("both runs sent %q", p)
		}
	}
	if slices.Contains(p1[1:], p1[0]) || slices.Contains(p2[1:], p2[0]) {
		t.Errorf("a test request's prompt was measured too: %q, %q", p1, p2)
	}
	r1, outR, q1 := run("--seed", "7")
	r2, _, q2 := run("--seed", "7")
	if r1 != 7 || r2 != 7 || !slices.Equal(q1, q2) || strings.Contains(outR, "repeats it") {
		t.Errorf("--seed 7: seeds %d, %d, prompts equal %v, console:\n%s", r1, r2, slices.Equal(q1, q2), outR)
	}
}

// llamaCacheServer answers as llama.cpp does, its final chunk's timings saying what it
// served from its prompt cache: a prompt it has seen before, all but one token.
func llamaCacheServer(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(generationOnly(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		cached, evaluated := 0, 16
		if seen[string(b)] {
			cached, evaluated = 15, 1
		}
		seen[string(b)] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n"+
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":1},"+
			"\"timings\":{\"cache_n\":"+strconv.Itoa(cached)+",\"prompt_n\":"+strconv.Itoa(evaluated)+",\"prompt_ms\":1,\"predicted_n\":1,\"predicted_ms\":1}}\n\n"+
			"data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A run repeating an earlier run's prompts (--seed given twice) against a server that says
// per request what its prompt cache served counts the hits in levels[i].prefix_cache_hits
// and says so on the console; the first run has none (0, not null), and a server that
// says nothing per request leaves it null.
func TestPrefixCacheHitsCounted(t *testing.T) {
	srv := llamaCacheServer(t)
	run := func(url string) (*int, string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "r")
		code, stdout, stderr := runCLI(t, t.Context(), "run", "--url", url, "--model", "m", "--concurrency", "1", "--requests", "3",
			"--input-tokens", "16", "--output-tokens", "1", "--no-progress", "--seed", "5", "--output-dir", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		return readSummaryT(t, dir).Levels[0].PrefixCacheHits, stdout
	}
	first, out1 := run(srv.URL)
	second, out2 := run(srv.URL)
	if first == nil || *first != 0 || strings.Contains(out1, "Prefix cache hits") {
		t.Errorf("first run: hits %v, console:\n%s", first, out1)
	}
	if second == nil || *second != 3 || !strings.Contains(out2, "Prefix cache hits: 3 measured requests") {
		t.Errorf("second run: hits %v, console:\n%s", second, out2)
	}
	plain, _ := promptServer(t)
	if h, _ := run(plain.URL); h != nil {
		t.Errorf("a server without timings: %d hits, want null", *h)
	}
}

// The test request and the warm-up requests never share a prompt with a measured request:
// every prompt a run sends is its own.
func TestWarmupAndTestRequestPromptsDistinct(t *testing.T) {
	srv, sent := promptServer(t)
	code, stdout, stderr := runCLI(t, t.Context(), "run", "--url", srv.URL, "--model", "m", "--concurrency", "2", "--requests", "6",
		"--warmup", "2", "--input-tokens", "16", "--output-tokens", "1", "--no-progress", "--output-dir", filepath.Join(t.TempDir(), "r"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	prompts := sent()
	if len(prompts) != 1+2+6 {
		t.Fatalf("%d prompts sent, want 9 (test request, 2 warm-up, 6 measured)", len(prompts))
	}
	seen := map[string]bool{}
	for _, p := range prompts {
		if seen[p] {
			t.Errorf("prompt sent twice: %q", p)
		}
		seen[p] = true
	}
}
