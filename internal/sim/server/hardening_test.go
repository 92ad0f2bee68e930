package server

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func decodeError(t testing.TB, resp *http.Response) errorObj {
	t.Helper()
	defer resp.Body.Close()
	body := readAll(t, resp.Body)
	// Every key of OpenAI's error object must be present, even when null.
	var raw struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &raw); err != nil || raw.Error == nil {
		t.Fatalf("status %d: body %q is not an OpenAI error object", resp.StatusCode, body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw.Error[k]; !ok {
			t.Fatalf("error object %s lacks %q", body, k)
		}
	}
	var e struct{ Error errorObj }
	_ = json.Unmarshal(body, &e)
	return e.Error
}

func TestInputHardening(t *testing.T) {
	_, ts := newTestServer(t, &fakeGen{}, Options{MaxTokensLimit: 4096, MaxBodyBytes: 1024})
	chat := "/v1/chat/completions"
	comp := "/v1/completions"
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		name, path, body string
		status           int
		param            string // "" = don't check
		msg              string // substring of the message
	}{
		{"malformed json", chat, `{"messages": [`, 400, "", "not valid JSON"},
		{"trailing garbage", chat, `{` + msgs + `} x`, 400, "", "JSON"},
		{"empty body", chat, ``, 400, "", "empty"},
		{"array body", chat, `[1,2]`, 400, "", "JSON object"},
		{"unknown model", chat, `{"model":"gpt-4o",` + msgs + `}`, 404, "model", "gpt-4o"},
		{"negative max_tokens", chat, `{` + msgs + `,"max_tokens":-1}`, 400, "max_tokens", "at least 1"},
		{"zero max_completion_tokens", chat, `{` + msgs + `,"max_completion_tokens":0}`, 400, "max_completion_tokens", "at least 1"},
		{"absurd max_tokens", comp, `{"prompt":"hi","max_tokens":1000000000}`, 400, "max_tokens", "limit of 4096"},
		{"huge number", comp, `{"prompt":"hi","max_tokens":1e40}`, 400, "max_tokens", ""},
		{"string max_tokens", comp, `{"prompt":"hi","max_tokens":"ten"}`, 400, "max_tokens", "integer"},
		{"float max_tokens", comp, `{"prompt":"hi","max_tokens":1.5}`, 400, "max_tokens", ""},
		{"string stream", chat, `{` + msgs + `,"stream":"yes"}`, 400, "stream", "boolean"},
		{"messages not array", chat, `{"messages":"hi"}`, 400, "messages", "array"},
		{"no messages", chat, `{"model":"llmbench-sim"}`, 400, "messages", "non-empty"},
		{"message without role", chat, `{"messages":[{"content":"hi"}]}`, 400, "messages[0].role", ""},
		{"content number", chat, `{"messages":[{"role":"user","content":5}]}`, 400, "messages[0].content", "a number"},
		{"part without type", chat, `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, 400, "messages[0].content", "no type"},
		{"prompt on chat", chat, `{` + msgs + `,"prompt":"x"}`, 400, "prompt", ""},
		{"no prompt", comp, `{"max_tokens":3}`, 400, "prompt", "required"},
		{"empty prompt", comp, `{"prompt":""}`, 400, "prompt", "empty"},
		{"batched prompts", comp, `{"prompt":["a","b"]}`, 400, "prompt", "2 prompts"},
		{"prompt object", comp, `{"prompt":{"a":1}}`, 400, "prompt", "an object"},
		{"prompt bad ids", comp, `{"prompt":[1,"a"]}`, 400, "prompt", "token ids"},
		{"n=2", chat, `{` + msgs + `,"n":2}`, 400, "n", "one choice"},
		{"stream_options without stream", chat, `{` + msgs + `,"stream_options":{"include_usage":true}}`, 400, "stream_options", "stream is true"},
		{"stream_options wrong type", chat, `{` + msgs + `,"stream":true,"stream_options":{"include_usage":"yes"}}`, 400, "stream_options.include_usage", ""},
		{"negative min_tokens", comp, `{"prompt":"hi","min_tokens":-2}`, 400, "min_tokens", ""},
		{"body too large", comp, `{"prompt":"` + strings.Repeat("a ", 600) + `"}`, 413, "", "limit of 1024 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, ts, tc.path, tc.body)
			e := decodeError(t, resp)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%+v)", resp.StatusCode, tc.status, e)
			}
			if tc.param != "" && (e.Param == nil || *e.Param != tc.param) {
				t.Fatalf("param %v, want %q (%s)", e.Param, tc.param, e.Message)
			}
			if !strings.Contains(e.Message, tc.msg) || e.Type == "" {
				t.Fatalf("message %q lacks %q (type %q)", e.Message, tc.msg, e.Type)
			}
		})
	}
}

func TestBodyLimitWithoutContentLength(t *testing.T) {
	_, ts := newTestServer(t, &fakeGen{}, Options{MaxBodyBytes: 1024})
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(`{"prompt":"` + strings.Repeat("a ", 2000) + `"}`))
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/completions", pr) // chunked: no length
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if e := decodeError(t, resp); resp.StatusCode != 413 {
		t.Fatalf("status %d %+v", resp.StatusCode, e)
	}
}

func TestRoutesAndMethods(t *testing.T) {
	_, ts := newTestServer(t, &fakeGen{}, Options{})
	resp, _ := ts.Client().Get(ts.URL + "/v1/chat/completions")
	if e := decodeError(t, resp); resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET chat: %d %+v", resp.StatusCode, e)
	}
	resp = post(t, ts, "/v1/models", `{}`)
	if decodeError(t, resp); resp.StatusCode != 405 {
		t.Fatalf("POST models: %d", resp.StatusCode)
	}
	resp, _ = ts.Client().Get(ts.URL + "/v1/nope")
	if decodeError(t, resp); resp.StatusCode != 404 {
		t.Fatalf("unknown path: %d", resp.StatusCode)
	}
}

func TestAPIKey(t *testing.T) {
	_, ts := newTestServer(t, &fakeGen{}, Options{APIKey: "sk-secret"})
	body := `{"prompt":"hi","max_tokens":2}`
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer sk-wrong"}, {"Authorization", "Bearer sk-secre"}, {"Authorization", "sk-secret"}, {"Authorization", "Basic sk-secret"}} {
		resp := post(t, ts, "/v1/completions", body, hdr...)
		e := decodeError(t, resp)
		if resp.StatusCode != 401 || e.Code == nil || *e.Code != "invalid_api_key" || strings.Contains(e.Message, "sk-secret") {
			t.Fatalf("%v: status %d %+v", hdr, resp.StatusCode, e)
		}
	}
	resp := post(t, ts, "/v1/completions", body, "Authorization", "Bearer sk-secret")
	readAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("right key: %d", resp.StatusCode)
	}
	resp, _ = ts.Client().Get(ts.URL + "/v1/models")
	if decodeError(t, resp); resp.StatusCode != 401 {
		t.Fatalf("models without key: %d", resp.StatusCode)
	}
	// Like vLLM, only /v1/ needs the key: probes and scrapers stay simple.
	for _, p := range []string{"/health", "/metrics"} {
		resp, _ = ts.Client().Get(ts.URL + p)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s without key: %d", p, resp.StatusCode)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	err := Options{MaxTokensLimit: -1, MaxBodyBytes: -5, BlockSize: -1, DefaultMaxTokens: 10, ModelName: "a\nb",
		Faults: Faults{Prob: [numFaultKinds]float64{FaultStall: 0.5, FaultHTTP500: 0.7}}}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"MaxTokensLimit -1", "MaxBodyBytes -5", "BlockSize -1", "control character", "sum to 1.2", "stall"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if err := (Options{DefaultMaxTokens: 500, MaxTokensLimit: 100}).Validate(); err == nil || !strings.Contains(err.Error(), "exceeds MaxTokensLimit") {
		t.Fatalf("default above limit: %v", err)
	}
	if err := (Options{}).Validate(); err != nil {
		t.Fatalf("zero options: %v", err)
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Fatal("New(nil) succeeded")
	}
	if _, err := New(&fakeGen{}, Options{MaxBodyBytes: -1}); err == nil {
		t.Fatal("New with bad options succeeded")
	}
}

// A stream that outlives ReadTimeout must not be cut: the server lifts the read deadline
// once it has the body.
func TestHTTPServerLongStreamOutlivesReadTimeout(t *testing.T) {
	s, err := New(&fakeGen{interval: 10 * time.Millisecond}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := HTTPServer("", s)
	if hs.WriteTimeout != 0 || hs.ReadHeaderTimeout == 0 || hs.ReadTimeout == 0 || hs.IdleTimeout == 0 || hs.MaxHeaderBytes == 0 {
		t.Fatalf("HTTPServer limits: %+v", hs)
	}
	hs.ReadTimeout = 100 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	defer hs.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/completions",
		strings.NewReader(`{"prompt":"hi","max_tokens":30,"stream":true}`)) // ~300 ms
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ev := sseEvents(t, readAll(t, resp.Body))
	resp.Body.Close()
	if len(ev) != 32 || ev[31] != "[DONE]" { // 30 tokens, finish, [DONE]
		t.Fatalf("stream cut after %d events", len(ev))
	}
}

// A client that sends headers slowly is disconnected after ReadHeaderTimeout.
func TestHTTPServerSlowHeaders(t *testing.T) {
	s, _ := New(&fakeGen{}, Options{})
	hs := HTTPServer("", s)
	hs.ReadHeaderTimeout = 50 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	defer hs.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("POST /v1/completions HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = io.Copy(io.Discard, c) // returns when the server closes (possibly after a 408)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("server kept a slow-header connection open for %v", time.Since(start))
	}
}
