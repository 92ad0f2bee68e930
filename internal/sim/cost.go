package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// StepWork is what one engine step computes: one token for each decoding sequence, plus
// prefill chunks. The engine fills it in O(running) per step; cost models read it in O(1).
// Speculative decoding's verified draft positions (spec.go) count in PrefillTokens and
// PrefillAttn, computed in the same pass with one weight read, not in PrefillSeqs or
// PrefillContext (they attend to their sequence's context, counted in DecodeContext).
type StepWork struct {
	DecodeSeqs    int   // sequences decoding one token
	DecodeContext int64 // sum over decoding sequences of the tokens each attends to
	PrefillSeqs   int   // sequences with a prefill chunk in this step
	PrefillTokens int   // new prompt tokens computed in this step
	// PrefillAttn is the sum over chunks of n × (p + n/2): query-key pairs of a causal chunk
	// of n tokens after p cached ones.
	PrefillAttn float64
	// PrefillContext is the sum over chunks of p, the cached tokens each chunk attends to.
	PrefillContext int64
}

// CostModel turns a step's work into its duration.
type CostModel interface {
	// Step is the duration of one engine step; zero for an empty step.
	Step(w StepWork) time.Duration
	// Prefill is the duration of one sequence's whole prefill of n tokens run alone (the
	// disaggregated prefill pool).
	Prefill(n int) time.Duration
}

// paced is a cost model whose every step takes f times as long (Profile.Pace).
type paced struct {
	CostModel
	f float64
}

func (c paced) Step(w StepWork) time.Duration { return nanos(float64(c.CostModel.Step(w)) * c.f) }
func (c paced) Prefill(n int) time.Duration   { return nanos(float64(c.CostModel.Prefill(n)) * c.f) }

func ms(v float64) time.Duration { return nanos(v * float64(time.Millisecond)) }

// nanos rounds ns to a Duration, saturating: converting a float beyond int64 is
// implementation-defined in Go (negative on amd64), and a step must never run backwards.
// Profile validation keeps real steps far below the limit; this is the backstop.
func nanos(ns float64) time.Duration {
	switch {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	case ns != ns:
		return 0
	}
	return time.Duration(math.Round(ns))
}

// Linear is the textbook model: prefill costs a fixed time per token; a decode step costs
// DecodeStepMs, growing by DecodeGrowth per extra running sequence. Two terms a fitted
// server needs and the textbook leaves at 0: StepMs, paid by every step (the weights read
// once, launches, sampling: a prefill-only step is not free), ContextMsPer1k per 1,000
// tokens of context the step's decoding sequences attend to, and PrefillAttnMsPer1M per
// million query-key pairs of its prefill chunks (attention's quadratic share of a long
// prompt, which dominates on small models and CPUs), and PrefillSeqMs per sequence whose
// prompt (or chunk of it) the step prefills (a server's per-prompt work: llama.cpp's
// slot set-up and a compute graph built for the new batch shape, which decode steps of one
// shape reuse).
type Linear struct {
	PrefillMsPerToken  float64
	DecodeStepMs       float64
	DecodeGrowth       float64
	StepMs             float64
	ContextMsPer1k     float64
	PrefillAttnMsPer1M float64
	PrefillSeqMs       float64
}

// Step implements CostModel.
func (l Linear) Step(w StepWork) time.Duration {
	if w.DecodeSeqs == 0 && w.PrefillTokens == 0 {
		return 0
	}
	t := l.StepMs + l.PrefillMsPerToken*float64(w.PrefillTokens) + l.PrefillAttnMsPer1M*w.PrefillAttn/1e6 +
		l.PrefillSeqMs*float64(w.PrefillSeqs)
	if w.DecodeSeqs > 0 {
		t += l.DecodeStepMs*(1+l.DecodeGrowth*float64(w.DecodeSeqs-1)) + l.ContextMsPer1k*float64(w.DecodeContext)/1000
	}
	return ms(t)
}

// Prefill implements CostModel.
func (l Linear) Prefill(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return l.Step(StepWork{PrefillSeqs: 1, PrefillTokens: n, PrefillAttn: float64(n) * float64(n) / 2})
}

