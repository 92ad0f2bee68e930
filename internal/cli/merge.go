package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/merge"
	"github.com/llmbench/llmbench/internal/report"
)

func newMergeCmd(stdio Stdio) *cobra.Command {
	var (
		out                  string
		tolerance, maxSpread time.Duration
		wait                 time.Duration
		force                bool
	)
	cmd := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Combine the results of shards run on several machines into one run",
		Long: `merge reads the results folders of the shards of one run (llmbench run --shard I/N),
puts every shard's records on one timeline (t = 0 is the earliest shard's start, by wall
clock), and recomputes every figure from the union, exactly as one machine sending all the
requests would have: percentiles over all samples, throughput over the union's window.

It refuses shards whose configurations differ (apart from --shard), that repeat a request,
that are not shards of the same N, or whose start instants span more than --max-start-spread
(their loads did not add up), unless --force. It warns about shards whose start instants
differ by more than --clock-tolerance (or from their common --start-at): their clocks
disagree, or one started late, and their timelines cannot be trusted to that precision.

--wait waits (up to the duration given) for every folder to hold a finished run, so a merge
can start beside its shards, as deploy/kubernetes's merge Job does.`,
		Example: `  llmbench merge shard-0 shard-1 shard-2 --output-dir merged
  llmbench merge --wait 2h /results/r1/shard-0 /results/r1/shard-1 --output-dir /results/r1/merged`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			var errs []error
			if out == "" {
				errs = append(errs, errors.New("--output-dir: give a folder for the merged results"))
			}
			if tolerance < 0 {
				errs = append(errs, errors.New("--clock-tolerance must not be negative"))
			}
			if maxSpread < tolerance {
				errs = append(errs, fmt.Errorf("--max-start-spread %s is below --clock-tolerance %s: give it at least the tolerance", maxSpread, tolerance))
			}
			if wait < 0 {
				errs = append(errs, errors.New("--wait must not be negative"))
			}
			if len(errs) > 0 {
				return usageError(errors.Join(errs...))
			}
			if wait > 0 {
				ctx, cancel := context.WithTimeout(cmd.Context(), wait)
				defer cancel()
				fmt.Fprintf(stdio.Err, "waiting up to %s for %d shards to finish\n", wait, len(dirs))
				if err := merge.Await(ctx, dirs, time.Second); err != nil {
					return withCode(ExitFailure, err)
				}
			}
			return runMerge(stdio, dirs, out, merge.Options{Tolerance: tolerance, MaxSpread: maxSpread, Force: force, Version: Version})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "output-dir", "", "folder for the merged records.jsonl, summary.json, summary.csv and report.html")
	fl.DurationVar(&tolerance, "clock-tolerance", 50*time.Millisecond, "largest disagreement between shards' start instants before a warning")
	fl.DurationVar(&maxSpread, "max-start-spread", time.Second, "largest span of the shards' start instants before the merge is refused")
	fl.DurationVar(&wait, "wait", 0, "wait up to this long for every folder's run to finish before merging (0: merge what is there now)")
	fl.BoolVar(&force, "force", false, "merge even when shards' configurations disagree or repeat requests (keeping the first copy)")
	return cmd
}

func runMerge(stdio Stdio, dirs []string, out string, opts merge.Options) error {
	m, err := merge.Shards(dirs, opts)
	if err != nil {
		return withCode(ExitFailure, err)
	}
	for _, c := range m.Problems.Conflicts {
		fmt.Fprintf(stdio.Err, "warning (--force): %s\n", c)
	}
	for _, w := range m.Problems.Warnings {
		fmt.Fprintf(stdio.Err, "warning: %s\n", w)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	if err := m.Write(out); err != nil {
		return err
	}
	fmt.Fprintf(stdio.Out, "Merged %d shards (%d requests) on one timeline from %s\n\n", m.Shards, len(m.Records), m.Summary.StartedAt.Format(time.RFC3339Nano))
	if err := report.Console(stdio.Out, m.Summary, report.ConsoleOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(stdio.Out, "\nResults: %s\n", out)
	return nil
}
