package server

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestAppendUnixMicro(t *testing.T) {
	for _, c := range []struct {
		us   int64
		want string
	}{
		{0, "0.000000"},
		{5, "0.000005"},
		{1712345678123456, "1712345678.123456"},
		{1712345678000001, "1712345678.000001"},
		{-1500000, "-1.500000"},
	} {
		if got := string(appendUnixMicro(nil, c.us)); got != c.want {
			t.Errorf("appendUnixMicro(%d) = %q, want %q", c.us, got, c.want)
		}
	}
}

// syncBuilder is a strings.Builder safe to read while the server writes.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Concurrent streams: one line per request, joined to the client's view by id; event times
// match the client's reads of the same events (and not their neighbours, 30 ms away).
func TestTruthLines(t *testing.T) {
	g := &fakeGen{interval: 30 * time.Millisecond}
	truth := &syncBuilder{}
	s, ts := newTestServer(t, g, Options{Truth: truth})
	const n, tokens = 24, 10
	type view struct {
		start time.Time
		reads []time.Time // when each token event was read
	}
	var mu sync.Mutex
	views := map[string]*view{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			path, body := "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":%d,"stream":true}`, tokens)
			if i%2 == 1 {
				path, body = "/v1/completions", fmt.Sprintf(`{"prompt":"hello world","max_tokens":%d,"stream":true,"stream_options":{"include_usage":true}}`, tokens)
			}
			v := &view{start: time.Now()}
			resp := post(t, ts, path, body)
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			id := ""
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				c := decodeChunk(t, data)
				id = c.ID
				if len(c.Choices) > 0 && ((c.Choices[0].Delta != nil && c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "") ||
					(c.Choices[0].Text != nil && *c.Choices[0].Text != "")) {
					v.reads = append(v.reads, time.Now())
				}
			}
			mu.Lock()
			views[id] = v
			mu.Unlock()
		})
	}
	wg.Wait()
	ts.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(truth.String()), "\n")
	var diffs []float64
	if len(lines) != n {
		t.Fatalf("%d truth lines for %d requests", len(lines), n)
	}
	for _, l := range lines {
		var tl TruthLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&tl); err != nil {
			t.Fatalf("line %s: %v", l, err)
		}
		v := views[tl.ID]
		if v == nil {
			t.Fatalf("truth id %q was never sent to a client", tl.ID)
		}
		if !tl.Stream || tl.CompletionTokens != tokens || tl.FinishReason != "length" || len(tl.EventUnix) != tokens ||
			tl.EventTokens != nil || tl.Fault != "" || tl.Canceled || tl.PromptTokens < 1 {
			t.Fatalf("line %s", l)
		}
		if len(v.reads) != tokens {
			t.Fatalf("client read %d token events", len(v.reads))
		}
		// The prompt's hash tells which prompt the server was sent: the chat's "hi" or the
		// completion's "hello world".
		want := sha256.Sum256([]byte("hi\x00"))
		if !strings.HasPrefix(l, `{"id":"chatcmpl`) {
			want = sha256.Sum256([]byte("hello world\x00"))
		}
		if tl.PromptSHA256 != hex.EncodeToString(want[:]) {
			t.Fatalf("prompt_sha256 %s in %s, want %x", tl.PromptSHA256, l, want)
		}
		startUs := float64(v.start.UnixMicro()) / 1e6
		if tl.ReceivedUnix < startUs-1e-6 || tl.EventUnix[0] < tl.ReceivedUnix {
			t.Fatalf("received %.6f before the client started %.6f, or first event %.6f before receipt", tl.ReceivedUnix, startUs, tl.EventUnix[0])
		}
		for k, ev := range tl.EventUnix {
			diffs = append(diffs, math.Abs(ev-float64(v.reads[k].UnixMicro())/1e6))
			if k > 0 && ev < tl.EventUnix[k-1] {
				t.Fatalf("event times go backwards: %v", tl.EventUnix)
			}
		}
	}
	// The server stamps after its flush returns and the client after its read: on loopback
	// within scheduling noise of each other. The median is robust to a loaded machine's
	// outliers, yet an off-by-one join would put it near 30 ms.
	slices.Sort(diffs)
	if med := diffs[len(diffs)/2]; med > 0.010 {
		t.Fatalf("median |server - client| event time %.6f s", med)
	}
}

