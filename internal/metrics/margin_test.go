package metrics

import (
	"math"
	"testing"
)

func TestSLOBoundAndMargin(t *testing.T) {
	for _, c := range []struct {
		term         string
		value, bound float64
		margin       float64
	}{
		{"ttft:p99<=500ms", 400, 500, 0.2},
		{"tpot:mean<=50ms", 60, 50, -0.2},
		{"goodput>=0.8", 0.9, 0.8, 0.125},
		{"goodput>=0.8", 0.6, 0.8, -0.25},
		{"error_rate<=2%", 0.01, 0.02, 0.5},
		{"error_rate<=0", 0.01, 0, -0.01}, // no scale: the difference itself
	} {
		s, err := ParseSLOs(c.term)
		if err != nil {
			t.Fatal(err)
		}
		if b := s[0].Bound(); math.Abs(b-c.bound) > 1e-12 {
			t.Errorf("%s: bound %v, want %v", c.term, b, c.bound)
		}
		if m := s[0].Margin(c.value); math.Abs(m-c.margin) > 1e-12 {
			t.Errorf("%s at %v: margin %v, want %v", c.term, c.value, m, c.margin)
		}
	}
	if s, _ := ParseSLOs("ttft<=1s"); s[0].Bound() != 0 {
		t.Error("a per-request bound is no verdict: bound 0")
	}
}
