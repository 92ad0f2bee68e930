package servermetrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// handlerClient serves requests in memory with h, so that scrapes run inside a synctest
// bubble (a real connection's reads would keep fake time from advancing). Like a real
// transport, it gives up when the request's context ends even if h does not.
func handlerClient(h http.Handler) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(rec, r)
		}()
		select {
		case <-done:
			return rec.Result(), nil
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// vllmText renders an exposition with vLLM's names.
func vllmText(running, waiting, kv, preempt, prompt, gen, hits, queries float64) string {
	return fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} %g
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} %g
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} %g
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m"} %g
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} %g
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="m"} %g
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{model_name="m"} %g
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{model_name="m"} %g
`, running, waiting, kv, preempt, prompt, gen, hits, queries)
}

// A level 10 s into the run, scraped every second for 5.5 s against a server whose figures
// follow the clock: the samples land on the ticks plus one final scrape at Stop, and the
// summary's rates are the server's exact slopes.
func TestScraperFollowsServerOverFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runStart := time.Now()
		time.Sleep(10 * time.Second)
		levelStart := time.Now()
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Accept") == "" || !strings.Contains(r.Header.Get("Accept"), "version=0.0.4") {
				t.Errorf("Accept = %q, want the 0.0.4 text format", r.Header.Get("Accept"))
			}
			el := time.Since(levelStart).Seconds()
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			fmt.Fprint(w, vllmText(el, 2*el, el/10, 7+el, 5000+300*el, 9000+120*el, 1000+75*el, 2000+300*el))
		})
		s := start(t.Context(), "http://sim/metrics", time.Second, runStart, handlerClient(h))
		time.Sleep(5500 * time.Millisecond)
		ser := s.Stop()
		if again := s.Stop(); len(again.Samples) != len(ser.Samples) {
			t.Errorf("second Stop returned %d samples, want %d", len(again.Samples), len(ser.Samples))
		}

		wantT := []float64{10, 11, 12, 13, 14, 15, 15.5}
		if len(ser.Samples) != len(wantT) || ser.Scrapes != len(wantT) || ser.Failed != 0 {
			t.Fatalf("got %d samples of %d scrapes (%d failed), want %d of %d (0 failed): %+v",
				len(ser.Samples), ser.Scrapes, ser.Failed, len(wantT), len(wantT), ser.Samples)
		}
		for i, smp := range ser.Samples {
			if smp.T.Seconds() != wantT[i] {
				t.Errorf("sample %d at %v, want %vs", i, smp.T, wantT[i])
			}
		}
		if ser.Family != FamilyVLLM || ser.URL != "http://sim/metrics" {
			t.Errorf("family %q, URL %q", ser.Family, ser.URL)
		}

		sum := Summarize(ser)
		// Gauges sampled at el = 0..5 and 5.5.
		mean := (0.0 + 1 + 2 + 3 + 4 + 5 + 5.5) / 7
		checkStat(t, "running", sum.Running, mean, 5.5)
		checkStat(t, "waiting", sum.Waiting, 2*mean, 11)
		checkStat(t, "kv", sum.KVCacheUsage, mean/10, 0.55)
		checkPtr(t, "preemptions", sum.Preemptions, 5.5)
		checkPtr(t, "prompt tokens/s", sum.PromptTokensPerS, 300)
		checkPtr(t, "generation tokens/s", sum.GenerationTokensPerS, 120)
		checkPtr(t, "prefix hit rate", sum.PrefixCacheHitRate, 0.25)
	})
}

// Failures are counted and the scraping goes on: two 500s, one scrape that hangs past its
// one-interval timeout, then good ones.
func TestScraperCountsFailuresAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		levelStart := time.Now()
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch el := time.Since(levelStart); {
			case el < 2*time.Second:
				http.Error(w, "engine dead", http.StatusInternalServerError)
			case el < 3*time.Second:
				<-r.Context().Done()
			default:
				fmt.Fprint(w, vllmText(1, 0, 0.5, 0, 10, 20, 0, 0))
			}
		})
		s := start(t.Context(), "http://sim/metrics", time.Second, levelStart, handlerClient(h))
		time.Sleep(4500 * time.Millisecond)
		ser := s.Stop()
		if ser.Scrapes != 6 || ser.Failed != 3 || len(ser.Samples) != 3 {
			t.Fatalf("scrapes %d, failed %d, samples %d; want 6, 3, 3", ser.Scrapes, ser.Failed, len(ser.Samples))
		}
		if !strings.Contains(ser.LastError, "timed out") {
			t.Errorf("last error %q, want the timeout", ser.LastError)
		}
		sum := Summarize(ser)
		if sum.Scrapes != 6 || sum.FailedScrapes != 3 {
			t.Errorf("summary scrapes %d failed %d", sum.Scrapes, sum.FailedScrapes)
		}
		// prefix queries did not grow: no hit rate, rather than 0/0.
		if sum.PrefixCacheHitRate != nil {
			t.Errorf("hit rate %v with no queries over the level, want none", *sum.PrefixCacheHitRate)
		}
	})
}

// A dead endpoint never holds up the level's end: Stop abandons the scrape in flight (not
// counted) and takes no final one.
func TestScraperStopDoesNotWaitForAHungEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		s := start(t.Context(), "http://sim/metrics", time.Second, time.Now(), handlerClient(h))
		time.Sleep(2500 * time.Millisecond)
		before := time.Now()
		ser := s.Stop()
		if d := time.Since(before); d != 0 {
			t.Errorf("Stop took %v of fake time", d)
		}
		if ser.Scrapes != 2 || ser.Failed != 2 || len(ser.Samples) != 0 {
			t.Errorf("scrapes %d failed %d samples %d; want 2, 2, 0", ser.Scrapes, ser.Failed, len(ser.Samples))
		}
		sum := Summarize(ser)
		if sum.Family != FamilyUnknown || sum.Running != nil || sum.GenerationTokensPerS != nil {
			t.Errorf("summary of no samples: %+v", sum)
		}
	})
}

// The run's context ending stops the scraper by itself, and Stop then takes no final scrape.
func TestScraperEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n++
			fmt.Fprint(w, vllmText(1, 0, 0.5, 0, 10, 20, 0, 0))
		})
		ctx, cancel := context.WithCancel(t.Context())
		s := start(ctx, "http://sim/metrics", time.Second, time.Now(), handlerClient(h))
		time.Sleep(1500 * time.Millisecond)
		cancel()
		time.Sleep(3 * time.Second)
		ser := s.Stop()
		if n != 2 || ser.Scrapes != 2 {
			t.Errorf("%d requests, %d scrapes; want 2 (at 0 s and 1 s)", n, ser.Scrapes)
		}
	})
}

// Memory stays bounded however long the level: the series is thinned evenly and the newest
// sample is always kept.
func TestScraperSeriesIsBounded(t *testing.T) {
	s := &Scraper{stride: 1}
	const n = 5*maxSamples + 123
	for i := range n {
		s.add(Sample{T: time.Duration(i) * time.Second})
	}
	ss := s.series.Samples
	if len(ss) > maxSamples || len(ss) < maxSamples/4 {
		t.Fatalf("%d samples kept of %d, want between %d and %d", len(ss), n, maxSamples/4, maxSamples)
	}
	if ss[0].T != 0 || ss[len(ss)-1].T != (n-1)*time.Second {
		t.Errorf("first %v last %v, want 0 and %v", ss[0].T, ss[len(ss)-1].T, (n-1)*time.Second)
	}
	stride := time.Duration(s.stride) * time.Second
	for i := 1; i < len(ss); i++ {
		if gap := ss[i].T - ss[i-1].T; gap <= 0 || gap > stride {
			t.Fatalf("gap %v between samples %d and %d, want (0, %v]", gap, i-1, i, stride)
		}
	}
}

// Against a real HTTP server: the transport path, and the endpoint answering what we cannot
// read.
func TestScraperOverHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprint(w, vllmText(3, 1, 0.5, 0, 10, 20, 0, 0))
		case "/openmetrics":
			w.Header().Set("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
			fmt.Fprint(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n# EOF\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	// Each scrape's timeout is the interval: intervals of tens of ms keep a loaded machine's
	// loopback round trips (several ms under -race beside other tests) inside it.
	s := Start(t.Context(), srv.URL+"/metrics", 50*time.Millisecond, time.Now(), nil)
	time.Sleep(200 * time.Millisecond)
	ser := s.Stop()
	if ser.Failed != 0 || len(ser.Samples) < 2 || ser.Family != FamilyVLLM {
		t.Fatalf("scrapes %d failed %d (%s) samples %d family %q", ser.Scrapes, ser.Failed, ser.LastError, len(ser.Samples), ser.Family)
	}
	for i := 1; i < len(ser.Samples); i++ {
		if ser.Samples[i].T <= ser.Samples[i-1].T {
			t.Errorf("sample times not increasing: %v then %v", ser.Samples[i-1].T, ser.Samples[i].T)
		}
	}
	if got := Summarize(ser).Running; got == nil || got.Mean != 3 {
		t.Errorf("running %+v, want mean 3", got)
	}

	for path, want := range map[string]string{
		"/openmetrics": "OpenMetrics",
		"/nope":        "HTTP 404",
	} {
		s := Start(t.Context(), srv.URL+path, 100*time.Millisecond, time.Now(), nil)
		time.Sleep(150 * time.Millisecond)
		ser := s.Stop()
		if ser.Failed == 0 || ser.Failed != ser.Scrapes || !strings.Contains(ser.LastError, want) {
			t.Errorf("%s: scrapes %d failed %d, last error %q; want all failed with %q", path, ser.Scrapes, ser.Failed, ser.LastError, want)
		}
	}
}

func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/vllm":
			fmt.Fprint(w, vllmV1)
		case "/sglang":
			fmt.Fprint(w, sglang)
		case "/go":
			fmt.Fprint(w, goRuntimeOnly)
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<!doctype html><title>dashboard</title>\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	for _, tc := range []struct{ url, family, err string }{
		{srv.URL + "/vllm", FamilyVLLM, ""},
		{srv.URL + "/sglang", FamilySGLang, ""},
		{srv.URL + "/go", "", "without vLLM, SGLang, TGI or llama.cpp metrics"},
		{srv.URL + "/html", "", "parsing Prometheus text"},
		{srv.URL + "/metrics", "", "HTTP 404"},
		{deadURL + "/metrics", "", "connection refused"},
		{"::not a url", "", "metrics URL"},
	} {
		fam, err := Probe(t.Context(), tc.url, nil)
		if tc.err == "" {
			if err != nil || fam != tc.family {
				t.Errorf("Probe(%s) = %q, %v; want %q", tc.url, fam, err, tc.family)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Probe(%s) error %v, want one containing %q", tc.url, err, tc.err)
		}
	}
}

func TestDefaultURL(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000/metrics", ""},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000/metrics", ""},
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/metrics", ""},
		{"https://gw.example/vllm/v1/?x=1", "https://gw.example/vllm/metrics", ""},
		{"localhost:8000", "", "want scheme://host"},
		{"127.0.0.1:8000", "", "base URL"},
		{"http://[::1", "", "base URL"},
	} {
		got, err := DefaultURL(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("DefaultURL(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("DefaultURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func checkStat(t *testing.T, name string, got *Stat, mean, mx float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: missing", name)
		return
	}
	if !near(got.Mean, mean) || !near(got.Max, mx) {
		t.Errorf("%s = %+v, want mean %v max %v", name, *got, mean, mx)
	}
}

func checkPtr(t *testing.T, name string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: missing, want %v", name, want)
	} else if !near(*got, want) {
		t.Errorf("%s = %v, want %v", name, *got, want)
	}
}

func near(a, b float64) bool { return a == b || (a-b < 1e-9*max(1, b) && b-a < 1e-9*max(1, b)) }
