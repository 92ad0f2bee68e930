// Package cli implements llmbench's subcommands: one file per subcommand. Commands return
// errors; Main maps them to exit codes, so main stays thin and every path is testable.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitFailure     = 1 // the run could not be done
	ExitUsage       = 2 // invalid flags or arguments
	ExitSLOFailed   = 3 // SLOs were given and no level met them
	ExitInterrupted = 130
)

// Version is set at build time with -ldflags "-X github.com/llmbench/llmbench/internal/cli.Version=…";
// otherwise it comes from the module version or the VCS revision Go stamped into the binary,
// so every summary.json says which code produced it.
var Version = buildVersion()

func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev+" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}

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

// usageError reports invalid input: exit code 2, with a hint.
func usageError(err error) error { return &exitError{code: ExitUsage, err: err} }

// withCode attaches an exit code to err.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// Main runs llmbench with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdio Stdio) int {
	root := newRoot(stdio)
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	code := ExitFailure
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	} else if isCobraUsage(err) {
		code = ExitUsage
	}
	msg := err.Error()
	fmt.Fprintf(stdio.Err, "llmbench: %s\n", strings.ReplaceAll(msg, "\n", "\n  "))
	if code == ExitUsage {
		fmt.Fprintln(stdio.Err, "Run 'llmbench --help' or 'llmbench <command> --help' for usage.")
	}
	return code
}

// isCobraUsage recognises cobra's own flag and argument errors, which are usage errors.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand", "unknown command", "invalid argument", "flag needs an argument", "accepts ", "requires at least", "requires at most", "bad flag syntax"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func newRoot(stdio Stdio) *cobra.Command {
	root := &cobra.Command{
		Use:   "llmbench",
		Short: "Measure how fast an LLM serving endpoint really is",
		Long: `llmbench sends a controlled load of streaming requests to an OpenAI-compatible (or native)
LLM endpoint and reports TTFT, TPOT, ITL, end-to-end latency, throughput and goodput as
percentiles per load level. With no --url it benchmarks its built-in simulated inference server.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
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
	)
	return root
}
