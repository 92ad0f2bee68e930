package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/workload"
)

// Synthesized streams of each native API, shaped as the servers' sources and docs write them.
const (
	ollamaChatStream = `{"model":"llama3.2","created_at":"2025-01-01T00:00:00.1Z","message":{"role":"assistant","content":"Hel"},"done":false}
{"model":"llama3.2","created_at":"2025-01-01T00:00:00.2Z","message":{"role":"assistant","content":"lo \"x\""},"done":false}
{"model":"llama3.2","created_at":"2025-01-01T00:00:00.3Z","message":{"role":"assistant","content":""},"done_reason":"length","done":true,"total_duration":5191566416,"load_duration":2154458,"prompt_eval_count":26,"prompt_eval_duration":383809000,"eval_count":2,"eval_duration":4799921000}
`
	ollamaGenerateStream = `{"model":"llama3.2","created_at":"2025-01-01T00:00:00.1Z","response":"","thinking":"hm","done":false}
{"model":"llama3.2","created_at":"2025-01-01T00:00:00.1Z","response":"A","done":false}
{"model":"llama3.2","created_at":"2025-01-01T00:00:00.3Z","response":"","done":true,"done_reason":"stop","context":[1,2,3],"prompt_eval_count":4,"eval_count":2,"eval_duration":20000000}`
	llamaCppStream = `data: {"index":0,"content":"Hel","tokens":[9906],"stop":false,"id_slot":0,"tokens_predicted":1,"tokens_evaluated":5}

data: {"index":0,"content":"","tokens":[226],"stop":false,"id_slot":0,"tokens_predicted":2,"tokens_evaluated":5}

data: {"index":0,"content":"lo wor","tokens":[1299],"stop":false,"id_slot":0,"tokens_predicted":3,"tokens_evaluated":5}

data: {"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"m","tokens_predicted":3,"tokens_evaluated":5,"generation_settings":{"n_predict":3},"prompt":"<s>hi","has_new_line":false,"truncated":false,"stop_type":"limit","stopping_word":"","tokens_cached":7,"timings":{"prompt_n":5,"prompt_ms":12.5,"prompt_per_token_ms":2.5,"prompt_per_second":400,"predicted_n":3,"predicted_ms":30.25,"predicted_per_token_ms":10.08,"predicted_per_second":99.1}}

`
	tgiStream = `data:{"index":1,"token":{"id":1,"text":"Hel","logprob":-0.1,"special":false},"generated_text":null,"details":null}

data:{"index":2,"token":{"id":2,"text":"lo","logprob":-0.1,"special":false},"generated_text":null,"details":null}

data:{"index":3,"token":{"id":2,"text":"</s>","logprob":-0.1,"special":true},"generated_text":"Hello","details":{"finish_reason":"eos_token","generated_tokens":3,"seed":null}}

`
	anthropicStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_01XF","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello"}}

event: content_block_delta
data: {"delta":{"text":"!","type":"text_delta"},"index":1,"type":"content_block_delta"}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":12}}

event: message_stop
data: {"type":"message_stop"}

`
)

func TestNativeStreams(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name, api, stream string
		want              streamWant
		perEvent          string // token counts per event
		server            *record.ServerTimings
	}{
		{"ollama chat", APIOllama, ollamaChatStream,
			streamWant{events: 2, tokens: 2, source: "usage", prompt: 26}, "[1 1]",
			&record.ServerTimings{PromptTokens: 26, Prefill: ms(383.809), OutputTokens: 2, Decode: ms(4799.921), Total: 5191566 * time.Microsecond}},
		{"ollama generate, thinking, no final newline", APIOllamaGenerate, ollamaGenerateStream,
			streamWant{events: 2, tokens: 2, source: "usage", prompt: 4}, "[1 1]",
			&record.ServerTimings{PromptTokens: 4, OutputTokens: 2, Decode: ms(20)}},
		{"ollama error line", APIOllama, `{"message":{"content":"a"},"done":false}` + "\n" + `{"error":"an error was encountered while running the model: CUDA error"}` + "\n",
			streamWant{events: 1, tokens: 1, source: "events", kind: record.KindStreamError, errText: "CUDA error"}, "[1]", nil},
		{"ollama cut short", APIOllama, `{"message":{"content":"a"},"done":false}` + "\n",
			streamWant{events: 1, tokens: 1, source: "events", kind: record.KindIncomplete}, "[1]", nil},
		{"ollama malformed", APIOllama, `{"message":{"content":"a"},"done":false}` + "\n" + `{"message":` + "\n",
			streamWant{events: 1, tokens: 1, source: "events", kind: record.KindMalformedEvent}, "[1]", nil},
		// tokens_predicted is cumulative: the event after an empty (partial UTF-8) one carries 2.
		{"llama.cpp native", APILlamaCpp, llamaCppStream,
			streamWant{events: 2, tokens: 3, source: "usage", prompt: 5, timingsN: 3}, "[1 2]",
			&record.ServerTimings{PromptTokens: 5, Prefill: ms(12.5), OutputTokens: 3, Decode: ms(30.25)}},
		{"llama.cpp native error", APILlamaCpp, "data: {\"error\":{\"code\":500,\"message\":\"context shift disabled\",\"type\":\"server_error\"}}\n\n",
			streamWant{kind: record.KindStreamError, errText: "context shift disabled", source: "events"}, "[]", nil},
		{"tgi", APITGI, tgiStream, streamWant{events: 3, tokens: 3, source: "usage"}, "[1 1 1]", nil},
		{"tgi error", APITGI, `data:{"error":"Request failed during generation: Server error: out of memory","error_type":"generation"}` + "\n\n",
			streamWant{kind: record.KindStreamError, errText: "out of memory", source: "events"}, "[]", nil},
		{"anthropic", APIAnthropic, anthropicStream,
			streamWant{events: 3, tokens: 12, source: "usage", prompt: 25, id: "msg_01XF"}, "[1 1 1]", nil},
		{"anthropic error", APIAnthropic, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
			streamWant{kind: record.KindStreamError, errText: "Overloaded", source: "events", prompt: 3, id: "msg_1"}, "[]", nil},
		{"anthropic cut before message_stop", APIAnthropic, strings.Join(strings.SplitAfter(anthropicStream, "\n\n")[:8], ""),
			streamWant{events: 2, tokens: 2, source: "events", prompt: 25, id: "msg_01XF", kind: record.KindIncomplete}, "[1 1]", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, piece := range []int{1 << 20, 5} {
				rec := decodeStream(t, tc.api, &pieceReader{pieces: chunks(tc.stream, piece)}, nil)
				checkRecord(t, rec, tc.want)
				var ns []int
				rec.Events.Each(func(_ int, _ time.Duration, n int) { ns = append(ns, n) })
				if got := fmt.Sprint(ns); got != tc.perEvent && !(got == "[]" && tc.perEvent == "[]") {
					t.Errorf("per-event tokens %s, want %s", got, tc.perEvent)
				}
				if tc.server != nil && (rec.Server == nil || *rec.Server != *tc.server) {
					t.Errorf("server timings %+v, want %+v", rec.Server, tc.server)
				}
			}
		})
	}
}

// TestNativeRequests checks each API's path, headers and body on the wire, and for
// Anthropic the whole exchange on virtual time (first content after thinking).
func TestNativeRequests(t *testing.T) {
	req := workload.Request{Messages: []workload.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}},
		Prompt: "hi", OutputTokens: 16}
	for _, tc := range []struct {
		api, path, stream string
		body              string
		headers           map[string]string
	}{
		{APIOllama, "/api/chat", ollamaChatStream,
			`{"messages":[{"content":"be brief","role":"system"},{"content":"hi","role":"user"}],"model":"m","options":{"num_predict":16,"temperature":0},"stream":true}`,
			map[string]string{"Authorization": "Bearer key-123"}},
		{APIOllamaGenerate, "/api/generate", ollamaGenerateStream,
			`{"model":"m","options":{"num_predict":16,"temperature":0},"prompt":"hi","stream":true}`, nil},
		{APILlamaCpp, "/completion", llamaCppStream,
			`{"ignore_eos":true,"model":"m","n_predict":16,"options":{"temperature":0},"prompt":"hi","stream":true}`, nil},
		{APITGI, "/generate_stream", tgiStream,
			`{"inputs":"hi","options":{"temperature":0},"parameters":{"details":true,"max_new_tokens":16}}`, nil},
		{APIAnthropic, "/v1/messages", anthropicStream,
			`{"max_tokens":16,"messages":[{"content":"hi","role":"user"}],"model":"m","options":{"temperature":0},"stream":true,"system":"be brief"}`,
			map[string]string{"X-Api-Key": "key-123", "Anthropic-Version": "2023-06-01", "Authorization": ""}},
	} {
		t.Run(tc.api, func(t *testing.T) {
			var path, body string
			var hdr http.Header
			h := func(w http.ResponseWriter, r *http.Request) {
				path, hdr = r.URL.Path, r.Header.Clone()
				var v any
				json.NewDecoder(r.Body).Decode(&v)
				b, _ := json.Marshal(v)
				body = string(b)
				var steps []step
				for _, ev := range strings.SplitAfter(tc.stream, "\n") {
					steps = append(steps, step{5 * time.Millisecond, ev})
				}
				scripted(steps...)(w, r)
			}
			cfg := Config{API: tc.api, Model: "m", APIKey: "key-123", IgnoreEOS: true,
				ExtraBody: map[string]any{"options": map[string]any{"temperature": 0}}}
			inBubble(t, http.HandlerFunc(h), cfg, func(t *testing.T, c *Client, _ *memListener) {
				var rec record.Record
				c.Do(context.Background(), time.Now(), req, &rec)
				if rec.Error != nil {
					t.Fatalf("error %+v", rec.Error)
				}
				if tc.api == APIAnthropic {
					ft, _ := rec.FirstToken()
					if rec.FirstContent <= ft {
						t.Errorf("first content %v not after first (thinking) token %v", rec.FirstContent, ft)
					}
				} else if rec.FirstContent != 0 && tc.api != APIOllamaGenerate {
					t.Errorf("first content %v set without reasoning", rec.FirstContent)
				}
			})
			if path != tc.path {
				t.Errorf("path %q, want %q", path, tc.path)
			}
			if body != tc.body {
				t.Errorf("body\n got %s\nwant %s", body, tc.body)
			}
			for k, v := range tc.headers {
				if hdr.Get(k) != v {
					t.Errorf("header %s = %q, want %q", k, hdr.Get(k), v)
				}
			}
		})
	}
}

func TestListModelsNative(t *testing.T) {
	for _, tc := range []struct{ api, path, reply, want string }{
		{APIOllama, "/api/tags", `{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest"},{"name":"qwen3:0.6b"}]}`, "llama3.2:latest,qwen3:0.6b"},
		{APITGI, "/info", `{"model_id":"meta-llama/Llama-3.1-8B-Instruct","max_total_tokens":8192}`, "meta-llama/Llama-3.1-8B-Instruct"},
		{APIAnthropic, "/v1/models", `{"data":[{"id":"claude-sonnet-4","type":"model"}],"has_more":false}`, "claude-sonnet-4"},
		{APILlamaCpp, "/v1/models", `{"models":[{"name":"m.gguf","model":"m.gguf"}],"object":"list","data":[{"id":"m.gguf","object":"model"}]}`, "m.gguf"},
	} {
		h := func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != tc.path {
				w.WriteHeader(404)
				return
			}
			io.WriteString(w, tc.reply)
		}
		inBubble(t, http.HandlerFunc(h), Config{API: tc.api}, func(t *testing.T, c *Client, _ *memListener) {
			ids, err := c.ListModels(context.Background())
			if err != nil || strings.Join(ids, ",") != tc.want {
				t.Errorf("%s: models %v, %v; want %s", tc.api, ids, err, tc.want)
			}
		})
	}
}
