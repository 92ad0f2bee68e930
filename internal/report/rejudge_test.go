package report

import (
	"errors"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
)

// Rejudge keeps the run's own settings unless given others, and reports every bad one.
func TestRejudge(t *testing.T) {
	s := &Summary{Percentiles: []float64{50}, SLO: "ttft:p99<=100ms"}
	slos, err := s.Rejudge(nil, nil)
	if err != nil || len(slos) != 1 || len(s.Percentiles) != 1 {
		t.Fatalf("own: %v %v %v", slos, s.Percentiles, err)
	}
	p, none := "50,90", ""
	if slos, err = s.Rejudge(&p, &none); err != nil || len(slos) != 0 || len(s.Percentiles) != 2 || s.SLO != "" {
		t.Fatalf("given: %v %v %q %v", slos, s.Percentiles, s.SLO, err)
	}
	bad, badSLO := "abc", "bogus"
	errs := fielderr.Split(func() error { _, err := s.Rejudge(&bad, &badSLO); return err }())
	var f0, f1 *fielderr.Error
	if len(errs) != 2 || !errors.As(errs[0], &f0) || f0.Field != "Percentiles" || !errors.As(errs[1], &f1) || f1.Field != "SLO" {
		t.Errorf("bad: %v", errs)
	}
}
