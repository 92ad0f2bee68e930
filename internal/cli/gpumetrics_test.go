package cli

import (
	"context"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/gpumetrics/gputest"
	"github.com/llmbench/llmbench/internal/memnet"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
)

// `llmbench run --gpu-metrics` against a replayed dcgm-exporter scrape (8 H100s, energy
// counters advancing at their recorded power), a replayed AMD device-metrics-exporter one
// (2 MI300Xs, power alone: energy integrated) and a URL that answers no GPU metrics, on
// synctest's fake clock. By hand: the GPUs draw 4889 W (DCGM: 612.5 + 598.25 + 640 + 587.75 +
// 605.5 + 621 + 593.25 + 630.75) plus 1390 W (AMD: 702 + 688) = 6279 W, so the level's energy
// is 6279 W times its measured window, J per output token that over its output tokens, and
// utilisation (8 x 96.5% + 2 x 86%) / 10 = 94.4% (both exporters scraped as often). The
// broken URL is one warning line; the run succeeds.
func TestRunGPUMetricsReplayed(t *testing.T) {
	loadDefaultTokenizer(t)
	dcgmScrape, err := os.ReadFile("../gpumetrics/testdata/dcgm-8xh100.prom")
	if err != nil {
		t.Fatal(err)
	}
	amdScrape, err := os.ReadFile("../gpumetrics/testdata/amd-2xmi300x.prom")
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		dcgm, err := gputest.Replay(dcgmScrape, start, false)
		if err != nil {
			t.Fatal(err)
		}
		amd, err := gputest.Replay(amdScrape, start, true)
		if err != nil {
			t.Fatal(err)
		}
		serveSimWith(t, map[string]http.Handler{"/dcgm/metrics": dcgm, "/amd/metrics": amd})

		fr := runAgainst(t, memnet.URL, 200, "--gpu-metrics", memnet.URL+"/dcgm/metrics",
			"--gpu-metrics", memnet.URL+"/amd/metrics", "--gpu-metrics", memnet.URL+"/nothing/metrics")
		if fr.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", fr.code, fr.stdout, fr.stderr)
		}
		var warnings []string
		for _, ln := range strings.Split(fr.stderr, "\n") {
			if strings.Contains(ln, "--gpu-metrics") {
				warnings = append(warnings, ln)
			}
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], memnet.URL+"/nothing/metrics") || !strings.Contains(warnings[0], "HTTP 404") {
			t.Errorf("want one warning naming the broken URL and its error, got %q", warnings)
		}
		l := fr.sum.Levels[0]
		g := l.GPU
		if g == nil {
			t.Fatalf("no levels[0].gpu\n%s", fr.stdout)
		}
		if g.GPUs != 10 || g.Source != gpumetrics.SourceDCGM+"+"+gpumetrics.SourceAMD || g.EnergyFrom != gpumetrics.FromBoth || g.FailedScrapes == 0 {
			t.Errorf("gpus %d, source %q, energy from %q, failed scrapes %d", g.GPUs, g.Source, g.EnergyFrom, g.FailedScrapes)
		}
		if math.Abs(g.WindowS-l.DurationS) > 1e-6 {
			t.Errorf("window %v s, level duration %v s: want the measured window", g.WindowS, l.DurationS)
		}
		const watts = 6279.0
		e := watts * g.WindowS
		near := func(got *float64, want float64) bool {
			return got != nil && math.Abs(*got-want) <= 1e-9*want
		}
		if !near(g.EnergyJ, e) || !near(g.PowerW, watts) || !near(g.PowerPerGPUW, watts/10) {
			t.Errorf("energy %v J, power %v W, per GPU %v W; want %v J, %v W, %v W", deref(g.EnergyJ), deref(g.PowerW), deref(g.PowerPerGPUW), e, watts, watts/10)
		}
		if l.TotalOutputTokens != 200*12 || !near(g.JoulesPerOutputToken, e/2400) || !near(g.JoulesPerRequest, e/float64(l.Completed)) || !near(g.OutputTokensPerJoule, 2400/e) {
			t.Errorf("%d tokens: J/token %v, J/request %v, tokens/J %v; want %v, %v, %v", l.TotalOutputTokens,
				deref(g.JoulesPerOutputToken), deref(g.JoulesPerRequest), deref(g.OutputTokensPerJoule), e/2400, e/float64(l.Completed), 2400/e)
		}
		if g.Utilization == nil || math.Abs(g.Utilization.Mean-94.4) > 1e-9 || g.Utilization.Max != 100 {
			t.Errorf("utilization %+v, want mean 94.4%%, max 100%%", g.Utilization)
		}
		for _, want := range []string{"GPU Metrics (10 GPUs, DCGM+AMD)", "GPU energy per output token (J):", "Mean GPU power, all GPUs (W):            6279.0"} {
			if !strings.Contains(fr.stdout, want) {
				t.Errorf("console lacks %q:\n%s", want, fr.stdout)
			}
		}
	})
}

// The tests find no local nvidia-smi unless one says otherwise: a run against a loopback
// server must not read the machine's GPUs.
func init() { lookPath = func(string) (string, error) { return "", exec.ErrNotFound } }

