package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/llmbench/llmbench/internal/memnet"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/workload"
)

// memListener connects the client's transport to an http.Server through net.Pipe, so a
// whole request runs inside a synctest bubble: time is virtual, sleeps cost nothing, and
// recorded times are exact.
type memListener = memnet.Listener

// inBubble runs f with a client for cfg talking to h, all on virtual time.
func inBubble(t *testing.T, h http.Handler, cfg Config, f func(t *testing.T, c *Client, l *memListener)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		l := memnet.NewListener()
		srv := &http.Server{Handler: h, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		}}
		go srv.Serve(l)
		if cfg.BaseURL == "" {
			cfg.BaseURL = memnet.URL
		}
		if cfg.API == "" {
			cfg.API = APIOpenAIChat
		}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.setDial(l.Dial)
		f(t, c, l)
		c.Close()
		srv.Close()
		synctest.Wait()
	})
}

// connKey is the request context's key of the server's connection (connOf).
type connKey struct{}

// connOf is the server side of r's connection in inBubble, so a handler can close it.
func connOf(r *http.Request) net.Conn { return r.Context().Value(connKey{}).(net.Conn) }

// setDial makes both of c's transports dial with d (no proxy), the kept-alive one through
// its connection tracker as New does.
func (c *Client) setDial(d dialFunc) {
	c.transport.Proxy, c.fresh.Proxy = nil, nil
	c.transport.DialContext, c.fresh.DialContext = c.conns.wrap(d), d
}

// step is one write of a scripted SSE server: wait, then write raw bytes and flush.
type step struct {
	wait time.Duration
	raw  string
}

func data(s string) string { return "data: " + s + "\n\n" }

func chatDelta(content string) string {
	b, _ := json.Marshal(content)
	return data(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`)
}

const (
	roleChunk   = `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	finishChunk = `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`
)

func usageChunk(completion int) string {
	return data(fmt.Sprintf(`{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":%d,"total_tokens":%d}}`, completion, completion+7))
}

// scripted serves an SSE stream made of steps.
func scripted(steps ...step) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		rc.Flush()
		for _, s := range steps {
			select {
			case <-time.After(s.wait):
			case <-r.Context().Done(): // the client is gone
				return
			}
			if s.raw == "HANGUP" {
				conn, _, err := rc.Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			if _, err := io.WriteString(w, s.raw); err != nil {
				return
			}
			rc.Flush()
		}
	}
}

// tokenStream: TTFT ttft, then n tokens gap apart, finish, usage, [DONE].
func tokenStream(ttft, gap time.Duration, n int) []step {
	steps := []step{{ttft, data(roleChunk) + chatDelta("t0")}}
	for i := 1; i < n; i++ {
		steps = append(steps, step{gap, chatDelta(fmt.Sprintf(" t%d", i))})
	}
	return append(steps, step{0, data(finishChunk) + usageChunk(n) + data("[DONE]")})
}

var testReq = workload.Request{Prompt: "hello there", InputTokens: 2, OutputTokens: 8}

// TestDoExactTiming: a server with TTFT 60 ms then one token per 15 ms; on virtual time the
// record must show exactly that.
func TestDoExactTiming(t *testing.T) {
	inBubble(t, scripted(tokenStream(60*time.Millisecond, 15*time.Millisecond, 8)...), Config{}, func(t *testing.T, c *Client, _ *memListener) {
		start := time.Now()
		time.Sleep(time.Second) // the request is sent 1 s into the run
		var rec record.Record
		c.Do(context.Background(), start, testReq, &rec)
		if rec.Error != nil {
			t.Fatalf("error %+v", rec.Error)
		}
		if rec.Sent != time.Second {
			t.Errorf("sent %v, want 1s", rec.Sent)
		}
		if ft, _ := rec.FirstToken(); ft-rec.Sent != 60*time.Millisecond {
			t.Errorf("TTFT %v, want 60ms", ft-rec.Sent)
		}
		prev := time.Duration(0)
		rec.Events.Each(func(i int, at time.Duration, n int) {
			if n != 1 {
				t.Errorf("event %d carries %d tokens", i, n)
			}
			if i > 0 && at-prev != 15*time.Millisecond {
				t.Errorf("gap before event %d = %v, want 15ms", i, at-prev)
			}
			prev = at
		})
		if rec.Events.Len() != 8 || rec.OutputTokens != 8 || rec.OutputTokensSource != record.SourceUsage {
			t.Errorf("events %d, output %d from %s", rec.Events.Len(), rec.OutputTokens, rec.OutputTokensSource)
		}
		if lt, _ := rec.LastToken(); rec.Done != lt {
			t.Errorf("done %v, want %v (the [DONE] came with the last token's final flush)", rec.Done, lt)
		}
		if rec.ResponseID != "chatcmpl-1" || rec.ServerPromptTokens != 7 || rec.InputTokens != 2 {
			t.Errorf("id %q prompt %d input %d", rec.ResponseID, rec.ServerPromptTokens, rec.InputTokens)
		}
	})
}

