package client

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

var weatherTool = workload.ToolDef{Name: "get_weather", Description: "Weather now",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}

// Tools go in each API's shape: chat completions' nested one, the Responses API's flat one,
// Ollama's chat as chat completions' without tool_choice; a forced function is an object.
func TestToolBodies(t *testing.T) {
	req := workload.Request{Prompt: "hi", OutputTokens: 4, Tools: []workload.ToolDef{weatherTool, {Name: "noop"}}}
	chatTools := `"tools":[{"function":{"description":"Weather now","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}},"type":"function"},{"function":{"name":"noop"},"type":"function"}]`
	for _, tc := range []struct {
		api    string
		choice workload.ToolChoice
		want   string
	}{
		{APIOpenAIChat, "", `"messages":[{"role":"user","content":"hi"}],` + chatTools + `}`},
		{APIOpenAIChat, workload.ToolRequired, chatTools + `,"tool_choice":"required"}`},
		{APIOpenAIChat, "get_weather", `,"tool_choice":{"function":{"name":"get_weather"},"type":"function"}}`},
		{APIOpenAIResponses, workload.ToolAuto, `"tools":[{"description":"Weather now","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"type":"function"},{"name":"noop","type":"function"}],"tool_choice":"auto"}`},
		{APIOpenAIResponses, "noop", `"tool_choice":{"name":"noop","type":"function"}}`},
		{APIOllama, workload.ToolRequired, `"messages":[{"role":"user","content":"hi"}],` + chatTools + `,"options":{"num_predict":4}}`},
	} {
		c, err := New(Config{BaseURL: "http://127.0.0.1:1", API: tc.api})
		if err != nil {
			t.Fatal(err)
		}
		r := req
		r.ToolChoice = tc.choice
		b, err := c.body.build(r)
		if err != nil || !strings.HasSuffix(string(b), tc.want) {
			t.Errorf("%s, choice %q: %s (%v)\nwant …%s", tc.api, tc.choice, b, err, tc.want)
		}
		if tc.api == APIOllama && strings.Contains(string(b), "tool_choice") {
			t.Errorf("ollama: %s sends a tool_choice, which /api/chat does not take", b)
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			t.Errorf("%s: not JSON: %s", tc.api, b)
		}
		// No tools, no tool fields.
		if b, _ := c.body.build(workload.Request{Prompt: "hi", OutputTokens: 4}); strings.Contains(string(b), "tool") {
			t.Errorf("%s without tools: %s", tc.api, b)
		}
	}
}

// Synthesized tool-call streams, in the shapes the APIs document: OpenAI's chat (which
// llama.cpp's server and vLLM stream too), the Responses API's events, Ollama's whole call.
const (
	chatTextThenTool = `data: {"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me look"}}]}

data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}

data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]}}]}

data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}

data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

`
	responsesToolStream = `event: response.created
data: {"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}

event: response.output_item.added
data: {"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"","status":"in_progress"}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"city\": "}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"\"Paris\"}"}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{\"city\": \"Paris\"}"}

event: response.output_item.done
data: {"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\": \"Paris\"}","status":"completed"}}

event: response.completed
data: {"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":20,"output_tokens":7}}}

`
	ollamaToolStream = `{"model":"m","created_at":"2025-01-01T00:00:00.1Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},"done":false}
{"model":"m","created_at":"2025-01-01T00:00:00.2Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"prompt_eval_count":20,"eval_count":9,"eval_duration":1000000}
`
)

