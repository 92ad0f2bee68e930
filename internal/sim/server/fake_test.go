package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/sim"
)

// fakeGen is a deterministic Generator: it emits perStep tokens per step, every interval
// (0: as fast as the reader takes them), over an unbuffered channel, so the server writes one
// event per step.
type fakeGen struct {
	interval   time.Duration
	eosAt      int  // without ignore_eos, the sequence stops after this many tokens (0: at max)
	perStep    int  // tokens per step (0 means 1)
	abortAfter int  // close the channel after this many steps without a Done step (0: never)
	prefill    bool // send every step into a buffered channel before Submit returns
	err        error
	stats      sim.EngineStats

	mu       sync.Mutex
	got      []sim.SeqRequest
	canceled atomic.Int64 // sequences whose ctx ended before they finished
	running  sync.WaitGroup
}

func (f *fakeGen) Submit(ctx context.Context, r sim.SeqRequest) (<-chan sim.Step, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.mu.Lock()
	f.got = append(f.got, r)
	f.mu.Unlock()
	target, reason := r.MaxTokens, "length"
	if !r.IgnoreEOS && f.eosAt > 0 && f.eosAt < target {
		target, reason = f.eosAt, "stop"
	}
	per := max(f.perStep, 1)
	if f.prefill {
		ch := make(chan sim.Step, target)
		for i := 0; i < target; i += per {
			n := min(per, target-i)
			st := sim.Step{At: time.Now(), Tokens: n, Done: i+n == target}
			if st.Done {
				st.FinishReason = reason
			}
			ch <- st
		}
		close(ch)
		return ch, nil
	}
	ch := make(chan sim.Step)
	f.running.Add(1)
	go func() {
		defer f.running.Done()
		defer close(ch)
		steps := 0
		for emitted := 0; emitted < target; steps++ {
			if f.abortAfter > 0 && steps == f.abortAfter {
				return
			}
			if f.interval > 0 {
				t := time.NewTimer(f.interval)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					f.canceled.Add(1)
					return
				}
			}
			n := min(per, target-emitted)
			emitted += n
			st := sim.Step{At: time.Now(), Tokens: n, Done: emitted == target}
			if st.Done {
				st.FinishReason = reason
			}
			select {
			case ch <- st:
			case <-ctx.Done():
				f.canceled.Add(1)
				return
			}
		}
	}()
	return ch, nil
}

func (f *fakeGen) Stats() sim.EngineStats { return f.stats }

func (f *fakeGen) requests() []sim.SeqRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sim.SeqRequest(nil), f.got...)
}

// newTestServer starts an httptest server around a Server built from g and opts.
func newTestServer(t testing.TB, g Generator, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(g, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// post sends body as JSON and returns the response (body unread).
func post(t testing.TB, ts *httptest.Server, path, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// sseEvents splits an SSE body into its data payloads, failing on any line that is not
// "data: …" or blank.
func sseEvents(t testing.TB, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("SSE line %q is not a data line", line)
		}
		out = append(out, data)
	}
	return out
}

// chunk is the union of the chunk shapes a client decodes.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Message *struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error *errorObj `json:"error"`
}

type errorObj struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func decodeChunk(t testing.TB, s string) chunk {
	t.Helper()
	var c chunk
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatalf("chunk %q: %v", s, err)
	}
	return c
}

func readAll(t testing.TB, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return b
}
