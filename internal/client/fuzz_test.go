package client

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// FuzzSSEReader: however a stream is cut into reads, the events are the same; and nothing
// the server sends can make the client panic. Seed corpus: testdata/fuzz/FuzzSSEReader.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"), uint16(7), uint16(30))
	f.Add([]byte(": ping\r\n\r\nevent: error\r\ndata: {\"error\":{\"message\":\"x\"}}\r\n\r\n"), uint16(1), uint16(2))
	f.Fuzz(func(t *testing.T, stream []byte, cut1, cut2 uint16) {
		whole, werr := sseEvents(&pieceReader{pieces: [][]byte{bytes.Clone(stream)}})
		i, j := 0, 0
		if len(stream) > 0 {
			i, j = int(cut1)%len(stream), int(cut2)%len(stream)
			if i > j {
				i, j = j, i
			}
		}
		parts, perr := sseEvents(&pieceReader{pieces: split(string(stream), i, j)})
		if werr != perr {
			t.Fatalf("errors differ: %v vs %v", werr, perr)
		}
		if len(whole) != len(parts) {
			t.Fatalf("%d events in one read, %d when cut at %d,%d", len(whole), len(parts), i, j)
		}
		for k := range whole {
			if whole[k] != parts[k] {
				t.Fatalf("event %d: %q vs %q", k, whole[k], parts[k])
			}
		}
		// The whole client path must classify, never panic.
		for _, api := range []string{APIOpenAIChat, APIOpenAICompletions, APIOpenAIResponses} {
			for _, tok := range []tokenizer.Tokenizer{wordTokenizer{}, nil} {
				rec := decodeStream(t, api, bytes.NewReader(stream), tok)
				if rec.Error == nil && rec.Events.Len() == 0 {
					t.Fatalf("success without token events")
				}
				checkToolCall(t, api, &rec)
			}
		}
	})
}

// checkToolCall: a record's tool-call tokens are some of its output tokens, and its first
// tool-call arrival is at or after its first token (and unset without a call).
func checkToolCall(t *testing.T, api string, rec *record.Record) {
	t.Helper()
	if rec.ToolCallTokens < 0 || int(rec.ToolCallTokens) > rec.OutputTokens {
		t.Fatalf("%s: %d tool-call tokens of %d output tokens", api, rec.ToolCallTokens, rec.OutputTokens)
	}
	if rec.ToolCallTokens == 0 && rec.FirstToolCall != 0 {
		t.Fatalf("%s: no tool-call tokens, first tool call at %v", api, rec.FirstToolCall)
	}
	if ft, ok := rec.FirstToken(); rec.ToolCallTokens > 0 && (!ok || rec.FirstToolCall < ft) {
		t.Fatalf("%s: first tool call %v before the first token %v", api, rec.FirstToolCall, ft)
	}
}

func sseEvents(r io.Reader) ([]string, error) {
	sr := newSSEReader(r, (&readClock{}).now)
	var out []string
	for {
		d, e, _, err := sr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(e)+"\x00"+string(d))
	}
}