// RooflineParams are the roofline's hardware constants (efficiencies and overheads). The
// efficiencies scale the datasheet figures; the overheads are what a step costs beyond its
// FLOPs and bytes, each scaled by what it counts (layers, sequences, steps), so that a fit
// over models of different sizes can tell them apart: on one shape a cost per layer, a
// fixed cost and a lower efficiency all look alike.
type RooflineParams struct {
	// ComputeEfficiency is the fraction of the GPU's tensor FLOP/s that matmuls and
	// attention reach.
	ComputeEfficiency float64
	// BandwidthEfficiency is the fraction of the memory bandwidth that weight and KV-cache
	// reads reach.
	BandwidthEfficiency float64
	// AttnUnitsPerSM is how many (sequence, KV head) pairs per SM attention needs to reach
	// full bandwidth: one sequence's attention over a long context is latency-bound. 0
	// disables the limit.
	AttnUnitsPerSM float64
	// LayerOverheadUs is each layer's cost per step in µs beyond its FLOPs and bytes: the
	// launches of and gaps between its kernels (norms, rotary, activation, attention).
	LayerOverheadUs float64
	// SeqOverheadUs is each sequence's cost per step in µs: its sampling, input preparation
	// and attention metadata.
	SeqOverheadUs float64
	// StepOverheadUs is the rest, per step in µs: the scheduler and the launches outside the
	// layers (embedding, final norm, output projection).
	StepOverheadUs float64
	// MoELayerOverheadUs is each mixture-of-experts layer's cost per step in µs beyond its
	// FLOPs and bytes: routing, top-k, the tokens' permutation to their experts and back, the
	// grouped GEMM's launches. It shows at small batches, where a step reads few experts.
	MoELayerOverheadUs float64
	// PrefillMoELayerOverheadUs is each mixture-of-experts layer's cost in µs in a step with
	// prefill work, beyond its FLOPs and bytes and the overheads above: the first token of
	// every request the step prefills waits for it, and so does every sequence it decodes.
	// An engine's constant (where cost: leaves it out, the engine.kind's:
	// enginePrefillMoELayerUs), measured on DeepSeek-R1; what it is made of is not
	// established (docs/simulator.md, "Engines as facts").
	PrefillMoELayerOverheadUs float64
	// Overlap is how fully a kernel's compute hides its memory reads: its time is the
	// k-norm (c^k + m^k)^(1/k) of its compute time c and memory time m, k = Overlap, so a
	// step bound by both takes longer than either (the weights' reads of a 70B at 150 tokens
	// a step on an H200 and their FLOPs are 23.5 and 19.5 ms; the step takes 35). 0 is full
	// overlap, the larger of the two; otherwise at least 1 (1 is none, their sum).
	Overlap float64
	// FP4Efficiency is the fraction of ComputeEfficiency that fp4 matmuls (mxfp4, nvfp4 on a
	// GPU with fp4 tensor cores) reach of the datasheet's fp4 rate: NVIDIA's MLPerf Offline
	// runs of Llama-2-70B in NVFP4 on B200 (seven submitters, 2025) served what the roofline
	// gives at 0.76 of the rate the fp8 and bf16 fits reach, where the H200's fp8 runs need no
	// such factor (docs/measurements.md, "FP4's attained rate"). 0 is none of its own: fp4 at
	// ComputeEfficiency like every precision.
	FP4Efficiency float64
	// KVReadBits is the bits per element at which attention reads a KV cache stored at
	// fewer: an engine whose attention dequantizes a quantized cache rather than reading it
	// at its own size (vLLM's: "no latency improvements as the implementation does not yet
	// include fused dequantization and attention operations", its docs to v0.11) gains the
	// cache's room, not its speed. 0 is the cache's own size. An engine's fact: where cost:
	// leaves it out, the engine.kind's (engineKVReadBits).
	KVReadBits float64
	// LaunchUsPerLayer is the host's time to launch one layer's kernels in a step run outside
	// CUDA graphs (engine.cuda_graphs), µs. The GPU reads a layer's weights while the host
	// launches what follows, so only a step whose weights (the dense ones and the experts its
	// tokens touch) take less than its layers' launches waits, the difference, before its
	// batch's own work: MLPerf's TensorRT-LLM engines (no graphs) measure it on B200 and
	// GB200, where an fp4 70B's weights read in 7.7 ms against 15 of launches, and on an
	// H200's fp8 8B, not on the H200's fp8 70B, whose weights take the 15 (docs/measurements.md,
	// "Launches a step waits on"). An engine's fact: where cost: leaves it out, the
	// engine.kind's (engineLaunchUsPerLayer).
	LaunchUsPerLayer float64
}

