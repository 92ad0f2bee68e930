package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
)

// Bodies as openai-python sends them (json.dumps of the kwargs, NOT_GIVEN fields omitted).
const (
	chatStreamBody = `{"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Tell me about the history of the world in one short paragraph."}], "model": "llmbench-sim", "max_completion_tokens": 7, "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.0}`
	compStreamBody = `{"model": "llmbench-sim", "prompt": "The quick brown fox jumps over the lazy dog", "max_tokens": 5, "stream": true, "stream_options": {"include_usage": true, "continuous_usage_stats": true}, "ignore_eos": true}`
)

func TestChatStreamShape(t *testing.T) {
	g := &fakeGen{}
	_, ts := newTestServer(t, g, Options{})
	resp := post(t, ts, "/v1/chat/completions", chatStreamBody)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ev := sseEvents(t, readAll(t, resp.Body))
	// role, 7 content deltas, finish, usage, [DONE]
	if len(ev) != 11 {
		t.Fatalf("got %d events, want 11:\n%s", len(ev), strings.Join(ev, "\n"))
	}
	if ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", ev[len(ev)-1])
	}
	wantPrompt := EstimateTokens("You are a helpful assistant.") + EstimateTokens("Tell me about the history of the world in one short paragraph.")
	var id, text string
	for i, e := range ev[:len(ev)-1] {
		c := decodeChunk(t, e)
		if i == 0 {
			id = c.ID
		}
		if c.ID != id || !strings.HasPrefix(id, "chatcmpl-") || c.Object != "chat.completion.chunk" || c.Model != "llmbench-sim" || c.Created == 0 {
			t.Fatalf("event %d header: %+v", i, c)
		}
		switch {
		case i == 0:
			if len(c.Choices) != 1 || c.Choices[0].Delta == nil || c.Choices[0].Delta.Role == nil || *c.Choices[0].Delta.Role != "assistant" ||
				c.Choices[0].FinishReason != nil || c.Usage != nil {
				t.Fatalf("first chunk is not the role chunk: %s", e)
			}
		case i <= 7:
			d := c.Choices[0].Delta
			if d == nil || d.Content == nil || c.Choices[0].FinishReason != nil || c.Usage != nil {
				t.Fatalf("content chunk %d: %s", i, e)
			}
			text += *d.Content
		case i == 8:
			if fr := c.Choices[0].FinishReason; fr == nil || *fr != "length" || c.Choices[0].Delta.Content != nil {
				t.Fatalf("finish chunk: %s", e)
			}
		case i == 9:
			if len(c.Choices) != 0 || c.Usage == nil || !strings.Contains(e, `"choices":[]`) {
				t.Fatalf("usage chunk: %s", e)
			}
			if c.Usage.PromptTokens != wantPrompt || c.Usage.CompletionTokens != 7 || c.Usage.TotalTokens != wantPrompt+7 {
				t.Fatalf("usage %+v, want prompt %d completion 7", *c.Usage, wantPrompt)
			}
		}
	}
	if n := len(strings.Fields(text)); n != 7 || !strings.HasPrefix(text, " ") {
		t.Fatalf("text %q: want 7 space-led words", text)
	}
	reqs := g.requests()
	if len(reqs) != 1 || reqs[0].MaxTokens != 7 || reqs[0].IgnoreEOS || reqs[0].PromptTokens != wantPrompt || reqs[0].ID != id {
		t.Fatalf("engine got %+v", reqs)
	}
}

func TestCompletionsStreamContinuousUsage(t *testing.T) {
	g := &fakeGen{}
	_, ts := newTestServer(t, g, Options{})
	resp := post(t, ts, "/v1/completions", compStreamBody)
	ev := sseEvents(t, readAll(t, resp.Body))
	resp.Body.Close()
	// 5 text chunks, finish, usage, [DONE]
	if len(ev) != 8 || ev[7] != "[DONE]" {
		t.Fatalf("events:\n%s", strings.Join(ev, "\n"))
	}
	prompt := EstimateTokens("The quick brown fox jumps over the lazy dog")
	if prompt != 9 {
		t.Fatalf("estimate of the fox sentence = %d, want 9 (cl100k's count)", prompt)
	}
	for i, e := range ev[:7] {
		c := decodeChunk(t, e)
		if !strings.HasPrefix(c.ID, "cmpl-") || c.Object != "text_completion" {
			t.Fatalf("chunk %d: %s", i, e)
		}
		if c.Usage == nil {
			t.Fatalf("chunk %d has no usage under continuous_usage_stats: %s", i, e)
		}
		wantC := min(i+1, 5)
		if c.Usage.PromptTokens != prompt || c.Usage.CompletionTokens != wantC || c.Usage.TotalTokens != prompt+wantC {
			t.Fatalf("chunk %d usage %+v, want completion %d", i, *c.Usage, wantC)
		}
		if i < 5 && (c.Choices[0].Text == nil || len(strings.Fields(*c.Choices[0].Text)) != 1) {
			t.Fatalf("chunk %d text: %s", i, e)
		}
	}
	if r := g.requests(); len(r) != 1 || !r[0].IgnoreEOS || r[0].MaxTokens != 5 {
		t.Fatalf("engine got %+v", r)
	}
}

