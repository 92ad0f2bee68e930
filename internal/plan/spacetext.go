package plan

import (
	"errors"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/load"
)

// SpaceText is a Space as its user writes it: each list comma-separated, "" for the base
// profile's own setting.
type SpaceText struct {
	GPUs, TPs, Dtypes, DPs, ExpertParallel string
	MaxNumSeqs, MaxBatchedTokens           string
	Prefill, Routers, Speculative          string
}

// Parse reads t's lists into a Space, reporting every problem at once, each a
// *fielderr.Error of the Space field's (Space.GPUs, ...). Values are read here, not checked
// against a profile: Space.Validate does that.
func (t SpaceText) Parse() (Space, error) {
	var errs []error
	var spec []SpecSetting
	if t.Speculative != "" {
		var err error
		if spec, err = ParseSpeculative(t.Speculative); err != nil {
			errs = append(errs, &fielderr.Error{Field: "Space.Speculative", Err: err})
		}
	}
	strs := func(field, s string) []string {
		var out []string
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
		if s != "" && len(out) == 0 {
			errs = append(errs, fielderr.New(field, "%q lists nothing", s))
		}
		return out
	}
	ints := func(field, s string) []int {
		v, err := load.ParseList(s, true)
		if err != nil {
			errs = append(errs, &fielderr.Error{Field: field, Err: err})
		}
		out := make([]int, len(v))
		for i, x := range v {
			out[i] = int(min(x, 1e12))
		}
		return out
	}
	bools := func(field, s string) []bool {
		var out []bool
		for _, v := range strs(field, s) {
			on, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fielderr.New(field, "%q is not true or false (give true,false to try both)", v))
			}
			out = append(out, on)
		}
		return out
	}
	s := Space{GPUs: strs("Space.GPUs", t.GPUs), Dtypes: strs("Space.Dtypes", t.Dtypes), Prefill: strs("Space.Prefill", t.Prefill),
		Routers: strs("Space.Routers", t.Routers), TPs: ints("Space.TPs", t.TPs), MaxNumSeqs: ints("Space.MaxNumSeqs", t.MaxNumSeqs),
		MaxBatchedTokens: ints("Space.MaxBatchedTokens", t.MaxBatchedTokens), Speculative: spec,
		DPs: ints("Space.DPs", t.DPs), ExpertParallel: bools("Space.ExpertParallel", t.ExpertParallel)}
	return s, errors.Join(errs...)
}
