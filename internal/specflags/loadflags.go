package specflags

import (
	"errors"
	"fmt"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/rundesc"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/search"
)

// bindLoad binds the load flags: the ladder, its levels' lengths, what runs beside it (the
// search, repeats, stopping) and run's sharding.
func (f *Flags) bindLoad(fs specFlagSet, live bool, d bench.Spec) {
	specVar(fs, fs.StringVar, &f.concurrency, "concurrency", "", "closed loop: concurrent requests, or a ladder `N,N,...` (default 1,4,16,64,256 when neither this nor --rate is given)", "Levels[].Concurrency", func(c specRun) []string {
		return ladderArg(c, func(l load.Level) float64 { return float64(l.Concurrency) })
	})
	specVar(fs, fs.StringVar, &f.rate, "rate", "", "open loop: requests per second, or a ladder `R,R,...`", "Levels[].Rate",
		func(c specRun) []string { return ladderArg(c, func(l load.Level) float64 { return l.Rate }) })
	specVar(fs, fs.StringVar, &f.stages, "stages", "", "one level whose load changes over time, `STAGES` D:V (held) and D:V->V2 (ramped linearly), e.g. 60s:2,120s:2->20,60s:20; rates in requests/s, or concurrencies with a concurrency: prefix; figures per stage (docs/metrics.md)", "Levels[].Stages", stagesArg)
	specVar(fs, fs.StringVar, &f.arrival, "arrival", d.Base.Arrival.String(), "open-loop arrivals: poisson, gamma:B (burstiness B; < 1 is burstier), constant", "Base.Arrival",
		func(c specRun) []string { return Str(c.Base.Arrival.String()) })
	specVar(fs, fs.IntVar, &f.spec.Base.MaxConcurrency, "max-concurrency", 0, "open loop: cap on in-flight requests (waiting for a slot counts as schedule lag)", "Base.MaxConcurrency")
	specVar(fs, fs.IntVar, &f.spec.Requests, "requests", 0, "measured requests per level (default: whole rounds of the concurrency, at least 2 and 10 requests; open loop: 10 s of arrivals)", "Requests")
	specVar(fs, fs.DurationVar, &f.spec.Base.Duration, "duration", 0, "measured time per level (instead of --requests)", "Base.Duration")
	specVar(fs, fs.StringVar, &f.warmup, "warmup", "0", "per level: N requests, or a duration like 10s, sent before measuring and excluded", "Base.Warmup,Base.WarmupTime",
		func(c specRun) []string { return append(Num(c.Base.Warmup), dur(c.Base.WarmupTime)...) })
	specVar(fs, fs.DurationVar, &f.spec.Base.Cooldown, "cooldown", 0, "with --duration: requests sent in the last D of a level are excluded", "Base.Cooldown")
	specVar(fs, fs.StringVar, (*string)(&f.spec.Search), "search", "", "find the largest load meeting the percentile SLOs: concurrency or rate", "Search")
	specVar(fs, fs.Float64Var, &f.spec.SearchMax, "search-max", 0, "upper bound for --search (default 1024 concurrency or 1000 req/s)", "SearchMax")
	specVar(fs, fs.IntVar, &f.spec.Repeat, "repeat", d.Repeat, "run each level N times, each run with seeds of its own (arrivals, prompts, the simulator): figures across runs with t-distribution 95% intervals", "Repeat")
	specVar(fs, fs.StringVar, &f.maxErrorRate, "max-error-rate", "", "stop a level when more than this fraction (0.3) or percentage (30%) of its last 50 finished requests failed, once 20 have; exit code 4 (default: off)", "Base.MaxErrorRate",
		func(c specRun) []string { return Num(c.Base.MaxErrorRate) })
	specVar(fs, fs.BoolVar, &f.spec.StopOnSaturation, "stop-on-saturation", false, "open loop: end the ladder at the first level stopped as oversaturated (the server cannot keep up: docs/metrics.md)", "StopOnSaturation")
	if live { // a simulation has no machines to share the load among
		specVar(fs, fs.StringVar, &f.shard, "shard", "", "run the I-th of N disjoint slices of the plan: `I/N` (0-based)", "Base.Shard,Base.Shards", func(c specRun) []string {
			return when(c.Base.Shards > 1, rundesc.ShardString(c.Base.Shard, c.Base.Shards))
		})
		specVar(fs, fs.StringVar, &f.startAt, "start-at", "", "start at this RFC 3339 instant (to start shards together)", "StartAt",
			func(c specRun) []string { return when(!c.StartAt.IsZero(), c.StartAt.Format(time.RFC3339Nano)) })
	}
}

