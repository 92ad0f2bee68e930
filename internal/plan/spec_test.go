package plan

import (
	"context"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
)

// TestSpeculativeAxis: --speculative off,4:0.8 plans each engine with and without
// speculative decoding (drafting at the base profile's stated cost); the candidates say
// which, and drafting 3.36 tokens a step for 1.2 × the step's time takes fewer replicas
// to meet a TPOT bound than decoding one.
func TestSpeculativeAxis(t *testing.T) {
	base := textbook(t)
	base.Deployment.Router = sim.RouterRoundRobin
	base.Speculative = sim.Speculative{Method: sim.SpecEagle, DraftStepFraction: 0.05}
	cfg := Config{Base: base, Traffic: traffic(t, 10, "constant", 512, 128), Metrics: slos(t, "tpot:p99<=20ms"),
		MaxReplicas: 64, Workers: 1, Price: listPrice,
		Space: Space{Speculative: []SpecSetting{{}, {DraftTokens: 4, Acceptance: 0.8}}}}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Candidates) != 2 {
		t.Fatalf("%d candidates, want 2", len(pl.Candidates))
	}
	var off, on *Candidate
	for i := range pl.Candidates {
		c := &pl.Candidates[i]
		if c.Speculative == nil {
			off = c
		} else {
			on = c
		}
	}
	if off == nil || on == nil {
		t.Fatalf("candidates %+v: want one without and one with speculation", pl.Candidates)
	}
	if s := on.Speculative; s.Method != sim.SpecEagle || s.DraftTokens != 4 || s.Acceptance != 0.8 || s.TokensPerStep < 3.36 || s.TokensPerStep > 3.362 {
		t.Errorf("speculative %+v", s)
	}
	t.Logf("replicas: %d with speculation, %d without", on.Replicas, off.Replicas)
	if !on.MeetsSLO || !off.MeetsSLO || on.Replicas >= off.Replicas {
		t.Errorf("replicas %d with speculation, %d without (meeting %v, %v): want fewer with it", on.Replicas, off.Replicas, on.MeetsSLO, off.MeetsSLO)
	}
	if !strings.Contains(pl.BestCandidate().Describe(), "speculative eagle K 4 A 0.8") {
		t.Errorf("chosen: %s", pl.BestCandidate().Describe())
	}
	// best.yaml carries it: the chosen profile reads back with its speculation.
	y := pl.BestCandidate().Profile().YAML("")
	p, err := sim.ParseProfile(y, "")
	if err != nil || p.Speculative.DraftTokens != 4 || p.Speculative.DraftStepFraction != 0.05 {
		t.Errorf("best.yaml %s read back %+v, %v", y, p.Speculative, err)
	}

	// A base that does not say how tokens are drafted cannot turn speculation on.
	cfg.Base = textbook(t)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Space.Speculative: profile textbook does not say how tokens would be drafted") {
		t.Errorf("error %v", err)
	}
	if _, err := ParseSpeculative("off,4:0.8,x"); err == nil || !strings.Contains(err.Error(), `"x" is neither off nor K:A`) {
		t.Errorf("error %v", err)
	}
	if v, err := ParseSpeculative("off, 2:0.6"); err != nil || len(v) != 2 || v[1] != (SpecSetting{2, 0.6}) {
		t.Errorf("%v, %v", v, err)
	}
}
