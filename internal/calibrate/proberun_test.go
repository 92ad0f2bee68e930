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
	"github.com/llmbench/llmbench/internal/fielderr"
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

// A tokenizer's folder whose chat template does not load stops the probe before it asks the
// server anything, as a setting keyed by the tokenizer; one that loads sizes every step's chat
// prompts, as run's would be.
func TestProbeFindsTheTokenizersChatTemplate(t *testing.T) {
	asked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked++
		http.NotFound(w, r)
	}))
	defer srv.Close()
	for _, c := range []struct {
		template string
		ok       bool
	}{{"{% if %}", false}, {"{{ messages[0]['content'] }}", true}} {
		tok := t.TempDir()
		for name, text := range map[string]string{"tokenizer.json": "{}", "chat_template.jinja": c.template} {
			if err := os.WriteFile(filepath.Join(tok, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		asked = 0
		var ran []*bench.Spec
		r := ProbeRun{URL: srv.URL, API: "openai-chat", Tokenizer: tok, Seed: 10, Dir: filepath.Join(t.TempDir(), "fit.probe"),
			Run: func(_ context.Context, spec *bench.Spec) error {
				ran = append(ran, spec)
				return errors.New("refused")
			}}
		_, _, err := Probe(t.Context(), r)
		var (
			probe *ProbeError
			field *fielderr.Error
		)
		switch {
		case !c.ok && (!errors.As(err, &probe) || probe.Cause != ProbeSettings || !errors.As(err, &field) || field.Field != "Tokenizer" || asked != 0 || len(ran) != 0):
			t.Errorf("a template that does not load: %v after %d requests and %d steps, want a ProbeSettings error keyed Tokenizer before any", err, asked, len(ran))
		case c.ok && (len(ran) != 1 || ran[0].ChatTemplate == nil):
			t.Errorf("a template that loads: %d steps ran, the first with template %v", len(ran), ran)
		}
	}
}
