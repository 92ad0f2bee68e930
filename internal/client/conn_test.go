package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// closingAfter serves tokenStream(ttft, gap, n) and closes the connection closeAfter
// after each complete response, while the response says keep-alive (llama.cpp's server
// does this). A request that arrived on the connection in the gap is lost with it.
// The response's headers come with its first token, so a lost request saw no byte back.
func closingAfter(closeAfter, ttft, gap time.Duration, n int) http.HandlerFunc {
	stream := scripted(tokenStream(0, gap, n)...)
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(ttft):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Keep-Alive", "timeout=5, max=100")
		stream(w, r)
		conn := connOf(r)
		time.AfterFunc(closeAfter, func() { conn.Close() })
	}
}

// runWorkers runs workers goroutines of perWorker sequential requests each, as a closed
// loop does, and returns every record.
func runWorkers(c *Client, start time.Time, workers, perWorker int) []record.Record {
	recs := make([]record.Record, workers*perWorker)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				rec := &recs[w*perWorker+i]
				rec.Scheduled = record.Since(start, time.Now())
				c.Do(context.Background(), start, testReq, rec)
			}
		})
	}
	wg.Wait()
	return recs
}

// TestResendOnServerClosedConnection: against a server that closes each connection 2 ms
// after its response, every request completes; the ones that met a closed connection are
// re-sent once, counted, and their TTFT is the server's (the time lost is schedule lag);
// the client notices the habit and stops reusing connections.
func TestResendOnServerClosedConnection(t *testing.T) {
	const ttft, gap = 60 * time.Millisecond, 15 * time.Millisecond
	var habit []int
	cfg := Config{MaxConns: 4, OnServerCloses: func(n int) { habit = append(habit, n) }}
	inBubble(t, closingAfter(2*time.Millisecond, ttft, gap, 8), cfg, func(t *testing.T, c *Client, _ *memListener) {
		recs := runWorkers(c, time.Now(), 4, 12)
		retried := 0
		for i, r := range recs {
			if r.Error != nil {
				t.Fatalf("request %d failed: %+v", i, r.Error)
			}
			if ft, _ := r.FirstToken(); ft-r.Sent != ttft {
				t.Errorf("request %d (retried %v): TTFT %v, want %v", i, r.Retried, ft-r.Sent, ttft)
			}
			if r.Retried {
				retried++
				if lag := r.Sent - r.Scheduled; lag != 2*time.Millisecond {
					t.Errorf("request %d: schedule lag %v, want the 2 ms lost to the closed connection", i, lag)
				}
			}
		}
		st := c.ConnStats()
		if retried == 0 || st.Retried != retried {
			t.Errorf("%d records retried, client counted %d; want > 0 and equal", retried, st.Retried)
		}
		if !st.ClosesConnections || st.ClosedConnections < closesAfter || len(habit) != 1 {
			t.Errorf("stats %+v, habit calls %v: want the habit seen once after %d closes", st, habit, closesAfter)
		}
		// Once seen, no request goes on a kept-alive connection, so none needs a re-send.
		if st.Retried > 4*closesAfter {
			t.Errorf("%d re-sends: the client kept reusing connections after it saw the habit", st.Retried)
		}
	})
}

// TestKeepAliveOff: --keep-alive=false opens a new connection for every request (and says
// Connection: close), so a closing server costs no re-send and shows no habit.
func TestKeepAliveOff(t *testing.T) {
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	closeHdr := 0
	h := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[connOf(r)] = true
		if r.Close {
			closeHdr++
		}
		mu.Unlock()
		closingAfter(2*time.Millisecond, 10*time.Millisecond, time.Millisecond, 3)(w, r)
	}
	inBubble(t, http.HandlerFunc(h), Config{MaxConns: 2, DisableKeepAlive: true}, func(t *testing.T, c *Client, _ *memListener) {
		recs := runWorkers(c, time.Now(), 2, 6)
		for i, r := range recs {
			if r.Error != nil || r.Retried {
				t.Fatalf("request %d: error %+v retried %v", i, r.Error, r.Retried)
			}
			if r.Phases == nil || r.Phases.Has&record.PhaseConnect == 0 {
				t.Errorf("request %d: phases %+v, want a connect phase on every request", i, r.Phases)
			}
		}
		if len(conns) != 12 || closeHdr != 12 {
			t.Errorf("%d connections, %d with Connection: close; want 12 and 12", len(conns), closeHdr)
		}
		if st := c.ConnStats(); st != (ConnStats{}) {
			t.Errorf("stats %+v, want none: the client closed them", st)
		}
	})
}

