package validate

import (
	"cmp"
	"fmt"
	"path/filepath"

	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/sim"
)

// runFigures are the figures a user's run gives a row: those summary.json has per level.
func runFigures() map[string]float64 {
	want := map[string]float64{"output_throughput": 0, "request_throughput": 0}
	for _, m := range []string{"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"} {
		for _, s := range []string{"mean", "p50", "p90", "p95", "p99"} {
			want[m+"."+s] = 0
		}
	}
	return want
}

// ProfileError is a profile FromRun could not load.
type ProfileError struct {
	Profile string
	Err     error
}

func (e *ProfileError) Error() string { return e.Profile + ": " + e.Err.Error() }
func (e *ProfileError) Unwrap() error { return e.Err }

// FromRun makes a row of each level of the run in dir (its summary.json), to be simulated
// on profile (a preset's name or a file): how far the twin of the user's server is from it.
func FromRun(dir, profile string) ([]Row, error) {
	sum, err := report.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p, err := sim.LoadProfile(profile)
	if err != nil {
		return nil, &ProfileError{Profile: profile, Err: err}
	}
	skip := runSkip(sum)
	var rows []Row
	for i := range sum.Levels {
		l := &sum.Levels[i]
		measured, err := Figures(l, runFigures())
		if err != nil {
			return nil, err
		}
		r := Row{ID: filepath.Base(filepath.Clean(dir)) + " " + l.Name,
			Source:      Source{Name: "run", Path: dir},
			Group:       predict.Group{Family: p.ModelName(), GPU: p.GPU.Name, Engine: "measured run", Load: predict.Closed},
			ProfileFile: profile, Measured: measured, Skip: skip,
			Workload: Workload{Concurrency: l.Concurrency, Rate: l.Rate, InputTokens: sum.Workload.InputTokens,
				OutputTokens: sum.Workload.OutputTokens, Requests: l.Completed, Warmup: sum.Load.Warmup,
				PrefixTokens: sum.Workload.PrefixTokens, PrefixGroups: sum.Workload.PrefixGroups}}
		if l.Rate > 0 {
			a, err := schedule.ParseArrival(cmp.Or(sum.Load.Arrival, schedule.Poisson))
			if err != nil {
				return nil, fmt.Errorf("%s: level %s: %w", dir, l.Name, err)
			}
			r.Workload.Arrival = sum.Load.Arrival
			r.Group.Load = predict.LoadKind(false, a)
		}
		if !sum.Load.IgnoreEOS {
			r.Assumptions = append(r.Assumptions, "the run did not ignore EOS: its output lengths are "+
				"at most --output-tokens, and simulated as exactly that")
		}
		if r.Skip == "" && l.Completed == 0 {
			r.Skip = "the level completed no requests"
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: the run has no levels", dir)
	}
	return rows, nil
}

// runSkip is why a run's levels cannot be simulated as rows; "" when they can.
func runSkip(sum *report.Summary) string {
	w, l := sum.Workload, sum.Load
	switch {
	case w.Dataset != "" && w.Dataset != "random":
		return fmt.Sprintf("dataset %s: a row simulates synthetic lengths (--input-tokens, --output-tokens) only", w.Dataset)
	case w.Turns > 1:
		return "multi-turn conversations: not expressible as a row yet"
	case l.Search != "":
		return "a search's levels: simulate the search itself with 'llmbench simulate --search'"
	case l.Duration != "":
		return "levels of a --duration: a row is a number of requests"
	}
	return ""
}

// RunFolderError is a run folder that gives no rows.
type RunFolderError struct {
	Dir string
	Err error
}

func (e *RunFolderError) Error() string { return e.Dir + ": " + e.Err.Error() }
func (e *RunFolderError) Unwrap() error { return e.Err }

// LoadRows reads the rows of each table, then of each run folder (FromRun, on profile).
func LoadRows(tables, runs []string, profile string) ([]Row, error) {
	var rows []Row
	for _, t := range tables {
		r, err := Load(t)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	for _, dir := range runs {
		r, err := FromRun(dir, profile)
		if err != nil {
			return nil, &RunFolderError{Dir: dir, Err: err}
		}
		rows = append(rows, r...)
	}
	return rows, nil
}
