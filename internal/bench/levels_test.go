package bench

import (
	"slices"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/schedule"
)

// TestSetLadder: the loops' levels in order on Base, or a staged one alone, each numbered,
// seeded and given its length.
func TestSetLadder(t *testing.T) {
	s := Spec{Base: load.Level{MaxConcurrency: 3, Shards: 2}, Requests: 20, Seed: 5}
	s.SetLadder([]float64{1, 4}, []float64{2.5}, schedule.Stages{})
	if len(s.Levels) != 3 || s.Levels[0].Concurrency != 1 || s.Levels[1].Concurrency != 4 || s.Levels[2].Rate != 2.5 {
		t.Fatalf("levels %+v: want concurrency 1, 4, then rate 2.5", s.Levels)
	}
	for i, l := range s.Levels {
		if l.Index != i || l.Requests != 20 || l.MaxConcurrency != 3 || l.Shards != 2 || l.Seed != 5+int64(i)*levelSeedStep {
			t.Errorf("level %d: %+v: want index %d, 20 requests, Base's settings, the run's seed", i, l, i)
		}
	}
	st, err := schedule.ParseStages("10s:2,20s:2->8")
	if err != nil {
		t.Fatal(err)
	}
	s.Requests = 0
	s.SetLadder(nil, nil, st)
	if len(s.Levels) != 1 || s.Levels[0].Rate != 8 || s.Levels[0].Duration != 30*time.Second || s.Levels[0].Requests != 0 {
		t.Errorf("staged: %+v: want one level at rate 8 for 30s", s.Levels)
	}
}

// TestUndecided: the levels whose request count (a timed open loop's about its rate times
// its duration) is short of what the SLOs' percentile terms need; a timed closed loop's
// count is not known ahead, and with no percentile term none is short.
func TestUndecided(t *testing.T) {
	slos, err := metrics.ParseSLOs("tpot:p99<=50ms")
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Levels: []load.Level{{Index: 0, Requests: 10}, {Index: 1, Rate: 2, Duration: 10 * time.Second},
		{Index: 2, Requests: 1_000_000}, {Index: 3, Concurrency: 4, Duration: 10 * time.Second}}}
	if got := s.Undecided(); len(got) != 0 {
		t.Errorf("no SLOs: %v undecided", got)
	}
	s.Judge.Metrics.SLOs = slos
	if got := s.Undecided(); !slices.Equal(got, []LevelCount{{0, 10}, {1, 20}}) || s.Decide() <= 20 {
		t.Errorf("undecided %v (%d needed), want levels 0 (10) and 1 (20)", got, s.Decide())
	}
}