// A run against a server on this machine with no --gpu-metrics reads the local nvidia-smi (a
// script answering as it does, for 8 H100s at 4889 W together): energy is the power
// integrated over the measured window, whatever the real time the level took.
func TestRunLocalNvidiaSMI(t *testing.T) {
	defer func(old func(string) (string, error)) { lookPath = old }(lookPath)
	dir := t.TempDir()
	script := filepath.Join(dir, "nvidia-smi")
	csv, err := filepath.Abs("../gpumetrics/testdata/nvidia-smi-8xh100.csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec cat '"+csv+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	lookPath = func(string) (string, error) { return script, nil }
	url, _ := startFaultySim(t, "", 1)
	fr := runAgainst(t, url, 40)
	if fr.code != 0 {
		t.Fatalf("exit %d\n%s", fr.code, fr.stderr)
	}
	l := fr.sum.Levels[0]
	g := l.GPU
	if g == nil || g.Source != gpumetrics.SourceNvidiaSMI || g.GPUs != 8 || g.EnergyFrom != gpumetrics.FromPower {
		t.Fatalf("levels[0].gpu = %+v\n%s", g, fr.stdout)
	}
	e := 4889 * g.WindowS
	if math.Abs(g.WindowS-l.DurationS) > 1e-6 || g.EnergyJ == nil || math.Abs(*g.EnergyJ-e) > 1e-9*e ||
		math.Abs(*g.JoulesPerOutputToken-e/float64(l.TotalOutputTokens)) > 1e-9 {
		t.Errorf("window %v s (level %v s), energy %v J, want %v J", g.WindowS, l.DurationS, deref(g.EnergyJ), e)
	}
	if !strings.Contains(fr.stdout, "GPU metrics: the local "+script) {
		t.Errorf("the run does not say it reads the local nvidia-smi:\n%s", fr.stdout)
	}
}

// serveSimWith serves a fast simulator in memory, for a run in a synctest bubble, with the
// handlers beside it on their paths (GPU exporters on the server's host), until the test ends.
func serveSimWith(t *testing.T, handlers map[string]http.Handler) {
	t.Helper()
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	p.Cost.DecodeStepMs, p.Cost.DecodeGrowth, p.Cost.PrefillMsPerToken = 2, 0, 0.001
	ctx, cancel := context.WithCancel(context.Background())
	eng := sim.NewEngineOnGoTimers(p)
	go eng.Start(ctx)
	srv, err := server.New(eng, server.Options{ModelName: faultModel})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	hs := server.HTTPServer("", srv)
	mux := http.NewServeMux()
	for path, h := range handlers {
		mux.Handle(path, h)
	}
	mux.Handle("/", hs.Handler)
	hs.Handler = mux
	go hs.Serve(memTarget(t))
	t.Cleanup(func() {
		hs.Close()
		cancel()
	})
}

// An exporter that answers the probe and then fails: one warning line for the whole run
// (not one a level), the run succeeds, and its levels have no GPU figures, not zeros.
func TestRunGPUExporterFailsMidRun(t *testing.T) {
	loadDefaultTokenizer(t)
	dcgmScrape, err := os.ReadFile("../gpumetrics/testdata/dcgm-8xh100.prom")
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		replay, err := gputest.Replay(dcgmScrape, time.Now(), false)
		if err != nil {
			t.Fatal(err)
		}
		var n atomic.Int64
		flaky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				replay.ServeHTTP(w, r)
				return
			}
			http.Error(w, "DCGM: failed to read fields", http.StatusInternalServerError)
		})
		serveSimWith(t, map[string]http.Handler{"/dcgm/metrics": flaky})
		fr := runAgainst(t, memnet.URL, 40, "--concurrency", "4,8", "--gpu-metrics", memnet.URL+"/dcgm/metrics")
		if fr.code != 0 {
			t.Fatalf("exit %d\n%s", fr.code, fr.stderr)
		}
		stderr := strings.Join(strings.Fields(fr.stderr), " ") // unwrapped
		if got := strings.Count(stderr, "--gpu-metrics"); got != 1 ||
			!strings.Contains(stderr, "warning: --gpu-metrics "+memnet.URL+"/dcgm/metrics: every scrape failed during level concurrency 4") ||
			!strings.Contains(stderr, "HTTP 500 DCGM: failed to read fields") {
			t.Errorf("want one warning naming the URL and its error, got %d:\n%s", got, fr.stderr)
		}
		if len(fr.sum.Levels) != 2 {
			t.Fatalf("%d levels", len(fr.sum.Levels))
		}
		for _, l := range fr.sum.Levels {
			g := l.GPU
			if g == nil || g.FailedScrapes == 0 || g.FailedScrapes != g.Scrapes || g.EnergyJ != nil || g.PowerW != nil ||
				g.JoulesPerOutputToken != nil || g.Utilization != nil || g.GPUs != 0 {
				t.Errorf("%s: gpu %+v", l.Name, g)
			}
		}
	})
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
