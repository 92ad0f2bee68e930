package e2e

// The llama.cpp tests: .ci/llamacpp.sh builds llama-server and serves tools/ggufgen's model
// with four slots and an API key.

import (
	"bufio"
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
	"slices"
	"strings"
	"testing"
	"time"
)

// llamacppLoad is the workload of the llama.cpp runs: one request per slot (-np 4), prompts
// and outputs long enough for TPOT to be a steady figure. A run takes about 4 s on 2 cores.
var llamacppLoad = load{concurrency: 4, requests: 48, input: 256, output: 128}

// llamacppTarget returns the server to test. Without LLMBENCH_LLAMACPP_URL the test skips;
// with it, a server that does not answer /v1/models with the key (or lacks
// LLMBENCH_LLAMACPP_MODEL) fails the test.
func llamacppTarget(t *testing.T) server {
	t.Helper()
	return llamacppTargetAt(t, "LLMBENCH_LLAMACPP_URL")
}

// llamacppTargetAt is llamacppTarget for the server whose URL is in the variable env: the
// generation server (LLMBENCH_LLAMACPP_URL) or the embeddings and reranking ones that
// .ci/llamacpp.sh starts beside it. Those are required once LLMBENCH_LLAMACPP_URL is set.
func llamacppTargetAt(t *testing.T, env string) server {
	t.Helper()
	raw := os.Getenv(env)
	if raw == "" && env != "LLMBENCH_LLAMACPP_URL" && os.Getenv("LLMBENCH_LLAMACPP_URL") != "" {
		t.Fatalf("LLMBENCH_LLAMACPP_URL is set but %s is not: .ci/llamacpp.sh start exports both", env)
	}
	if raw == "" {
		t.Skip("no llama.cpp server: set " + env + " (and LLMBENCH_LLAMACPP_API_KEY, LLMBENCH_LLAMACPP_MODEL) to a llama-server; .ci/llamacpp.sh test starts one")
	}
	s := server{url: strings.TrimRight(raw, "/"), apiKey: os.Getenv("LLMBENCH_LLAMACPP_API_KEY"),
		model: os.Getenv("LLMBENCH_LLAMACPP_MODEL")}
	models, err := s.modelNames(t.Context(), "/v1/models", "data", "id")
	switch {
	case err != nil:
		t.Fatalf("llama-server at %s: %v", s.url, err)
	case len(models) == 0:
		t.Fatalf("llama-server at %s lists no model in /v1/models", s.url)
	case s.model == "":
		s.model = models[0]
	case !slices.Contains(models, s.model):
		t.Fatalf("llama-server at %s has no model %s (has %v)", s.url, s.model, models)
	}
	return s
}