func TestStreamUsageOptions(t *testing.T) {
	cases := []struct {
		name        string
		opts        string
		wantUsageCh bool // the trailing choices:[] chunk
		wantPerCh   bool // usage on every chunk
	}{
		{"none", ``, false, false},
		{"include", `,"stream_options":{"include_usage":true}`, true, false},
		{"continuous_alone_like_vllm", `,"stream_options":{"continuous_usage_stats":true}`, false, false},
		{"both", `,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`, true, true},
	}
	_, ts := newTestServer(t, &fakeGen{}, Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, ts, "/v1/chat/completions", `{"model":"llmbench-sim","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true`+tc.opts+`}`)
			ev := sseEvents(t, readAll(t, resp.Body))
			resp.Body.Close()
			usageChunk := false
			perChunk := true
			for _, e := range ev[:len(ev)-1] {
				c := decodeChunk(t, e)
				if len(c.Choices) == 0 {
					usageChunk = true
				} else if c.Usage == nil {
					perChunk = false
				}
			}
			if usageChunk != tc.wantUsageCh || perChunk != tc.wantPerCh {
				t.Fatalf("usage chunk %v (want %v), usage on every chunk %v (want %v)", usageChunk, tc.wantUsageCh, perChunk, tc.wantPerCh)
			}
		})
	}
}

func TestNonStreaming(t *testing.T) {
	g := &fakeGen{eosAt: 4}
	_, ts := newTestServer(t, g, Options{})
	cases := []struct {
		path, body, object, finish string
		tokens                     int
	}{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"Hello there"}]}],"model":"llmbench-sim","max_tokens":10}`, "chat.completion", "stop", 4},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hello there"}],"model":"llmbench-sim","max_tokens":10,"max_completion_tokens":6,"ignore_eos":true}`, "chat.completion", "length", 6},
		{"/v1/completions", `{"model":"llmbench-sim","prompt":"Hello there","max_tokens":3}`, "text_completion", "length", 3},
		{"/v1/completions", `{"model":"llmbench-sim","prompt":[1,2,3,4,5],"max_tokens":8,"min_tokens":8}`, "text_completion", "length", 8},
	}
	for i, tc := range cases {
		resp := post(t, ts, tc.path, tc.body)
		body := readAll(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("case %d: status %d %s", i, resp.StatusCode, body)
		}
		c := decodeChunk(t, string(body))
		if c.Object != tc.object || len(c.Choices) != 1 || c.Usage == nil {
			t.Fatalf("case %d: %s", i, body)
		}
		text := ""
		if c.Choices[0].Message != nil {
			text = c.Choices[0].Message.Content
			if c.Choices[0].Message.Role != "assistant" {
				t.Fatalf("case %d: role %q", i, c.Choices[0].Message.Role)
			}
		} else if c.Choices[0].Text != nil {
			text = *c.Choices[0].Text
		}
		if n := len(strings.Fields(text)); n != tc.tokens || c.Usage.CompletionTokens != tc.tokens {
			t.Fatalf("case %d: %d words, usage %+v, want %d", i, n, *c.Usage, tc.tokens)
		}
		if *c.Choices[0].FinishReason != tc.finish {
			t.Fatalf("case %d: finish %q, want %q", i, *c.Choices[0].FinishReason, tc.finish)
		}
		if c.Usage.PromptTokens != EstimateTokens("Hello there") && i < 3 || i == 3 && c.Usage.PromptTokens != 5 {
			t.Fatalf("case %d: prompt tokens %d", i, c.Usage.PromptTokens)
		}
	}
}

func TestResponseIDsUnique(t *testing.T) {
	_, ts := newTestServer(t, &fakeGen{}, Options{})
	_, ts2 := newTestServer(t, &fakeGen{}, Options{})
	seen := map[string]bool{}
	for i := range 20 {
		srv := ts
		if i%2 == 1 {
			srv = ts2
		}
		resp := post(t, srv, "/v1/completions", `{"prompt":"x","max_tokens":1}`)
		c := decodeChunk(t, string(readAll(t, resp.Body)))
		resp.Body.Close()
		if seen[c.ID] {
			t.Fatalf("id %q repeated", c.ID)
		}
		seen[c.ID] = true
	}
}

