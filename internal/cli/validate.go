package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/validate"
)

// writeJSONFile writes v as indented JSON to path, atomically.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

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
			results, err := validate.Run(cmd.Context(), rows, f.seed, f.workers, f.capacity)
			if err != nil {
				return err
			}
			validate.SetIntervals(results)
			rep := &validate.Report{Seed: f.seed, Tables: append(tables, f.runs...), Rows: results, Groups: validate.Groups(results),
				Capacity: validate.SummariseCapacity(results)}
			if err := validate.WriteText(stdio.Out, rep); err != nil {
				return err
			}
			validate.WriteCoverage(stdio.Out, results)
			if f.spreads != "" {
				made := fmt.Sprintf("llmbench validate %s --spreads (%s)", strings.Join(tables, " "), time.Now().UTC().Format("2006-01-02"))
				if err := writeJSONFile(f.spreads, predict.NewTable(validate.Residuals(results), made)); err != nil {
					return err
				}
				fmt.Fprintf(stdio.Err, "Wrote %s\n", f.spreads)
			}
			if f.markdown != "" {
				if err := writeMarkdown(f.markdown, rep); err != nil {
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
	var rows []validate.Row
	for _, t := range tables {
		r, err := validate.Load(t)
		if err != nil {
			return nil, usageError(err)
		}
		rows = append(rows, r...)
	}
	for _, dir := range f.runs {
		r, err := validate.FromRun(dir, f.sim)
		if err != nil {
			return nil, usageError(fmt.Errorf("--run %s: %w", dir, err))
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

func writeMarkdown(path string, rep *validate.Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	validate.Markdown(fh, rep.Groups)
	return fh.Close()
}
