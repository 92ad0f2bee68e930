// Package validate holds the simulator against measured serving runs: tables of rows, each
// a deployment (a --sim profile), the workload it served and the figures measured, which it
// simulates through the same path as 'llmbench simulate' (bench.Virtual, bench.Deploy) and
// compares.
package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/predict"
)

// Row is one measured run: the deployment, the load, what was measured and where it came
// from. A row the simulator cannot express yet carries Skip, the reason.
type Row struct {
	ID     string        `json:"id"`
	Source Source        `json:"source"`
	Group  predict.Group `json:"group"`
	// Profile is the deployment as a --sim profile's keys (docs/simulator.md): model, gpu,
	// engine, deployment, speculative.
	Profile map[string]any `json:"profile,omitempty"`
	// ProfileFile, instead of Profile, is a --sim name or file.
	ProfileFile string             `json:"profile_file,omitempty"`
	Workload    Workload           `json:"workload"`
	Measured    map[string]float64 `json:"measured"`
	// Limits, where the source states them, are the latency limits the run was held to and
	// the rate it was submitted at: a capacity-planning question with a known answer
	// (validate --capacity).
	Limits *Limits `json:"limits,omitempty"`
	// Assumptions are the facts the source lacks that the row takes, each with why.
	Assumptions []string `json:"assumptions,omitempty"`
	Skip        string   `json:"skip,omitempty"`
}

// Limits are a row's P99 latency limits, ms, and the highest Poisson rate the submitter
// found to meet them (MLPerf's Server and Interactive scenarios: the submitted QPS).
type Limits struct {
	TTFTP99Ms     float64 `json:"ttft_p99_ms"`
	TPOTP99Ms     float64 `json:"tpot_p99_ms"`
	SubmittedRate float64 `json:"submitted_rate"`
}

// slo is the limits as SLO terms ("ttft:p99<=2000ms,tpot:p99<=200ms").
func (l Limits) slo() string {
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + "ms" }
	return "ttft:p99<=" + ms(l.TTFTP99Ms) + ",tpot:p99<=" + ms(l.TPOTP99Ms)
}

// Source is where a row's figures were copied from.
type Source struct {
	Name    string `json:"name"` // the table's source: mlperf, inferencex, inference-perf, run
	Repo    string `json:"repo,omitempty"`
	Path    string `json:"path"`
	Commit  string `json:"commit,omitempty"`
	Licence string `json:"licence,omitempty"`
}

// Workload is the load of a row, as simulate's flags say it.
type Workload struct {
	Concurrency  int     `json:"concurrency,omitempty"` // closed loop
	Rate         float64 `json:"rate,omitempty"`        // open loop, req/s
	Arrival      string  `json:"arrival,omitempty"`     // the open loop's arrivals, as --arrival: poisson (the default), constant, gamma:B
	InputTokens  string  `json:"input_tokens"`          // --input-tokens: 512, uniform:A:B, normal:M:S, lognormal:M:S
	OutputTokens string  `json:"output_tokens"`         // --output-tokens
	Requests     int     `json:"requests"`              // measured requests
	Warmup       int     `json:"warmup,omitempty"`      // requests before the measured ones
	// PrefixTokens of each prompt are shared with the other prompts of its group, one of
	// PrefixGroups, as --prefix-tokens and --prefix-groups make them.
	PrefixTokens int `json:"prefix_tokens,omitempty"`
	PrefixGroups int `json:"prefix_groups,omitempty"`
}

// Table is a file of rows in this package's own format.
type Table struct {
	Description string `json:"description,omitempty"`
	Rows        []Row  `json:"rows"`
}

// Load reads a table: this package's own format ({"rows": [...]}) or one of the groundtruth
// files ({"source": ..., "experiments": [...]}: MLPerf, InferenceX, inference-perf), which
// it converts on read.
func Load(path string) ([]Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe struct {
		Rows        json.RawMessage   `json:"rows"`
		Source      json.RawMessage   `json:"source"`
		Experiments []json.RawMessage `json:"experiments"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case probe.Rows != nil:
		var t Table
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return t.Rows, checkRows(path, t.Rows)
	case probe.Experiments != nil:
		rows, err := convertGroundtruth(filepath.Base(path), probe.Experiments)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return rows, nil
	}
	return nil, fmt.Errorf("%s: neither a validation table (\"rows\") nor a groundtruth file (\"experiments\")", path)
}

// checkRows refuses a table whose rows cannot be told apart or say nothing to compare.
func checkRows(path string, rows []Row) error {
	var errs []error
	seen := map[string]bool{}
	for i, r := range rows {
		switch {
		case r.ID == "":
			errs = append(errs, fmt.Errorf("%s: row %d has no id", path, i+1))
		case seen[r.ID]:
			errs = append(errs, fmt.Errorf("%s: row id %q appears twice", path, r.ID))
		case r.Skip == "" && len(r.Measured) == 0:
			errs = append(errs, fmt.Errorf("%s: row %q has no measured figures", path, r.ID))
		case r.Skip == "" && (r.Profile == nil) == (r.ProfileFile == ""):
			errs = append(errs, fmt.Errorf("%s: row %q needs a profile or a profile_file, one of them", path, r.ID))
		}
		seen[r.ID] = true
	}
	return errors.Join(errs...)
}

// convertGroundtruth converts a groundtruth file's experiments, by the source its name says.
func convertGroundtruth(name string, exps []json.RawMessage) ([]Row, error) {
	one := func(conv func(json.RawMessage) (Row, error)) func(json.RawMessage) ([]Row, error) {
		return func(e json.RawMessage) ([]Row, error) {
			r, err := conv(e)
			return []Row{r}, err
		}
	}
	var conv func(json.RawMessage) ([]Row, error)
	switch {
	case strings.HasPrefix(name, "mlperf"):
		conv = one(mlperfRow)
	case strings.HasPrefix(name, "inferencex"):
		conv = one(inferencexRow)
	case strings.HasPrefix(name, "blis"):
		conv = inferencePerfRows
	default:
		return nil, fmt.Errorf("no converter for groundtruth file %q (mlperf*, inferencex*, blis*)", name)
	}
	rows := make([]Row, 0, len(exps))
	for i, e := range exps {
		r, err := conv(e)
		if err != nil {
			return nil, fmt.Errorf("experiment %d: %w", i+1, err)
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// WriteTable writes rows as a table in this package's own format.
func WriteTable(path, description string, rows []Row) error {
	b, err := json.MarshalIndent(Table{Description: description, Rows: rows}, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