// FuzzChunkDecode: every API's decoder accepts exactly the JSON objects that
// encoding/json accepts, so "malformed_event" means what it says, and never panics.
func FuzzChunkDecode(f *testing.F) {
	f.Add([]byte(`{"id":"x","choices":[{"index":0,"delta":{"content":"a\u00e9\ud83d\ude00"},"finish_reason":null}],"usage":null}`))
	f.Add([]byte(`{"choices":[{"text":"a"}],"usage":{"completion_tokens":1.5e1}}`))
	f.Add([]byte(`{"error":{"message":"boom"}}`))
	f.Add([]byte(`{"choices":5,"usage":"n/a","id":7}`))
	f.Add([]byte(`{"a":[1,2,{"b":-0.5E-3}]} `))
	f.Add([]byte(`{"a":1,}`))
	f.Add([]byte(`{"message":{"content":"a","thinking":"b","tool_calls":[{"function":{"name":"f"}}]},"done":true,"eval_count":3,"eval_duration":1e6}`))
	f.Add([]byte(`{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"},"usage":{"output_tokens":2}}`))
	f.Add([]byte(`{"token":{"text":"x","special":true},"details":{"finish_reason":"length","generated_tokens":1}}`))
	f.Add([]byte(`{"content":"x","stop":true,"tokens_predicted":1,"timings":{"prompt_ms":1.5}}`))
	f.Add([]byte(`{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":2,"output_tokens":3},"error":null},"timings":{"predicted_n":3}}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`))
	f.Add([]byte(`{"type":"response.output_item.added","item":{"type":"function_call","name":"f","arguments":""}}`))
	f.Add([]byte(`{"type":"response.function_call_arguments.delta","delta":"{\"a\": 1}"}`))
	f.Add([]byte(`{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"a":[1,{"b":null}]}}},{"function":{"arguments":"x"}}]},"done":false}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if isDoneMarker(data) || len(bytes.TrimSpace(data)) == 0 {
			return
		}
		valid := json.Valid(data) && bytes.TrimSpace(data)[0] == '{'
		for _, api := range APIs() {
			if apiSpecs[api].decode == nil {
				continue // answers with one JSON document (embeddings, rerank)
			}
			var d decoder
			d.keep = true
			err := apiSpecs[api].decode(&d, data, nil)
			if (err == nil) != valid {
				t.Fatalf("%s: scanner error %v, encoding/json valid object %v, for %q", api, err, valid, data)
			}
			// Tool-call text is generated answer text, kept within the text.
			if d.ci.tool && !(d.ci.tokens && d.ci.content) || len(d.tool) > len(d.text) {
				t.Fatalf("%s: tool %v tokens %v content %v, %d tool bytes of %d, for %q", api, d.ci.tool, d.ci.tokens, d.ci.content, len(d.tool), len(d.text), data)
			}
		}
	})
}

// FuzzUnescape: decoded strings equal encoding/json's for valid UTF-8.
func FuzzUnescape(f *testing.F) {
	f.Add([]byte(`"a\n\t\"\\\/\u0041\u00e9\ud83d\ude00\ud800x"`))
	f.Fuzz(func(t *testing.T, lit []byte) {
		var s jscan
		s.reset(lit)
		raw, ok := s.str()
		if !ok || !s.end() || !utf8.Valid(lit) {
			return
		}
		var want string
		if err := json.Unmarshal(lit, &want); err != nil {
			t.Fatalf("scanner accepted %q, encoding/json: %v", lit, err)
		}
		if got := string(appendUnescaped(nil, raw)); got != want {
			t.Fatalf("unescape %q = %q, want %q", lit, got, want)
		}
	})
}

// FuzzWholeResponse: a reply that is one JSON document (embeddings, rerank, --stream=false)
// never panics the client, and a reply that fails is counted with a kind and a message.
func FuzzWholeResponse(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":"AAAAAAAAAAA="}],"usage":{"prompt_tokens":3}}`))
	f.Add([]byte(`{"results":[{"index":1,"relevance_score":0.5},{"index":0,"relevance_score":-1}]}`))
	f.Add([]byte(`{"embeddings":[[1],[2,3]]}`))
	f.Add([]byte(`{"choices":[{"message":{"content":[{"text":"a"}],"tool_calls":[{}]}}],"usage":{"completion_tokens":2},"timings":{"predicted_n":2}}`))
	f.Add([]byte(`{"output":[{"content":[{"text":"a"}],"summary":[{"text":"b"}]}],"status":"failed"}`))
	f.Add([]byte(`{"error":"x"}`))
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}`))
	f.Add([]byte(`{"output":[{"type":"function_call","name":"f","arguments":"{\"a\":1}"}],"usage":{"output_tokens":4}}`))
	f.Add([]byte(`{"message":{"content":"a b","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]},"eval_count":5}`))
	req := workload.Request{Batch: []string{"a", "b"}, Query: "q", Documents: []string{"x", "y"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, api := range []string{APIOpenAIEmbeddings, APIOllamaEmbed, APIRerank, APIOpenAIChat, APIOpenAIResponses, APIAnthropic, APITGI, APIOllama} {
			c, err := New(Config{BaseURL: "http://127.0.0.1:1", API: api, NoStream: true})
			if err != nil {
				t.Fatal(err)
			}
			var rec record.Record
			c.whole(body, time.Millisecond, req, &rec)
			if rec.Error != nil && (rec.Error.Kind == "" || rec.Error.Message == "") {
				t.Fatalf("%s: an error without a kind or message: %+v", api, rec.Error)
			}
			if rec.Error == nil && rec.Events.Tokens() != rec.OutputTokens {
				t.Fatalf("%s: %d tokens in events, %d output tokens", api, rec.Events.Tokens(), rec.OutputTokens)
			}
			checkToolCall(t, api, &rec)
		}
	})
}
