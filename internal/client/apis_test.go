package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/workload"
)

// TestResponsesStreamEnds checks the Responses API's ends: a stream cut before
// response.completed is incomplete (and says so), response.incomplete (max_output_tokens) is
// a normal end, and response.failed and error events are the stream's errors.
func TestResponsesStreamEnds(t *testing.T) {
	full, err := os.ReadFile("testdata/streams/llama.cpp/responses-stream.sse")
	if err != nil {
		t.Fatal(err)
	}
	cut := string(full[:strings.Index(string(full), "event: response.completed")])
	const delta = "event: response.reasoning_text.delta\ndata: {\"type\":\"response.reasoning_text.delta\",\"delta\":\"hm\"}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n"
	for _, tc := range []struct {
		name, body, kind, msg string
		events, tokens        int
	}{
		{"cut before response.completed", cut, record.KindIncomplete, "without response.completed", 8, 8},
		{"incomplete: max_output_tokens", delta + `data: {"type":"response.incomplete","response":{"id":"resp_1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":3,"output_tokens":2}}}` + "\n\n", "", "", 2, 2},
		{"failed", delta + `data: {"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"boom"}}}` + "\n\n", record.KindStreamError, "boom", 2, 2},
		{"error event", delta + "event: error\ndata: {\"type\":\"error\",\"code\":\"x\",\"message\":\"rate limited\"}\n\n", record.KindStreamError, "rate limited", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := decodeStream(t, APIOpenAIResponses, strings.NewReader(tc.body), nil)
			kind := ""
			if rec.Error != nil {
				kind = rec.Error.Kind
			}
			if kind != tc.kind || (tc.msg != "" && !strings.Contains(rec.Error.Message, tc.msg)) {
				t.Errorf("error %+v, want kind %q with %q", rec.Error, tc.kind, tc.msg)
			}
			if rec.Events.Len() != tc.events || rec.OutputTokens != tc.tokens {
				t.Errorf("%d events, %d tokens; want %d, %d", rec.Events.Len(), rec.OutputTokens, tc.events, tc.tokens)
			}
		})
	}
	// Reasoning deltas are tokens but not content (the first content is reported apart, as for chat).
	var d decoder
	if err := d.decodeResponses([]byte(`{"type":"response.reasoning_text.delta","delta":"think"}`), nil); err != nil || !d.ci.tokens || d.ci.content {
		t.Errorf("reasoning delta: %v, %+v", err, d.ci)
	}
}

func doOnce(t *testing.T, cfg Config, req workload.Request) record.Record {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var rec record.Record
	c.Do(context.Background(), time.Now(), req, &rec)
	return rec
}

