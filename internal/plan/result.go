package plan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/rundesc"
	"github.com/llmbench/llmbench/internal/sim"
)

// Schema is plan.json's schema.
const Schema = "llmbench/plan/v1"

// Plan is plan.json: what was planned for, every candidate, and the one chosen.
// docs/simulator.md documents every field.
type Plan struct {
	Schema  string `json:"schema"`
	Version string `json:"llmbench_version"`
	// Model is the model served; Profile the profile the space was built on.
	Model   string `json:"model"`
	Profile string `json:"profile"`
	// Rate is the traffic's arrival rate, requests/s (a trace's mean); Load and Workload
	// describe it as summary.json does a run's.
	Rate     float64          `json:"rate"`
	RateUnit string           `json:"rate_unit"` // "req/s", or "tasks/s" for agentic tasks
	Load     rundesc.Load     `json:"load"`
	Workload rundesc.Workload `json:"workload"`
	SLO      string           `json:"slo"` // the SLO terms as given
	// Objective is what ranked the candidates meeting the SLOs (cost or energy); Electricity
	// the energy's price, USD per kWh (0: not priced), and PUE the facility's power over the
	// GPUs' that it is drawn at.
	Objective string `json:"objective"`
	// Confidence is what the fleets were judged on: "interval" (each SLO term at its 90 %
	// prediction interval's unfavourable edge, and at the point) or "point";
	// ConfidenceReason why, when ConfidenceAuto chose it.
	Confidence       string  `json:"confidence"`
	ConfidenceReason string  `json:"confidence_reason,omitempty"`
	Electricity      float64 `json:"electricity_usd_per_kwh"`
	PUE              float64 `json:"pue"`
	// MaxReplicas bounds the fleets tried; Configurations is the candidates planned (engine
	// configurations × routers), Evaluated those finished (fewer when Interrupted).
	MaxReplicas    int  `json:"max_replicas"`
	Configurations int  `json:"configurations"`
	Evaluated      int  `json:"evaluated"`
	Interrupted    bool `json:"interrupted"`
	// Candidates are sorted as the console prints them: those meeting the SLOs first,
	// cheapest first (then fewer GPUs, then more headroom); then the others in the space's
	// order. Best is the chosen candidate's index, null when none meets the SLOs.
	Candidates []Candidate `json:"candidates"`
	Best       *int        `json:"best"`
	// BestProfile is the file holding the chosen deployment (best.yaml), when written.
	BestProfile string `json:"best_profile,omitempty"`
	// Warnings are what the console warned of: a fixed length (the levels' length given, a
	// trace) shorter than a steady state needs.
	Warnings []string `json:"warnings"`

	names Names // the caller's, for the console's and HTML's hints
}