// DefaultRooflineParams are the constants fitted over the measured H200 / Llama-3.1-8B file
// and the published step times of other shapes (testdata/public-steps.json;
// docs/simulator.md shows the fit and how the constants carry by leave-one-out).
func DefaultRooflineParams() RooflineParams {
	return RooflineParams{
		ComputeEfficiency:   0.578,
		BandwidthEfficiency: 0.648,
		AttnUnitsPerSM:      0.581,
		LayerOverheadUs:     0,
		SeqOverheadUs:       0,
		StepOverheadUs:      0,
		// Chosen, not fitted: the fit's loss is flat from 1.2 to 1.5 (RMS 13.9-14.2 %, 17.7 %
		// with the larger of the two), and 1.5 departs least from the larger alone.
		Overlap: 1.5,
		// Fitted to gpt-oss-120b on 8 × H100 (vLLM, InferenceX, 4–64 in flight: the MoE
		// roofline without it fell 2.0–2.6 ms a step short, 56–72 µs over 36 MoE layers) and
		// checked on DeepSeek-R1 on 8 × H200 (SGLang), which it was not fitted to
		// (docs/measurements.md, "Mixtures of experts against published measurements").
		MoELayerOverheadUs: 60,
		// Fitted to the median B200 Offline capacity of MLPerf v5.1's Llama-2-70B NVFP4
		// submissions, checked on GB200's (docs/measurements.md, "FP4's attained rate").
		FP4Efficiency: 0.76,
		// vLLM's, the default engine's (engineKVReadBits).
		KVReadBits: 16,
	}
}

// RooflineField names one parameter for generic fitting.
type RooflineField struct {
	Key      string   // its YAML key under cost:
	Value    *float64 // the parameter
	Min, Max float64  // its valid range, inclusive
}

// Fields lists p's parameters with their YAML keys and valid ranges (costKeys').
func (p *RooflineParams) Fields() []RooflineField {
	var out []RooflineField
	for _, k := range CostKeysOf(CostRoofline) {
		out = append(out, RooflineField{Key: k.Key, Value: k.roof(p), Min: k.Min, Max: k.Max})
	}
	return out
}

// validate reports every parameter outside its range; prefix names the YAML mapping.
func (p RooflineParams) validate(prefix string) []error {
	var errs []error
	for _, k := range CostKeysOf(CostRoofline) {
		if err := k.check(prefix, *k.roof(&p)); err != nil {
			errs = append(errs, err)
		}
	}
	if p.Overlap > 0 && p.Overlap < 1 {
		errs = append(errs, keyErrorf(prefix+CostKeyOverlap, "must be 0 (full overlap) or at least 1 (1: none), got %g", p.Overlap))
	}
	return errs
}

// Roofline derives step times from a model shape and a GPU: the linear layers take the
// longer of their FLOPs over effective compute and their weights over effective bandwidth;
// attention likewise with its FLOPs and the KV cache it reads; the two run one after the
// other, plus overheads per layer, per sequence and per step.
//
// An MoE model's routed experts are priced apart: their FLOPs are the experts chosen per
// token's, and the bytes they read are those of the experts the step's tokens touch — with
// each of B tokens choosing k of E experts, E·(1 − (1 − k/E)^B) of them per layer on
// average (the routing taken as uniform and independent). With DP > 1 (data-parallel
// attention) each of the replica's dp groups attends to its 1/DP share of the step's
// sequences with its own copy of the dense weights, and the MoE blocks take every token.
type Roofline struct {
	Model  ModelShape
	GPU    GPU
	Params RooflineParams
	// DP is the replica's dp groups (Deployment.DP); 0 is 1.
	DP int
	// Graphs is which steps run in CUDA graphs (engine.cuda_graphs: GraphsAll, GraphsDecode,
	// GraphsNone; "" is GraphsAll): the others wait on their launches (LaunchUsPerLayer).
	Graphs string

	flops      float64 // effective FLOP/s of the dense matmuls (at their precision's rate)
	attnRate   float64 // effective FLOP/s of attention (bf16's)
	bw         float64 // effective bytes/s
	mm         float64 // matmul params, routed experts excepted
	weightRead float64 // bytes of those weights read per step
	attnFlops  float64 // FLOPs per query-key pair across layers (QK^T and AV)
	kvBytes    float64 // per cached token
	units      float64 // (sequence, KV head) pairs that saturate bandwidth; 0 = no limit
	fixedNs    float64 // overhead of every step: its layers' and the step's own
	seqNs      float64 // overhead per sequence in the step
	prefillNs  float64 // overhead of a step with prefill work (its MoE layers')
	launchNs   float64 // ns the host takes to launch the layers of a step outside CUDA graphs
	denseRdNs  float64 // ns the dense weights' read takes (at one token: what it always reads)

	// Routed experts: their count E and share k/E chosen per token, the FLOPs per token
	// and the bytes of one expert across the MoE layers, and their FLOP rate.
	experts, pick       float64
	expertMM, expertRd  float64
	expertFlops         float64
	window, slidingFrac float64 // sliding-window layers' window and share of the layers

	// linearMemo holds the dense matmuls' time by the step's token count (see linear),
	// indexed by the count: a map's lookup was itself a visible part of the loop.
	linearMemo []linearTime
}

