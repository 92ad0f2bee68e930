package calibrate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmbench/llmbench/internal/bench"
)

// TestProbeStopsAtAFailedStep: against a server with neither /props nor /tokenize, Probe
// chooses o200k_base, hands its runner step 1's Spec (the test request on, the prompts
// seeded Seed+1), and stops at the runner's error with the step it failed, leaving no
// folder behind; interrupted, it says so.
func TestProbeStopsAtAFailedStep(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	refused := errors.New("refused")
	for _, interrupt := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		dir := filepath.Join(t.TempDir(), "fit.probe")
		var (
			chose string
			ran   []*bench.Spec
		)
		r := ProbeRun{URL: srv.URL, API: "openai-chat", Tokenizer: TokenizerAuto, Seed: 10, Dir: dir,
			Run: func(ctx context.Context, spec *bench.Spec) error {
				ran = append(ran, spec)
				if interrupt {
					cancel()
				}
				return refused
			},
			Notes: ProbeNotes{Tokenizer: func(tok string, _ bool) { chose = tok }}}
		_, _, err := Probe(ctx, r)
		cancel()
		var (
			step  *StepError
			probe *ProbeError
		)
		switch {
		case interrupt && (!errors.As(err, &probe) || probe.Cause != ProbeInterrupted):
			t.Errorf("interrupted: %v, want a ProbeInterrupted ProbeError", err)
		case !interrupt && (!errors.As(err, &step) || !errors.Is(err, refused) || step.Tokenizer != "o200k_base" || step.Step.Name == ""):
			t.Errorf("%v (%+v), want the runner's error in a StepError of o200k_base", err, step)
		}
		if chose != "o200k_base" || len(ran) != 1 || !ran[0].TestRequest || ran[0].Seed != 11 || ran[0].Tokenizer != "o200k_base" {
			t.Errorf("chose %q, ran %d steps, the first %+v", chose, len(ran), ran)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", dir, err)
		}
	}
}
