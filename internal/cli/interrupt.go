package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/internal/console"
)

// signalEcho is how long after the first interrupt a further one is taken as the same
// interrupt: timeout(1), a shell's job control and supervisors signal the process and its
// group alike, so one interrupt arrives as two within microseconds. A person pressing
// Ctrl-C again does so later, and means it.
const signalEcho = time.Second

// resultsDir is the folder of the run this process is writing, once it has one: what a
// forced exit names so that its reports can be rebuilt from the records.
var resultsDir atomic.Pointer[string]

// writingResults notes dir as the folder this process writes its results to ("": none now).
func writingResults(dir string) { resultsDir.Store(&dir) }

// Interrupts handles the interrupts of a running command: the first cancels it (requests
// stop, what was measured is written); an echo of it within signalEcho is ignored; a later
// one exits at once with ExitInterrupted, after saying which command rebuilds the reports
// from the records already written. exit is os.Exit but in tests; now is the clock's.
func Interrupts(sigs <-chan os.Signal, cancel context.CancelFunc, stderr io.Writer, exit func(int), now func() time.Time) {
	<-sigs
	first := now()
	fmt.Fprintf(stderr, "\ninterrupted: stopping and writing what was measured (to exit at once without writing, Ctrl-C again after %s)\n", signalEcho)
	cancel()
	for range sigs {
		if now().Sub(first) < signalEcho {
			continue
		}
		msg := "interrupted again: exiting at once; the summary and reports may not be written"
		if dir := resultsDir.Load(); dir != nil && *dir != "" && exists(*dir) {
			msg += fmt.Sprintf(".\nThe requests measured are in %s; this writes summary.json, summary.csv and report.html from them:\n  %s", *dir, reportCommand(*dir))
		}
		fmt.Fprintln(stderr, msg)
		exit(ExitInterrupted)
		return
	}
}

// reportCommand is the command that writes a run's summary and reports from its records.
func reportCommand(dir string) string { return "llmbench report " + console.ShellQuote(dir) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