// linearTime is the dense matmuls' time of a step, s, and its compute-bound part; ok says
// it is memoized.
type linearTime struct {
	t, comp float64
	ok      bool
}

// linearMemoMax bounds the token counts memoized: steps repeat few of them (a decode step's
// count is its batch's size; a chunked prefill's, the budget), and a cap keeps the memo small
// whatever the profile's budget.
const linearMemoMax = 4096

// linear is the time of the dense matmuls of a step of tokens tokens, s; their compute-bound
// part is added to *comp. It depends on the token count alone and its k-norm's powers are
// much of a simulation's cost, so it is memoized: the same figure, computed once.
func (r *Roofline) linear(tokens float64, comp *float64) float64 {
	key := int(tokens)
	memo := float64(key) == tokens && key >= 0 && key < linearMemoMax
	if memo && key < len(r.linearMemo) && r.linearMemo[key].ok {
		e := r.linearMemo[key]
		*comp += e.comp
		return e.t
	}
	var c float64
	t := r.bound(2*r.mm*tokens/r.flops, r.weightRead/r.bw, &c)
	if memo {
		if key >= len(r.linearMemo) {
			r.linearMemo = append(r.linearMemo, make([]linearTime, key+1-len(r.linearMemo))...)
		}
		r.linearMemo[key] = linearTime{t, c, true}
	}
	*comp += c
	return t
}

// NewRoofline builds the roofline model of m on g with the constants p.
func NewRoofline(m ModelShape, g GPU, p RooflineParams) *Roofline {
	r := &Roofline{Model: m, GPU: g, Params: p}
	r.attnRate = g.TFLOPS * 1e12 * p.ComputeEfficiency
	r.flops = p.matmulRate(g, m.bytesPerParam())
	r.bw = g.BandwidthGBps * 1e9 * p.BandwidthEfficiency
	r.mm = float64(m.MatmulParams() - m.routedParams(m.ExpertsPerToken))
	r.weightRead = r.mm * m.bytesPerParam()
	r.attnFlops = 4 * float64(m.Layers*m.Heads*m.attnDim())
	r.kvBytes = m.KVBytesPerToken()
	if bits := 8 * m.kvBytesPerElem(); p.KVReadBits > bits {
		r.kvBytes *= p.KVReadBits / bits
	}
	r.units = float64(g.SMs) * p.AttnUnitsPerSM
	r.fixedNs = (float64(m.Layers)*p.LayerOverheadUs + float64(m.moeLayers())*p.MoELayerOverheadUs + p.StepOverheadUs) * 1e3
	r.seqNs = p.SeqOverheadUs * 1e3
	r.prefillNs = float64(m.moeLayers()) * p.PrefillMoELayerOverheadUs * 1e3
	if m.MoE() {
		r.experts, r.pick = float64(m.Experts), float64(m.ExpertsPerToken)/float64(m.Experts)
		r.expertMM = float64(m.routedParams(m.ExpertsPerToken))
		r.expertRd = float64(m.routedParams(1)) * m.expertBytesPerParam()
		r.expertFlops = p.matmulRate(g, m.expertBytesPerParam())
	}
	if m.SlidingLayers > 0 {
		r.window, r.slidingFrac = float64(m.SlidingWindow), float64(m.SlidingLayers)/float64(m.Layers)
	}
	if p.LaunchUsPerLayer > 0 {
		var c float64
		r.launchNs, r.denseRdNs = float64(m.Layers)*p.LaunchUsPerLayer*1e3, r.linear(1, &c)*1e9
	}
	return r
}

