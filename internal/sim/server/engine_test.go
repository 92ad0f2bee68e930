package server

import (
	"context"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
)

var _ Generator = (*sim.Engine)(nil)

// The real engine behind the server: a stream gets exactly max_tokens with ignore_eos, and a
// stopped engine answers 503.
func TestWithEngine(t *testing.T) {
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	eng := sim.NewEngine(p)
	started := make(chan struct{})
	go func() { close(started); eng.Start(ctx) }()
	<-started
	_, ts := newTestServer(t, eng, Options{ModelName: p.ModelName(), BlockSize: 16})
	body := `{"model":"` + p.ModelName() + `","messages":[{"role":"user","content":"` + strings.TrimSpace(strings.Repeat("the world ", 40)) + `"}],"max_tokens":6,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`
	o := doStream(t, ts, body)
	if o.status != 200 || !o.done || o.tokens != 6 {
		t.Fatalf("stream: %+v", o)
	}
	u := decodeChunk(t, o.events[len(o.events)-2]).Usage
	if u == nil || u.PromptTokens != 80 || u.CompletionTokens != 6 {
		t.Fatalf("usage %+v", u)
	}
	cancel()
	// Start returns asynchronously; once it has, Submit reports ErrStopped.
	for i := 0; ; i++ {
		resp := post(t, ts, "/v1/completions", `{"prompt":"hi","max_tokens":2}`)
		if resp.StatusCode == 503 {
			if e := decodeError(t, resp); e.Code == nil || *e.Code != "engine_stopped" {
				t.Fatalf("503 body %+v", e)
			}
			break
		}
		readAll(t, resp.Body)
		resp.Body.Close()
		if i == 1000 {
			t.Fatalf("engine still serving after its context ended (status %d)", resp.StatusCode)
		}
	}
}

// With speculative decoding a stream's content chunks carry the tokens each step emitted,
// several at once, and exactly max_tokens in all; /metrics counts the drafts.
func TestWithSpeculativeEngine(t *testing.T) {
	p, err := sim.ParseProfile([]byte("cost:\n  kind: linear\n  prefill_ms_per_token: 0.001\n  decode_step_ms: 1\nspeculative:\n  draft_tokens: 4\n  acceptance: 0.8\n  method: ngram\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	eng := sim.NewEngine(p)
	go eng.Start(ctx)
	s, ts := newTestServer(t, eng, Options{ModelName: "spec", BlockSize: 16})
	o := doStream(t, ts, `{"model":"spec","messages":[{"role":"user","content":"hi"}],"max_tokens":60,"ignore_eos":true,"stream":true}`)
	if o.status != 200 || !o.done || o.tokens != 60 {
		t.Fatalf("stream: %d tokens, %+v", o.tokens, o)
	}
	most := 0
	for _, e := range o.events[:len(o.events)-1] { // the last is [DONE]
		if c := decodeChunk(t, e); len(c.Choices) > 0 && c.Choices[0].Delta != nil && c.Choices[0].Delta.Content != nil {
			most = max(most, len(strings.Fields(*c.Choices[0].Delta.Content)))
		}
	}
	if most < 2 {
		t.Errorf("no chunk carried more than %d token", most)
	}
	if text := metricsText(t, s); !strings.Contains(text, `vllm:spec_decode_num_draft_tokens_total{model_name="spec"}`) || strings.Contains(text, `vllm:spec_decode_num_draft_tokens_total{model_name="spec"} 0`+"\n") {
		t.Errorf("/metrics counts no drafts:\n%s", text)
	}
}
