package bench

import (
	"math"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/search"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// levelSeedStep separates the seeds of a ladder's levels, repeatSeedStep those of a
// repeated level's runs.
const (
	levelSeedStep  = 7919
	repeatSeedStep = 104729
)

// FinishLevel numbers a level, seeds it from the run's seed and gives it a default length
// (requests, or DefaultRequests when 0); an open loop watches for over-saturation (load's
// stopping rules).
func FinishLevel(l load.Level, index, requests int, seed int64, decide int) load.Level {
	l.Index = index
	l.Seed = seed + int64(index)*levelSeedStep // distinct arrivals per level, still fixed by the seed
	l.DetectSaturation = l.Rate > 0
	if l.Duration == 0 {
		l.Requests = requests
		if l.Requests == 0 {
			l.Requests = DefaultRequests(l, decide)
		}
	}
	return l
}

// SetLadder sets s's levels on its Base: a closed-loop level per concurrency, then an
// open-loop level per rate, or with neither, the one level stages shape; each finished with
// s's Requests, Seed and SLOs (Finish).
func (s *Spec) SetLadder(concurrency, rates []float64, stages schedule.Stages) {
	s.Levels = nil
	for _, n := range concurrency {
		lvl := s.Base
		lvl.Concurrency = int(n)
		s.Levels = append(s.Levels, lvl)
	}
	for _, rate := range rates {
		lvl := s.Base
		lvl.Rate = rate
		s.Levels = append(s.Levels, lvl)
	}
	if stages.Staged() && len(s.Levels) == 0 {
		lvl := s.Base
		lvl.Stages, lvl.Duration = stages, stages.Total()
		if stages.Kind == schedule.StageConcurrency {
			lvl.Concurrency = int(stages.Max())
		} else {
			lvl.Rate = stages.Max()
		}
		s.Levels = append(s.Levels, lvl)
	}
	for i := range s.Levels {
		s.Levels[i] = s.Finish(s.Levels[i], i, s.Requests)
	}
}

// DefaultLadder are the concurrencies a run measures when given no load.
var DefaultLadder = []float64{1, 4, 16, 64, 256}

// SetLoads is SetLadder with a run's default load: given no concurrencies, rates, stages or
// search, and no load that failed to read (failed), DefaultLadder, marked DefaultLoad.
func (s *Spec) SetLoads(concurrency, rates []float64, stages schedule.Stages, failed bool) {
	if len(concurrency) == 0 && len(rates) == 0 && s.Search == "" && !failed && !stages.Staged() {
		concurrency = DefaultLadder
		s.DefaultLoad = true
	}
	s.SetLadder(concurrency, rates, stages)
}

// LevelErrors are load's problems with s's levels (load.Level.Validate), each a
// *fielderr.Error keyed by the level's field, in the levels' order. With no levels (a
// search, or loads that failed to read) a stand-in level of Base checks the rest of it: an
// open loop when the search is for a rate or, with none, rates were given (rates), else a
// closed loop of the fewest workers the shards split.
func (s Spec) LevelErrors(rates bool) []error {
	levels := s.Levels
	if len(levels) == 0 {
		probe := s.Base
		if s.Search == search.Rate || s.Search == "" && rates {
			probe.Rate = 1
		} else {
			probe.Concurrency = max(1, s.Base.Shards)
		}
		levels = []load.Level{s.Finish(probe, 0, s.Requests)}
	}
	var errs []error
	for _, l := range levels {
		errs = append(errs, fielderr.Split(l.Validate())...)
	}
	return errs
}

// DefaultRequests keeps a default level short but big enough for stable medians and for
// its SLO verdict to be decided: at least decide requests (metrics.DecidingSamples).
func DefaultRequests(l load.Level, decide int) int {
	n := max(10, decide)
	if l.Concurrency > 0 {
		// Whole rounds (a multiple of the concurrency), at least two: a last partial
		// round would understate throughput.
		c := l.Concurrency
		return c * max(2, (n+c-1)/c)
	}
	return max(n, int(math.Ceil(l.Rate*10)))
}

// RunSeed is the seed of run r of a repeated level (1-based; 0 for a level run once):
// run 1 has the run's seed itself, so it is the run a plain invocation makes.
func RunSeed(seed int64, r int) int64 {
	return seed + int64(max(r-1, 0))*repeatSeedStep
}

// forRun is level l as run r of repeat runs: its arrivals seeded from RunSeed(seed, r).
func forRun(l load.Level, r, repeat int, seed int64) load.Level {
	if repeat > 1 {
		l.Repeat = r
		l.Seed = RunSeed(seed, r) + int64(l.Index)*levelSeedStep
	}
	return l
}

// LevelName describes a level's load for the console and summary.
func LevelName(l load.Level) string {
	return levelDesc(l).Name()
}

// Sources gives each run of a repeated level its workload, seeded by its run's seed
// (RunSeed), built once; run 1 and a level run once have First, the run's own.
type Sources struct {
	Workload  workload.Config
	Tokenizer tokenizer.Tokenizer
	First     workload.Source
	// Shape, when set, shapes each later run's source as First was (images, batches,
	// documents, tools); nil leaves them as workload.New makes them.
	Shape func(workload.Source) (workload.Source, error)
	by    map[int64]workload.Source
}

// Get is the workload of lvl's run.
func (s *Sources) Get(lvl load.Level) (workload.Source, error) {
	seed := RunSeed(s.Workload.Seed, lvl.Repeat)
	if seed == s.Workload.Seed {
		return s.First, nil
	}
	if src, ok := s.by[seed]; ok {
		return src, nil
	}
	wc := s.Workload
	wc.Seed = seed
	src, err := workload.New(wc, s.Tokenizer)
	if err == nil && s.Shape != nil {
		src, err = s.Shape(src)
	}
	if err != nil {
		return nil, err
	}
	if s.by == nil {
		s.by = map[int64]workload.Source{}
	}
	s.by[seed] = src
	return src, nil
}

// Undecided are the levels expected to send fewer requests than their SLO verdict needs
// (Decide), which is then undecided: a timed level's count is about its rate times its
// duration, and a closed loop's is not known ahead.
func (s Spec) Undecided() []LevelCount {
	need := s.Decide()
	var short []LevelCount
	for _, l := range s.Levels {
		n := l.Requests
		if l.Duration > 0 {
			n = int(l.Rate * l.Duration.Seconds())
		}
		if n > 0 && n < need {
			short = append(short, LevelCount{l.Index, n})
		}
	}
	return short
}
