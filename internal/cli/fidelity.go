package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/fidelity"
)

func newFidelityCmd(stdio Stdio) *cobra.Command {
	var (
		records, truth, start string
		asJSON, withWarmup    bool
		bySecond              bool
	)
	cmd := &cobra.Command{
		Use:   "fidelity",
		Short: "Measure the client's own timing error against the simulator's ground truth",
		Long: `fidelity joins a run's records.jsonl to the ground truth that 'llmbench serve --truth'
wrote, by response id, pairs each token event the client recorded with the event the server
sent (in order), and prints the distribution of client-minus-server event times with the
resulting TTFT and ITL errors, in ms; then, from the truth alone, how late the server sent
each event after its engine step ended and the ITL error that adds. Warm-up and cool-down
records are left out, as from every figure the run reports (--include-warmup pairs them too).
Records hold offsets from the run's t = 0; the truth holds wall-clock times; summary.json's
started_at maps one onto the other, which is exact when client and server share a machine (see
docs/performance.md for the subtleties).`,
		Example: `  llmbench serve --sim bench/fast50.yaml --truth truth.jsonl &
  llmbench run --url http://127.0.0.1:8000 --concurrency 1000 --output-dir out
  llmbench fidelity --records out --truth truth.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var errs []error
			if records == "" {
				errs = append(errs, errors.New("--records: give the run's results folder"))
			}
			if truth == "" {
				errs = append(errs, errors.New("--truth: give the file 'llmbench serve --truth' wrote"))
			}
			var at time.Time
			if start != "" {
				t, err := time.Parse(time.RFC3339Nano, start)
				if err != nil {
					errs = append(errs, fmt.Errorf("--start: %q is not an RFC 3339 time", start))
				}
				at = t
			}
			if len(errs) > 0 {
				return usageError(errors.Join(errs...))
			}
			rep, err := fidelity.FromFiles(records, truth, at, fidelity.Options{IncludeWarmup: withWarmup, BySecond: bySecond})
			if err != nil {
				return fidelityError(err)
			}
			if asJSON {
				return fidelity.WriteJSON(stdio.Out, rep)
			}
			return fidelity.WriteText(stdio.Out, rep)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&records, "records", "", "results folder of the run (records.jsonl and summary.json), or a records.jsonl file")
	fl.StringVar(&truth, "truth", "", "ground-truth file written by 'llmbench serve --truth'")
	fl.StringVar(&start, "start", "", "wall-clock instant of the run's t = 0 (default: summary.json's started_at)")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.BoolVar(&bySecond, "by-second", false, "also print the event-time error for each second of the run (where a tail comes from)")
	fl.BoolVar(&withWarmup, "include-warmup", false, "pair warm-up and cool-down records too (left out by default, as from the run's figures)")
	return cmd
}

// fidelityError words a problem with fidelity's inputs by the flag that named the input.
func fidelityError(err error) error {
	var fe *fidelity.FileError
	if !errors.As(err, &fe) {
		return err
	}
	switch {
	case fe.Input == fidelity.TruthFile && fe.Problem == fidelity.Unreadable:
		return fmt.Errorf("--truth %s: %w", fe.Path, fe.Err)
	case fe.Input == fidelity.TruthFile:
		return fmt.Errorf("--truth: %w", fe.Err)
	case fe.Problem == fidelity.Missing:
		return fmt.Errorf("--records: %w (name a run's results folder or its records file)", fe.Err)
	case fe.Problem == fidelity.NoStart:
		return fmt.Errorf("--records: the run's start instant comes from summary.json (or give --start): %w", fe.Err)
	}
	return fmt.Errorf("--records: %w", fe.Err)
}