// TestNoResendOnFreshConnection: a new connection that ends before any response is a
// server that fails, not a closed kept-alive one.
func TestNoResendOnFreshConnection(t *testing.T) {
	var calls int
	h := func(w http.ResponseWriter, r *http.Request) {
		calls++
		connOf(r).Close()
	}
	inBubble(t, http.HandlerFunc(h), Config{}, func(t *testing.T, c *Client, _ *memListener) {
		var rec record.Record
		c.Do(context.Background(), time.Now(), testReq, &rec)
		if rec.Error == nil || rec.Error.Kind != record.KindDisconnect || rec.Retried || calls != 1 {
			t.Errorf("error %+v retried %v calls %d: want one disconnect, not re-sent", rec.Error, rec.Retried, calls)
		}
	})
}

// TestNoResendTwice: a re-send that fails too stays a failure.
func TestNoResendTwice(t *testing.T) {
	var calls int
	ok := scripted(tokenStream(time.Millisecond, time.Millisecond, 2)...)
	h := func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			ok(w, r)
			return
		}
		connOf(r).Close()
	}
	inBubble(t, http.HandlerFunc(h), Config{}, func(t *testing.T, c *Client, _ *memListener) {
		var first, rec record.Record
		c.Do(context.Background(), time.Now(), testReq, &first)
		c.Do(context.Background(), time.Now(), testReq, &rec)
		if first.Error != nil || rec.Error == nil || rec.Error.Kind != record.KindDisconnect || !rec.Retried || calls != 3 {
			t.Errorf("first %+v, second %+v retried %v, %d calls: want one re-send that fails as a disconnect", first.Error, rec.Error, rec.Retried, calls)
		}
	})
}

// TestOverloadIsNotResent: 429 and 503 are failures the server chose: counted with their
// status and Retry-After, never re-sent.
func TestOverloadIsNotResent(t *testing.T) {
	for _, tc := range []struct {
		status int
		header string // "date": an HTTP date 30 s from now
		want   time.Duration
	}{
		{429, "2", 2 * time.Second},
		{503, "date", 30 * time.Second},
		{503, "", 0},
		{429, "soon", 0},
	} {
		t.Run(fmt.Sprintf("%d %q", tc.status, tc.header), func(t *testing.T) {
			calls := 0
			h := func(w http.ResponseWriter, r *http.Request) {
				calls++
				switch tc.header {
				case "":
				case "date":
					w.Header().Set("Retry-After", time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat))
				default:
					w.Header().Set("Retry-After", tc.header)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, `{"error":{"message":"busy"}}`)
			}
			inBubble(t, http.HandlerFunc(h), Config{}, func(t *testing.T, c *Client, _ *memListener) {
				var rec record.Record
				c.Do(context.Background(), time.Now(), testReq, &rec)
				if rec.Error == nil || rec.Error.Kind != record.KindHTTPStatus || rec.Error.Status != tc.status || rec.Retried || calls != 1 {
					t.Fatalf("error %+v retried %v calls %d", rec.Error, rec.Retried, calls)
				}
				if rec.Error.RetryAfter != tc.want {
					t.Errorf("retry after %v, want %v", rec.Error.RetryAfter, tc.want)
				}
			})
		})
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if d := retryAfter(now.Add(-time.Minute).Format(http.TimeFormat), now); d != 0 {
		t.Errorf("past HTTP-date Retry-After: %v, want 0", d)
	}
}

