package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/testtier"
	"github.com/llmbench/llmbench/internal/workload"
)

// TestLoadFidelity measures the client's event-time error under load: a local server
// streams concurrent streams at 50 tokens/s each, notes when it flushed every token
// (ground truth, same process and clock), and the test compares with the times the
// client recorded. The accuracy tier checks 100 streams for one request each (about 2 s);
// LLMBENCH_LOAD_STREAMS (for 10 s unless LLMBENCH_LOAD_DURATION says otherwise)
// sizes the full measurement, which takes both cores:
//
//	LLMBENCH_ACCURACY=1 LLMBENCH_LOAD_STREAMS=1000 go test -run TestLoadFidelity -v ./internal/client
//
// Pin to 2 cores (taskset -c 0,1, GOMAXPROCS=2) to reproduce the 2-core target.
func TestLoadFidelity(t *testing.T) {
	testtier.Accuracy(t, "event-time error of 100 streams on the real clock")
	streams, dur := 100, 2*time.Second
	if n, _ := strconv.Atoi(os.Getenv("LLMBENCH_LOAD_STREAMS")); n > 0 {
		streams, dur = n, 10*time.Second
	}
	if d, err := time.ParseDuration(os.Getenv("LLMBENCH_LOAD_DURATION")); err == nil {
		dur = d
	}
	const (
		gap    = 20 * time.Millisecond // 50 tokens/s per stream
		ttft   = 50 * time.Millisecond
		tokens = 100
	)
	start := time.Now()
	var next atomic.Int64
	var mu sync.Mutex
	truth := map[string][]time.Duration{} // response id -> flush time of each token

	h := func(w http.ResponseWriter, r *http.Request) {
		id := "r" + strconv.FormatInt(next.Add(1), 10)
		emits := make([]time.Duration, 0, tokens)
		tok := []byte(`data: {"id":"` + id + `","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}` + "\n\n")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		rc.Flush()
		t0 := time.Now()
		for k := range tokens {
			// Absolute due times, so the server's own lateness does not accumulate.
			time.Sleep(time.Until(t0.Add(ttft + time.Duration(k)*gap)))
			emits = append(emits, time.Since(start))
			if _, err := w.Write(tok); err != nil {
				return
			}
			rc.Flush()
		}
		fmt.Fprintf(w, "data: {\"id\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: {\"id\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", id, id, tokens)
		mu.Lock()
		truth[id] = emits
		mu.Unlock()
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(h))
	srv.Config.MaxHeaderBytes = 1 << 16
	srv.Start()
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, API: APIOpenAIChat, MaxConns: streams, IdleTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	cpu0 := processCPU()
	wall0 := time.Now()
	deadline := time.Now().Add(dur)
	recs := make([][]*record.Record, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			// Spread the starts over one token gap so the streams do not tick in lockstep.
			time.Sleep(time.Duration(i) * gap / time.Duration(streams))
			for time.Now().Before(deadline) {
				rec := &record.Record{}
				c.Do(context.Background(), start, workload.Request{Prompt: "x", OutputTokens: tokens}, rec)
				recs[i] = append(recs[i], rec)
			}
		})
	}
	wg.Wait()
	wall := time.Since(wall0)
	cpu := processCPU() - cpu0

	var errs []float64 // ms
	failed, requests := 0, 0
	mu.Lock()
	for _, rs := range recs {
		for _, r := range rs {
			requests++
			if r.Error != nil {
				failed++
				continue
			}
			em := truth[r.ResponseID]
			if len(em) != r.Events.Len() {
				t.Errorf("%s: %d events recorded, %d sent", r.ResponseID, r.Events.Len(), len(em))
				continue
			}
			r.Events.Each(func(k int, at time.Duration, _ int) {
				errs = append(errs, float64(at-em[k].Truncate(time.Microsecond))/1e6)
			})
		}
	}
	mu.Unlock()
	if len(errs) == 0 {
		t.Fatalf("no events measured (%d requests, %d failed)", requests, failed)
	}
	slices.Sort(errs)
	q := func(p float64) float64 { return errs[int(p*float64(len(errs)-1))] }
	t.Logf("%d streams x 50 tok/s, GOMAXPROCS %d, %v: %d requests (%d failed), %d token events (%.0f/s)",
		streams, runtime.GOMAXPROCS(0), wall.Round(time.Millisecond), requests, failed, len(errs), float64(len(errs))/wall.Seconds())
	t.Logf("event-time error client - server flush: P50 %.3f ms, P90 %.3f ms, P99 %.3f ms, P99.9 %.3f ms, max %.3f ms",
		q(0.5), q(0.9), q(0.99), q(0.999), errs[len(errs)-1])
	t.Logf("process CPU (server + client): %.2f cores", cpu.Seconds()/wall.Seconds())
	if failed > 0 {
		t.Errorf("%d of %d requests failed", failed, requests)
	}
}
