package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/progress"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/specflags"
)

// conclude says what the console says after a run, and maps its outcome, or the error
// that kept it from running, to an exit code.
func conclude(ctx context.Context, stdio Stdio, c *bench.Spec, con specflags.Console, out bench.Outcome, err error) error {
	if err != nil {
		return benchError(err)
	}
	sum := out.Summary
	say(stdio.Err, c.StampNote(sum))
	if len(sum.Levels) > 1 || (con.Quiet && len(sum.Levels) > 0) {
		if !con.Quiet {
			fmt.Fprintln(stdio.Out)
		}
		report.ConsoleLadder(stdio.Out, sum, report.ConsoleOptions{Wide: con.Wide})
	}
	say(stdio.Err, concludingNotes(c, out.Uncounted)...)
	fmt.Fprintf(stdio.Out, "\nResults: %s\n", c.Output.Dir)
	return exitStatus(ctx, sum, out.Err)
}

// benchOf is the benchmark of c, said on stdio as con says (a live run's target, scrape
// and connection counts are bench.RunLive's to find).
func benchOf(stdio Stdio, c *bench.Spec, con specflags.Console) bench.Config {
	return bench.Config{Spec: *c,
		Describe: bench.Describe{Version: Version, Target: report.NewTarget(c.URL, c.API, c.Model)},
		Console: bench.Console{Out: stdio.Out, Quiet: con.Quiet,
			Warn: func(err error) { fmt.Fprintln(stdio.Err, warningLine(err)) },
			Stopped: func(level string) {
				fmt.Fprintf(stdio.Out, "\nThe ladder ends here (--stop-on-saturation): the server could not keep up with %s.\n", level)
			},
			Progress: func(name string, total int, d time.Duration) bench.Progress {
				return progress.NewLevel(stdio.Err, name, total, d, !c.Live, con.NoProgress)
			}},
	}
}

// benchError maps an error of bench's, which kept a run from starting or from writing
// its results, to the flags and exit code the user knows.
func benchError(err error) error {
	// Only a join of bench's own (Config.Validate's) is split: an error it passes on may hold one.
	return fielderr.Map(err, benchProblem)
}

// benchProblem is benchError of one problem.
func benchProblem(err error) error {
	var (
		field   *fielderr.Error
		invalid *bench.InvalidError
		model   *bench.ModelError
		test    *bench.TestRequestError
		intr    *bench.InterruptedError
		results *bench.ResultsError
	)
	switch {
	case errors.As(err, &field):
		return specflags.Named(err)
	case errors.As(err, &invalid):
		return invalidUsage(err)
	case errors.As(err, &model) && model.TimedOut():
		return withCode(ExitFailure, fmt.Errorf("no --model given, and the server's model list did not answer within --timeout, "+
			"which is shorter than the server takes to answer: raise --timeout (each request's whole limit), or give --model (%w)", model.Err))
	case errors.As(err, &model) && model.Err != nil:
		return withCode(ExitFailure, fmt.Errorf("no --model given, and the server's model list did not answer: %w", model.Err))
	case errors.As(err, &model):
		return withCode(ExitFailure, errors.New("no --model given, and the server lists no model"))
	case errors.As(err, &test):
		return withCode(ExitLevelErrors, fmt.Errorf("the test request failed, so nothing was measured (--test-request=false skips it): %s", test.Msg))
	case errors.As(err, &intr) && intr.During == bench.DuringStartAt:
		return withCode(ExitInterrupted, errors.New("interrupted before --start-at"))
	case errors.As(err, &intr) && intr.During == bench.DuringModelList:
		return withCode(ExitInterrupted, errors.New("interrupted while asking the server for its models (no --model given): nothing was measured"))
	case errors.As(err, &intr):
		return withCode(ExitInterrupted, errors.New("interrupted during the test request"))
	case errors.As(err, &results):
		return withCode(ExitFailure, fmt.Errorf("%w; the requests measured are kept in %s: once that is fixed, this writes the summary and reports from them (or add --output-dir elsewhere):\n%s",
			err, results.Dir, reportCommand(results.Dir)))
	}
	return err
}

// invalidUsage is err, a *bench.InvalidError's, made a usage error (exit 2) in the words of
// the flags behind it (specflags.Invalid); any other err as it is.
func invalidUsage(err error) error {
	if invalid := specflags.Invalid(err); invalid != nil {
		return usageError(invalid)
	}
	return err
}

// exitStatus maps the run's outcome to an exit code.
func exitStatus(ctx context.Context, sum *report.Summary, runErr error) error {
	if ctx.Err() != nil {
		return withCode(ExitInterrupted, nil)
	}
	if runErr != nil {
		return withCode(ExitFailure, runErr)
	}
	// A level's failure is exit 4, before the SLO verdicts' exit 3 (bench.Failed).
	switch why, l := bench.Failed(sum); why {
	case bench.LevelErrors:
		return withCode(ExitLevelErrors, fmt.Errorf("%s was stopped for errors (--max-error-rate): %s; the records have every one", l.Name, report.FirstErrors(l)))
	case bench.LevelUnreachable:
		return withCode(ExitLevelErrors, fmt.Errorf("%s was stopped: its first %d requests all failed to connect (is the server up at --url?)", l.Name, load.UnreachableFirst))
	case bench.LevelNoSuccess:
		return withCode(ExitLevelErrors, fmt.Errorf("no request of %s succeeded: %s; the records have every one", l.Name, report.FirstErrors(l)))
	case bench.SLOsMissed:
		return withCode(ExitSLOFailed, errors.New("no level met the SLOs"))
	}
	return nil
}

// warningLine is the console's line for what bench found amiss beside the run: its typed
// warnings said with the flags behind them, any other as it is.
func warningLine(err error) string {
	var unlisted *bench.UnlistedModel
	var gpu *bench.GPUProbeError
	switch {
	case errors.As(err, &unlisted):
		shown := unlisted.Listed
		if len(shown) > 10 {
			shown = shown[:10]
		}
		more := ""
		if len(unlisted.Listed) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(unlisted.Listed)-len(shown))
		}
		return fmt.Sprintf("warning: --model %q is not among the models the server lists (%s%s): a server that serves one model whatever the request names (llama.cpp) answers it anyway, and summary.json records %q; check --model",
			unlisted.Model, strings.Join(shown, ", "), more, unlisted.Model)
	case errors.As(err, &gpu) && gpu.URL == "":
		return fmt.Sprintf("warning: %v; no GPU figures (--gpu-metrics URL reads an exporter instead)", gpu.Err)
	case errors.As(err, &gpu):
		return fmt.Sprintf("warning: --gpu-metrics: %v; the run goes on, scraping it each level (no GPU figures without its readings)", gpu.Err)
	}
	return err.Error()
}

// say writes each note that says something on its own line.
func say(w io.Writer, notes ...string) {
	for _, n := range notes {
		if n != "" {
			fmt.Fprintln(w, n)
		}
	}
}