// TestPhases: a new connection's connect phase, and on every request the write and the
// wait for the response headers, which a server of known timing makes exact.
func TestPhases(t *testing.T) {
	h := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(7 * time.Millisecond) // the server's time to the headers
		scripted(tokenStream(20*time.Millisecond, time.Millisecond, 2)...)(w, r)
	}
	inBubble(t, http.HandlerFunc(h), Config{}, func(t *testing.T, c *Client, _ *memListener) {
		start := time.Now()
		var first, second record.Record
		c.Do(context.Background(), start, testReq, &first)
		c.Do(context.Background(), start, testReq, &second)
		for i, r := range []record.Record{first, second} {
			p := r.Phases
			if r.Error != nil || p == nil {
				t.Fatalf("request %d: error %+v phases %+v", i, r.Error, p)
			}
			if p.Has&record.PhaseHeaders == 0 || p.Headers != 7*time.Millisecond || p.Has&record.PhaseWrite == 0 || p.Write != 0 {
				t.Errorf("request %d: phases %+v, want write 0 and headers 7ms", i, *p)
			}
			if ft, _ := r.FirstToken(); ft-r.Sent != 27*time.Millisecond {
				t.Errorf("request %d: TTFT %v, want 27ms", i, ft-r.Sent)
			}
			if p.Has&record.PhaseDNS != 0 || p.Has&record.PhaseTLS != 0 {
				t.Errorf("request %d: phases %+v: no DNS or TLS happened", i, *p)
			}
		}
		if first.Phases.Has&record.PhaseConnect == 0 || second.Phases.Has&record.PhaseConnect != 0 {
			t.Errorf("connect phase: first %v second %v, want only on the new connection", first.Phases.Has, second.Phases.Has)
		}
	})
}

