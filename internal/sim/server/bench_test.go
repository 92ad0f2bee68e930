package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/cputime"
	"github.com/llmbench/llmbench/internal/testproc"
)

// Benchmark shape: streams in flight and tokens per request.
const (
	benchStreams = 64
	benchTokens  = 1000
)

// BenchmarkServeTokenEvents measures the token events per second the server sustains on
// loopback, per CPU-second it uses. The generator is instant and hands over one step at a
// time on an unbuffered channel, so every event is its own Write+Flush (no coalescing):
// the server's worst case. One op is one token event.
//
//   - server_only: the streaming client runs in a child process (this test binary), so the
//     process CPU (getrusage) is the server's alone; events/cpu-s is the headline figure.
//   - in_process: client and server share the process; events/cpu-s includes the client.
//
// go test ./internal/sim/server -run '^$' -bench ServeTokenEvents -benchtime 200000x
func BenchmarkServeTokenEvents(b *testing.B) {
	b.Run("server_only", func(b *testing.B) { benchServe(b, true) })
	b.Run("in_process", func(b *testing.B) { benchServe(b, false) })
}

func benchServe(b *testing.B, child bool) {
	s, err := New(&fakeGen{}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	requests := max(1, (b.N+benchTokens-1)/benchTokens)
	events := int64(requests * benchTokens)

	cpu0 := processCPU()
	b.ResetTimer()
	start := time.Now()
	var got int64
	if child {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBenchClientHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("LLMBENCH_BENCH_CLIENT=%s,%d,%d,%d", ts.URL, requests, benchTokens, benchStreams))
		out, err := testproc.CombinedOutput(b, cmd)
		if err != nil {
			b.Fatalf("client process: %v\n%s", err, out)
		}
		_, after, _ := strings.Cut(string(out), "events=")
		got, _ = strconv.ParseInt(strings.Fields(after + " x")[0], 10, 64)
	} else {
		got = streamClient(ts.URL, requests, benchTokens, benchStreams)
	}
	wall := time.Since(start)
	b.StopTimer()
	cpu := processCPU() - cpu0
	if got != events {
		b.Fatalf("client counted %d token events, want %d", got, events)
	}
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
	if cpu > 0 {
		b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
	}
}

// TestBenchClientHelper is the benchmark's client process (the helper-process pattern of
// os/exec's tests): it returns at once, passing, in a normal run.
func TestBenchClientHelper(t *testing.T) {
	spec := os.Getenv("LLMBENCH_BENCH_CLIENT")
	if spec == "" {
		return // only BenchmarkServeTokenEvents's client process has work here
	}
	f := strings.Split(spec, ",")
	if len(f) != 4 {
		t.Fatalf("bad spec %q", spec)
	}
	requests, _ := strconv.Atoi(f[1])
	tokens, _ := strconv.Atoi(f[2])
	streams, _ := strconv.Atoi(f[3])
	fmt.Printf("events=%d\n", streamClient(f[0], requests, tokens, streams))
}

// streamClient runs requests streaming completions over `streams` connections and counts
// the token events it reads (SSE events minus the finish chunk and [DONE]).
func streamClient(url string, requests, tokens, streams int) int64 {
	tr := &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	body := fmt.Sprintf(`{"prompt":"hi","max_tokens":%d,"stream":true,"ignore_eos":true}`, tokens)
	var next, total atomic.Int64
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			buf := make([]byte, 64<<10)
			for next.Add(1) <= int64(requests) {
				resp, err := c.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					return
				}
				n := int64(0)
				prevNL := false // a "\n\n" split across reads
				for {
					k, err := resp.Body.Read(buf)
					if k > 0 {
						n += int64(bytes.Count(buf[:k], []byte("\n\n")))
						if prevNL && buf[0] == '\n' {
							n++
						}
						prevNL = buf[k-1] == '\n'
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						resp.Body.Close()
						return
					}
				}
				resp.Body.Close()
				total.Add(n - 2)
			}
		})
	}
	wg.Wait()
	return total.Load()
}

// The benchmark's client counts events correctly (so its figure means what it says).
func TestStreamClientCounts(t *testing.T) {
	_, ts := newTestServer(t, &fakeGen{}, Options{})
	if got := streamClient(ts.URL, 5, 37, 2); got != 5*37 {
		t.Fatalf("counted %d token events, want %d", got, 5*37)
	}
}

// discardWriter is a ResponseWriter that flushes to nowhere: it isolates the handler's own
// per-event cost from the network's.
type discardWriter struct {
	h     http.Header
	bytes int64
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(p []byte) (int, error) { d.bytes += int64(len(p)); return len(p), nil }
func (d *discardWriter) Flush()                      {}

// BenchmarkStreamWritePath is the handler's cost per token event without the network
// (including the fake generator's channel handoff): one op is one event; allocs/op should
// round to 0.
func BenchmarkStreamWritePath(b *testing.B) {
	for _, truth := range []bool{false, true} {
		b.Run(fmt.Sprintf("truth=%v", truth), func(b *testing.B) {
			opts := Options{MaxTokensLimit: 1 << 30}
			if truth {
				opts.Truth = io.Discard
			}
			s, err := New(&fakeGen{}, opts)
			if err != nil {
				b.Fatal(err)
			}
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`, b.N)
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			s.ServeHTTP(w, req)
			b.StopTimer()
			b.ReportMetric(float64(w.bytes)/float64(b.N), "bytes/event")
		})
	}
}

// processCPU is the CPU time the process has used (0 where the system does not say).
func processCPU() time.Duration {
	d, _ := cputime.Process()
	return d
}