// launchWait is how long step w, run outside CUDA graphs, waits on its launches, ns: their
// time beyond what its weights' read (the dense ones, and the experts its tokens touch) covers.
func (r *Roofline) launchWait(w StepWork) float64 {
	if r.launchNs == 0 {
		return 0
	}
	rd := r.denseRdNs
	if r.experts > 0 {
		rd += r.ExpertsTouched(float64(w.DecodeSeqs+w.PrefillTokens)) * r.expertRd / r.bw * 1e9
	}
	return max(0, r.launchNs-rd)
}

// matmulRate is the FLOP/s matmuls of elem-byte weights reach on g: its rate for that
// precision times ComputeEfficiency, and FP4Efficiency where that rate is fp4's.
func (p RooflineParams) matmulRate(g GPU, elem float64) float64 {
	rate := g.computeTFLOPS(elem) * 1e12 * p.ComputeEfficiency
	if g.fp4(elem) && p.FP4Efficiency > 0 {
		rate *= p.FP4Efficiency
	}
	return rate
}

// ExpertsTouched is the experts a step of tokens tokens is expected to read per MoE layer:
// E·(1 − (1 − k/E)^B); 0 for a dense model.
func (r *Roofline) ExpertsTouched(tokens float64) float64 {
	if r.experts == 0 || tokens <= 0 {
		return 0
	}
	return r.experts * -math.Expm1(tokens*math.Log1p(-r.pick))
}

// Step implements CostModel.
func (r *Roofline) Step(w StepWork) time.Duration {
	over, work, _ := r.parts(w)
	return nanos(over + work)
}

// parts are a step's overheads (fixed and per sequence: launches, scheduling) and its
// matmuls' and attention's time at their roofline bound, ns; the latter's share of the step
// is what the power estimate reads as the GPU's load (power.go).
// comp is the part of work bound by compute rather than memory, ns.
func (r *Roofline) parts(w StepWork) (over, work, comp float64) {
	tokens := float64(w.DecodeSeqs + w.PrefillTokens)
	if tokens == 0 {
		return 0, 0, 0
	}
	if r.DP > 1 {
		return r.dataParallelParts(w, tokens)
	}
	seqs := float64(w.DecodeSeqs + w.PrefillSeqs)
	linear := r.linear(tokens, &comp) + r.expertTime(tokens, &comp)
	return r.overhead(w, seqs), (linear + r.attention(w, seqs, &comp)) * 1e9, comp * 1e9
}

// overhead is a step's cost beyond its FLOPs and bytes, ns: fixed, per sequence (seqs of
// them), per MoE layer in a step with prefill work, and the wait on its launches outside
// CUDA graphs.
func (r *Roofline) overhead(w StepWork, seqs float64) float64 {
	over := r.fixedNs + r.seqNs*seqs
	if w.PrefillTokens > 0 {
		over += r.prefillNs
	}
	if r.Graphs == GraphsNone || r.Graphs == GraphsDecode && w.PrefillTokens > 0 {
		over += r.launchWait(w)
	}
	return over
}

// bound is the time of a kernel whose compute takes c and whose memory reads take m: the
// k-norm (c^k + m^k)^(1/k), k = Params.Overlap, which a kernel bound by both exceeds the
// larger by up to 2^(1/k) (their overlap is partial); 0 is the larger alone. The compute-bound
// share of it is added to *comp.
func (r *Roofline) bound(c, m float64, comp *float64) float64 {
	if k := r.Params.Overlap; k > 0 && c > 0 && m > 0 {
		hi := math.Max(c, m)
		sc, sm := powK(c/hi, k), powK(m/hi, k)
		t := hi * rootK(sc+sm, k)
		*comp += t * sc / (sc + sm)
		return t
	}
	if c >= m {
		*comp += c
		return c
	}
	return m
}

