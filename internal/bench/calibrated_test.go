package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// LimitNote warns of prompts a deployment cuts, or of requests it refuses, and says nothing
// without a limit or within it.
func TestLimitNote(t *testing.T) {
	var s Spec
	s.Workload.InputTokens, s.Workload.OutputTokens = workload.Fixed(3000), workload.Fixed(2000)
	for _, tc := range []struct {
		d    sim.Deployment
		want string
	}{
		{sim.Deployment{}, ""},
		{sim.Deployment{MaxModelLen: 8192}, ""},
		{sim.Deployment{MaxModelLen: 4096}, "warning: prompts up to 3000 tokens and outputs up to 2000 exceed the deployment's max_model_len of 4096"},
		{sim.Deployment{MaxModelLen: 2048, TruncatePrompts: true}, "warning: prompts up to 3000 tokens, and the server cuts any longer than its 2048-token context"},
		{sim.Deployment{MaxModelLen: 4096, TruncatePrompts: true}, ""},
	} {
		if got := s.LimitNote(tc.d); tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%+v: %q, want %q…", tc.d, got, tc.want)
		}
	}
}

// Validity states the calibrated range with the held-out error of the run's kind of loop,
// and warns of an open loop far past the probed rates.
func TestValidity(t *testing.T) {
	nan := math.NaN()
	c := &sim.Calibration{Source: "http://x", Date: "2026-01-02", PromptTokens: [2]int{100, 1000}, OutputTokens: [2]int{50, 500},
		Concurrency: [2]int{1, 16}, Error: figure.Values{}, ErrorClosed: figure.Values{}, ErrorOpen: figure.Values{}, OpenRates: [2]float64{1, 4}}
	for k := range c.Error {
		c.Error[k], c.ErrorClosed[k], c.ErrorOpen[k] = nan, nan, nan
	}
	c.ErrorOpen[figure.TTFTP50], c.ErrorOpen[figure.TPOTP50] = 7, 3
	var s Spec
	s.Workload.InputTokens, s.Workload.OutputTokens = workload.Fixed(500), workload.Fixed(100)
	s.Levels = []load.Level{{Index: 0, Rate: 2}}
	line, warnings := s.Validity(c)
	if !strings.HasPrefix(line, "Calibrated on http://x (2026-01-02): prompts 100–1000 tokens") || !strings.Contains(line, "open loops TTFT P50 7.0%") || len(warnings) != 0 {
		t.Errorf("within range: %q, %q", line, warnings)
	}
	s.Levels = []load.Level{{Index: 0, Rate: 20}}
	if _, warnings := s.Validity(c); len(warnings) == 0 || !strings.HasPrefix(warnings[0], "warning: an open loop at 20 req/s, beyond 1.5× the fastest probed (4 req/s)") {
		t.Errorf("20 req/s: %q", warnings)
	}
}