func TestModelsHealthMetrics(t *testing.T) {
	g := &fakeGen{stats: sim.EngineStats{Running: 3, Waiting: 2, KVUsage: 0.25, Preemptions: 7, PromptTokens: 1000, GenerationTokens: 500, PrefixHits: 40, PrefixQueries: 100,
		SpecDrafts: 6, SpecDraftTokens: 24, SpecAcceptedTokens: 18}}
	_, ts := newTestServer(t, g, Options{ModelName: "meta-llama/Llama-3.1-8B-Instruct", Faults: Faults{Prob: [numFaultKinds]float64{FaultHTTP500: 0.5}}})
	for range 4 {
		resp := post(t, ts, "/v1/chat/completions", `{"model":"meta-llama/Llama-3.1-8B-Instruct","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`)
		readAll(t, resp.Body)
		resp.Body.Close()
	}
	resp, err := ts.Client().Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object string
		} `json:"data"`
	}
	if err := json.Unmarshal(readAll(t, resp.Body), &models); err != nil || models.Object != "list" || len(models.Data) != 1 ||
		models.Data[0].ID != "meta-llama/Llama-3.1-8B-Instruct" || models.Data[0].Object != "model" {
		t.Fatalf("models: %+v %v", models, err)
	}
	resp.Body.Close()
	resp, _ = ts.Client().Get(ts.URL + "/health")
	if resp.StatusCode != 200 {
		t.Fatalf("health %d", resp.StatusCode)
	}
	resp.Body.Close()
	resp, _ = ts.Client().Get(ts.URL + "/metrics")
	text := string(readAll(t, resp.Body))
	resp.Body.Close()
	for _, want := range []string{
		`vllm:num_requests_running{model_name="meta-llama/Llama-3.1-8B-Instruct"} 3`,
		`vllm:num_requests_waiting{model_name="meta-llama/Llama-3.1-8B-Instruct"} 2`,
		`vllm:kv_cache_usage_perc{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.25`,
		`vllm:num_preemptions_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 7`,
		`vllm:prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 1000`,
		`vllm:generation_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 500`,
		`vllm:prefix_cache_queries_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 100`,
		`vllm:prefix_cache_hits_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 40`,
		`vllm:spec_decode_num_drafts_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 6`,
		`vllm:spec_decode_num_draft_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 24`,
		`vllm:spec_decode_num_accepted_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 18`,
		`vllm:time_to_first_token_seconds_bucket{model_name="meta-llama/Llama-3.1-8B-Instruct",le="0.001"}`,
		`vllm:inter_token_latency_seconds_count{model_name="meta-llama/Llama-3.1-8B-Instruct"}`,
		`vllm:e2e_request_latency_seconds_sum{model_name="meta-llama/Llama-3.1-8B-Instruct"}`,
		`vllm:request_success_total{finished_reason="length",model_name="meta-llama/Llama-3.1-8B-Instruct"}`,
		`llmbench_faults_injected_total{kind="http500"}`,
		`llmbench_faults_injected_total{kind="stall"} 0`,
		"# TYPE vllm:time_to_first_token_seconds histogram",
		"# TYPE vllm:num_requests_running gauge",
		"# TYPE vllm:generation_tokens_total counter",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

func TestMetricsCount(t *testing.T) {
	s, ts := newTestServer(t, &fakeGen{}, Options{})
	for range 3 {
		resp := post(t, ts, "/v1/completions", `{"prompt":"hi","max_tokens":4,"stream":true}`)
		readAll(t, resp.Body)
		resp.Body.Close()
	}
	resp := post(t, ts, "/v1/completions", `{"prompt":"hi","max_tokens":4}`)
	readAll(t, resp.Body)
	resp.Body.Close()
	ts.Close() // the handlers observe after their last write: wait for them
	// Streams: 1 TTFT + 3 ITL samples each; non-streaming: 1 TTFT, no ITL.
	text := metricsText(t, s)
	for _, want := range []string{
		`vllm:time_to_first_token_seconds_count{model_name="llmbench-sim"} 4`,
		`vllm:inter_token_latency_seconds_count{model_name="llmbench-sim"} 9`,
		`vllm:e2e_request_latency_seconds_count{model_name="llmbench-sim"} 4`,
		`vllm:request_success_total{finished_reason="length",model_name="llmbench-sim"} 4`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func metricsText(t testing.TB, s *Server) string {
	t.Helper()
	rec := newRecorder()
	req, _ := http.NewRequest(http.MethodGet, "/metrics", nil)
	s.ServeHTTP(rec, req)
	return rec.Body.String()
}

func TestClientCancelStopsGeneration(t *testing.T) {
	g := &fakeGen{interval: 2e6} // 2 ms a token
	var truth strings.Builder
	s, ts := newTestServer(t, g, Options{Truth: &truth})
	resp := post(t, ts, "/v1/completions", `{"prompt":"hi","max_tokens":100000,"stream":true}`)
	buf := make([]byte, 512)
	if _, err := io.ReadAtLeast(resp.Body, buf, 200); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // the client goes away mid-stream
	ts.Close()        // waits for the handler to return
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	g.running.Wait()
	if g.canceled.Load() != 1 {
		t.Fatalf("generator saw %d cancellations, want 1", g.canceled.Load())
	}
	var line TruthLine
	if err := json.Unmarshal([]byte(truth.String()), &line); err != nil || !line.Canceled || line.CompletionTokens == 0 || line.FinishReason != "" {
		t.Fatalf("truth %q: %+v %v", truth.String(), line, err)
	}
}

func TestGeneratorAbortsAndRefuses(t *testing.T) {
	_, ts := newTestServer(t, &fakeGen{abortAfter: 2}, Options{})
	resp := post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}`)
	ev := sseEvents(t, readAll(t, resp.Body))
	resp.Body.Close()
	// role, 2 tokens, error, [DONE]
	if len(ev) != 5 || decodeChunk(t, ev[3]).Error == nil || ev[4] != "[DONE]" {
		t.Fatalf("events:\n%s", strings.Join(ev, "\n"))
	}
	resp = post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	readAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Fatalf("non-streaming abort: status %d", resp.StatusCode)
	}

	_, ts = newTestServer(t, &fakeGen{err: errors.New("prompt of 9 tokens exceeds the KV cache")}, Options{})
	resp = post(t, ts, "/v1/completions", `{"prompt":"hi","max_tokens":5}`)
	e := decodeError(t, resp)
	if resp.StatusCode != 400 || !strings.Contains(e.Message, "exceeds the KV cache") {
		t.Fatalf("refusal: %d %+v", resp.StatusCode, e)
	}
}

func TestPrefixHashes(t *testing.T) {
	g := &fakeGen{}
	_, ts := newTestServer(t, g, Options{BlockSize: 4})
	shared := strings.Repeat("the people of the world make good time ", 4) // 32 tokens
	for _, p := range []string{shared + "one way", shared + "two days", "different words entirely " + shared} {
		resp := post(t, ts, "/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":1}`, p))
		readAll(t, resp.Body)
		resp.Body.Close()
	}
	r := g.requests()
	if len(r) != 3 {
		t.Fatal(len(r))
	}
	for i, x := range r {
		if want := x.PromptTokens / 4; len(x.PrefixHashes) != want {
			t.Fatalf("request %d: %d hashes for %d tokens, want %d", i, len(x.PrefixHashes), x.PromptTokens, want)
		}
	}
	for b := range 8 {
		if r[0].PrefixHashes[b] != r[1].PrefixHashes[b] {
			t.Fatalf("block %d of the shared prefix hashes differently", b)
		}
	}
	if r[0].PrefixHashes[0] == r[2].PrefixHashes[0] {
		t.Fatal("different prompts share a first block hash")
	}
}

// Steps already queued when the server reads (a client slower than the engine) go out as
// one event carrying all their tokens, as vLLM merges deltas for a slow consumer.
func TestBacklogCoalesced(t *testing.T) {
	var truth strings.Builder
	s, ts := newTestServer(t, &fakeGen{prefill: true}, Options{Truth: &truth})
	resp := post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":10,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`)
	ev := sseEvents(t, readAll(t, resp.Body))
	resp.Body.Close()
	// role, one 10-token event, finish, usage, [DONE]
	if len(ev) != 5 {
		t.Fatalf("events:\n%s", strings.Join(ev, "\n"))
	}
	c := decodeChunk(t, ev[1])
	if n := len(strings.Fields(*c.Choices[0].Delta.Content)); n != 10 || c.Usage.CompletionTokens != 10 {
		t.Fatalf("coalesced event: %d words, usage %+v", n, *c.Usage)
	}
	ts.Close()
	_ = s.Close()
	var tl TruthLine
	if err := json.Unmarshal([]byte(truth.String()), &tl); err != nil || len(tl.EventUnix) != 1 || fmt.Sprint(tl.EventTokens) != "[10]" {
		t.Fatalf("truth %q: %v", truth.String(), err)
	}
}
