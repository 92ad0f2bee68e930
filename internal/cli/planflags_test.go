package cli

import (
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/plan"
	"github.com/llmbench/llmbench/internal/specflags"
)

// planSpaceFlags write plan's own flags back, as specArgs writes the run's
// (TestSpecArgsRoundTrip): the model as given (its profile, Base, is what was made of it),
// the search space and the ranking.
var planSpaceFlags = []struct {
	name string
	vals func(f *planFlags, pc plan.Config) []string
}{
	{"model-shape", func(f *planFlags, _ plan.Config) []string { return specflags.Str(f.model.Shape) }},
	{"model-config", func(f *planFlags, _ plan.Config) []string { return specflags.Str(f.model.Config) }},
	{"gpu", func(f *planFlags, pc plan.Config) []string { return specflags.List(pc.Space.GPUs, strings.Clone) }},
	{"tp", func(f *planFlags, pc plan.Config) []string { return specflags.List(pc.Space.TPs, strconv.Itoa) }},
	{"dtype", func(f *planFlags, pc plan.Config) []string { return specflags.List(pc.Space.Dtypes, strings.Clone) }},
	{"dp", func(f *planFlags, pc plan.Config) []string { return specflags.List(pc.Space.DPs, strconv.Itoa) }},
	{"expert-parallel", func(f *planFlags, pc plan.Config) []string {
		return specflags.List(pc.Space.ExpertParallel, strconv.FormatBool)
	}},
	{"max-num-seqs", func(f *planFlags, pc plan.Config) []string { return specflags.List(pc.Space.MaxNumSeqs, strconv.Itoa) }},
	{"max-batched-tokens", func(f *planFlags, pc plan.Config) []string {
		return specflags.List(pc.Space.MaxBatchedTokens, strconv.Itoa)
	}},
	{"prefill", func(f *planFlags, pc plan.Config) []string { return specflags.List(pc.Space.Prefill, strings.Clone) }},
	{"router", func(f *planFlags, pc plan.Config) []string { return specflags.List(pc.Space.Routers, strings.Clone) }},
	{"speculative", func(f *planFlags, pc plan.Config) []string {
		return specflags.List(pc.Space.Speculative, plan.SpecSetting.String)
	}},
	{"max-replicas", func(f *planFlags, pc plan.Config) []string { return specflags.Num(pc.MaxReplicas) }},
	{"confidence", func(f *planFlags, pc plan.Config) []string { return specflags.Str(pc.Confidence) }},
	{"objective", func(f *planFlags, pc plan.Config) []string { return specflags.Str(pc.Objective) }},
	{"electricity", func(f *planFlags, pc plan.Config) []string { return specflags.Num(pc.Electricity) }},
	{"pue", func(f *planFlags, pc plan.Config) []string { return specflags.Num(pc.PUE) }},
}

// planOwnFlags are plan's flags that neither shape the traffic nor are refused: the space
// searched and the model (best.yaml carries what was chosen), the ranking, and where and
// how the plan is written.
var planOwnFlags = []string{"sim", "model-shape", "model-config", "gpu", "tp", "dtype", "dp", "expert-parallel",
	"max-num-seqs", "max-batched-tokens", "prefill", "router", "speculative", "max-replicas", "confidence",
	"objective", "electricity", "pue", "config", "output-dir", "overwrite", "no-progress", "wide"}