// TestDoKeepAlive: sequential requests reuse one connection, and Sent is when the
// connection was in hand.
func TestDoKeepAlive(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	h := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		scripted(tokenStream(10*time.Millisecond, 5*time.Millisecond, 3)...)(w, r)
	}
	dials := 0
	inBubble(t, http.HandlerFunc(h), Config{MaxConns: 1}, func(t *testing.T, c *Client, l *memListener) {
		c.setDial(func(ctx context.Context, n, a string) (net.Conn, error) {
			dials++
			return l.Dial(ctx, n, a)
		})
		start := time.Now()
		for i := 0; i < 5; i++ {
			var rec record.Record
			c.Do(context.Background(), start, testReq, &rec)
			if rec.Error != nil {
				t.Fatalf("request %d: %+v", i, rec.Error)
			}
		}
		if dials != 1 {
			t.Errorf("%d dials for 5 sequential requests, want 1 (keep-alive)", dials)
		}
	})
}

func TestDoRequestBodyAndHeaders(t *testing.T) {
	var got struct {
		path   string
		header http.Header
		body   map[string]any
	}
	h := func(w http.ResponseWriter, r *http.Request) {
		got.path, got.header = r.URL.Path, r.Header.Clone()
		json.NewDecoder(r.Body).Decode(&got.body)
		scripted(tokenStream(time.Millisecond, time.Millisecond, 2)...)(w, r)
	}
	cfg := Config{
		BaseURL: "http://llm.test/v1/", Model: "m1", APIKey: "sk-secret-123", IgnoreEOS: true,
		Headers: http.Header{"X-Team": {"bench"}, "Accept": {"text/event-stream, */*"}},
		ExtraBody: map[string]any{
			"temperature":    0.5,
			"stream_options": map[string]any{"continuous_usage_stats": true},
			"max_tokens":     99, // the user's extra body wins, even over per-request keys
		},
	}
	inBubble(t, http.HandlerFunc(h), cfg, func(t *testing.T, c *Client, _ *memListener) {
		var rec record.Record
		c.Do(context.Background(), time.Now(), testReq, &rec)
		if rec.Error != nil {
			t.Fatalf("%+v", rec.Error)
		}
	})
	if got.path != "/v1/chat/completions" {
		t.Errorf("path %q", got.path)
	}
	if a := got.header.Get("Authorization"); a != "Bearer sk-secret-123" {
		t.Errorf("authorization %q", a)
	}
	if got.header.Get("X-Team") != "bench" || got.header.Get("Accept") != "text/event-stream, */*" {
		t.Errorf("headers %v", got.header)
	}
	if e := got.header.Get("Accept-Encoding"); e != "" {
		t.Errorf("Accept-Encoding %q: compression must be off", e)
	}
	want := map[string]any{
		"model": "m1", "stream": true, "ignore_eos": true, "temperature": 0.5, "max_tokens": 99.0,
		"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true},
		"messages":       []any{map[string]any{"role": "user", "content": "hello there"}},
	}
	if fmt.Sprint(got.body) != fmt.Sprint(want) {
		t.Errorf("body\n got %v\nwant %v", got.body, want)
	}
}