// powK is x^k and rootK s^(1/k), for x, s ≥ 0: at the default Overlap, 1.5, by a square
// and a cube root, which cost a fraction of math.Pow's (bound runs for every kernel of every
// simulated step: three Pows were a tenth of a plan's CPU).
func powK(x, k float64) float64 {
	if k == 1.5 {
		return x * math.Sqrt(x)
	}
	return math.Pow(x, k)
}

func rootK(s, k float64) float64 {
	if k == 1.5 {
		return math.Cbrt(s * s)
	}
	return math.Pow(s, 1/k)
}

// expertTime is the seconds the routed experts take on a step of tokens tokens.
func (r *Roofline) expertTime(tokens float64, comp *float64) float64 {
	if r.experts == 0 {
		return 0
	}
	return r.bound(2*r.expertMM*tokens/r.expertFlops, r.ExpertsTouched(tokens)*r.expertRd/r.bw, comp)
}

// attention is the seconds attention takes on the step's work, seqs sequences of it.
func (r *Roofline) attention(w StepWork, seqs float64, comp *float64) float64 {
	pairs := float64(w.DecodeContext) + w.PrefillAttn
	kvTokens := float64(w.DecodeContext + w.PrefillContext + int64(w.PrefillTokens))
	if r.window > 0 {
		// A sliding-window layer reads at most the window of each sequence (the decoding
		// ones taken at their mean context).
		dec := math.Min(float64(w.DecodeContext), r.window*float64(w.DecodeSeqs))
		sp := dec + math.Min(w.PrefillAttn, r.window*float64(w.PrefillTokens))
		sk := dec + math.Min(float64(w.PrefillContext), r.window*float64(w.PrefillSeqs)) + float64(w.PrefillTokens)
		pairs += r.slidingFrac * (sp - pairs)
		kvTokens += r.slidingFrac * (sk - kvTokens)
	}
	kv := kvTokens * r.kvBytes
	bw := r.bw
	if r.units > 0 {
		if par := seqs * float64(r.Model.KVHeads) / r.units; par < 1 {
			bw *= par
		}
	}
	return r.bound(r.attnFlops*pairs/r.attnRate, kv/bw, comp)
}

// dataParallelParts is parts with the dense layers and attention of each dp group taking a
// 1/DP share of the step's work (the groups run at once), and the experts all of it.
func (r *Roofline) dataParallelParts(w StepWork, tokens float64) (over, work, comp float64) {
	dp := float64(r.DP)
	share := StepWork{DecodeSeqs: ceilDiv(w.DecodeSeqs, r.DP), PrefillSeqs: ceilDiv(w.PrefillSeqs, r.DP),
		DecodeContext: int64(math.Ceil(float64(w.DecodeContext) / dp)), PrefillTokens: ceilDiv(w.PrefillTokens, r.DP),
		PrefillAttn: w.PrefillAttn / dp, PrefillContext: int64(math.Ceil(float64(w.PrefillContext) / dp))}
	gt := float64(share.DecodeSeqs + share.PrefillTokens)
	seqs := float64(share.DecodeSeqs + share.PrefillSeqs)
	linear := r.linear(gt, &comp) + r.expertTime(tokens, &comp)
	return r.overhead(w, seqs), (linear + r.attention(share, seqs, &comp)) * 1e9, comp * 1e9
}

// Prefill implements CostModel.
func (r *Roofline) Prefill(n int) time.Duration {
	return r.Step(StepWork{PrefillSeqs: 1, PrefillTokens: n, PrefillAttn: float64(n) * float64(n) / 2})
}

// StepTable is measured step times in the calibration file's shape.
type StepTable struct {
	Prefill *curve // ms by prompt tokens (batch 1)
	// Decode rows by context: ms by batch.
	ctxs []float64
	rows []*curve
}

// curve is a piecewise-linear function through measured points: clamped below the first
// point (fixed overheads dominate there) and extrapolated along the last segment above.
type curve struct{ x, y []float64 }

func (c *curve) at(x float64) float64 {
	n := len(c.x)
	if n == 1 || x <= c.x[0] {
		return c.y[0]
	}
	i := sort.SearchFloat64s(c.x, x)
	if i >= n {
		i = n - 1
	}
	x0, x1, y0, y1 := c.x[i-1], c.x[i], c.y[i-1], c.y[i]
	return y0 + (y1-y0)*(x-x0)/(x1-x0)
}