// TestRealServerClosesAfterResponse does over real TCP what llama.cpp's server does: a
// keep-alive response, then the connection closed at once. 4 workers of 12 requests all
// complete, the habit is seen, and TTFT stays the server's.
func TestRealServerClosesAfterResponse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const ttft = 20 * time.Millisecond
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nKeep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n\r\n")
				chunk := func(s string) { fmt.Fprintf(conn, "%x\r\n%s\r\n", len(s), s) }
				time.Sleep(ttft)
				chunk(data(roleChunk) + chatDelta("a"))
				time.Sleep(2 * time.Millisecond)
				chunk(chatDelta("b") + data(finishChunk) + usageChunk(2) + data("[DONE]"))
				io.WriteString(conn, "0\r\n\r\n")
				// closed at once by the deferred Close, with the next request maybe unread
			}()
		}
	}()
	c, err := New(Config{BaseURL: "http://" + ln.Addr().String(), API: APIOpenAIChat, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	c.transport.Proxy, c.fresh.Proxy = nil, nil
	defer c.Close()
	recs := runWorkers(c, time.Now(), 4, 12)
	for i, r := range recs {
		if r.Error != nil {
			t.Fatalf("request %d failed: %+v (retried %v)", i, r.Error, r.Retried)
		}
		// Loaded 2-core CI machines: generous, but a re-send counted into TTFT would add
		// a whole round trip and more.
		if ft, _ := r.FirstToken(); ft-r.Sent < ttft || ft-r.Sent > ttft+150*time.Millisecond {
			t.Errorf("request %d (retried %v): TTFT %v, want about %v", i, r.Retried, ft-r.Sent, ttft)
		}
	}
	if st := c.ConnStats(); !st.ClosesConnections || st.ClosedConnections < closesAfter {
		t.Errorf("stats %+v: want the habit seen", st)
	}
}

// TestClosedConnErr: the errors that mean "the connection ended under the request".
func TestClosedConnErr(t *testing.T) {
	for _, err := range []error{io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.EPIPE,
		&net.OpError{Op: "read", Err: syscall.ECONNRESET}, fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", io.EOF),
		errors.New("http: server closed idle connection")} {
		if !closedConnErr(err) {
			t.Errorf("%v: not seen as a closed connection", err)
		}
	}
	for _, err := range []error{nil, context.DeadlineExceeded, syscall.ECONNREFUSED, errors.New("tls: bad certificate")} {
		if closedConnErr(err) {
			t.Errorf("%v: seen as a closed connection", err)
		}
	}
	if !portsExhausted(&net.OpError{Op: "dial", Err: syscall.EADDRNOTAVAIL}) {
		t.Error("EADDRNOTAVAIL is running out of local ports")
	}
	if m := portsMessage(syscall.EADDRNOTAVAIL); !strings.Contains(m, "TIME_WAIT") || !strings.Contains(m, "--keep-alive") {
		t.Errorf("message %q", m)
	}
}

// TestSideClient: the calls beside the benchmark carry the key and headers and trust the
// same CA as the benchmark's requests.
func TestSideClient(t *testing.T) {
	var auth, extra string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, extra = r.Header.Get("Authorization"), r.Header.Get("X-Team")
		io.WriteString(w, `{"tokens":[1,2]}`)
	}))
	defer srv.Close()
	ca := writeCA(t, srv)
	hc, err := SideClient(Config{BaseURL: srv.URL, API: APIOpenAIChat, APIKey: "k-123", CACert: ca,
		Headers: http.Header{"X-Team": {"bench"}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Post(srv.URL+"/tokenize", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if auth != "Bearer k-123" || extra != "bench" {
		t.Errorf("auth %q, X-Team %q", auth, extra)
	}
}

// TestTTFTUpperBound: a first token event that arrives in one read with the next has no
// time of its own: its TTFT is flagged as an upper bound; events read apart are not.
func TestTTFTUpperBound(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		steps []step
		want  bool
	}{
		{"apart", tokenStream(10*ms, 5*ms, 3), false},
		{"together", []step{{10 * ms, data(roleChunk) + chatDelta("a") + chatDelta("b")},
			{5 * ms, chatDelta("c") + data(finishChunk) + usageChunk(3) + data("[DONE]")}}, true},
		{"only the later ones together", []step{{10 * ms, data(roleChunk) + chatDelta("a")},
			{5 * ms, chatDelta("b") + chatDelta("c") + data(finishChunk) + usageChunk(3) + data("[DONE]")}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, scripted(tc.steps...), Config{}, func(t *testing.T, c *Client, _ *memListener) {
				var rec record.Record
				c.Do(context.Background(), time.Now(), testReq, &rec)
				if rec.Error != nil || rec.Events.Len() != 3 {
					t.Fatalf("error %+v, %d events", rec.Error, rec.Events.Len())
				}
				if rec.TTFTUpperBound != tc.want {
					t.Errorf("TTFTUpperBound %v, want %v", rec.TTFTUpperBound, tc.want)
				}
			})
		})
	}
}

// --temperature and --top-p go where each API reads them, beside its per-request fields,
// and an explicit extra body wins.
func TestSamplingInTheBody(t *testing.T) {
	temp, topP := 0.7, 0.9
	for _, c := range []struct {
		api   string
		extra map[string]any
		want  string // a fragment of the body
		also  string
	}{
		{APIOpenAIChat, nil, `"temperature":0.7`, `"top_p":0.9`},
		{APILlamaCpp, nil, `"temperature":0.7`, `"n_predict"`},
		{APIOllama, nil, `"options":{"num_predict":8,"temperature":0.7,"top_p":0.9}`, `"messages"`},
		{APITGI, nil, `"temperature":0.7`, `"max_new_tokens":8`},
		{APIOpenAIChat, map[string]any{"temperature": 0.1}, `"temperature":0.1`, `"top_p":0.9`},
	} {
		cl, err := New(Config{BaseURL: "http://127.0.0.1:1", API: c.api, Model: "m", Temperature: &temp, TopP: &topP, ExtraBody: c.extra})
		if err != nil {
			t.Fatal(err)
		}
		b, err := cl.body.build(testReq)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) || !strings.Contains(string(b), c.also) {
			t.Errorf("%s %v: body %s lacks %s or %s", c.api, c.extra, b, c.want, c.also)
		}
	}
	if err := (Config{BaseURL: "http://x", API: APIOpenAIChat, TopP: new(float64)}).Validate(); err == nil {
		t.Error("top_p 0 accepted")
	}
}
