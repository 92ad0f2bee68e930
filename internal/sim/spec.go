package sim

import (
	"fmt"
	"math"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Speculative decoding: each decode step of a sequence drafts K tokens, the target model
// verifies them in one step over K+1 positions, and the sequence emits the accepted run
// plus the token the verify produces after it. A sequence's acceptance is modelled per
// position, i.i.d. with probability A: the accepted length L has P(L ≥ i) = A^i for i ≤ K,
// so a step emits (1 − A^(K+1)) / (1 − A) tokens on average (K+1 at A = 1).

// Drafting methods: what proposes the K tokens, and so what drafting costs.
const (
	// SpecDraftModel is a smaller model of the same vocabulary, run K times per step (one
	// token per sequence each), costed by the target's own cost model (roofline).
	SpecDraftModel = "draft_model"
	// SpecEagle is an EAGLE-style head on the target's hidden states, at a stated cost.
	SpecEagle = "eagle"
	// SpecNgram is prompt-lookup (n-gram) drafting, at a stated cost (often nearly none).
	SpecNgram = "ngram"
)

// maxDraftTokens bounds K: beyond a few tokens acceptance falls off, and engines offer
// at most some tens (vLLM's num_speculative_tokens).
const maxDraftTokens = 32

// Speculative is a profile's speculative decoding (top-level speculative:). The zero value
// is off; DraftTokens 0 with a method and its cost states how drafting would cost, for
// plan --speculative, while leaving it off.
type Speculative struct {
	DraftTokens int     // K, tokens drafted per sequence per step; 0 = off
	Acceptance  float64 // A, the probability each drafted token is accepted (given the ones before it were)
	Method      string  // SpecDraftModel, SpecEagle or SpecNgram; "" with DraftModel set is SpecDraftModel
	// DraftModel is the draft model's shape (method draft_model), served on the target's
	// GPUs at its precisions and tensor parallelism; its weights and KV cache take memory.
	DraftModel ModelShape
	// DraftMsPerToken is the stated cost of each drafted position of a step, in ms, for
	// the whole batch: a step's drafting costs K × this (eagle, ngram).
	DraftMsPerToken float64
	// DraftStepFraction is the stated cost of each drafted position as a fraction of the
	// target's plain decode step of the same sequences (eagle: a one-layer head and the LM
	// head, against the whole model).
	DraftStepFraction float64
}

// On reports whether the profile decodes speculatively.
func (s Speculative) On() bool { return s.DraftTokens > 0 }

// method is the drafting method, inferred as draft_model when only a draft model is given.
func (s Speculative) method() string {
	if s.Method == "" && s.hasDraftModel() {
		return SpecDraftModel
	}
	return s.Method
}

// hasDraftModel reports whether a draft model is given.
func (s Speculative) hasDraftModel() bool { return s.DraftModel.Name != "" || s.DraftModel.Layers != 0 }

// Stated reports whether s says how tokens are drafted (a method or its cost), so that
// plan can turn speculation on with that cost.
func (s Speculative) Stated() bool {
	return s.method() != "" || s.DraftMsPerToken != 0 || s.DraftStepFraction != 0 || s.hasDraftModel()
}

// TokensPerStep is the expected tokens a sequence's decode step emits: (1 − A^(K+1)) / (1 − A),
// K+1 at A = 1; 1 when off.
func (s Speculative) TokensPerStep() float64 {
	k, a := float64(s.DraftTokens), s.Acceptance
	if !s.On() {
		return 1
	}
	if a >= 1 {
		return k + 1
	}
	return (1 - math.Pow(a, k+1)) / (1 - a)
}

// String describes s in words: "eagle, K 4, acceptance 0.8"; "off".
func (s Speculative) String() string {
	if !s.On() {
		return "off"
	}
	m := s.method()
	if m == SpecDraftModel && s.DraftModel.Name != "" {
		m += " " + s.DraftModel.Name
	}
	return fmt.Sprintf("%s, K %d, acceptance %s", m, s.DraftTokens, num(s.Acceptance))
}

// specErrors reports every problem with p's speculative mapping, each naming its key.
func (p Profile) specErrors() []error {
	s := p.Speculative
	if !s.On() && !s.Stated() && s.DraftTokens == 0 && s.Acceptance == 0 {
		return nil
	}
	var errs []error
	add := func(key, format string, a ...any) {
		errs = append(errs, keyErrorf("speculative."+key, format, a...))
	}
	p.checkKeys(&errs, "speculative.draft_tokens", "speculative.acceptance")
	hasModel := s.hasDraftModel()
	switch s.method() {
	case SpecDraftModel:
		if !hasModel {
			add("draft_model", "method draft_model needs the draft model: a preset (%s) or a shape mapping", strings.Join(ModelPresets(), ", "))
		} else if err := s.DraftModel.validate("speculative.draft_model"); err != nil {
			errs = append(errs, err)
		} else if v := s.DraftModel.Vocab; p.Model.Vocab > 0 && v != p.Model.Vocab {
			add("draft_model", "%s's vocabulary of %d tokens is not %s's %d: a draft model proposes the target's tokens, so it shares its tokenizer", s.DraftModel.Name, v, p.Model.Name, p.Model.Vocab)
		} else if tp := p.Deployment.tp(); tp > 1 && (s.DraftModel.Heads%tp != 0 || s.DraftModel.KVHeads%tp != 0 && tp%s.DraftModel.KVHeads != 0) {
			add("draft_model", "%s's %d heads (%d KV heads) do not split over tp %d as the target does", s.DraftModel.Name, s.DraftModel.Heads, s.DraftModel.KVHeads, tp)
		}
		if p.Cost.Kind != CostRoofline {
			add("draft_model", "needs cost kind roofline, which prices the draft model as it prices the target; a %s model describes one measured server: state the drafting cost with method eagle or ngram and draft_ms_per_token or draft_step_fraction", p.Cost.Kind)
		}
		if s.DraftMsPerToken != 0 || s.DraftStepFraction != 0 {
			add("method", "draft_model is costed by the cost model: drop draft_ms_per_token and draft_step_fraction")
		}
	case SpecEagle, SpecNgram:
		if hasModel {
			add("draft_model", "applies to method draft_model only, not %s", s.Method)
		}
		switch {
		case s.DraftMsPerToken != 0 && s.DraftStepFraction != 0:
			add("method", "%s: give one drafting cost, draft_ms_per_token or draft_step_fraction, not both", s.Method)
		case s.DraftStepFraction != 0:
			if !(s.DraftStepFraction > 0 && s.DraftStepFraction <= 10) {
				add("draft_step_fraction", "must be in (0, 10] (of a plain decode step), got %g", s.DraftStepFraction)
			}
		case !(s.DraftMsPerToken >= 0 && s.DraftMsPerToken <= maxCostMs):
			add("draft_ms_per_token", "must be in [0, %.0f] ms, got %g", float64(maxCostMs), s.DraftMsPerToken)
		case s.DraftMsPerToken == 0 && s.Method == SpecEagle:
			add("method", "eagle needs its drafting cost: draft_ms_per_token (ms per drafted position, for the batch) or draft_step_fraction (of a plain decode step)")
		}
	case "":
		add("method", "missing: how are tokens drafted? draft_model (with draft_model: a preset or shape), eagle or ngram (with draft_ms_per_token or draft_step_fraction)")
	default:
		add("method", "%q is not one of %s, %s, %s", s.Method, SpecDraftModel, SpecEagle, SpecNgram)
	}
	if s.On() && p.Engine.MaxBatchedTokens > 0 && p.Engine.MaxBatchedTokens < s.DraftTokens+1 {
		add("draft_tokens", "%d needs a step budget of at least %d tokens (engine.max_batched_tokens is %d)", s.DraftTokens, s.DraftTokens+1, p.Engine.MaxBatchedTokens)
	}
	return errs
}

// draftShard is the draft model as one GPU of a replica holds it: the target's precisions
// and tensor parallelism; ok is false without a draft model.
func (p Profile) draftShard() (ModelShape, bool) {
	if p.Speculative.method() != SpecDraftModel || !p.Speculative.On() {
		return ModelShape{}, false
	}
	q := p
	q.Model = p.Speculative.DraftModel
	return q.ShardModel(), true
}

// specCost prices drafting. The verify is not here: the core adds its positions to the
// step's work (spec positions count as prefill tokens of no new sequence), so every cost
// model prices it as the step it is.
type specCost struct {
	s      Speculative
	target CostModel
	draft  CostModel // the draft model's, method draft_model; nil otherwise
}

// newSpecCost is p's drafting cost model over its target's; nil when speculation is off.
func (p Profile) newSpecCost(target CostModel) (*specCost, error) {
	if !p.Speculative.On() {
		return nil, nil
	}
	sc := &specCost{s: p.Speculative, target: target}
	if _, ok := p.draftShard(); ok {
		q := p
		q.Model, q.Speculative = p.Speculative.DraftModel, Speculative{}
		d, err := q.NewCostModel()
		if err != nil {
			return nil, fmt.Errorf("speculative.draft_model: %w", err)
		}
		sc.draft = d
	}
	return sc, nil
}

// draftTime is the drafting of one step: pass j drafts one token for each of passes[j]'s
// sequences (those drafting more than j); the draft model's first pass also runs the step's
// prefill chunks, pre (it keeps a KV cache of its own).
func (sc *specCost) draftTime(passes []StepWork, pre StepWork) time.Duration {
	var d time.Duration
	for j, w := range passes {
		if w.DecodeSeqs == 0 {
			break
		}
		switch {
		case sc.draft != nil:
			if j == 0 {
				w.PrefillSeqs, w.PrefillTokens, w.PrefillAttn, w.PrefillContext = pre.PrefillSeqs, pre.PrefillTokens, pre.PrefillAttn, pre.PrefillContext
			}
			d += sc.draft.Step(w)
		case sc.s.DraftStepFraction > 0:
			d += nanos(sc.s.DraftStepFraction * float64(sc.target.Step(w)))
		default:
			d += ms(sc.s.DraftMsPerToken)
		}
	}
	return d
}

// prefill is the draft model's share of a lone prefill of n tokens (the disaggregated
// pool runs it too); 0 for the other methods.
func (sc *specCost) prefill(n int) time.Duration {
	if sc == nil || sc.draft == nil {
		return 0
	}
	return sc.draft.Prefill(n)
}

// accepted draws how many of k drafted tokens the verify accepts: one uniform u per step,
// L ≥ i while u < A^i, so P(L ≥ i) = A^i. The draw depends only on the seed, the sequence's
// submission number and the tokens it has generated, so a run is reproducible on either
// clock.
func (sc *specCost) accepted(seed, no uint64, generated, k int) int {
	u := float64(splitmix64(splitmix64(seed^0x5bec0de^splitmix64(no))+uint64(generated))>>11) / (1 << 53)
	l, p := 0, sc.s.Acceptance
	for l < k && u < p {
		l++
		p *= sc.s.Acceptance
	}
	return l
}

// speculative reads the profile's top-level speculative mapping.
func (d *yamlDecoder) speculative(key string, v *yaml.Node, p *Profile) {
	fields := d.fields(key, p)
	fields["draft_model"] = func(key string, v *yaml.Node) { d.model(key, v, &p.Speculative.DraftModel) }
	d.mapping(v, key+".", fields)
}

// specYAML writes s as the profile's speculative mapping; "" when nothing is stated.
func specYAML(s Speculative) string {
	if !s.Stated() && !s.On() {
		return ""
	}
	// method is written as inferred, and a draft model by its preset's name or as its whole
	// shape (experts, MLA and windows too: they are what it costs).
	q := Profile{Speculative: s}
	q.Speculative.Method = s.method()
	var b strings.Builder
	b.WriteString("speculative:\n")
	writeKeys(&b, &q, "speculative", "  ", func(k profileKey) bool {
		if k.Path != "speculative.draft_model" || !s.hasDraftModel() {
			return false
		}
		if pm, ok := ModelPreset(s.DraftModel.Name); ok && pm == s.DraftModel {
			fmt.Fprintf(&b, "  draft_model: %s\n", s.DraftModel.Name)
		} else {
			b.WriteString("  draft_model:\n")
			writeKeys(&b, &Profile{Model: s.DraftModel}, "model", "    ", nil)
		}
		return true
	})
	return b.String()
}
