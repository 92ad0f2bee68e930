package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/fidelity"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
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
			rep, err := runFidelity(records, truth, at, fidelity.Options{IncludeWarmup: withWarmup, BySecond: bySecond})
			if err != nil {
				return err
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

// runFidelity reads the truth into memory and streams the records through the join.
func runFidelity(records, truthPath string, start time.Time, opts fidelity.Options) (fidelity.Report, error) {
	path, dir := records, records
	var findErr error // said after summary.json's, the folder's first file
	if st, err := os.Stat(records); err != nil {
		return fidelity.Report{}, fmt.Errorf("--records: %w (name a run's results folder or its records file)", err)
	} else if st.IsDir() {
		path, findErr = record.Find(records)
	} else {
		dir = filepath.Dir(records)
	}
	if start.IsZero() {
		s, err := report.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return fidelity.Report{}, fmt.Errorf("--records: the run's start instant comes from summary.json (or give --start): %w", err)
		} else if err != nil {
			return fidelity.Report{}, fmt.Errorf("--records: %w", err)
		}
		start = s.StartedAt
	}
	if findErr != nil {
		return fidelity.Report{}, fmt.Errorf("--records: %w", findErr)
	}
	tf, err := os.Open(truthPath)
	if err != nil {
		return fidelity.Report{}, fmt.Errorf("--truth: %w", err)
	}
	truth, err := fidelity.ReadTruth(tf)
	tf.Close()
	if err != nil {
		return fidelity.Report{}, fmt.Errorf("--truth %s: %w", truthPath, err)
	}
	j := fidelity.NewJoin(truth, start, opts)
	err = record.EachInFile(path, func(r *record.Record) error { j.Add(r); return nil })
	if err != nil && !errors.Is(err, record.ErrTruncated) { // a last line a killed writer cut short is left out
		return fidelity.Report{}, fmt.Errorf("--records: %w", err)
	}
	return j.Report(), nil
}