// The handler writes each event at the instant its step ended: on synctest's fake clock,
// where the handler's own work takes no time, every event's send stamp equals its step's
// (step_unix), so any delay the server added (a timer, batching events, a periodic flush)
// would show. Off the ms grid, as the engine's steps are.
func TestHandlerSendsEachStepAtItsEnd(t *testing.T) {
	const interval = 5660 * time.Microsecond
	for _, c := range []struct {
		name, path, body string
		perStep, events  int
	}{
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":40,"stream":true}`, 1, 40},
		{"completions, 3 tokens a step", "/v1/completions", `{"prompt":"hi","max_tokens":40,"stream":true,"stream_options":{"include_usage":true}}`, 3, 14},
		{"responses", "/v1/responses", `{"input":"hi","max_output_tokens":40,"stream":true}`, 1, 40},
		{"not streamed", "/v1/completions", `{"prompt":"hi","max_tokens":40}`, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var truth strings.Builder
				s, err := New(&fakeGen{interval: interval, perStep: c.perStep}, Options{Truth: &truth, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body)))
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				var tl TruthLine
				if err := json.Unmarshal([]byte(truth.String()), &tl); err != nil || rec.Code != 200 {
					t.Fatalf("status %d, truth %q: %v", rec.Code, truth.String(), err)
				}
				if len(tl.EventUnix) != c.events || len(tl.StepUnix) != c.events || tl.CompletionTokens != 40 {
					t.Fatalf("%d events, %d step stamps, %d tokens; want %d, %d, 40", len(tl.EventUnix), len(tl.StepUnix), tl.CompletionTokens, c.events, c.events)
				}
				for i, at := range tl.EventUnix {
					if at != tl.StepUnix[i] {
						t.Fatalf("event %d sent at %.6f, its step ended at %.6f", i, at, tl.StepUnix[i])
					}
					if i > 0 && math.Abs(at-tl.EventUnix[i-1]-interval.Seconds()) > 1e-7 {
						t.Fatalf("event %d came %.6f s after the last, want %v", i, at-tl.EventUnix[i-1], interval)
					}
				}
			})
		})
	}
}

func TestTruthMultiTokenAndNonStreaming(t *testing.T) {
	truth := &syncBuilder{}
	s, ts := newTestServer(t, &fakeGen{perStep: 3}, Options{Truth: truth})
	resp := post(t, ts, "/v1/completions", `{"prompt":"hi","max_tokens":8,"stream":true}`)
	readAll(t, resp.Body)
	resp.Body.Close()
	resp = post(t, ts, "/v1/completions", `{"prompt":"hi","max_tokens":8}`)
	readAll(t, resp.Body)
	resp.Body.Close()
	ts.Close()
	// Flushed when the server went idle, without Close.
	if n := strings.Count(truth.String(), "\n"); n != 2 {
		t.Fatalf("%d lines flushed once idle, want 2", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(truth.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%q", truth.String())
	}
	var a, b TruthLine
	_ = json.Unmarshal([]byte(lines[0]), &a)
	_ = json.Unmarshal([]byte(lines[1]), &b)
	if a.Stream == b.Stream {
		a, b = b, a
	}
	if !a.Stream || fmt.Sprint(a.EventTokens) != "[3 3 2]" || len(a.EventUnix) != 3 || a.CompletionTokens != 8 {
		t.Fatalf("streamed: %+v", a)
	}
	if b.Stream || fmt.Sprint(b.EventTokens) != "[8]" || len(b.EventUnix) != 1 || b.CompletionTokens != 8 {
		t.Fatalf("non-streaming: %+v", b)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestTruthWriteError(t *testing.T) {
	s, err := New(&fakeGen{}, Options{Truth: failWriter{}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(`{"prompt":"hi","max_tokens":2,"stream":true}`))
	s.ServeHTTP(newRecorder(), req)
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close = %v, want the write error", err)
	}
}
