package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/specflags"
)

func newReportCmd(stdio Stdio) *cobra.Command {
	var outDir, resultFormat string
	var quiet, wide bool
	var percentiles, slo string
	var pf specflags.Prices
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Recompute summary.json, summary.csv and report.html from a run's records",
		Long: `report recomputes every figure of a run from its raw records (DIR/records.jsonl) and the
configuration stored in DIR/summary.json, and writes summary.json, summary.csv and
report.html again (into DIR, or --output-dir). --percentiles and --slo re-judge the run
with other percentiles or SLOs; --gpu-price (with --gpus) or --price-in and --price-out
re-price it.`,
		Example: `  llmbench report llmbench-results/20261129T120000Z
  llmbench report old-run --output-dir rejudged --slo 'ttft:p99<=800ms'
  llmbench report old-run --gpu-price 2.5 --gpus 8`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			sum, err := report.ReadDir(dir)
			if err != nil {
				return withCode(ExitFailure, err)
			}
			slos, err := rejudge(sum, dir, cmd.Flags().Changed, percentiles, slo, resultFormat, &pf)
			if err != nil {
				return err
			}
			if outDir == "" {
				outDir = dir
			}
			notes, err := bench.Rewrite(dir, outDir, resultFormat, sum, metrics.Config{Percentiles: sum.Percentiles, SLOs: slos})
			for _, n := range notes {
				fmt.Fprintf(stdio.Err, "warning: %s\n", n)
			}
			if occupied := (*record.OccupiedError)(nil); errors.As(err, &occupied) {
				err = fmt.Errorf("--output-dir %s already holds another run's records (%s): give another folder", occupied.Dir, occupied.Name)
			}
			if err != nil {
				return withCode(ExitFailure, err)
			}
			opts := report.ConsoleOptions{Wide: wide}
			print := report.Console
			if quiet { // as run's --quiet: the ladder table alone
				print = report.ConsoleLadder
			}
			if err := print(stdio.Out, sum, opts); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "\nResults: %s\n", outDir)
			if passed, judged := sum.SLOPassed(); judged && !passed {
				return withCode(ExitSLOFailed, errors.New("no level met the SLOs"))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&outDir, "output-dir", "", "write the recomputed files here (default: DIR itself)")
	cmd.Flags().StringVar(&percentiles, "percentiles", "", "percentiles to report (default: the run's)")
	cmd.Flags().StringVar(&slo, "slo", "", "SLOs to judge the run by (default: the run's)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "print only the ladder table and the results folder (no per-level blocks), as run --quiet")
	cmd.Flags().BoolVar(&wide, "wide", false, "print every column of the ladder table (by default it fits 100 columns), as run --wide")
	cmd.Flags().StringVar(&resultFormat, "result-format", "", "also write vLLM's result files (vllm.json, or vllm-<level>.json for a ladder): vllm")
	pf.Bind(cmd.Flags()) // default: the run's own price
	return cmd
}

// rejudge applies report's flags to the run's summary: other percentiles, SLOs or price,
// each checked; it returns the SLOs to judge by.
func rejudge(sum *report.Summary, dir string, changed func(string) bool, percentiles, slo, resultFormat string, pf *specflags.Prices) ([]metrics.SLO, error) {
	var givenPercentiles, givenSLO *string // nil: the run's own
	if changed("percentiles") {
		givenPercentiles = &percentiles
	}
	if changed("slo") {
		givenSLO = &slo
	}
	slos, err := sum.Rejudge(givenPercentiles, givenSLO)
	errs := fielderr.Split(specflags.NamedFlags(err, map[string]string{"Percentiles": "percentiles", "SLO": "slo"}))
	if p, err := pf.Parse(); err != nil {
		errs = append(errs, err)
	} else if sum.Price, err = specflags.Price(p, sum.Price, 1); err != nil {
		errs = append(errs, err)
	} else if err := checkedPrice(sum.Price, filepath.Join(dir, "summary.json")); err != nil {
		errs = append(errs, err)
	}
	if err := bench.CheckResultFormat(resultFormat); err != nil {
		errs = append(errs, fmt.Errorf("--result-format: %w", err))
	}
	if len(errs) > 0 {
		return nil, usageError(errors.Join(errs...))
	}
	return slos, nil
}

// checkedPrice is pr as a summary.json may hold it, refused (naming the file) when it is
// not one llmbench writes.
func checkedPrice(pr *metrics.Price, file string) error {
	if pr == nil {
		return nil
	}
	if err := pr.Validate(); err != nil {
		return fmt.Errorf("%s: %w (give --gpu-price or --price-in and --price-out to re-price the run)", file, err)
	}
	return nil
}