// TestWholeResponses checks the APIs that answer with one JSON document: the body sent,
// the checks of embeddings and rerank responses, and --stream=false generations.
func TestWholeResponses(t *testing.T) {
	batch := workload.Request{Batch: []string{"a", "b", "c"}, InputTokens: 3}
	docs := workload.Request{Query: "q", Documents: []string{"x", "y"}, InputTokens: 3}
	chat := workload.Request{Prompt: "hi", InputTokens: 1, OutputTokens: 4}
	for _, tc := range []struct {
		name     string
		cfg      Config
		req      workload.Request
		reply    string
		sent     string // the request body
		kind     string // error kind ("" for success)
		msg      string
		n        int // output tokens
		inputs   int
		docs     int
		prompt   int
		endpoint string
	}{
		{name: "embeddings", cfg: Config{API: APIOpenAIEmbeddings, Model: "m"}, req: batch,
			reply: `{"data":[{"index":1,"embedding":[1,2]},{"index":0,"embedding":[3,4]},{"index":2,"embedding":[5,6]}],"usage":{"prompt_tokens":6}}`,
			sent:  `{"encoding_format":"float","model":"m","input":["a","b","c"]}`, inputs: 3, prompt: 6},
		{name: "embeddings base64", cfg: Config{API: APIOpenAIEmbeddings}, req: batch,
			reply:  `{"data":[{"index":0,"embedding":"AAAAAAAAAAA="},{"index":1,"embedding":"AAAAAAAAAAA="},{"index":2,"embedding":"AAAAAAAAAAA="}]}`,
			inputs: 3},
		{name: "embeddings: one vector missing", cfg: Config{API: APIOpenAIEmbeddings}, req: batch,
			reply: `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3,4]}]}`, kind: record.KindMismatch, msg: "2 embeddings for 3 inputs", inputs: 3},
		{name: "embeddings: dimension mismatch", cfg: Config{API: APIOpenAIEmbeddings}, req: batch,
			reply: `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3]},{"index":2,"embedding":[5,6]}]}`, kind: record.KindMismatch, msg: "embedding 1 has 1 dimensions", inputs: 3},
		{name: "ollama embed", cfg: Config{API: APIOllamaEmbed, Model: "m"}, req: batch,
			reply: `{"model":"m","embeddings":[[1,2],[3,4],[5,6]],"prompt_eval_count":3}`, sent: `{"model":"m","input":["a","b","c"]}`, inputs: 3, prompt: 3},
		{name: "rerank", cfg: Config{API: APIRerank, Model: "m"}, req: docs,
			reply: `{"results":[{"index":1,"relevance_score":0.5},{"index":0,"relevance_score":-1}],"usage":{"prompt_tokens":9}}`,
			sent:  `{"model":"m","query":"q","documents":["x","y"],"top_n":2}`, docs: 2, prompt: 9},
		{name: "rerank at /rerank", cfg: Config{API: APIRerank, Endpoint: "/rerank"}, req: docs, endpoint: "/rerank",
			reply: `{"results":[{"index":1,"relevance_score":0.5},{"index":0,"relevance_score":-1}]}`, docs: 2},
		{name: "rerank: index missing", cfg: Config{API: APIRerank}, req: docs,
			reply: `{"results":[{"index":1,"relevance_score":0.5},{"relevance_score":-1}]}`, kind: record.KindMismatch, msg: "result 1 has no index", docs: 2},
		{name: "rerank: a document twice", cfg: Config{API: APIRerank}, req: docs,
			reply: `{"results":[{"index":1,"relevance_score":0.5},{"index":1,"relevance_score":-1}]}`, kind: record.KindMismatch, msg: "each once", docs: 2},
		{name: "rerank: too few", cfg: Config{API: APIRerank}, req: docs,
			reply: `{"results":[{"index":1,"relevance_score":0.5}]}`, kind: record.KindMismatch, msg: "1 scores for 2 documents", docs: 2},
		{name: "chat --stream=false", cfg: Config{API: APIOpenAIChat, NoStream: true, IgnoreEOS: true}, req: chat,
			reply: `{"id":"c1","choices":[{"message":{"content":"a b c d"}}],"usage":{"prompt_tokens":5,"completion_tokens":4},"timings":{"prompt_n":5,"predicted_n":4,"predicted_ms":3}}`,
			sent:  `{"ignore_eos":true,"stream":false,"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`, n: 4, prompt: 5},
		{name: "responses --stream=false", cfg: Config{API: APIOpenAIResponses, NoStream: true}, req: chat,
			reply: `{"id":"resp_1","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"a b"}]}],"usage":{"input_tokens":5,"output_tokens":2}}`,
			sent:  `{"stream":false,"max_output_tokens":4,"input":[{"role":"user","content":"hi"}]}`, n: 2, prompt: 5},
		{name: "tgi --stream=false", cfg: Config{API: APITGI, NoStream: true}, req: chat, endpoint: "/generate",
			reply: `{"generated_text":"a b c","details":{"finish_reason":"length","generated_tokens":3}}`, n: 3},
		{name: "an error object in a 200", cfg: Config{API: APIOpenAIChat, NoStream: true}, req: chat,
			reply: `{"error":{"message":"engine failed"}}`, kind: record.KindStreamError, msg: "engine failed"},
		{name: "a cut document", cfg: Config{API: APIOpenAIChat, NoStream: true}, req: chat,
			reply: `{"id":"c1","choices":[{"mess`, kind: record.KindMalformedEvent, msg: "not the expected JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case paths <- r.URL.Path:
				default:
				}
				b, _ := io.ReadAll(r.Body)
				if tc.sent != "" && string(b) != tc.sent {
					t.Errorf("sent %s\nwant %s", b, tc.sent)
				}
				if a := r.Header.Get("Accept"); a != "application/json" {
					t.Errorf("Accept %q", a)
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.reply)
			}))
			defer srv.Close()
			cfg := tc.cfg
			cfg.BaseURL = srv.URL
			rec := doOnce(t, cfg, tc.req)
			kind := ""
			if rec.Error != nil {
				kind = rec.Error.Kind
			}
			if kind != tc.kind || (tc.msg != "" && !strings.Contains(rec.Error.Message, tc.msg)) {
				t.Errorf("error %+v, want kind %q with %q", rec.Error, tc.kind, tc.msg)
			}
			if path := <-paths; tc.endpoint != "" && path != tc.endpoint {
				t.Errorf("sent to %s, want %s", path, tc.endpoint)
			}
			if !rec.Unstreamed || int(rec.Inputs) != tc.inputs || int(rec.Documents) != tc.docs || rec.ServerPromptTokens != tc.prompt {
				t.Errorf("unstreamed %v, inputs %d, documents %d, server prompt %d; want true, %d, %d, %d",
					rec.Unstreamed, rec.Inputs, rec.Documents, rec.ServerPromptTokens, tc.inputs, tc.docs, tc.prompt)
			}
			if tc.kind == "" && (rec.OutputTokens != tc.n || rec.Events.Len() != min(tc.n, 1)) {
				t.Errorf("%d output tokens in %d events, want %d in one", rec.OutputTokens, rec.Events.Len(), tc.n)
			}
			if ft, ok := rec.FirstToken(); ok && (ft != rec.Done || rec.Events.Tokens() != tc.n) {
				t.Errorf("the document's tokens at %v (done %v)", ft, rec.Done)
			}
		})
	}
}

