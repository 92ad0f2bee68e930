package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/compare"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/fielderr"
)

func newCompareCmd(stdio Stdio) *cobra.Command {
	var format, failOn string
	var alpha float64
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Set two runs side by side, level by level, with the differences that exceed noise",
		Long: `compare matches the levels of two runs by load (concurrency or rate) and prints, for each,
the headline figures of A and B, the absolute and relative change, and — for latencies —
whether the change is larger than noise: a two-sided Mann–Whitney U test on the per-request
values recomputed from both runs' records (significant when p < --alpha).

Comparing two servers, models or configurations under the same load is what it is for; it
says so when the targets differ, and warns when the workload, the lengths, the API or the
load differ, since the figures then measure different things. With --fail-on-regression it
is a CI gate: exit 5 when a latency got worse by more than the threshold and beyond noise, or
a throughput fell by more than it.`,
		Example: `  llmbench compare llmbench-results/before llmbench-results/after
  llmbench compare before after --format markdown >> pr-comment.md
  llmbench compare baseline/ candidate/ --fail-on-regression 5%   # exit 5 on a regression`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			form, err := compare.ParseFormat(format)
			if err != nil {
				return usageError(fmt.Errorf("--format: %w", err))
			}
			cfg, err := compareConfig(args, alpha, failOn)
			if err != nil {
				return err
			}
			a, err := compare.LoadRun(args[0])
			if err != nil {
				return withCode(ExitFailure, err)
			}
			b, err := compare.LoadRun(args[1])
			if err != nil {
				return withCode(ExitFailure, err)
			}
			cmp, err := compare.Runs(a, b, cfg)
			if err != nil {
				return withCode(ExitFailure, err)
			}
			if err := compare.Write(stdio.Out, cmp, form); err != nil {
				return err
			}
			if len(cmp.Regressions) > 0 {
				return withCode(ExitRegression, fmt.Errorf("%d %s beyond %s: %s", len(cmp.Regressions), console.Plural(len(cmp.Regressions), "regression", "regressions"), failOn, strings.Join(cmp.Regressions, "; ")))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&failOn, "fail-on-regression", "", "exit 5 when a latency rises by more than this (beyond noise) or a throughput falls by more: a fraction (0.05) or a percentage (5%)")
	cmd.Flags().StringVar(&format, "format", "table", "output: table, json or markdown")
	cmd.Flags().Float64Var(&alpha, "alpha", 0.05, "significance level of the Mann–Whitney test")
	return cmd
}

// compareConfig is compare.NewConfig, its problem worded by the flag that gave it.
func compareConfig(args []string, alpha float64, failOn string) (compare.Config, error) {
	cfg, err := compare.NewConfig(args[0], args[1], alpha, failOn)
	var field *fielderr.Error
	switch {
	case err == nil:
		return cfg, nil
	case errors.As(err, &field) && field.Field == "Alpha":
		return cfg, usageError(fmt.Errorf("--alpha: %w", field.Err))
	}
	return cfg, usageError(fmt.Errorf("--fail-on-regression: %q is not a fraction (0.05) or a percentage (5%%)", failOn))
}
