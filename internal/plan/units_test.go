package plan

import (
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
)

// TestFiguresCarryUnits: a rate is written out, not in e-notation, and a term's value says
// its unit.
func TestFiguresCarryUnits(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{fmtRate(5000), "5000"}, {fmtRate(12.69), "12.7"}, {fmtRate(0.312), "0.312"},
		{fmtValue("tpot:p99<=40ms", 46.373), "46.4 ms"}, {fmtValue("goodput>=0.95", 0.9312), "0.931"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestLinearProfileIsItsOwnGPUs: a linear (calibrated) profile's figures are its server's,
// so plan does not call its GPU unchecked as it does a roofline's on an unmeasured GPU.
func TestLinearProfileIsItsOwnGPUs(t *testing.T) {
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	if !gpuCalibrated(p) {
		t.Error("a linear profile was said to be uncalibrated on its GPU")
	}
	r, err := sim.LoadProfile("h200-llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	r.GPU.Name = "made-up-gpu"
	if gpuCalibrated(r) {
		t.Error("a roofline on a GPU no measurement checked was said to be calibrated")
	}
}
