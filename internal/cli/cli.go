// Package cli implements llmbench's subcommands: one file per subcommand. Commands return
// errors; Main maps them to exit codes, so main stays thin and every path is testable.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/buildinfo"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/fielderr"
)

// Exit codes.
const (
	ExitOK        = 0
	ExitFailure   = 1 // the run could not be done
	ExitUsage     = 2 // invalid flags or arguments
	ExitSLOFailed = 3 // SLOs were given and no level met them
	// ExitLevelErrors: a level had no successful request, or was stopped for errors
	// (--max-error-rate).
	ExitLevelErrors = 4
	ExitRegression  = 5 // compare --fail-on-regression: a figure got worse beyond noise and the threshold
	ExitInterrupted = 130
)

// Version is set at build time with -ldflags "-X github.com/llmbench/llmbench/internal/cli.Version=…";
// otherwise it is what Go stamped into the binary (buildinfo.Version).
var Version = buildinfo.Version()

// Stdio are the streams a command reads and writes.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// UsageError is invalid input (flags, arguments, an unknown command): exit code 2, with a
// hint. Every usage error a command returns, cobra's own included, is one: flag errors
// through the root's FlagErrorFunc, argument errors through each command's Args.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// usageError marks err as invalid input.
func usageError(err error) error { return &UsageError{Err: err} }

// withCode attaches an exit code to err.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// Main runs llmbench with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdio Stdio) int {
	stdio.Err = console.FoldNotes{W: stdio.Err}
	root := newRoot(stdio)
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := findCommand(root, args)
	if err == nil {
		err = root.ExecuteContext(ctx)
	}
	if err == nil {
		return ExitOK
	}
	var (
		ee *exitError
		ue *UsageError
	)
	code := ExitFailure
	switch {
	case errors.As(err, &ue):
		code = ExitUsage
	case errors.As(err, &ee):
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	msg := err.Error()
	fmt.Fprintf(stdio.Err, "llmbench: %s\n", strings.ReplaceAll(msg, "\n", "\n  "))
	if code == ExitUsage {
		fmt.Fprintln(stdio.Err, "Run 'llmbench --help' or 'llmbench <command> --help' for usage.")
	}
	return code
}

// usageArgs makes a command's argument errors usage errors.
func usageArgs(args cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := args(cmd, a); err != nil {
			return usageError(err)
		}
		return nil
	}
}

// findCommand finds the command args name, as cobra's Execute will: its only error is a
// first argument that names no command, which is a usage error. (Cobra returns it from
// Execute untyped, and a root command that ran its own Args check would change the help.)
func findCommand(root *cobra.Command, args []string) error {
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		return nil // shell completion: cobra adds that command during Execute
	}
	root.InitDefaultHelpCmd()
	if _, _, err := root.Find(args); err != nil {
		return usageError(err)
	}
	return nil
}

// Flag usages wrapped to the console's width, their text under their own column. cobra
// keeps template functions in one global map: registered once, not by each Main.
func init() {
	cobra.AddTemplateFunc("wrappedFlagUsages", func(fs *pflag.FlagSet) string { return fs.FlagUsagesWrapped(console.Width) })
}

func newRoot(stdio Stdio) *cobra.Command {
	root := &cobra.Command{
		Use:   "llmbench",
		Short: "Measure how fast an LLM serving endpoint really is",
		Long: `llmbench sends a controlled load of streaming requests to an OpenAI-compatible (or native)
LLM endpoint and reports TTFT, TPOT, ITL, end-to-end latency, throughput and goodput as
percentiles per load level. With no --url it benchmarks its built-in simulated inference server.`,
		Example: `  llmbench run                                              # the built-in simulator, ~30 s
  llmbench run --url http://127.0.0.1:8000 --concurrency 1,4,16,64 --requests 200
  llmbench simulate --sim textbook --rate 1,2,4,8 --slo 'tpot:p99<=50ms'
  llmbench serve --listen 127.0.0.1:8000                    # the simulator over HTTP
  llmbench report llmbench-results/20261201T093000Z         # recompute a run's figures
  llmbench compare before/ after/`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		newRunCmd(stdio),
		newSimulateCmd(stdio),
		newServeCmd(stdio),
		newTokenizeCmd(stdio),
		newDatasetCmd(stdio),
		newReportCmd(stdio),
		newCompareCmd(stdio),
		newFidelityCmd(stdio), newMergeCmd(stdio),
		newCalibrateCmd(stdio),
		newPlanCmd(stdio),
		newValidateCmd(stdio),
	)
	var wrap func(*cobra.Command)
	wrap = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Args != nil {
				sub.Args = usageArgs(sub.Args)
			}
			wrap(sub)
		}
	}
	wrap(root)
	lenientFlags(root)
	root.SetUsageTemplate(strings.NewReplacer(
		".LocalFlags.FlagUsages", "wrappedFlagUsages .LocalFlags",
		".InheritedFlags.FlagUsages", "wrappedFlagUsages .InheritedFlags").Replace(root.UsageTemplate()))
	root.PersistentPreRunE = checkFlagErrors
	return root
}

// unwrapUsage takes the usage errors resolve returned apart, so that they join with the
// others as one list.
func unwrapUsage(errs []error) []error {
	var out []error
	for _, err := range errs {
		var ue *UsageError
		if errors.As(err, &ue) {
			out = append(out, fielderr.Split(ue.Err)...)
			continue
		}
		out = append(out, err)
	}
	return out
}
