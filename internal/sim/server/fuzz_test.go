package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHandleRequest feeds arbitrary bodies to both generation endpoints: the server never
// panics, answers 200 or a 4xx with an OpenAI error object, and everything it streams is
// valid JSON (so hand-built chunks can never be corrupted by a request's contents).
//
//	go test ./internal/sim/server -run '^$' -fuzz FuzzHandleRequest -fuzztime 30s
func FuzzHandleRequest(f *testing.F) {
	for _, seed := range []string{
		chatStreamBody,
		compStreamBody,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a\"b\\c\u2028"}]}],"max_tokens":3}`,
		`{"prompt":[[1,2,3]],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":"x","max_tokens":-1}`,
		`{"prompt":"x","max_tokens":1e99}`,
		`{"model":"other","prompt":"x"}`,
		`{"messages":null}`,
		`{"messages":[{"role":"user","content":"x"}],"max_tokens":3,"stream":true,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f\"\u2028","parameters":{"properties":{"a\"b":{},"ok":{}},"required":["a\"b"]}}}]}`,
		`{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"tool_choice":{"type":"function","function":{"name":"g"}},"tools":[{"type":"function","function":{"name":"g"}}]}`,
		`[`,
		``,
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	s, err := New(&fakeGen{}, Options{MaxTokensLimit: 64, ModelName: `m"odel\x`})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string, chat bool) {
		path := "/v1/completions"
		if chat {
			path = "/v1/chat/completions"
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		out := rec.Body.String()
		switch {
		case rec.Code == http.StatusOK && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream"):
			if !strings.HasSuffix(out, "data: [DONE]\n\n") {
				t.Fatalf("stream does not end with [DONE]: %q", out)
			}
			for _, ev := range strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n") {
				data, ok := strings.CutPrefix(ev, "data: ")
				if !ok || (data != "[DONE]" && !json.Valid([]byte(data))) {
					t.Fatalf("bad event %q in %q", ev, out)
				}
			}
		case rec.Code == http.StatusOK:
			if !json.Valid([]byte(out)) {
				t.Fatalf("invalid JSON body %q", out)
			}
		case rec.Code >= 400 && rec.Code < 500:
			var e struct {
				Error *errorObj `json:"error"`
			}
			if json.Unmarshal([]byte(out), &e) != nil || e.Error == nil || e.Error.Message == "" {
				t.Fatalf("status %d with body %q", rec.Code, out)
			}
		default:
			t.Fatalf("status %d for %q: %q", rec.Code, body, out)
		}
	})
}