// TestRequestBodies pins the streamed bodies of the new APIs and what --stream=false
// changes in the native ones.
func TestRequestBodies(t *testing.T) {
	req := workload.Request{Prompt: "hi", OutputTokens: 4}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{API: APIOpenAIResponses, Model: "m", IgnoreEOS: true}, `{"ignore_eos":true,"model":"m","stream":true,"max_output_tokens":4,"input":[{"role":"user","content":"hi"}]}`},
		{Config{API: APIOpenAICompletions, NoStream: true}, `{"stream":false,"max_tokens":4,"prompt":"hi"}`},
		{Config{API: APIOllama, NoStream: true}, `{"stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":4}}`},
		{Config{API: APIAnthropic, NoStream: true}, `{"stream":false,"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		tc.cfg.BaseURL = "http://127.0.0.1:1"
		c, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.body.build(req)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s (stream %v): %s (%v)\nwant %s", tc.cfg.API, !tc.cfg.NoStream, b, err, tc.want)
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			t.Errorf("%s: not JSON", tc.cfg.API)
		}
	}
	// Images go after the last user message's text, in each API's content-part shape.
	img := workload.Request{Messages: []workload.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "hi"}},
		OutputTokens: 2, Images: []workload.Image{{URL: "data:image/png;base64,AA=="}}}
	for api, want := range map[string]string{
		APIOpenAIChat:      `"messages":[{"content":"s","role":"system"},{"content":[{"text":"hi","type":"text"},{"image_url":{"url":"data:image/png;base64,AA=="},"type":"image_url"}],"role":"user"}]`,
		APIOpenAIResponses: `"input":[{"content":"s","role":"system"},{"content":[{"text":"hi","type":"input_text"},{"image_url":"data:image/png;base64,AA==","type":"input_image"}],"role":"user"}]`,
	} {
		c, _ := New(Config{BaseURL: "http://127.0.0.1:1", API: api})
		if b, err := c.body.build(img); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s with an image: %s (%v)\nwant %s", api, b, err, want)
		}
		var rec record.Record
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		c.Do(ctx, time.Now(), workload.Request{Prompt: "x", Images: []workload.Image{{Bytes: 10}, {Bytes: 5}}}, &rec)
		if rec.Images != 2 || rec.ImageBytes != 15 {
			t.Errorf("%s: record images %d (%d bytes), want 2 (15)", api, rec.Images, rec.ImageBytes)
		}
	}
	if err := (Config{BaseURL: "http://x", API: APIRerank, Endpoint: "rerank"}).Validate(); err == nil {
		t.Error("an endpoint without a leading / was accepted")
	}
	if err := (Config{BaseURL: "http://x", API: APIOpenAIChat, ExtraBody: map[string]any{"stream": false}}).Validate(); err == nil {
		t.Error(`extra body "stream": false accepted without --stream=false`)
	}
}

// TestSaveText: with SaveText a record keeps the generated text, streamed (the deltas
// joined, escapes undone) or as one document; without it, none.
func TestSaveText(t *testing.T) {
	stream, err := os.ReadFile(filepath.Join(streamsDir, "llama.cpp", "chat-no-usage.sse"))
	if err != nil {
		t.Fatal(err)
	}
	chat := workload.Request{Prompt: "hi", InputTokens: 1, OutputTokens: 4}
	for _, tc := range []struct {
		name     string
		cfg      Config
		ctype    string
		body     string
		want     string
		wantNone bool
	}{
		{name: "stream", cfg: Config{API: APIOpenAIChat, SaveText: true}, ctype: "text/event-stream", body: string(stream), want: "ɹ► song"},
		{name: "document", cfg: Config{API: APIOpenAIChat, NoStream: true, SaveText: true}, ctype: "application/json",
			body: `{"id":"c1","choices":[{"message":{"content":"a \"b\"\nc"},"finish_reason":"length"}],"usage":{"completion_tokens":3}}`, want: "a \"b\"\nc"},
		{name: "off", cfg: Config{API: APIOpenAIChat}, ctype: "text/event-stream", body: string(stream), wantNone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			cfg := tc.cfg
			cfg.BaseURL = srv.URL
			rec := doOnce(t, cfg, chat)
			if rec.Error != nil {
				t.Fatalf("error %+v", rec.Error)
			}
			switch {
			case tc.wantNone && rec.Text != nil:
				t.Errorf("text %q kept without SaveText", *rec.Text)
			case !tc.wantNone && (rec.Text == nil || *rec.Text != tc.want):
				t.Errorf("text %v, want %q", rec.Text, tc.want)
			}
		})
	}
}
