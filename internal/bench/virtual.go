package bench

import (
	"context"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// SimulatedProfile is the profile a simulation runs: SimProfile, serving ModelConfig's
// model when one is given, its replicas routed by Balance when given, seeded by Seed.
// Each problem is an *InvalidError of the field's (a *fielderr.Error).
func (s *Spec) SimulatedProfile() (sim.Profile, error) {
	p, err := sim.LoadProfile(s.SimProfile)
	if err != nil {
		return p, &InvalidError{&fielderr.Error{Field: "SimProfile", Err: err}}
	}
	if s.ModelConfig != "" {
		if p, err = p.WithModelConfig(s.ModelConfig); err != nil {
			return p, &InvalidError{&fielderr.Error{Field: "ModelConfig", Err: err}}
		}
	}
	if s.Balance != "" {
		if p.Deployment.Replicas < 2 {
			return p, &InvalidError{fielderr.New("Balance", "%s: profile %s has one replica; the router spreads requests over a deployment of several (deployment.replicas)", s.Balance, s.SimProfile)}
		}
		p.Deployment.Router = s.Balance
	}
	p.Seed = s.Seed
	return p, nil
}

// VirtualSource is a simulation's workload, shaped for its API. It needs lengths only: a
// tokenizer counts only datasets that bring text (o200k_base unless Tokenizer names
// another), but a mistyped name is refused as a live run refuses it. Each problem is an
// *InvalidError (of the Tokenizer field's, a *fielderr.Error, for a name that does not load).
func (s *Spec) VirtualSource() (workload.Source, error) {
	var tok tokenizer.Tokenizer
	if s.Tokenizer != DefaultTokenizer {
		var err error
		if tok, err = tokenizer.Load(s.Tokenizer); err != nil {
			return nil, &InvalidError{&fielderr.Error{Field: "Tokenizer", Err: err}}
		}
	}
	src, err := workload.New(s.Workload, tok)
	if err == nil {
		src, err = s.WrapSource(src, nil)
	}
	if err != nil {
		return nil, &InvalidError{err}
	}
	return src, nil
}

// Simulating is c for a simulation of profile p: each level with its prediction interval,
// from how far p's figures were measured from real servers, and its GPUs' estimated energy.
func (c Config) Simulating(p sim.Profile) Config {
	c.Predict = predict.ForProfile(p)
	c.Estimates = &Estimates{}
	return c
}

// VirtualLevels runs the levels against profile p on a virtual clock (Virtual): src is the
// first run's workload (VirtualSource), each later run's shaped as it was, and each record
// what a live run of the API would have recorded.
func (s *Spec) VirtualLevels(p sim.Profile, src workload.Source, est *Estimates) LevelRunner {
	sources := &Sources{Workload: s.Workload, First: src,
		Shape: func(w workload.Source) (workload.Source, error) { return s.WrapSource(w, nil) }}
	return Virtual(p, s.Seed, sources, s.ShapeVirtual(p.Tools), est)
}

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
// run of the API would have recorded of the answer to its request. opts go to each level's
// load.RunVirtual (load.FirstAndLastTokens for a caller whose figures need no token's time).
func Virtual(p sim.Profile, seed int64, sources *Sources, shape func(*workload.Request, *record.Record), est *Estimates, opts ...load.VirtualOption) LevelRunner {
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
		lopts := opts[:len(opts):len(opts)] // appending copies: opts stay the caller's
		if shape != nil {
			lopts = append(lopts, load.Answered(shape))
		}
		start := clock
		end, reason, err := load.RunVirtual(ctx, lvl, clock, src, srv, sink, lopts...)
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