// TestLlamaCppServer checks the server and model without llmbench, so that a failure of the
// tests below is known to be llmbench's: the key is required; both the OpenAI chat API and
// the native /completion return exactly the requested tokens, one stream event each, with
// llama.cpp's timings; and it reports whether the server keeps connections open.
func TestLlamaCppServer(t *testing.T) {
	s := llamacppTarget(t)
	if s.apiKey != "" {
		var body any
		err := s.getJSON(t.Context(), "/v1/models", "", &body)
		if se := (*statusError)(nil); !errors.As(err, &se) || se.code != http.StatusUnauthorized {
			t.Errorf("GET /v1/models without the key: %v; want HTTP 401", err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	checkAtOnce(t, 2*llamacppLoad.concurrency,
		func(prompt string) error { return s.checkOpenAIChat(ctx, prompt, llamacppLoad.output) },
		func(prompt string) error { return s.checkNativeCompletion(ctx, prompt, llamacppLoad.output) })
	closes, advertised, err := s.closesAfterStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after a streamed response llama-server %s the connection (its headers: %s)",
		map[bool]string{true: "closes", false: "keeps"}[closes], advertised)
}

// checkNativeCompletion streams one /completion request for n tokens: n content events,
// a final "stop" event whose tokens_predicted and timings.predicted_n are n.
func (s server) checkNativeCompletion(ctx context.Context, prompt string, n int) error {
	lines, err := s.post(ctx, "/completion", map[string]any{"stream": true, "n_predict": n, "prompt": prompt})
	if err != nil {
		return err
	}
	var contentEvents int
	var final struct {
		Content         string `json:"content"`
		Stop            bool   `json:"stop"`
		StopType        string `json:"stop_type"`
		TokensPredicted int    `json:"tokens_predicted"`
		Timings         *struct {
			PredictedN  int     `json:"predicted_n"`
			PredictedMS float64 `json:"predicted_ms"`
		} `json:"timings"`
	}
	for _, l := range lines {
		data, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			continue
		}
		final.Content = ""
		if err := json.Unmarshal([]byte(data), &final); err != nil {
			return fmt.Errorf("/completion: bad event %q: %w", data, err)
		}
		if final.Content != "" {
			contentEvents++
		}
	}
	if !final.Stop || final.StopType != "limit" || final.TokensPredicted != n || contentEvents != n ||
		final.Timings == nil || final.Timings.PredictedN != n || final.Timings.PredictedMS <= 0 {
		return fmt.Errorf("/completion: stop %v (%q), tokens_predicted %d, %d content events, timings %+v; want true (limit), %d, %d, predicted_n %d",
			final.Stop, final.StopType, final.TokensPredicted, contentEvents, final.Timings, n, n, n)
	}
	return nil
}

// closesAfterStream sends one small streamed /completion on a raw connection, reads the
// whole response, and reports whether the server then closed the connection, with the
// Connection / Keep-Alive headers it sent.
func (s server) closesAfterStream(ctx context.Context) (closes bool, advertised string, err error) {
	u, err := url.Parse(s.url)
	if err != nil {
		return false, "", err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return false, "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	body := `{"stream":true,"n_predict":4,"prompt":"Say something."}`
	fmt.Fprintf(conn, "POST /completion HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		u.Host, s.apiKey, len(body), body)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return false, "", err
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return false, "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, "", fmt.Errorf("raw POST /completion: %s", resp.Status)
	}
	advertised = fmt.Sprintf("Connection %q, Keep-Alive %q", resp.Header.Get("Connection"), resp.Header.Get("Keep-Alive"))
	// A server that keeps the connection sends nothing more: the read times out.
	conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, err = br.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, advertised, nil
	}
	return true, advertised, nil
}

// TestLlamaCppOpenAIChat, TestLlamaCppOpenAICompletions, TestLlamaCppNative: llmbench run
// with the key, four at a time, over each of llama-server's streaming APIs: every request
// completes with exactly the requested tokens, and the client's TPOT matches llama.cpp's
// own timings, which llama-server sends on all three.
func TestLlamaCppOpenAIChat(t *testing.T)        { testLlamaCppAPI(t, "openai-chat") }
func TestLlamaCppOpenAICompletions(t *testing.T) { testLlamaCppAPI(t, "openai-completions") }
func TestLlamaCppNative(t *testing.T)            { testLlamaCppAPI(t, "llamacpp") }

func testLlamaCppAPI(t *testing.T, api string) {
	s := llamacppTarget(t)
	closes, _, err := s.closesAfterStream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	run := runBench(t, s, api, llamacppLoad)
	run.logFigures(t)
	run.checkExact(t)
	run.checkRetries(t, closes)
	run.checkServerTPOT(t, 0.05)
}

// TestLlamaCppServerTokenizer: --tokenizer server (llama.cpp's /tokenize, with the key)
// makes prompts of exactly the requested length by the server's own count:
// usage.prompt_tokens of /v1/completions is the prompt plus the BOS the server adds.
func TestLlamaCppServerTokenizer(t *testing.T) {
	s := llamacppTarget(t)
	added := s.specialTokens(t)
	l := llamacppLoad
	l.requests = 16
	run := runBench(t, s, "openai-completions", l, "--tokenizer", "server")
	run.checkExact(t)
	for _, r := range run.recs {
		if r.OK() && (r.InputTokens != l.input || r.ServerPromptTokens != l.input+added) {
			t.Errorf("request %d: input_tokens %d, server_prompt_tokens %d; want %d and %d (+%d the server adds)",
				r.Index, r.InputTokens, r.ServerPromptTokens, l.input, l.input+added, added)
		}
	}
}

// specialTokens is how many tokens llama-server adds to a prompt (BOS): /tokenize's count
// with add_special minus without.
func (s server) specialTokens(t *testing.T) int {
	t.Helper()
	count := func(special bool) int {
		var body struct {
			Tokens []json.RawMessage `json:"tokens"`
		}
		if err := s.doJSON(t.Context(), http.MethodPost, "/tokenize", s.apiKey,
			map[string]any{"content": "Say something.", "add_special": special}, &body); err != nil {
			t.Fatal(err)
		}
		return len(body.Tokens)
	}
	return count(true) - count(false)
}

// TestLlamaCppNoKeepAlive: with --keep-alive=false every request has a fresh connection,
// so none can find it closed by the server: all complete, none re-sent.
func TestLlamaCppNoKeepAlive(t *testing.T) {
	s := llamacppTarget(t)
	run := runBench(t, s, "llamacpp", llamacppLoad, "--keep-alive=false")
	run.checkExact(t)
	lvl := run.level(t)
	if n, ok := lvl["retried"].(float64); !ok || n != 0 {
		t.Errorf("summary.json levels[0].retried = %v, want 0 without keep-alive", lvl["retried"])
	}
}

// checkRetries checks what summary.json says about connections against what the server
// did: target.closes_connections is whether it closes them after each response (closes, as
// closesAfterStream saw), with a positive target.closed_connections when it does, and
// levels[0].retried counts the records marked "retried" (requests re-sent once on a fresh
// connection after the server closed the one they were sent on).
func (run *benchRun) checkRetries(t *testing.T, closes bool) {
	t.Helper()
	target, _ := run.summary["target"].(map[string]any)
	if got, ok := target["closes_connections"].(bool); !ok || got != closes {
		t.Errorf("summary.json target.closes_connections = %v, want %v (llama-server %s the connection after each streamed response)",
			target["closes_connections"], closes, map[bool]string{true: "closes", false: "keeps"}[closes])
	}
	if n, ok := target["closed_connections"].(float64); closes && (!ok || n <= 0) {
		t.Errorf("summary.json target.closed_connections = %v, want > 0", target["closed_connections"])
	}
	retried := 0
	for _, r := range run.recs {
		if r.raw["retried"] == true {
			retried++
		}
	}
	lvl := run.level(t)
	if n, ok := lvl["retried"].(float64); !ok || int(n) != retried {
		t.Errorf("summary.json levels[0].retried = %v, want %d (the records marked retried)", lvl["retried"], retried)
	}
	t.Logf("retried %d of %d; target.closed_connections %v", retried, len(run.recs), target["closed_connections"])
}

// checkServerTPOT: the client's TPOT, (last − first)/(N − 1), matches llama.cpp's
// predicted_ms/(predicted_n − 1) — predicted_ms starts after the first token is sampled, so
// it spans the same N − 1 steps — request by request in the median, and summary.json's
// server_timings agree.
func (run *benchRun) checkServerTPOT(t *testing.T, tol float64) {
	t.Helper()
	var client, server []float64
	missing := 0
	for _, r := range run.recs {
		if !r.OK() {
			continue
		}
		if r.Server == nil || r.Server.OutputTokens < 2 || r.Server.Decode <= 0 {
			missing++
			continue
		}
		if r.Server.OutputTokens != r.OutputTokens {
			t.Errorf("request %d: server timed %d tokens, the client counted %d", r.Index, r.Server.OutputTokens, r.OutputTokens)
		}
		client = append(client, r.tpot())
		server = append(server, r.Server.Decode.Seconds()/float64(r.Server.OutputTokens-1))
	}
	if missing > 0 {
		t.Errorf("--api %s: %d completed requests have no server timings in records.jsonl (llama-server sends \"timings\" on this API)", run.api, missing)
	}
	if len(client) == 0 {
		return
	}
	c, s := median(client), median(server)
	t.Logf("TPOT median: client %.3f ms, llama.cpp predicted_ms/(predicted_n-1) %.3f ms (client/server %.3f)", c*1e3, s*1e3, c/s)
	if math.Abs(c/s-1) > tol {
		t.Errorf("client TPOT median %.3f ms is not within %.0f%% of the server's %.3f ms", c*1e3, tol*100, s*1e3)
	}
	st, _ := run.level(t)["server_timings"].(map[string]any)
	tpot, _ := st["tpot"].(map[string]any)
	cp, ok1 := tpot["client_p50_ms"].(float64)
	sp, ok2 := tpot["server_p50_ms"].(float64)
	if !ok1 || !ok2 || sp <= 0 || math.Abs(cp/sp-1) > tol {
		t.Errorf("summary.json levels[0].server_timings.tpot: client_p50_ms %v, server_p50_ms %v; want within %.0f%% of each other", tpot["client_p50_ms"], tpot["server_p50_ms"], tol*100)
	}
	if n, _ := st["requests"].(float64); int(n) != len(client) {
		t.Errorf("summary.json levels[0].server_timings.requests = %v, want %d", st["requests"], len(client))
	}
}

// TestLlamaCppChatTemplate: with the model's tokenizer folder, chat prompts are sized with
// its chat template (the one the GGUF carries, which llama-server applies), so the server's
// prompt_tokens equal --input-tokens, history included in multi-turn chat.
func TestLlamaCppChatTemplate(t *testing.T) {
	checkChatTemplate(t, llamacppTarget(t), "openai-chat", llama3Tokenizer)
}

// TestLlamaCppServerTokenizerChat: with --tokenizer server, chat prompts are formatted by the
// server itself (its /apply-template, then /tokenize with the BOS its chat path adds), so
// they come out exact with no tokenizer file at all.
func TestLlamaCppServerTokenizerChat(t *testing.T) {
	checkChatTemplate(t, llamacppTarget(t), "openai-chat", "server")
}

// TestLlamaCppFreshPromptsPerRun: two runs in a row with default flags draw different seeds
// (so send different prompts), and the server's prompt cache (timings.cache_n) serves no
// measured request of either: prefix_cache_hits is 0, not null, since llama.cpp says per
// request what it served from its cache. A run repeating the first's seed sends its
// prompts again; how many the cache still holds depends on the server's slots, so that
// count is logged.
func TestLlamaCppFreshPromptsPerRun(t *testing.T) {
	s := llamacppTarget(t)
	l := load{concurrency: 4, requests: 8, input: 256, output: 8}
	first := runBench(t, s, "openai-chat", l)
	second := runBench(t, s, "openai-chat", l)
	s1, _ := first.summary["seed"].(float64)
	s2, _ := second.summary["seed"].(float64)
	if s1 == s2 || s1 == 1 || s2 == 1 {
		t.Errorf("summary.json seeds %v and %v: want two drawn, different seeds", s1, s2)
	}
	for i, run := range []*benchRun{first, second} {
		if h, ok := run.level(t)["prefix_cache_hits"].(float64); !ok || h != 0 {
			t.Errorf("run %d: levels[0].prefix_cache_hits %v, want 0", i+1, run.level(t)["prefix_cache_hits"])
		}
	}
	again := runBench(t, s, "openai-chat", l, "--seed", fmt.Sprint(int64(s2)))
	h, ok := again.level(t)["prefix_cache_hits"].(float64)
	if !ok {
		t.Errorf("a repeated run: levels[0].prefix_cache_hits %v, want a count", again.level(t)["prefix_cache_hits"])
	}
	t.Logf("a run repeating the previous run's seed: %v of %d measured requests were prefix-cache hits", h, l.requests)
}