// Candidate is one engine configuration behind one router, with its fewest replicas
// meeting the SLOs and their figures at the traffic.
type Candidate struct {
	GPU string `json:"gpu"`
	TP  int    `json:"tp"`
	// DP is the replica's data-parallel attention groups (1: none) and ExpertParallel
	// whether its experts are placed whole over its TP × DP GPUs; a replica is TP × DP GPUs.
	DP             int  `json:"dp"`
	ExpertParallel bool `json:"expert_parallel"`
	// GPUCalibrated says some measurement has checked the simulator on this GPU
	// (sim.GPUChecked); false: its figures are the datasheet's alone ("not calibrated on
	// this GPU").
	GPUCalibrated bool `json:"gpu_calibrated"`
	// Replicas is the fleet the figures below are for: the fewest meeting the SLOs, or,
	// when none of up to MaxReplicas did, the largest tried; 0 when no fleet was simulated
	// (it does not fit, or one replica cannot meet the SLOs at any share of the traffic).
	Replicas int  `json:"replicas"`
	GPUs     int  `json:"gpus"` // tp × dp × replicas
	Fits     bool `json:"fits"` // the model fits the GPUs' memory with room for a KV cache, and the settings go together
	MeetsSLO bool `json:"meets_slo"`
	// USDPerHour is the fleet's price an hour and CostPerMillionOutputTokens its cost per
	// million output tokens at the traffic (metrics.Cost); null without a price.
	// With an electricity price both include the energy's cost (EnergyUSDPerHour).
	USDPerHour                 *float64 `json:"usd_per_hour"`
	CostPerMillionOutputTokens *float64 `json:"cost_per_million_output_tokens"`
	// PowerKW is the fleet's GPUs' estimated mean power at the traffic (sim/power.go: an
	// estimate from the cost model, not a measurement), kW; OutputTokensPerSPerKW the
	// output tokens/s per kW and JoulesPerOutputToken the energy per output token, both at
	// the facility (PowerKW × PUE); EnergyUSDPerHour that power's cost at the electricity
	// price. Null without an estimate (a GPU of no stated power, a linear or table profile)
	// or, for the cost, without a price.
	PowerKW               *float64 `json:"power_kw"`
	OutputTokensPerSPerKW *float64 `json:"output_tokens_per_s_per_kw"`
	JoulesPerOutputToken  *float64 `json:"joules_per_output_token"`
	EnergyUSDPerHour      *float64 `json:"energy_usd_per_hour"`
	// HeadroomRate is the highest arrival rate, to 5 %, that the fleet still meets the
	// SLOs at (requests/s); null unless it meets them at the traffic.
	HeadroomRate *float64 `json:"headroom_rate"`
	// Intervals are the SLO terms' prediction intervals for the candidate's deployment
	// (those with one), and IntervalBasis where they came from (the validation rows like
	// it, or a calibration's held-out error).
	Intervals     []Interval `json:"intervals,omitempty"`
	IntervalBasis string     `json:"interval_basis,omitempty"`
	// EquivalentToBest marks a candidate other than the chosen one that the plan cannot tell
	// from it: it meets the SLOs at the same price on as many GPUs, with a headroom within
	// the search's 5 % (Equivalent); the tie-break chose between them (rank).
	EquivalentToBest bool `json:"equivalent_to_best,omitempty"`
	// The engine settings searched.
	MaxNumSeqs       int    `json:"max_num_seqs"`
	MaxBatchedTokens int    `json:"max_batched_tokens"`
	Prefill          string `json:"prefill"`
	Router           string `json:"router"`
	Dtype            string `json:"dtype"` // the weights' precision; the KV cache's is KVDtype
	KVDtype          string `json:"kv_dtype"`
	// Speculative is the candidate's speculative decoding; null when off.
	Speculative *Speculative `json:"speculative"`
	// SLO is each verdict term at the traffic: its value, bound and margin.
	SLO []Term `json:"slo"`
	// Oversaturated says the level at the traffic was stopped by the over-saturation rule
	// (docs/metrics.md), as simulate stops it: the fleet did not keep up, whatever its verdict.
	Oversaturated bool `json:"oversaturated"`
	// HorizonS is the length of arrivals, seconds, the fleet was judged over at the traffic
	// (its first fifth warm-up; the plan's choice, or the fixed length's measured span);
	// Steady says it reached a steady state there. A fleet that did not, or was
	// oversaturated, does not meet the SLOs.
	HorizonS float64 `json:"horizon_s"`
	Steady   bool    `json:"steady"`
	// Figures at the traffic: output tokens/s, the same per GPU, and a user's decode
	// speed, 1,000 / mean TPOT in ms (tokens/s per user); null when not measured.
	OutputThroughput       *float64 `json:"output_throughput"`
	OutputThroughputPerGPU *float64 `json:"output_throughput_per_gpu"`
	TokensPerSPerUser      *float64 `json:"tokens_per_s_per_user"`
	// ReplicaRate is the highest arrival rate, to 5 %, one replica meets the SLOs at (at
	// most the traffic's): the bound the replica search starts from.
	ReplicaRate   *float64 `json:"replica_rate"`
	KVCacheTokens int      `json:"kv_cache_tokens"` // per replica; 0 when it does not fit
	// Reason says why the candidate does not fit or does not meet the SLOs; "" when it does.
	Reason string `json:"reason,omitempty"`
	// Simulations is how many levels its engine configuration took to plan, behind all
	// its routers together (they share one replica's runs).
	Simulations int `json:"simulations"`

	profile sim.Profile
	needS   float64 // the horizon the plan would judge its fleet over
}

// Speculative is a candidate's speculative decoding: how it drafts (sim.SpecDraftModel with
// its draft model, sim.SpecEagle, sim.SpecNgram), K and A, and the tokens a decode step
// emits on average, (1 − A^(K+1)) / (1 − A).
type Speculative struct {
	Method        string  `json:"method"`
	DraftModel    string  `json:"draft_model,omitempty"`
	DraftTokens   int     `json:"draft_tokens"`
	Acceptance    float64 `json:"acceptance"`
	TokensPerStep float64 `json:"tokens_per_step"`
}

func newSpeculative(s sim.Speculative) *Speculative {
	if !s.On() {
		return nil
	}
	out := &Speculative{Method: s.Method, DraftTokens: s.DraftTokens, Acceptance: s.Acceptance, TokensPerStep: s.TokensPerStep()}
	if s.DraftModel.Name != "" || s.DraftModel.Layers != 0 {
		out.Method, out.DraftModel = sim.SpecDraftModel, s.DraftModel.Name
	}
	return out
}

