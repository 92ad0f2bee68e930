package bench

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/sim"
)

// A simulation's profile and workload problems are invalid, each of its field; a good
// profile takes the run's seed.
func TestSimulatedProfile(t *testing.T) {
	var invalid *InvalidError
	s := Spec{SimProfile: "no-such-profile"}
	if _, err := s.SimulatedProfile(); !errors.As(err, &invalid) || !isField(err, "SimProfile") {
		t.Errorf("unknown profile: %v", err)
	}
	s = Spec{SimProfile: "textbook", Seed: 9}
	s.Balance = "round-robin"
	if _, err := s.SimulatedProfile(); !errors.As(err, &invalid) || !isField(err, "Balance") || !strings.HasPrefix(errors.Unwrap(invalid.Err).Error(), "round-robin: profile textbook has one replica") {
		t.Errorf("Balance on one replica: %v", err)
	}
	s.Balance = ""
	if p, err := s.SimulatedProfile(); err != nil || p.Seed != 9 {
		t.Errorf("textbook: seed %d, %v", p.Seed, err)
	}
	s.Tokenizer = "no-such-encoding"
	if _, err := s.VirtualSource(); !errors.As(err, &invalid) || !isField(err, "Tokenizer") {
		t.Errorf("unknown tokenizer: %v", err)
	}
}

// A simulation states each level's prediction interval where its profile has one (a
// roofline of a real model and GPU; not the textbook engine), and estimates its GPUs' energy.
func TestSimulating(t *testing.T) {
	for name, spread := range map[string]bool{sim.DefaultProfile: true, "textbook": false} {
		p, err := sim.LoadProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		c := Config{}.Simulating(p)
		if (c.Predict != nil) != spread || !reflect.DeepEqual(c.Predict, predict.ForProfile(p)) || c.Estimates == nil {
			t.Errorf("%s: Predict %v (want one: %v), Estimates %v", name, c.Predict, spread, c.Estimates)
		}
	}
}