func newCurve(pts map[float64]float64) *curve {
	c := &curve{}
	for x := range pts {
		c.x = append(c.x, x)
	}
	sort.Float64s(c.x)
	for _, x := range c.x {
		c.y = append(c.y, pts[x])
	}
	return c
}

// LoadStepTable reads a calibration-shaped JSON file: "prefill_ms" keyed by prompt tokens
// and "decode_step_ms" keyed by "BATCHxCONTEXT", values in milliseconds.
func LoadStepTable(path string) (*StepTable, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseStepTable(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseStepTable parses the calibration file format; see LoadStepTable.
func ParseStepTable(b []byte) (*StepTable, error) {
	var raw struct {
		Prefill map[string]float64 `json:"prefill_ms"`
		Decode  map[string]float64 `json:"decode_step_ms"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	var errs []error
	if len(raw.Prefill) == 0 {
		errs = append(errs, errors.New(`"prefill_ms" is missing or empty`))
	}
	if len(raw.Decode) == 0 {
		errs = append(errs, errors.New(`"decode_step_ms" is missing or empty`))
	}
	pre := map[float64]float64{}
	for k, v := range raw.Prefill {
		n, err := strconv.Atoi(k)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf(`prefill_ms: key %q is not a positive token count`, k))
			continue
		}
		if !(v > 0) {
			errs = append(errs, fmt.Errorf("prefill_ms[%s]: %g is not a positive time", k, v))
		}
		pre[float64(n)] = v
	}
	byCtx := map[float64]map[float64]float64{}
	for k, v := range raw.Decode {
		bs, cs, ok := strings.Cut(k, "x")
		b, err1 := strconv.Atoi(bs)
		c, err2 := strconv.Atoi(cs)
		if !ok || err1 != nil || err2 != nil || b <= 0 || c <= 0 {
			errs = append(errs, fmt.Errorf(`decode_step_ms: key %q is not BATCHxCONTEXT`, k))
			continue
		}
		if !(v > 0) {
			errs = append(errs, fmt.Errorf("decode_step_ms[%s]: %g is not a positive time", k, v))
		}
		if byCtx[float64(c)] == nil {
			byCtx[float64(c)] = map[float64]float64{}
		}
		byCtx[float64(c)][float64(b)] = v
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return nil, errors.Join(errs...)
	}
	t := &StepTable{Prefill: newCurve(pre)}
	for c := range byCtx {
		t.ctxs = append(t.ctxs, c)
	}
	sort.Float64s(t.ctxs)
	for _, c := range t.ctxs {
		t.rows = append(t.rows, newCurve(byCtx[c]))
	}
	return t, nil
}

// DecodeMs interpolates a decode step of batch sequences at mean context ctx: linearly in
// batch within each measured context, then linearly in context between the two nearest
// (extrapolated along the last pair beyond the measured contexts, never below the nearest).
func (t *StepTable) DecodeMs(batch, ctx float64) float64 {
	n := len(t.ctxs)
	if n == 1 {
		return t.rows[0].at(batch)
	}
	i := sort.SearchFloat64s(t.ctxs, ctx)
	switch {
	case i == 0:
		return t.rows[0].at(batch)
	case i >= n:
		i = n - 1
	}
	c0, c1 := t.ctxs[i-1], t.ctxs[i]
	y0, y1 := t.rows[i-1].at(batch), t.rows[i].at(batch)
	y := y0 + (y1-y0)*(ctx-c0)/(c1-c0)
	if ctx > c1 && y < y1 {
		y = y1
	}
	return y
}

// Table interpolates measured step times. A mixed step costs its decode part plus its
// prefill part (each measured alone), which overstates it by about one step overhead.
type Table struct{ T *StepTable }

// Step implements CostModel.
func (t Table) Step(w StepWork) time.Duration {
	var v float64
	if w.DecodeSeqs > 0 {
		v += t.T.DecodeMs(float64(w.DecodeSeqs), float64(w.DecodeContext)/float64(w.DecodeSeqs))
	}
	if w.PrefillTokens > 0 {
		v += t.T.Prefill.at(float64(w.PrefillTokens))
	}
	return ms(v)
}

// Prefill implements CostModel.
func (t Table) Prefill(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return ms(t.T.Prefill.at(float64(n)))
}