// Term is one SLO verdict term at the traffic.
type Term struct {
	Term  string   `json:"term"`
	Value *float64 `json:"value"` // ms, or a fraction for goodput and error_rate; null when unmeasured
	Unit  string   `json:"unit"`  // "ms", or "fraction" for goodput and error_rate
	Bound float64  `json:"bound"` // in the value's unit
	// Margin is how far the value lies inside the bound, as a fraction of it
	// (metrics.SLO.Margin); negative when the term fails.
	Margin *float64 `json:"margin"`
	// ValueAtEdge is the value at the unfavourable edge of its 90 % prediction interval
	// (times its Interval's factor), and MarginAtEdge its margin there. Absent for a term
	// with no interval (a metric no validation row measures, a linear profile).
	ValueAtEdge  *float64 `json:"value_at_edge,omitempty"`
	MarginAtEdge *float64 `json:"margin_at_edge,omitempty"`
	// Pass is whether the term is met as the plan judged it (Plan.Confidence): at the
	// point and at the edge, or at the point alone.
	Pass bool `json:"pass"`
}

// Interval is an SLO term's 90 % prediction interval's unfavourable edge, as a factor of
// the simulated figure (the hi side of the band of Figure, e.g. "ttft_ms.p99", the
// validation figure nearest the term's).
type Interval struct {
	Term   string  `json:"term"`
	Figure string  `json:"figure"`
	Factor float64 `json:"factor"`
}

// Profile is the candidate's deployment as a profile (its replicas, TP, router, engine
// settings and precisions); the zero Profile for a candidate that does not fit.
func (c Candidate) Profile() sim.Profile { return c.profile }

func newCandidate(p sim.Profile) Candidate {
	return Candidate{GPU: p.GPU.Name, TP: max(p.Deployment.TP, 1), DP: max(p.Deployment.DP, 1), ExpertParallel: p.Deployment.ExpertParallel,
		GPUCalibrated: gpuCalibrated(p), MaxNumSeqs: p.Engine.MaxNumSeqs,
		MaxBatchedTokens: p.Engine.MaxBatchedTokens, Prefill: p.Engine.Prefill, Dtype: p.WeightDtype(), KVDtype: p.KVDtype(),
		Speculative: newSpeculative(p.Speculative)}
}

// gpuCalibrated says whether the simulator's figures for p were checked on its GPU: a
// roofline's on the GPUs measurements checked (sim.GPUChecked); a linear or table profile's,
// or a calibrated one's, are the measured server's own.
func gpuCalibrated(p sim.Profile) bool {
	return p.Calibration != nil || p.Cost.Kind != sim.CostRoofline || sim.GPUChecked(p.GPU.Name)
}

// Describe names the candidate's deployment in words.
func (c Candidate) Describe() string {
	s := fmt.Sprintf("%s %s %s, max_num_seqs %d, max_batched_tokens %d, %s prefill, %s",
		c.GPU, c.Split(), c.Dtype, c.MaxNumSeqs, c.MaxBatchedTokens, c.Prefill, c.Router)
	if sp := c.Speculative; sp != nil {
		s += fmt.Sprintf(", speculative %s K %d A %s", sp.Method, sp.DraftTokens, strconv.FormatFloat(sp.Acceptance, 'g', -1, 64))
	}
	if c.Replicas > 0 {
		s = fmt.Sprintf("%d × %s", c.Replicas, s)
	}
	return s
}

// Split is how a replica splits the model: "tp 8", "tp 4 dp 2", "tp 4 dp 2 ep".
func (c Candidate) Split() string {
	s := fmt.Sprintf("tp %d", c.TP)
	if c.DP > 1 {
		s += fmt.Sprintf(" dp %d", c.DP)
	}
	if c.ExpertParallel {
		s += " ep"
	}
	return s
}

func describeEngine(p sim.Profile) string {
	c := newCandidate(p)
	return c.Describe()
}

// setCandidates flattens the engines' candidates and ranks them.
func (pl *Plan) setCandidates(byEngine [][]Candidate) {
	pl.Candidates = pl.Candidates[:0]
	for _, cs := range byEngine {
		pl.Candidates = append(pl.Candidates, cs...)
	}
	slices.SortStableFunc(pl.Candidates, ranker(pl.Objective))
	pl.Best = nil
	if len(pl.Candidates) > 0 && pl.Candidates[0].MeetsSLO {
		pl.Best = ptr(0)
		for i := 1; i < len(pl.Candidates); i++ {
			pl.Candidates[i].EquivalentToBest = Equivalent(pl.Candidates[0], pl.Candidates[i])
		}
	}
}

// Equivalent says whether two candidates meeting the SLOs are the same answer as far as the
// plan can tell: the same price an hour (to a cent) on as many GPUs, and headrooms within
// the rate searches' precision (closeEnough) of each other.
func Equivalent(a, b Candidate) bool {
	if !a.MeetsSLO || !b.MeetsSLO || a.GPUs != b.GPUs || (a.USDPerHour == nil) != (b.USDPerHour == nil) ||
		a.HeadroomRate == nil || b.HeadroomRate == nil {
		return false
	}
	if a.USDPerHour != nil && math.Abs(*a.USDPerHour-*b.USDPerHour) >= 0.01 {
		return false
	}
	hi, lo := max(*a.HeadroomRate, *b.HeadroomRate), min(*a.HeadroomRate, *b.HeadroomRate)
	return hi <= lo*closeEnough
}

