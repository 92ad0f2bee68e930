package plan

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/sim"
)

// With --objective energy the candidate drawing the least power at the traffic comes
// first among those meeting the SLOs; by cost, the cheapest; one without an estimate last.
func TestRankByEnergy(t *testing.T) {
	cheap := Candidate{GPU: "h100", MeetsSLO: true, GPUs: 4, USDPerHour: ptr(10.0), PowerKW: ptr(2.0)}
	frugal := Candidate{GPU: "b200", MeetsSLO: true, GPUs: 2, USDPerHour: ptr(12.0), PowerKW: ptr(1.2)}
	unknown := Candidate{GPU: "a10g", MeetsSLO: true, GPUs: 8, USDPerHour: ptr(8.0)}
	miss := Candidate{GPU: "l4", MeetsSLO: false, PowerKW: ptr(0.1)}
	for _, c := range []struct {
		objective string
		first     []string
	}{{ObjectiveEnergy, []string{"b200", "h100", "a10g", "l4"}}, {ObjectiveCost, []string{"a10g", "h100", "b200", "l4"}}} {
		pl := &Plan{Objective: c.objective}
		pl.setCandidates([][]Candidate{{cheap, frugal, unknown, miss}})
		var got []string
		for _, cd := range pl.Candidates {
			got = append(got, cd.GPU)
		}
		if strings.Join(got, ",") != strings.Join(c.first, ",") {
			t.Errorf("objective %s: order %v, want %v", c.objective, got, c.first)
		}
	}
}

// fillEnergy prices the fleet's estimated power at the facility (× PUE) beside its
// GPU-hours, and per output token.
func TestFillEnergy(t *testing.T) {
	ev := &evaluation{cfg: &Config{Electricity: 0.2, PUE: 1.5}}
	c := &Candidate{USDPerHour: ptr(10.0), OutputThroughput: ptr(1000.0)}
	en := sim.Energy{GPUs: 4, Span: time.Hour, Joules: 2000 * 3600, PowerW: 2000, Tokens: 3_600_000}
	ev.fillEnergy(c, &outcome{energy: &en})
	near := func(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 1e-9 }
	// 2 kW of GPUs, 3 kW at the facility: 0.6 USD/hour; 1000 tok/s over 3 kW.
	if !near(c.PowerKW, 2) || !near(c.EnergyUSDPerHour, 0.6) || !near(c.USDPerHour, 10.6) ||
		!near(c.OutputTokensPerSPerKW, 1000.0/3) || !near(c.JoulesPerOutputToken, 3) ||
		!near(c.CostPerMillionOutputTokens, 10.6/(1000*3600)*1e6) {
		t.Errorf("candidate %+v", *c)
	}
	// Without a price for electricity: the power, not its cost.
	ev.cfg.Electricity = 0
	d := &Candidate{USDPerHour: ptr(10.0), OutputThroughput: ptr(1000.0)}
	ev.fillEnergy(d, &outcome{energy: &en})
	if !near(d.PowerKW, 2) || d.EnergyUSDPerHour != nil || !near(d.USDPerHour, 10) {
		t.Errorf("unpriced energy: %+v", *d)
	}
}

func TestEnergyConfigValidate(t *testing.T) {
	err := Config{Electricity: -1, PUE: 0.5, Objective: "speed"}.Validate()
	for _, want := range []string{"Electricity: -1", "PUE: 0.5", `Objective: "speed"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to say %q", err, want)
		}
	}
}
