package bench

import (
	"context"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// DeployError is a profile whose deployment could not be built (Deploy).
type DeployError struct{ Err error }

func (e *DeployError) Error() string { return "deploy: " + e.Err.Error() }
func (e *DeployError) Unwrap() error { return e.Err }

// SimAPIs are the APIs the built-in simulator serves (the OpenAI-style ones).
var SimAPIs = []string{client.APIOpenAIChat, client.APIOpenAICompletions, client.APIOpenAIResponses,
	client.APIOpenAIEmbeddings, client.APIRerank}

// Virtual runs each level against profile p's deployment (Deploy) on a virtual clock, the
// levels one after another on one timeline; run r of level i seeds the simulator's noise
// with RunSeed(seed, r) + i·levelSeedStep. shape, when set, makes each record what a live
// run of the API would have recorded of the answer to its request.
func Virtual(p sim.Profile, seed int64, sources *Sources, shape func(*workload.Request, *record.Record), est *Estimates) LevelRunner {
	var clock time.Duration // the run's virtual timeline: levels follow one another
	return func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error) {
		src, err := sources.Get(lvl)
		if err != nil {
			return "", err
		}
		pr := p
		// A repeated level's runs, and each level, draw noise of their own: a live server's
		// levels do not replay the same steps' noise, so neither may the simulator's.
		pr.Seed = RunSeed(seed, lvl.Repeat) + int64(lvl.Index)*levelSeedStep
		srv, err := Deploy(pr)
		if err != nil {
			return "", &DeployError{err}
		}
		var opts []load.VirtualOption
		if shape != nil {
			opts = append(opts, load.Answered(shape))
		}
		start := clock
		end, reason, err := load.RunVirtual(ctx, lvl, clock, src, srv, sink, opts...)
		clock = end
		if en, ok := EnergyOf(pr, srv, end-start); ok {
			est.add(lvl.Index, en)
		}
		if err != nil {
			return load.EndInterrupted, err
		}
		return reason, nil
	}
}
