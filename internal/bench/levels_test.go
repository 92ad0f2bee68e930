package bench

import (
	"slices"
	"strings"
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

// TestSetLoads: no load given is DefaultLadder, marked; a search, stages or a load that
// failed to read is no default.
func TestSetLoads(t *testing.T) {
	var s Spec
	if s.SetLoads(nil, nil, schedule.Stages{}, false); !s.DefaultLoad || len(s.Levels) != len(DefaultLadder) {
		t.Errorf("no load: %d levels, default %v: want DefaultLadder, marked", len(s.Levels), s.DefaultLoad)
	}
	for name, failed := range map[string]bool{"search": false, "failed": true} {
		s = Spec{}
		if name == "search" {
			s.Search = "rate"
		}
		if s.SetLoads(nil, nil, schedule.Stages{}, failed); s.DefaultLoad || len(s.Levels) != 0 {
			t.Errorf("%s: %d levels, default %v: want none", name, len(s.Levels), s.DefaultLoad)
		}
	}
}

// TestLevelErrors: each level's problems keyed by its field, in order; with no levels a
// stand-in of Base, an open loop where rates were given, checks the rest.
func TestLevelErrors(t *testing.T) {
	s := Spec{Base: load.Level{Shards: 1, Cooldown: time.Second}}
	s.SetLadder([]float64{1, 2}, nil, schedule.Stages{})
	if errs := s.LevelErrors(false); len(errs) != 2 || !strings.HasPrefix(errs[0].Error(), "Cooldown: ") {
		t.Errorf("ladder: %v: want each level's Cooldown", errs)
	}
	s = Spec{Base: load.Level{Shards: 1, MaxConcurrency: 2}}
	if errs := s.LevelErrors(false); len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "MaxConcurrency: ") {
		t.Errorf("closed stand-in: %v: want its MaxConcurrency refused", errs)
	}
	if errs := s.LevelErrors(true); len(errs) != 0 {
		t.Errorf("open stand-in: %v: want none", errs)
	}
}

// TestSetBalance: round-robin over several endpoints unless told; the session header where
// balanced by session or given.
func TestSetBalance(t *testing.T) {
	s := Server{More: []string{"http://b"}}
	if s.SetBalance("", "X-S", false); s.Balance != "round-robin" || s.SessionHeader != "" {
		t.Errorf("several endpoints: %q, %q: want round-robin, no header", s.Balance, s.SessionHeader)
	}
	if s.SetBalance("session", "X-S", false); s.SessionHeader != "X-S" {
		t.Errorf("session: header %q: want X-S", s.SessionHeader)
	}
	one := Server{}
	if one.SetBalance("", "X-S", true); one.Balance != "" || one.SessionHeader != "X-S" {
		t.Errorf("one URL, header given: %q, %q: want no balance, X-S", one.Balance, one.SessionHeader)
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
