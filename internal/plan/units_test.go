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

// TestEquivalentCandidatesTieBreak: two fleets at the same price on as many GPUs whose
// headrooms differ by less than the searches' 5 % are the same answer: the plan marks the
// other as equivalent and chooses the one with more replicas, whatever the noise in headroom.
func TestEquivalentCandidatesTieBreak(t *testing.T) {
	usd := func(v float64) *float64 { return &v }
	tp4 := Candidate{MeetsSLO: true, GPUs: 4, Replicas: 1, TP: 4, USDPerHour: usd(12), HeadroomRate: usd(12.69)}
	tp2 := Candidate{MeetsSLO: true, GPUs: 4, Replicas: 2, TP: 2, USDPerHour: usd(12), HeadroomRate: usd(12.5)}
	far := Candidate{MeetsSLO: true, GPUs: 4, Replicas: 4, TP: 1, USDPerHour: usd(12), HeadroomRate: usd(10)}
	pl := &Plan{}
	pl.setCandidates([][]Candidate{{tp4, far, tp2}})
	if b := pl.BestCandidate(); b == nil || b.Replicas != 2 {
		t.Fatalf("chose %+v, want the 2 replicas of tp 2 (equivalent headroom, more replicas)", b)
	}
	for _, c := range pl.Candidates[1:] {
		if want := c.Replicas == 1; c.EquivalentToBest != want {
			t.Errorf("%d replicas: equivalent_to_best %v, want %v", c.Replicas, c.EquivalentToBest, want)
		}
	}
}