func TestToolCallStreams(t *testing.T) {
	for _, tc := range []struct {
		name      string
		api, body string
		tok       tokenizer.Tokenizer
		n, tool   int
		source    string
		toolEvent int // the index of the first tool-call event
		text      string
	}{
		// No usage, no tokenizer: one token per event; the three call events are the call's.
		{name: "chat, text then a call", api: APIOpenAIChat, body: chatTextThenTool, n: 4, tool: 3, source: record.SourceEvents, toolEvent: 1},
		// The tokenizer counts the call's text (name, arguments: "get_weather{"city":
		// "Paris"}", 2 words) apart from the text before it (3 words).
		{name: "chat, tokenizer", api: APIOpenAIChat, body: chatTextThenTool, tok: wordTokenizer{}, n: 4, tool: 2,
			source: record.SourceTokenizer, toolEvent: 1, text: `Let me lookget_weather{"city": "Paris"}`},
		// Every event is the call's: all of usage's 7 tokens are; the .done events count nothing.
		{name: "responses", api: APIOpenAIResponses, body: responsesToolStream, n: 7, tool: 7, source: record.SourceUsage,
			text: `get_weather{"city": "Paris"}`},
		// Ollama sends the call whole, its arguments an object.
		{name: "ollama", api: APIOllama, body: ollamaToolStream, n: 9, tool: 9, source: record.SourceUsage,
			tok: wordTokenizer{}, text: `get_weather{"city":"Paris"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{BaseURL: "http://127.0.0.1:1", API: tc.api, Tokenizer: tc.tok, SaveText: tc.text != ""})
			if err != nil {
				t.Fatal(err)
			}
			for _, pieces := range []int{0, 5} {
				rec := decodeWith(t, c, tc.body, pieces)
				if rec.Error != nil {
					t.Fatalf("error %+v", rec.Error)
				}
				if rec.OutputTokens != tc.n || rec.OutputTokensSource != tc.source || int(rec.ToolCallTokens) != tc.tool {
					t.Errorf("output %d from %s, tool-call tokens %d; want %d from %s, %d",
						rec.OutputTokens, rec.OutputTokensSource, rec.ToolCallTokens, tc.n, tc.source, tc.tool)
				}
				if rec.FirstToolCall == 0 || rec.FirstToolCall != rec.Events.Time(tc.toolEvent) {
					t.Errorf("first tool call at %v, want event %d's %v", rec.FirstToolCall, tc.toolEvent, rec.Events.Time(tc.toolEvent))
				}
				if tc.text != "" && (rec.Text == nil || *rec.Text != tc.text) {
					t.Errorf("text %v, want %q", rec.Text, tc.text)
				}
			}
		})
	}
}

// A stream without a tool call records none.
func TestNoToolCallNoToolTokens(t *testing.T) {
	c, _ := New(Config{BaseURL: "http://127.0.0.1:1", API: APIOllama})
	rec := decodeWith(t, c, ollamaChatStream, 0)
	if rec.Error != nil || rec.ToolCallTokens != 0 || rec.FirstToolCall != 0 {
		t.Errorf("record %+v", rec)
	}
}

// decodeWith runs c's stream handling on body, in reads of pieces bytes (0: whole).
func decodeWith(t *testing.T, c *Client, body string, pieces int) record.Record {
	t.Helper()
	var r io.Reader = strings.NewReader(body)
	if pieces > 0 {
		r = &pieceReader{pieces: chunks(body, pieces)}
	}
	st := new(streamState)
	st.reset()
	var rec record.Record
	start := time.Now().Add(-time.Millisecond) // events land after sent
	rec.Events.Base = rec.Sent
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	c.readStream(ctx, ctx, cancel, start, r, time.Now, nil, st, &rec)
	finish(st, c.tok, &rec)
	if c.cfg.SaveText {
		s := string(st.dec.text)
		rec.Text = &s
	}
	return rec
}

// The real OpenAI API's tool-call capture: every token event is the call's, so all 19 of
// usage's tokens are, and the call's first token is the stream's first.
func TestRecordedOpenAIToolCall(t *testing.T) {
	dir := openAIStreamsDir(t)
	b, err := os.ReadFile(filepath.Join(dir, "a247c49c5fcd.sse"))
	if err != nil {
		t.Fatal(err)
	}
	rec := decodeStream(t, APIOpenAIChat, strings.NewReader(string(b)), nil)
	if rec.Error != nil || rec.OutputTokens != 19 || rec.ToolCallTokens != 19 {
		t.Errorf("output %d, tool-call tokens %d (%+v), want 19 and 19", rec.OutputTokens, rec.ToolCallTokens, rec.Error)
	}
	if ft, _ := rec.FirstToken(); rec.FirstToolCall != ft {
		t.Errorf("first tool call %v, first token %v", rec.FirstToolCall, ft)
	}
}

// Whole responses: chat's message.tool_calls, the Responses API's function_call item and
// Ollama's message.tool_calls count as the call's tokens.
func TestWholeToolCalls(t *testing.T) {
	for _, tc := range []struct {
		api, body string
		tok       tokenizer.Tokenizer
		n, tool   int
	}{
		{APIOpenAIChat, `{"id":"c","choices":[{"message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"completion_tokens":8}}`, nil, 8, 8},
		{APIOpenAIResponses, `{"id":"r","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"one two"}]},{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\": \"Paris\"}"}],"usage":{"output_tokens":5}}`, wordTokenizer{}, 5, 2},
		{APIOllama, `{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},"done":true,"eval_count":6}`, nil, 6, 6},
		{APIOpenAIChat, `{"id":"c","choices":[{"message":{"content":"plain"}}],"usage":{"completion_tokens":1}}`, nil, 1, 0},
	} {
		c, _ := New(Config{BaseURL: "http://127.0.0.1:1", API: tc.api, NoStream: true, Tokenizer: tc.tok})
		var rec record.Record
		c.whole([]byte(tc.body), 5*time.Millisecond, workload.Request{}, &rec)
		if rec.Error != nil || rec.OutputTokens != tc.n || int(rec.ToolCallTokens) != tc.tool {
			t.Errorf("%s: output %d, tool-call tokens %d (%+v); want %d, %d", tc.api, rec.OutputTokens, rec.ToolCallTokens, rec.Error, tc.n, tc.tool)
		}
		if (tc.tool > 0) != (rec.FirstToolCall == 5*time.Millisecond) {
			t.Errorf("%s: first tool call %v", tc.api, rec.FirstToolCall)
		}
	}
}

// Ollama's native /api/chat answering with a real tool call (the call forced by a JSON
// schema "format" on a model whose template lists tools): the call arrives whole in one
// line, its arguments an object; every one of eval_count's 28 tokens is the call's.
func TestRecordedOllamaNativeToolCall(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(streamsDir, "ollama-0.6.5", "api-chat-tool-call.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []tokenizer.Tokenizer{nil, wordTokenizer{}} {
		rec := decodeStream(t, APIOllama, strings.NewReader(string(b)), tok)
		checkRecord(t, rec, streamWant{events: 1, tokens: 28, source: record.SourceUsage, prompt: 89, tool: 28})
		if ft, _ := rec.FirstToken(); rec.FirstToolCall != ft {
			t.Errorf("first tool call %v, first token %v", rec.FirstToolCall, ft)
		}
	}
}