func TestRequestBodyFastPath(t *testing.T) {
	for _, tc := range []struct {
		api  string
		want string
	}{
		{APIOpenAIChat, `{"ignore_eos":true,"model":"m","stream":true,"stream_options":{"include_usage":true},"top_p":1,"max_tokens":5,"messages":[{"role":"user","content":"<a & b>"}]}`},
		{APIOpenAICompletions, `{"ignore_eos":true,"model":"m","stream":true,"stream_options":{"include_usage":true},"top_p":1,"max_tokens":5,"prompt":"<a & b>"}`},
	} {
		c, err := New(Config{BaseURL: "http://x", API: tc.api, Model: "m", IgnoreEOS: true, ExtraBody: map[string]any{"top_p": 1}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.body.build(workload.Request{Prompt: "<a & b>", OutputTokens: 5})
		if err != nil || string(b) != tc.want {
			t.Errorf("%s body\n got %s\nwant %s (%v)", tc.api, b, tc.want, err)
		}
	}
	// Without ignore_eos and model, neither key is sent.
	c, _ := New(Config{BaseURL: "http://x", API: APIOpenAIChat})
	b, _ := c.body.build(workload.Request{Messages: []workload.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}})
	if want := `{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}`; string(b) != want {
		t.Errorf("body\n got %s\nwant %s", b, want)
	}
}

// TestDoOutcomes: every way a request can fail, each with its kind and the partial
// timings it got.
func TestDoOutcomes(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		cfg     Config
		cancel  time.Duration // cancel the run's context after this long
		kind    string
		status  int
		msg     string // substring of the message
		events  int
		done    time.Duration // expected Done - Sent; 0 = not checked
	}{
		{name: "finish without [DONE] is a success",
			handler: scripted(step{ms, data(roleChunk) + chatDelta("a") + data(finishChunk)}),
			events:  1},
		{name: "http status with JSON error body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(400)
				io.WriteString(w, `{"error":{"code":400,"message":"request (3002 tokens) exceeds the available context size (2048 tokens)","type":"exceed_context_size_error"}}`)
			},
			kind: record.KindHTTPStatus, status: 400, msg: `exceeds the available context size (2048 tokens)`},
		{name: "an echoed API key never reaches the record",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(401)
				io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}}`)
			},
			cfg:  Config{APIKey: "sk-live-abcdef"},
			kind: record.KindHTTPStatus, status: 401, msg: "Incorrect API key provided: [REDACTED]"},
		{name: "error event then [DONE] (vLLM)",
			handler: scripted(step{ms, data(roleChunk) + chatDelta("a")},
				step{ms, data(`{"error":{"message":"engine died","type":"InternalServerError","param":null,"code":500}}`) + data("[DONE]")}),
			kind: record.KindStreamError, msg: "engine died", events: 1, done: 2 * ms},
		{name: "error event and the stream ends (llama.cpp)",
			handler: scripted(step{ms, data(`{"error":{"code":500,"message":"slot failed","type":"server_error"}}`)}),
			kind:    record.KindStreamError, msg: "slot failed"},
		{name: "event: error",
			handler: scripted(step{ms, "event: error\ndata: {\"detail\":\"overloaded\"}\n\n"}),
			kind:    record.KindStreamError, msg: "overloaded"},
		{name: "malformed event",
			handler: scripted(step{ms, data(roleChunk) + chatDelta("a") + data(`{"choices":[{"delta":{"content":"b"}`)}),
			kind:    record.KindMalformedEvent, msg: "unexpected end of JSON", events: 1},
		{name: "disconnect mid-stream",
			handler: scripted(step{ms, data(roleChunk) + chatDelta("a")}, step{ms, chatDelta("b")}, step{ms, "HANGUP"}),
			kind:    record.KindDisconnect, events: 2},
		{name: "incomplete: no [DONE], no finish_reason (Ollama repeat abort)",
			handler: scripted(step{ms, chatDelta("a")}, step{ms, chatDelta("a")}),
			kind:    record.KindIncomplete, events: 2, done: 2 * ms},
		{name: "a JSON document instead of a stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"id":"x","choices":[{"message":{"content":"hi"}}]}`)
			},
			kind: record.KindMalformedEvent, msg: "not an event stream"},
		{name: "error status whose body never ends",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(503)
				io.WriteString(w, "overloaded")
				http.NewResponseController(w).Flush()
				select {
				case <-time.After(time.Hour):
				case <-r.Context().Done():
				}
			},
			kind: record.KindHTTPStatus, status: 503, msg: "overloaded", done: 2 * time.Second},
		{name: "empty output",
			handler: scripted(step{ms, data(roleChunk) + data(finishChunk) + data("[DONE]")}),
			kind:    record.KindEmpty},
		{name: "whole-request timeout",
			handler: scripted(tokenStream(10*ms, 100*ms, 50)...),
			cfg:     Config{Timeout: time.Second},
			kind:    record.KindTimeout, events: 10, done: time.Second},
		{name: "timeout before the response",
			handler: scripted(tokenStream(5*time.Second, ms, 2)...),
			cfg:     Config{Timeout: time.Second},
			kind:    record.KindTimeout, done: time.Second},
		{name: "idle timeout mid-stream",
			handler: scripted(step{10 * ms, chatDelta("a")}, step{ms, chatDelta("b")}, step{time.Hour, chatDelta("c")}),
			cfg:     Config{IdleTimeout: 500 * ms},
			kind:    record.KindIdleTimeout, events: 2, done: 511 * ms},
		{name: "slow but steady stream is not idle",
			handler: scripted(tokenStream(400*ms, 400*ms, 6)...),
			cfg:     Config{IdleTimeout: 500 * ms},
			events:  6},
		{name: "run canceled",
			handler: scripted(tokenStream(10*ms, 100*ms, 50)...),
			cancel:  250 * ms,
			kind:    record.KindCanceled, events: 3, done: 250 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each failure comes on a kept-alive connection that carried a good response
			// first, so that the re-send rule could apply: none of these may be re-sent.
			var served atomic.Int32
			ok := scripted(tokenStream(ms, ms, 2)...)
			h := func(w http.ResponseWriter, r *http.Request) {
				if served.Add(1) == 1 {
					ok(w, r)
					return
				}
				tc.handler(w, r)
			}
			inBubble(t, http.HandlerFunc(h), tc.cfg, func(t *testing.T, c *Client, _ *memListener) {
				var first record.Record
				if c.Do(context.Background(), time.Now(), testReq, &first); first.Error != nil {
					t.Fatalf("first request: %+v", first.Error)
				}
				ctx := context.Background()
				if tc.cancel > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					time.AfterFunc(tc.cancel, cancel)
				}
				var rec record.Record
				c.Do(ctx, time.Now(), testReq, &rec)
				kind, status, msg := "", 0, ""
				if rec.Error != nil {
					kind, status, msg = rec.Error.Kind, rec.Error.Status, rec.Error.Message
				}
				if kind != tc.kind || status != tc.status || !strings.Contains(msg, tc.msg) {
					t.Errorf("error %+v, want kind %q status %d message containing %q", rec.Error, tc.kind, tc.status, tc.msg)
				}
				if strings.Contains(msg, "sk-") {
					t.Errorf("message leaks a key: %q", msg)
				}
				if rec.Events.Len() != tc.events {
					t.Errorf("kept %d token events, want %d", rec.Events.Len(), tc.events)
				}
				if tc.done != 0 && rec.Done-rec.Sent != tc.done {
					t.Errorf("done - sent = %v, want %v", rec.Done-rec.Sent, tc.done)
				}
				if rec.Done < rec.Sent {
					t.Errorf("done %v before sent %v", rec.Done, rec.Sent)
				}
				if rec.Retried || c.ConnStats().Retried != 0 || served.Load() != 2 {
					t.Errorf("re-sent (retried %v, %d re-sends, server saw %d requests)", rec.Retried, c.ConnStats().Retried, served.Load())
				}
			})
		})
	}
}

