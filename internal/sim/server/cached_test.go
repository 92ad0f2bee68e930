package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
)

// usageOf is the usage a response carried last: a whole response's, a stream's final usage
// chunk's (a Responses stream's response.completed), each event's in order in all.
func usageOf(t *testing.T, body string, stream bool) (last map[string]any, all []map[string]any) {
	t.Helper()
	docs := []string{body}
	if stream {
		docs = sseData(t, body)
	}
	for _, d := range docs {
		var v struct {
			Usage    map[string]any `json:"usage"`
			Response *struct {
				Usage map[string]any `json:"usage"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			t.Fatalf("%v in %s", err, d)
		}
		u := v.Usage
		if v.Response != nil && v.Response.Usage != nil {
			u = v.Response.Usage
		}
		if u != nil {
			all = append(all, u)
			last = u
		}
	}
	if last == nil {
		t.Fatalf("no usage in %s", body)
	}
	return last, all
}

// cachedOf is usage's cached_tokens (prompt_tokens_details', input_tokens_details' in
// Responses); said is false when usage has none.
func cachedOf(t *testing.T, u map[string]any) (n int, said bool) {
	t.Helper()
	for _, k := range []string{"prompt_tokens_details", "input_tokens_details"} {
		if d, ok := u[k]; ok {
			c, ok := d.(map[string]any)["cached_tokens"].(float64)
			if !ok {
				t.Fatalf("%s without a cached_tokens count: %v", k, d)
			}
			return int(c), true
		}
	}
	return 0, false
}

// With the engine's prefix cache, usage says in prompt_tokens_details.cached_tokens
// (input_tokens_details in Responses) what it served of the prompt — 0 for a prompt's
// first sending, the shared prefix's full blocks for a second prompt that shares it —
// in a stream's final usage and a whole response's, for every generation API; per-chunk
// usage (continuous_usage_stats) does not, as vLLM's does not. Without a prefix cache
// usage says nothing of it.
func TestUsageCachedTokens(t *testing.T) {
	p, err := sim.ParseProfile([]byte("cost: {kind: linear, prefill_ms_per_token: 0.001, decode_step_ms: 1}\nengine: {prefix_caching: true, block_size: 16}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	eng := sim.NewEngine(p)
	go eng.Start(ctx)
	_, cachingTS := newTestServer(t, eng, Options{ModelName: "m", BlockSize: 16})
	_, plainTS := newTestServer(t, eng, Options{ModelName: "m"})

	shared := strings.TrimSpace(strings.Repeat("the people of the world make good time ", 12)) // 96 words
	for i, c := range []struct {
		path, format string
		stream       bool
	}{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":%q}],"max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`, true},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":%q}],"max_tokens":3,"ignore_eos":true}`, false},
		{"/v1/completions", `{"prompt":%q,"max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, true},
		{"/v1/completions", `{"prompt":%q,"max_tokens":3,"ignore_eos":true}`, false},
		{"/v1/responses", `{"input":%q,"max_output_tokens":3,"ignore_eos":true,"stream":true}`, true},
		{"/v1/responses", `{"input":%q,"max_output_tokens":3,"ignore_eos":true}`, false},
	} {
		prefix := fmt.Sprintf("case %d %s", i, shared) // a prefix of the case's own
		send := func(ts string, prompt string) (map[string]any, []map[string]any) {
			srv := cachingTS
			if ts == "plain" {
				srv = plainTS
			}
			resp := post(t, srv, c.path, fmt.Sprintf(c.format, prompt))
			defer resp.Body.Close()
			body := string(readAll(t, resp.Body))
			if resp.StatusCode != 200 {
				t.Fatalf("%s: HTTP %d %s", c.path, resp.StatusCode, body)
			}
			return usageOf(t, body, c.stream)
		}
		name := fmt.Sprintf("%s stream=%v", c.path, c.stream)
		first, all := send("caching", prefix+" first ask")
		if n, said := cachedOf(t, first); !said || n != 0 {
			t.Errorf("%s, first sending: cached %d (said %v), want 0 said", name, n, said)
		}
		for _, u := range all[:len(all)-1] {
			if _, said := cachedOf(t, u); said {
				t.Errorf("%s: a per-chunk usage says cached tokens: %v", name, u)
			}
		}
		second, _ := send("caching", prefix+" second ask")
		n, said := cachedOf(t, second)
		prompt, _ := second["prompt_tokens"].(float64)
		if prompt == 0 {
			prompt, _ = second["input_tokens"].(float64)
		}
		if !said || n < 96 || n%16 != 0 || n >= int(prompt) {
			t.Errorf("%s, shared prefix: cached %d (said %v) of %v prompt tokens, want the shared prefix's full 16-token blocks", name, n, said, prompt)
		}
		third, _ := send("plain", prefix+" third ask")
		if n, said := cachedOf(t, third); said {
			t.Errorf("%s without a prefix cache: cached %d said", name, n)
		}
	}
}
