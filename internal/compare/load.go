package compare

import (
	"fmt"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/report"
)

// LoadRun reads a run's summary and recomputes its levels (with their exact distributions)
// from its records, with the run's own percentiles and SLOs.
func LoadRun(dir string) (*report.Summary, error) {
	sum, err := report.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	slos, err := metrics.ParseSLOs(sum.SLO)
	if err != nil {
		return nil, fmt.Errorf("%s: summary.json slo: %w", dir, err)
	}
	if _, err := report.Recompute(dir, sum, metrics.Config{Percentiles: sum.Percentiles, SLOs: slos}, false); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return sum, nil
}

// NewConfig is the comparison of runs a and b at significance alpha, with threshold a
// fraction (0.05) or a percentage (5%), or empty for none. Its error is the first problem,
// a fielderr.Error keyed Alpha or Threshold: a command line is fixed one value at a time.
func NewConfig(a, b string, alpha float64, threshold string) (Config, error) {
	cfg := Config{A: a, B: b, Alpha: alpha}
	var parseErr error
	if threshold != "" {
		f, err := metrics.ParseFraction(threshold)
		if err != nil {
			parseErr = &fielderr.Error{Field: "Threshold", Err: err}
		} else {
			cfg.Threshold = &f
		}
	}
	if errs := append(fielderr.Split(cfg.Validate()), parseErr); errs[0] != nil {
		return cfg, errs[0]
	}
	return cfg, nil
}
