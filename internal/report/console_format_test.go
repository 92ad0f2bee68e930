package report

import (
	"testing"

	"github.com/llmbench/llmbench/internal/metrics"
)

// A figure that rounds to zero prints without a sign, and an interval says how it was had.
func TestConsoleFigures(t *testing.T) {
	for v, want := range map[float64]string{-0.001: "0.00", -0.0: "0.00", 0.004: "0.00", -0.005001: "-0.01", -12.5: "-12.50", 3: "3.00"} {
		if got := consoleFloat(v); got != want {
			t.Errorf("consoleFloat(%g) = %q, want %q", v, got, want)
		}
	}
	for m, want := range map[string]string{
		metrics.MethodBatchMeans:       "(95% CI 1.00-2.00)",
		metrics.MethodBatchMeansSteady: "(95% CI 1.00-2.00 after the first wave)",
		metrics.MethodOrderStatistics:  "(95% CI 1.00-2.00 if independent)",
	} {
		if got := ciNote(1, 2, m); got != want {
			t.Errorf("ciNote(%s) = %q, want %q", m, got, want)
		}
	}
}
