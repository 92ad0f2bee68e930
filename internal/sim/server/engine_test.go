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
