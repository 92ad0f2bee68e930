package specflags

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
)

// Console are how the console shows a run, beside its bench.Spec: they change no file.
type Console struct {
	Quiet      bool // the ladder and the results folder only
	Wide       bool // the whole ladder table
	NoProgress bool
}

// Resolve validates every flag and reports all problems at once, each in the words of
// its flag (all are the user's to fix: a usage error).
func (f *Flags) Resolve(live bool, now time.Time) (*bench.Spec, Console, error) {
	if f.config != "" && f.fs != nil {
		if err := applyConfig(f.fs, f.config); err != nil {
			return nil, Console{}, err
		}
	}
	c := f.spec // the flags set since bind, --config's included
	r := &resolver{f: f, live: live, c: &c}
	c.SeedDrawn = live && f.drawSeed(&c)
	if f.fs != nil {
		r.errs = append(r.errs, ParseErrors(f.fs)...) // values that did not parse, the rest checked beside them
	}
	if live {
		r.target()
	}
	r.balancing()
	ladder := r.load()
	r.search()
	r.spec("API")
	r.inputs()
	if c.SearchMax == 0 {
		c.SearchMax = bench.DefaultSearchMax(c.Search)
	}
	r.judging()
	r.workload()
	r.outputs(now)
	r.levels(ladder)
	// bench owns the rules of its Spec and Config, said here among the flags' own (said); its
	// console is the caller's, so a stand-in writer passes.
	bc := bench.Config{Spec: *r.c, Console: bench.Console{Out: io.Discard}}
	if errs := r.said(fielderr.Split(bc.Validate())); len(errs) > 0 {
		return nil, f.con, errors.Join(errs...)
	}
	return r.c, f.con, nil
}

// drawSeed gives a run against a real server (--url) without --seed a seed of its own, so
// that a second run does not send the first's prompts, which a server's prompt cache would
// answer; it reports whether it drew one. A run of shards keeps --seed's default: the shards,
// on machines of their own, slice one plan.
func (f *Flags) drawSeed(c *bench.Spec) bool {
	if f.url == "" || f.shard != "" || f.fs == nil || f.fs.Changed("seed") {
		return false
	}
	c.Seed = rand.Int64N(1<<31) + 1
	return true
}

// resolver gathers a bench.Spec from the flags, and every problem with them.
type resolver struct {
	f    *Flags
	c    *bench.Spec
	live bool
	errs []error
}

// add adds err, each of a join's errors on its own; nil adds none.
func (r *resolver) add(err error) { r.errs = append(r.errs, fielderr.Split(err)...) }

// judging reads the flags that judge and price the levels: percentiles, SLOs, prices.
func (r *resolver) judging() {
	f, c := r.f, r.c
	pcts, err := metrics.ParsePercentiles(f.percentiles)
	if err != nil {
		r.add(fmt.Errorf("--percentiles: %w", err))
	}
	slos, err := metrics.ParseSLOs(c.Judge.SLO)
	if err != nil {
		r.add(fmt.Errorf("--slo: %w", err))
	}
	c.Judge.Metrics = metrics.Config{Percentiles: pcts, SLOs: slos}
	r.spec("Judge.Metrics.SLOs[],API", "Judge.Metrics.SLOs[],NoStream")
	if c.Judge.Pricing, err = f.price.Parse(); err != nil {
		r.add(err)
	} else if r.live && f.url != "" {
		c.Judge.Price, err = Price(c.Judge.Pricing, nil, 1) // a server of its own: only the flags price it
		r.add(err)
	}
	r.spec("Search,Judge.Metrics.SLOs")
}

// outputs reads the flags of the run's files.
func (r *resolver) outputs(now time.Time) {
	c := r.c
	if c.Output.Dir == "" {
		c.Output.Dir = "llmbench-results/" + now.UTC().Format("20060102T150405Z")
	}
	if files := bench.RunFiles(c.Output.Dir); len(files) > 0 && !c.Output.Overwrite {
		r.add(fmt.Errorf("--output-dir %s already holds a run (%s): give another folder, or --overwrite to replace it", c.Output.Dir, strings.Join(files, ", ")))
	}
}