// ladderFlags are the load flags' values the levels are built from.
type ladderFlags struct {
	concurrency, rates []float64
	stages             schedule.Stages
	arrival            schedule.Arrival
	warmN              int
	warmD              time.Duration
	unparsed           bool // --concurrency or --rate did not parse
}

// load reads the load flags: the ladder, its levels' lengths, warm-up and sharding.
func (r *resolver) load() ladderFlags {
	f, c := r.f, r.c
	var l ladderFlags
	var err error
	if l.concurrency, err = load.ParseList(f.concurrency, true); err != nil {
		r.add(fmt.Errorf("--concurrency: %w", err))
		l.unparsed = true
	}
	if l.rates, err = load.ParseList(f.rate, false); err != nil {
		r.add(fmt.Errorf("--rate: %w", err))
		l.unparsed = true
	}
	if l.arrival, err = schedule.ParseArrival(f.arrival); err != nil {
		r.add(fmt.Errorf("--arrival: %w", err))
	}
	if l.warmN, l.warmD, err = load.ParseWarmup(f.warmup); err != nil {
		r.add(fmt.Errorf("--warmup: %w", err))
	}
	if c.Base.Shard, c.Base.Shards, err = rundesc.ParseShard(f.shard); err != nil {
		r.add(fmt.Errorf("--shard: %w", err))
	}
	if f.startAt != "" {
		t, err := time.Parse(time.RFC3339, f.startAt)
		if err != nil {
			r.add(fmt.Errorf("--start-at: %q is not an RFC 3339 time like 2026-01-02T15:04:05Z", f.startAt))
		}
		c.StartAt = t
	}
	if f.stages != "" {
		if l.stages, err = schedule.ParseStages(f.stages); err != nil {
			r.add(fmt.Errorf("--stages: %w", err))
			l.unparsed = true
		}
		for _, other := range []struct {
			name string
			set  bool
		}{{"concurrency", f.concurrency != ""}, {"rate", f.rate != ""}, {"search", c.Search != ""},
			{"requests", c.Requests != 0}, {"duration", c.Base.Duration != 0}} {
			if other.set {
				r.add(fmt.Errorf("--stages and --%s: the stages set the level's load and length; drop --%s", other.name, other.name))
			}
		}
	}
	// Rules about the flags themselves; those of a level are load's (bench.Spec.LevelErrors).
	if len(l.concurrency) > 0 && len(l.rates) > 0 {
		// Two lists, one ladder: each level built has one of them, so no level sees this.
		r.add(errors.New("--concurrency and --rate: give one (closed or open loop), not both"))
	}
	r.spec("Requests,Base.Duration")
	if c.Requests == 0 && f.fs != nil && f.fs.Changed("requests") {
		// 0 is the flag's "unset": given, it would silently become each level's default.
		r.add(errors.New("--requests 0: a level measures at least one request; leave --requests out for each level's default length"))
	}
	return l
}

// search reads the flags of what runs beside the ladder: repeats, the error-rate stop
// and the SLO search.
func (r *resolver) search() {
	f, c := r.f, r.c
	if c.Repeat > 1 && c.Search != "" {
		r.add(errors.New("--repeat and --search: a search probes each load once; repeat the level it finds instead"))
	}
	var err error
	if c.Base.MaxErrorRate, err = load.ParseMaxErrorRate(f.maxErrorRate); err != nil {
		r.add(fmt.Errorf("--max-error-rate: %w", err))
	}
	if c.Search != "" {
		if c.Search, err = search.ParseAxis(string(c.Search)); err != nil {
			r.add(fmt.Errorf("--search: %w", err))
		}
	}
	r.spec("Search,Levels") // a ladder given beside it
}

// levels sets the ladder (bench's default when no load is given) on the load flags' Base,
// and says each of its levels' problems once under the flag that set the field at fault.
func (r *resolver) levels(l ladderFlags) {
	f, c := r.f, r.c
	c.Base.Arrival, c.Base.Warmup, c.Base.WarmupTime = l.arrival, l.warmN, l.warmD
	c.SetLoads(l.concurrency, l.rates, l.stages, l.unparsed)
	said := map[string]bool{}
	for _, err := range c.LevelErrors(f.rate != "") {
		if err = levelError(err); !said[err.Error()] {
			said[err.Error()] = true
			r.add(err)
		}
	}
}
