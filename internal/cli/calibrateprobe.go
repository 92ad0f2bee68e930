package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/calibrate"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/specflags"
)

// probe runs the designed probe of f's request, each step a run folder under dir run as run
// runs one, and returns the points the steps measured and what the server published.
func probe(ctx context.Context, stdio Stdio, f *calibrateFlags, dir string) (*calibrate.Points, calibrate.Published, error) {
	r := f.req.ProbeRun
	var err error
	// The same key rules as run's (a file, the flag, or $OPENAI_API_KEY).
	if r.APIKey, err = specflags.APIKey(r.APIKey, f.apiKeyFile); err != nil {
		return nil, calibrate.Published{}, usageError(err)
	}
	if r.Headers, err = specflags.Headers(f.headers); err != nil {
		return nil, calibrate.Published{}, usageError(err)
	}
	r.Dir = dir
	r.Run = func(ctx context.Context, spec *bench.Spec) error {
		return runLive(ctx, Stdio{In: stdio.In, Out: io.Discard, Err: stdio.Err}, spec, specflags.Console{Quiet: true, NoProgress: f.quiet})
	}
	if !f.quiet {
		r.Notes = probeNotes(stdio.Out, r.URL)
	}
	set, pub, err := calibrate.Probe(ctx, r)
	return set, pub, probeError(err)
}

// probeNotes say what the probe of url does, on out.
func probeNotes(out io.Writer, url string) calibrate.ProbeNotes {
	return calibrate.ProbeNotes{
		Checking: func(pub calibrate.Published) {
			fmt.Fprintf(out, "The server publishes %d slots of %d tokens; checking whether they share one KV cache\n", pub.Slots, pub.SeqTokens)
		},
		Limits: func(pub calibrate.Published) {
			fmt.Fprintln(out, console.Wrap(fmt.Sprintf("The server has %d slots of %d tokens, a KV cache of %d tokens (%s)", pub.Slots, pub.SeqTokens, pub.ContextTokens, pub.How), 0, 2, console.Width))
		},
		Tokenizer: func(tok string, slotContext bool) {
			if tok == "server" {
				fmt.Fprintln(out, "Sizing prompts in the server's own tokens (its /tokenize)")
				return
			}
			msg := "The server has no /tokenize: sizing prompts with o200k_base (--tokenizer names the model's own)"
			if slotContext {
				msg += ", within 70% of a slot's context"
			}
			fmt.Fprintln(out, console.Wrap(msg, 0, 2, console.Width))
		},
		Start: func(dir string) { fmt.Fprintf(out, "Probing %s; each step is a run folder under %s\n", url, dir) },
		Step: func(n int, step calibrate.Step, pt calibrate.Point) {
			m := pt.Measured
			fmt.Fprintf(out, "  %2d %-16s %4d requests  TTFT P50 %8.2f ms  TPOT P50 %7.2f ms\n", n, step.Name, pt.Completed, m[figure.TTFTP50], m[figure.TPOTP50])
		},
	}
}

// probeError gives a probe's error its exit code, and says with the flags what to do.
func probeError(err error) error {
	var (
		pe   *calibrate.ProbeError
		step *calibrate.StepError
	)
	switch {
	case errors.As(err, &step):
		return fmt.Errorf("%w%s", err, stepHint(step.Step, step.Tokenizer))
	case !errors.As(err, &pe):
		return err
	}
	switch pe.Cause {
	case calibrate.ProbeSettings:
		return usageError(specflags.NamedFlags(pe.Err, calibrateFlagNames))
	case calibrate.ProbeInterrupted:
		return withCode(ExitInterrupted, pe.Err)
	case calibrate.ProbeUnmeasured:
		return withCode(ExitLevelErrors, pe.Err)
	}
	return withCode(ExitFailure, pe.Err)
}

// stepHint says what to do when probe step failed, with the limit of the server's it may
// have run into.
func stepHint(step calibrate.Step, tok string) string {
	switch in, c := step.Limit(); {
	case in > 0:
		hint := fmt.Sprintf(". If the server refused a %d-token prompt as too long, give --max-input-tokens below its context", in)
		if tok != "server" {
			hint += fmt.Sprintf(", or --tokenizer with the model's own (%s counts prompts, and the server's count may be longer)", tok)
		}
		return hint
	case c > 0:
		return fmt.Sprintf(". If the server refused %d requests in flight, give --max-concurrency below that", c)
	}
	return ""
}
