package figure_test

import (
	"math"
	"slices"
	"testing"

	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/metrics"
)

// TestFiguresAreTheRegistrys: every figure is a metric of the registry at a percentile,
// named as calibration.json and a profile's error_pct name it.
func TestFiguresAreTheRegistrys(t *testing.T) {
	var names []string
	for _, k := range figure.All {
		f := k.Figure()
		if _, ok := metrics.Lookup(f.Metric); !ok {
			t.Errorf("figure %s: %q is no metric of the registry", k.Name(), f.Metric)
		}
		if f.Pct <= 0 || f.Pct >= 100 {
			t.Errorf("figure %s: percentile %g outside (0, 100)", k.Name(), f.Pct)
		}
		names = append(names, k.Name())
	}
	want := []string{"ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "itl_p50", "itl_p99"}
	if !slices.Equal(names, want) {
		t.Errorf("figures %v, want %v", names, want)
	}
	if got := figure.Metrics(); !slices.Equal(got, []string{metrics.KeyTTFT, metrics.KeyTPOT, metrics.KeyITL}) {
		t.Errorf("Metrics() = %v", got)
	}
	for _, k := range figure.Judged {
		if !slices.Contains(figure.All, k) {
			t.Errorf("judged figure %s is not among All", k.Name())
		}
	}
}

func TestUnmeasured(t *testing.T) {
	v := figure.Unmeasured()
	if v.Measured() {
		t.Errorf("Unmeasured() = %v: measured", v)
	}
	for _, x := range v {
		if !math.IsNaN(x) {
			t.Fatalf("Unmeasured() = %v: want NaN throughout", v)
		}
	}
	v[figure.TPOTP99] = 0
	if !v.Measured() {
		t.Errorf("%v: one figure measured, Measured() false", v)
	}
}
