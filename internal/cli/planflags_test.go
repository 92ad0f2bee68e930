package cli

import (
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/plan"
)

// planSpaceFlags write plan's own flags back, as specArgs writes the run's
// (TestSpecArgsRoundTrip): the model as given (its profile, Base, is what was made of it),
// the search space and the ranking.
var planSpaceFlags = []struct {
	name string
	vals func(f *planFlags, pc plan.Config) []string
}{
	{"model-shape", func(f *planFlags, _ plan.Config) []string { return str(f.model.Shape) }},
	{"model-config", func(f *planFlags, _ plan.Config) []string { return str(f.model.Config) }},
	{"gpu", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.GPUs, strings.Clone) }},
	{"tp", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.TPs, strconv.Itoa) }},
	{"dtype", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.Dtypes, strings.Clone) }},
	{"dp", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.DPs, strconv.Itoa) }},
	{"expert-parallel", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.ExpertParallel, strconv.FormatBool) }},
	{"max-num-seqs", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.MaxNumSeqs, strconv.Itoa) }},
	{"max-batched-tokens", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.MaxBatchedTokens, strconv.Itoa) }},
	{"prefill", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.Prefill, strings.Clone) }},
	{"router", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.Routers, strings.Clone) }},
	{"speculative", func(f *planFlags, pc plan.Config) []string {
		return list(pc.Space.Speculative, plan.SpecSetting.String)
	}},
	{"max-replicas", func(f *planFlags, pc plan.Config) []string { return num(pc.MaxReplicas) }},
	{"confidence", func(f *planFlags, pc plan.Config) []string { return str(pc.Confidence) }},
	{"objective", func(f *planFlags, pc plan.Config) []string { return str(pc.Objective) }},
	{"electricity", func(f *planFlags, pc plan.Config) []string { return num(pc.Electricity) }},
	{"pue", func(f *planFlags, pc plan.Config) []string { return num(pc.PUE) }},
}

// planOwnFlags are plan's flags that neither shape the traffic nor are refused: the space
// searched and the model (best.yaml carries what was chosen), the ranking, and where and
// how the plan is written.
var planOwnFlags = []string{"sim", "model-shape", "model-config", "gpu", "tp", "dtype", "dp", "expert-parallel",
	"max-num-seqs", "max-batched-tokens", "prefill", "router", "speculative", "max-replicas", "confidence",
	"objective", "electricity", "pue", "config", "output-dir", "overwrite", "no-progress", "wide"}