// ranker orders candidates for an objective: those meeting the SLOs first, cheapest first
// (an unpriced one after the priced), then by fewer GPUs, then by more headroom — but
// where the headrooms are within the searches' precision (Equivalent), by more replicas
// (losing one costs a smaller share of the fleet) — then by a lower cost per output token;
// the others keep the space's order. TieBreak says it in words. ObjectiveEnergy puts the
// least power at the traffic first (an estimate-less candidate after those with one), then
// that order.
func ranker(objective string) func(a, b Candidate) int {
	return func(a, b Candidate) int {
		if a.MeetsSLO != b.MeetsSLO {
			if a.MeetsSLO {
				return -1
			}
			return 1
		}
		if !a.MeetsSLO {
			return 0
		}
		if objective == ObjectiveEnergy {
			if c := cmpNil(a.PowerKW, b.PowerKW, 1); c != 0 {
				return c
			}
		}
		return rankCost(a, b)
	}
}

// rankCost is rank's order of two candidates meeting the SLOs.
func rankCost(a, b Candidate) int {
	if c := cmpNil(a.USDPerHour, b.USDPerHour, 1); c != 0 {
		return c
	}
	if c := cmp.Compare(a.GPUs, b.GPUs); c != 0 {
		return c
	}
	if Equivalent(a, b) {
		if c := cmp.Compare(b.Replicas, a.Replicas); c != 0 {
			return c
		}
	} else if c := cmpNil(a.HeadroomRate, b.HeadroomRate, -1); c != 0 {
		return c
	}
	return cmpNil(a.CostPerMillionOutputTokens, b.CostPerMillionOutputTokens, 1)
}

// TieBreak is rank's rule in words, for the console and the docs.
const TieBreak = "the lowest price an hour, then the fewest GPUs, then the most headroom — " +
	"or, where headrooms are within the search's 5 %, the most replicas — then the lowest cost per output token"

// cmpNil compares two optional figures, sign 1 for ascending and -1 for descending; an
// absent one comes last either way.
func cmpNil(a, b *float64, sign int) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return sign * cmp.Compare(*a, *b)
}

// BestCandidate is the chosen candidate; nil when none meets the SLOs.
func (pl *Plan) BestCandidate() *Candidate {
	if pl.Best == nil {
		return nil
	}
	return &pl.Candidates[*pl.Best]
}

func (pl *Plan) meeting() int {
	n := 0
	for _, c := range pl.Candidates {
		if c.MeetsSLO {
			n++
		}
	}
	return n
}

// Pareto lists the indices of the candidates meeting the SLOs that no other beats on both
// output throughput per GPU and tokens/s per user (at least as good on both, better on
// one), by tokens/s per user.
func (pl *Plan) Pareto() []int {
	var front []int
	for i, a := range pl.Candidates {
		if !a.MeetsSLO || a.OutputThroughputPerGPU == nil || a.TokensPerSPerUser == nil {
			continue
		}
		dominated := false
		for j, b := range pl.Candidates {
			if j == i || !b.MeetsSLO || b.OutputThroughputPerGPU == nil || b.TokensPerSPerUser == nil {
				continue
			}
			x, y, bx, by := *a.TokensPerSPerUser, *a.OutputThroughputPerGPU, *b.TokensPerSPerUser, *b.OutputThroughputPerGPU
			if bx >= x && by >= y && (bx > x || by > y) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, i)
		}
	}
	slices.SortStableFunc(front, func(i, j int) int {
		return cmp.Compare(*pl.Candidates[i].TokensPerSPerUser, *pl.Candidates[j].TokensPerSPerUser)
	})
	return front
}

// WriteJSON writes pl as indented JSON with a final newline.
func WriteJSON(w io.Writer, pl *Plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(pl); err != nil {
		return fmt.Errorf("plan.json: %w", err)
	}
	return nil
}

// fmtRate writes a rate in requests/s with three significant digits.
func fmtRate(r float64) string {
	if r >= 100 { // 5000, not 5e+03
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'g', 3, 64)
}

// fmtValue writes a term's value with its unit: ms for latencies, a fraction for goodput and
// error_rate terms (term is the term as written).
func fmtValue(term string, v float64) string {
	if strings.HasPrefix(term, "goodput") || strings.HasPrefix(term, "error_rate") {
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
}

// unit is the plan's rate unit: "req/s" for plans made before it was kept.
func (pl *Plan) unit() string {
	if pl.RateUnit == "" {
		return "req/s"
	}
	return pl.RateUnit
}
