package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/validate"
)

type validateFlags struct {
	output, sim, markdown string
	spreads               string
	runs                  []string
	seed                  int64
	workers               int
	capacity              bool
}

func newValidateCmd(stdio Stdio) *cobra.Command {
	var f validateFlags
	cmd := &cobra.Command{
		Use:   "validate [TABLE...]",
		Short: "Hold the simulator against measured runs: predicted against measured, with the error",
		Long: `validate simulates every row of each TABLE (a validation table, or a groundtruth file of
MLPerf, InferenceX or inference-perf rows, converted on read) as 'llmbench simulate' would, and
prints per row the figures predicted against those measured with the error, then per group
(model × GPU × engine × load) the median and worst error of each figure. Rows the simulator
cannot express are listed as skipped with the reason. --run adds your own runs (their
summary.json), each level a row, simulated on the --sim profile. It writes validation.json.`,
		Example: `  llmbench validate validation/mlperf_v5.1.json
  llmbench validate ../shared/groundtruth/*.json --output validation.json
  llmbench validate --run results/my-server --sim my-server.yaml`,
		RunE: func(cmd *cobra.Command, tables []string) error {
			rows, err := validateRows(tables, f)
			if err != nil {
				return err
			}
			rep, err := validate.Validate(cmd.Context(), rows, append(tables, f.runs...), f.seed, f.workers, f.capacity)
			if err != nil {
				return err
			}
			if err := validate.WriteText(stdio.Out, rep); err != nil {
				return err
			}
			validate.WriteCoverage(stdio.Out, rep.Rows)
			if f.spreads != "" {
				made := fmt.Sprintf("llmbench validate %s --spreads (%s)", strings.Join(tables, " "), time.Now().UTC().Format("2006-01-02"))
				if err := validate.WriteSpreads(f.spreads, rep, made); err != nil {
					return err
				}
				fmt.Fprintf(stdio.Err, "Wrote %s\n", f.spreads)
			}
			if f.markdown != "" {
				if err := validate.WriteMarkdown(f.markdown, rep); err != nil {
					return err
				}
			}
			if err := validate.WriteJSON(f.output, rep); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Err, "Wrote %s\n", f.output)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.output, "output", "validation.json", "write the rows, errors and groups to this `FILE`")
	fl.StringArrayVar(&f.runs, "run", nil, "a run's results `FOLDER` (summary.json) to hold the --sim profile against, each level a row (repeatable)")
	fl.StringVar(&f.sim, "sim", "", "the profile (`NAME|FILE`) that predicts the --run folders' server")
	fl.Int64Var(&f.seed, "seed", 1, "seed of every row's simulation")
	fl.IntVar(&f.workers, "workers", 0, "rows simulated at once (0: one per CPU)")
	fl.BoolVar(&f.capacity, "capacity", false, "also answer each row's capacity question where it states its P99 limits (MLPerf): the highest Poisson rate meeting them, against the submitted one (several simulations a row)")
	fl.StringVar(&f.spreads, "spreads", "", "also write the 90% prediction bands of each group of rows to this `FILE` (internal/predict/spreads.json, which simulate's intervals come from)")
	fl.StringVar(&f.markdown, "markdown", "", "also write the groups as a Markdown table to this `FILE` (docs/measurements.md's)")
	return cmd
}

// validateRows loads the tables' rows and the --run folders'.
func validateRows(tables []string, f validateFlags) ([]validate.Row, error) {
	switch {
	case len(tables) == 0 && len(f.runs) == 0:
		return nil, usageError(errors.New("give a TABLE (e.g. validation/mlperf_v5.1.json) or a --run folder"))
	case len(f.runs) > 0 && f.sim == "":
		return nil, usageError(errors.New("--run: give the profile that predicts the run's server with --sim"))
	case f.sim != "" && len(f.runs) == 0:
		return nil, usageError(errors.New("--sim: it predicts --run folders; give one (a table's rows carry their own profiles)"))
	}
	rows, err := validate.LoadRows(tables, f.runs, f.sim)
	var (
		folder  *validate.RunFolderError
		profile *validate.ProfileError
	)
	if errors.As(err, &folder) {
		inner := folder.Err
		if errors.As(inner, &profile) {
			inner = fmt.Errorf("--sim %s: %w", profile.Profile, profile.Err)
		}
		err = fmt.Errorf("--run %s: %w", folder.Dir, inner)
	}
	if err != nil {
		return nil, usageError(err)
	}
	return rows, nil
}