func TestDoConnectFailure(t *testing.T) {
	inBubble(t, scripted(), Config{APIKey: "sk-never-shown"}, func(t *testing.T, c *Client, l *memListener) {
		l.Close()
		var rec record.Record
		c.Do(context.Background(), time.Now(), testReq, &rec)
		if rec.Error == nil || rec.Error.Kind != record.KindConnect || !strings.Contains(rec.Error.Message, "connection refused") {
			t.Fatalf("error %+v, want connect / connection refused", rec.Error)
		}
		if strings.Contains(rec.Error.Message, "sk-never") || strings.Contains(rec.Error.Message, "Post ") {
			t.Errorf("message %q", rec.Error.Message)
		}
	})
}

// TestDoContinuousUsage: per-chunk usage (vLLM continuous_usage_stats) gives each event's
// token count, so a chunk carrying 3 tokens counts 3.
func TestDoContinuousUsage(t *testing.T) {
	chunk := func(text string, cum int) string {
		return data(fmt.Sprintf(`{"id":"x","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}],"usage":{"prompt_tokens":7,"completion_tokens":%d}}`, text, cum))
	}
	h := scripted(
		step{time.Millisecond, data(`{"id":"x","choices":[{"index":0,"delta":{"role":"assistant"}}],"usage":{"prompt_tokens":7,"completion_tokens":0}}`) + chunk("a", 1)},
		step{time.Millisecond, chunk("bcd", 4)},
		step{time.Millisecond, chunk("e", 5) + usageChunk(5) + data("[DONE]")},
	)
	inBubble(t, h, Config{}, func(t *testing.T, c *Client, _ *memListener) {
		var rec record.Record
		c.Do(context.Background(), time.Now(), testReq, &rec)
		var ns []int
		rec.Events.Each(func(_ int, _ time.Duration, n int) { ns = append(ns, n) })
		if fmt.Sprint(ns) != "[1 3 1]" || rec.OutputTokens != 5 {
			t.Errorf("per-event tokens %v, output %d; want [1 3 1], 5", ns, rec.OutputTokens)
		}
	})
}

