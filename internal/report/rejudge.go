package report

import (
	"errors"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
)

// Rejudge gives s other percentiles or SLO terms (nil keeps the run's own), as they are
// given, and returns the SLOs to judge it by. Its errors are fielderr.Errors keyed
// Percentiles and SLO, every problem at once.
func (s *Summary) Rejudge(percentiles, slo *string) ([]metrics.SLO, error) {
	var errs []error
	if percentiles != nil {
		var err error
		if s.Percentiles, err = metrics.ParsePercentiles(*percentiles); err != nil {
			errs = append(errs, &fielderr.Error{Field: "Percentiles", Err: err})
		}
	}
	if slo != nil {
		s.SLO = *slo
	}
	slos, err := metrics.ParseSLOs(s.SLO)
	if err != nil {
		errs = append(errs, &fielderr.Error{Field: "SLO", Err: err})
	}
	return slos, errors.Join(errs...)
}
