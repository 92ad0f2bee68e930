package servermetrics

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
)

// The simulator's /metrics uses vLLM's names: scraping it under load must show the requests
// running, the tokens the engine generated, and prefix-cache hits for prompts that share a
// prefix (BlockSize makes the server hash prompts into the engine's KV blocks).
func TestScrapeSimulator(t *testing.T) {
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	p.Engine.Prefill, p.Engine.PrefixCaching = sim.PrefillColocated, true
	eng := sim.NewEngine(p)
	go eng.Start(t.Context())
	h, err := server.New(eng, server.Options{BlockSize: p.Engine.BlockSize})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	if fam, err := Probe(t.Context(), srv.URL+"/metrics", nil); err != nil || fam != FamilyVLLM {
		t.Fatalf("Probe = %q, %v; want vllm", fam, err)
	}
	const reqs, outTokens = 16, 32
	runStart := time.Now()
	s := Start(t.Context(), srv.URL+"/metrics", 25*time.Millisecond, runStart, nil)
	shared := strings.Repeat("shared ", 200)
	send := func(i int) {
		body := fmt.Sprintf(`{"model":%q,"prompt":"%s request %d","max_tokens":%d,"ignore_eos":true,"stream":true}`,
			server.DefaultModelName, shared, i, outTokens)
		resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		msg, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("request %d: HTTP %d %.200s, %v", i, resp.StatusCode, msg, err)
		}
	}
	send(0) // fills the cache with the shared prefix
	var wg sync.WaitGroup
	for i := 1; i < reqs; i++ {
		wg.Go(func() { send(i) })
	}
	wg.Wait()
	ser := s.Stop()
	sum := Summarize(ser)
	t.Logf("%d scrapes over %v: running %+v waiting %+v kv %+v gen/s %v hit rate %v",
		sum.Scrapes, time.Since(runStart).Round(time.Millisecond), sum.Running, sum.Waiting, sum.KVCacheUsage,
		deref(sum.GenerationTokensPerS), deref(sum.PrefixCacheHitRate))
	// A 25 ms timeout can expire on a loaded machine; failures only cost samples.
	if sum.Family != FamilyVLLM || len(ser.Samples) < 3 {
		t.Fatalf("family %q, %d scrapes, %d failed (%s)", sum.Family, sum.Scrapes, sum.FailedScrapes, sum.LastError)
	}
	if sum.Running == nil || sum.Running.Max < 1 || sum.Running.Max > reqs {
		t.Errorf("running %+v, want a max in [1, %d]", sum.Running, reqs)
	}
	if sum.KVCacheUsage == nil || sum.KVCacheUsage.Max <= 0 || sum.KVCacheUsage.Max > 1 {
		t.Errorf("KV-cache usage %+v, want a max in (0, 1]", sum.KVCacheUsage)
	}
	// The counter only grows over the series, to at most every generated token (Stop's final
	// scrape has the interval's short timeout, which a loaded machine can run past, so the
	// series may end before the last tokens); a scrape once the run is over sees them all.
	first, last := ser.Samples[0].GenerationTokens, ser.Samples[len(ser.Samples)-1].GenerationTokens
	if first > last || last > reqs*outTokens {
		t.Errorf("generation_tokens_total went %v -> %v over the series, want it to grow to at most %d", first, last, reqs*outTokens)
	}
	if _, v, err := fetch(t.Context(), newClient(), srv.URL+"/metrics"); err != nil || v.GenerationTokens != reqs*outTokens {
		t.Errorf("generation_tokens_total after the run: %v (%v), want %d", v.GenerationTokens, err, reqs*outTokens)
	}
	// Requests 2..16 find the shared ~200-token prefix cached: most of their prompt.
	if hr := sum.PrefixCacheHitRate; hr == nil || *hr < 0.5 || *hr > 1 {
		t.Errorf("prefix-cache hit rate %v, want most of the prompts' tokens", deref(hr))
	}
	if sum.Preemptions == nil || sum.GenerationTokensPerS == nil || *sum.GenerationTokensPerS <= 0 {
		t.Errorf("preemptions %v, generation/s %v", sum.Preemptions, sum.GenerationTokensPerS)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// A simulated fleet's /metrics has each replica's engine figures under vLLM's names,
// labelled engine="I" as vLLM labels its data-parallel engines; a scrape adds them up
// (averages KV usage), so the fleet reads as one server.
func TestScrapeSimulatedFleet(t *testing.T) {
	p, err := sim.LoadProfile("h200-llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	p.Deployment.Replicas, p.Deployment.Router = 3, sim.RouterRoundRobin
	fleet := sim.NewEngineFleet(p) // not started: each replica's first request runs, the rest wait
	for range 4 {
		if _, err := fleet.Submit(t.Context(), sim.SeqRequest{PromptTokens: 64, MaxTokens: 8}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := server.New(fleet, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	for _, want := range []string{
		`vllm:num_requests_running{engine="0",model_name="llmbench-sim"} 1`,
		`vllm:num_requests_waiting{engine="0",model_name="llmbench-sim"} 1`,
		`vllm:num_requests_running{engine="1",model_name="llmbench-sim"} 1`,
		`vllm:num_requests_waiting{engine="1",model_name="llmbench-sim"} 0`,
		`vllm:num_requests_running{engine="2",model_name="llmbench-sim"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	fam, v, err := Parse(strings.NewReader(text))
	if err != nil || fam != FamilyVLLM || v.Running != 3 || v.Waiting != 1 {
		t.Errorf("parsed %q %+v, %v; want 3 running, 1 waiting", fam, v, err)
	}
	if rs := fleet.ReplicaStats(); v.KVCacheUsage != (rs[0].KVUsage+rs[1].KVUsage+rs[2].KVUsage)/3 || v.KVCacheUsage <= 0 {
		t.Errorf("KV usage %g, replicas %+v", v.KVCacheUsage, rs)
	}
}