// TestDoReasoning: reasoning deltas are tokens (first token), and the first answer token
// is recorded apart.
func TestDoReasoning(t *testing.T) {
	reason := func(s string) string {
		return data(`{"id":"r","choices":[{"index":0,"delta":{"reasoning_content":"` + s + `"}}]}`)
	}
	h := scripted(step{20 * time.Millisecond, reason("think")}, step{10 * time.Millisecond, reason("more")},
		step{10 * time.Millisecond, chatDelta("answer")}, step{0, data(finishChunk) + data("[DONE]")})
	inBubble(t, h, Config{}, func(t *testing.T, c *Client, _ *memListener) {
		var rec record.Record
		c.Do(context.Background(), time.Now(), testReq, &rec)
		ft, _ := rec.FirstToken()
		if rec.Error != nil || ft-rec.Sent != 20*time.Millisecond || rec.FirstContent-rec.Sent != 40*time.Millisecond {
			t.Errorf("error %v, first token %v, first content %v", rec.Error, ft-rec.Sent, rec.FirstContent-rec.Sent)
		}
		if rec.OutputTokens != 3 || rec.OutputTokensSource != record.SourceEvents {
			t.Errorf("output %d from %s", rec.OutputTokens, rec.OutputTokensSource)
		}
	})
}

func TestListModels(t *testing.T) {
	h := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer k-1234" {
			w.WriteHeader(404)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"llama-3.1-8b","object":"model"},{"id":"other"}]}`)
	}
	inBubble(t, http.HandlerFunc(h), Config{APIKey: "k-1234"}, func(t *testing.T, c *Client, _ *memListener) {
		ids, err := c.ListModels(context.Background())
		if err != nil || strings.Join(ids, ",") != "llama-3.1-8b,other" {
			t.Errorf("models %v, %v", ids, err)
		}
	})
	inBubble(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		io.WriteString(w, `{"error":"bad key k-1234"}`)
	}), Config{APIKey: "k-1234"}, func(t *testing.T, c *Client, _ *memListener) {
		_, err := c.ListModels(context.Background())
		if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "k-1234") {
			t.Errorf("err %v", err)
		}
	})
	// A list that does not answer in time says so in words and keeps the deadline for
	// errors.Is: run's console then advises a longer timeout.
	inBubble(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}), Config{}, func(t *testing.T, c *Client, _ *memListener) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.ListModels(ctx)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "listing models: ") {
			t.Errorf("err %v: want the deadline kept under the client's words", err)
		}
	})
}

func TestValidate(t *testing.T) {
	err := Config{BaseURL: "ftp://x?y=1", API: "nope", Timeout: -1, IdleTimeout: -1, MaxConns: -1,
		Headers:   http.Header{"Bad Name": {"v"}, "X-Ok": {"a\nb"}},
		ExtraBody: map[string]any{"stream": false, "f": func() {}}, CACert: "/nonexistent.pem"}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"scheme must be http or https", "query or fragment", `API "nope"`, "timeout -1ns",
		"idle timeout", "max connections", `"Bad Name"`, "line break", "cannot be encoded", `"stream"`, "CA certificate file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if err := (Config{BaseURL: "https://api.example.com/v1", API: APIOpenAICompletions}).Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "base URL is empty") {
		t.Errorf("empty config: %v", err)
	}
}

func TestSecretsStayOut(t *testing.T) {
	cfg := Config{BaseURL: "https://user:pw-secret@api.example.com", API: APIOpenAIChat, APIKey: "sk-very-secret",
		Headers: http.Header{"X-Api-Key": {"hdr-secret"}, "Cookie": {"session=c-secret"}, "X-Team": {"bench"}}}
	for _, s := range []string{cfg.String(), fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		for _, secret := range []string{"sk-very-secret", "hdr-secret", "c-secret", "pw-secret"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q leaks %q", s, secret)
			}
		}
		if !strings.Contains(s, "bench") {
			t.Errorf("%q hides a non-secret header", s)
		}
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	msg := c.message("echo: Bearer sk-very-secret hdr-secret session=c-secret pw-secret")
	if strings.Contains(msg, "secret") {
		t.Errorf("message %q leaks a secret", msg)
	}
	if got := c.message(strings.Repeat("é", 1000)); len(got) > maxMessage+len("…") || !utf8.ValidString(got) {
		t.Errorf("long message: %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
}
