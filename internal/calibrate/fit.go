package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/servermetrics"
	"github.com/llmbench/llmbench/internal/sim"
)

// Options are what the caller knows beyond the records.
type Options struct {
	// Model and GPU, when set, make the fit a roofline's: the model's shape on the GPU with
	// the roofline's constants fitted (it carries to other GPUs and tp); else a linear one.
	Model *sim.ModelShape
	GPU   *sim.GPU
	// MaxNumSeqs > 0 is the batch limit, given because the server publishes none (Ollama's
	// OLLAMA_NUM_PARALLEL) and the probe may not go high enough to see it.
	MaxNumSeqs int
	// MaxNumSeqsHow says how MaxNumSeqs was given, for the profile's provenance ("given"
	// when empty).
	MaxNumSeqsHow string
	// Server is what the server published about itself; zero when it published nothing,
	// or to take what the points' folders recorded (Source.Published).
	Server Published
	// Seed seeds the profile (and its step noise).
	Seed int64
	// Progress, when set, is told what the fit is doing.
	Progress func(string)
	// Tried, when set, is told how many profiles the fit has simulated on the points so
	// far, after each: a fit tries thousands, for a minute or more.
	Tried func(profiles int)
}

// Published is what a server says of its own limits.
// Its JSON is PublishedFile's.
type Published struct {
	Slots         int `json:"slots"`          // sequences it runs at once (llama.cpp /props total_slots); 0 unknown
	ContextTokens int `json:"context_tokens"` // KV-cache capacity in tokens, all slots together; 0 unknown
	// SeqTokens is the longest sequence (prompt and output) one slot holds: llama.cpp's
	// n_ctx per slot, the profile's deployment.max_model_len; 0 unknown (a file written
	// before it was kept: ContextTokens / Slots).
	SeqTokens int `json:"seq_context_tokens,omitempty"`
	// Unified says the slots share one KV cache (llama.cpp started without -np, or with
	// llama-server's --kv-unified): ContextTokens is then SeqTokens, not Slots × SeqTokens.
	Unified bool   `json:"unified,omitempty"`
	How     string `json:"how"` // where they were read, for the report
}

// seqTokens is the longest sequence one slot holds; 0 unknown.
func (p Published) seqTokens() int {
	if p.SeqTokens > 0 {
		return p.SeqTokens
	}
	if p.Slots > 0 {
		return p.ContextTokens / p.Slots
	}
	return 0
}

// Validate reports every problem at once, each a *fielderr.Error naming the field.
func (o Options) Validate() error {
	var errs []error
	if o.MaxNumSeqs < 0 {
		errs = append(errs, fielderr.New("MaxNumSeqs", "%d must be positive (0: find it)", o.MaxNumSeqs))
	}
	if (o.Model == nil) != (o.GPU == nil) {
		errs = append(errs, fielderr.New("Model,GPU", "a roofline fit needs both the model's shape and the GPU"))
	}
	if o.Server.Slots < 0 || o.Server.ContextTokens < 0 {
		errs = append(errs, fielderr.New("Server", "published slots %d and context %d must not be negative", o.Server.Slots, o.Server.ContextTokens))
	}
	return errors.Join(errs...)
}

// Result is a fit: the profile, every probe point measured against predicted, and the
// prediction error on the points held out of the fit.
type Result struct {
	Profile  sim.Profile
	Source   Source
	Points   []Fitted
	HeldOut  Errors // fitted without the held-out points, judged on them
	ByLoad   LoadErrors
	InSample Errors // the final fit (every point), judged on every point
	Settings []Setting
	// PaceDrift is how far the server's pace moved between the decode ladder's passes.
	PaceDrift Drift
}

// Fitted is a probe point with the final profile's prediction and, for a held-out point,
// the prediction of the fit that did not see it.
type Fitted struct {
	Point
	HeldOut    bool
	Predicted  figure.Values // final profile
	Validation figure.Values // held out: the fit without it (NaN figures otherwise)
}

// Errors are the largest absolute relative errors over a set of points.
type Errors struct {
	// Pct is each judged figure's (figure.Judged), in percent; NaN when no point measured
	// it, and for the figures not judged.
	Pct    figure.Values
	Points int
}

// LoadErrors are the held-out errors by the kind of load a point is: a closed loop (a
// fixed number in flight) or an open one (arrivals on a schedule: the open-loop step, the
// mixed phase, an open-loop run fitted).
type LoadErrors struct {
	Closed, Open Errors
}

// noErrors are the errors over n points before any is judged.
func noErrors(n int) Errors { return Errors{Pct: figure.Unmeasured(), Points: n} }

// Setting is one fitted setting: its profile key, value and where it came from.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	How   string `json:"how"`
}

// param is one continuous setting the fit moves, on a log scale: x = ln(v + off).
type param struct {
	key    string
	ptr    func(*sim.Profile) *float64
	lo, hi float64
	off    float64
	// optional terms are 0 in the textbook model: one stays only where the probe shows it
	// (prune), so that measurement noise does not become a cost that grows with the
	// prompt and is then extrapolated.
	optional bool
}

func (q param) get(p *sim.Profile) float64 { return math.Log(*q.ptr(p) + q.off) }
func (q param) set(p *sim.Profile, x float64) {
	*q.ptr(p) = math.Min(q.hi, math.Max(q.lo, math.Exp(x)-q.off))
}

// Chunked-prefill budgets tried (vLLM's and llama.cpp's usual n_batch among them); the
// largest is no chunking at all for any prompt a probe sends.
var budgets = []int{256, 512, 1024, 2048, 4096, 8192, 16384, 1 << 20}

// Fit fits a profile to the points: the linear cost model's terms, or with opt.Model and
// opt.GPU the roofline's constants. Its stages, in order: start from what the records and
// the server give directly (and say how each setting will be found), fit on all but the
// held-out points and judge that fit on those, fit the profile written on every point and
// judge it on all, then give each sequence a context of its own where the server cut
// prompts. The settings' provenance is read off the profile written.
func Fit(ctx context.Context, pts []Point, src Source, opt Options) (*Result, error) {
	if opt.Server.Slots == 0 {
		opt.Server = src.Published // what an earlier probe of the server wrote down
	}
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if len(pts) == 0 {
		return nil, errors.New("no probe points")
	}
	pts = repeatable(pts)
	f := &fitter{ctx: ctx, opt: opt, lim: batchLimit(pts, opt), overhead: overheadOf(pts), noise: noiseOf(pts), say: opt.Progress}
	if f.say == nil {
		f.say = func(string) {}
	}
	res := &Result{Source: src, PaceDrift: paceDrift(pts)}
	held := holdOut(pts)
	p, validation, err := f.heldOut(f.start(pts), pts, held, res)
	if err != nil {
		return nil, err
	}
	if p, err = f.final(p, pts, held, validation, res); err != nil {
		return nil, err
	}
	p = f.contextPerSequence(p, pts)
	res.Settings = f.prov.resolve(&p)
	p.Calibration = &sim.Calibration{
		Source: src.URL, Date: time.Now().UTC().Format(time.DateOnly), MaxNumSeqs: howOf(res.Settings, sim.KeyEngineMaxNumSeqs),
		PromptTokens: rangeOf(pts, func(q Request) int { return q.Prompt }),
		OutputTokens: rangeOf(pts, func(q Request) int { return q.Output }),
		Concurrency:  [2]int{minProbed(pts), maxProbed(pts)},
		Error:        res.HeldOut.Pct,
		ErrorClosed:  res.ByLoad.Closed.Pct,
		ErrorOpen:    res.ByLoad.Open.Pct,
		OpenRates:    openRates(pts),
	}
	// The verdict travels with the profile, so that simulate names a load it did not trust.
	_, untrusted := res.trust()
	for _, t := range untrusted {
		p.Calibration.NotTrusted = append(p.Calibration.NotTrusted, t.LoadRange)
	}
	if prompt, c := res.unprobedCorner(); prompt > 0 {
		p.Calibration.NotProbed = sim.Corner{PromptTokens: prompt, Concurrency: c}
	}
	p.Power = measuredPower(pts)
	res.Profile = p
	return res, nil
}

// batch is the batch limit the fit starts from: given, published by the server, or seen in
// its running-requests gauge; maxSeqs 0 when none is known (the fit chooses it).
type batch struct {
	maxSeqs int
	how     string
}

func batchLimit(pts []Point, opt Options) batch {
	switch {
	case opt.MaxNumSeqs > 0:
		how := opt.MaxNumSeqsHow
		if how == "" {
			how = "given"
		}
		return batch{opt.MaxNumSeqs, how}
	case opt.Server.Slots > 0:
		return batch{opt.Server.Slots, "published by the server (" + opt.Server.How + ")"}
	}
	n, how := runningLimit(pts)
	if n > 0 {
		return batch{n, how}
	}
	return batch{}
}

// candidates are the batch limits the fit tries: the known one, else each concurrency
// probed, none below what the server's running gauge saw run at once: a server whose
// requests slow beside a busy machine's client (serve's twin of a 256-sequence server at
// 256 in flight, its gauge at 256 in most scrapes) is otherwise fitted a limit that
// queues them (208).
func (b batch) candidates(pts []Point) []int {
	if b.maxSeqs > 0 {
		return []int{b.maxSeqs}
	}
	seen := 0
	for i := range pts {
		if r, _, ok := gauges(pts[i].Server); ok {
			seen = max(seen, int(math.Round(r)))
		}
	}
	return slices.DeleteFunc(probedConcurrencies(pts), func(n int) bool { return n < seen })
}

// provenance is where each of a fit's settings comes from, in the order the report lists
// them: the stage that decides how a setting is found notes it, its value and how read off
// the profile written (later stages refine what an earlier one set).
type provenance []note

type note struct {
	key        string
	value, how func(p *sim.Profile) string
}

// add notes a setting whose value and how are read off the profile written.
func (pv *provenance) add(key string, value, how func(*sim.Profile) string) {
	*pv = append(*pv, note{key, value, how})
}

// resolve is the settings of p, the profile written.
func (pv provenance) resolve(p *sim.Profile) []Setting {
	s := make([]Setting, len(pv))
	for i, n := range pv {
		s[i] = Setting{n.key, n.value(p), n.how(p)}
	}
	return s
}

// fixed is a value or a how that does not depend on the profile written.
func fixed(s string) func(*sim.Profile) string { return func(*sim.Profile) string { return s } }

// millis is a setting in milliseconds, as the report writes it.
func millis(v float64) string { return fmt.Sprintf("%.3f", v) }

// howOf is how the setting key was found; "" if the fit has none.
func howOf(ss []Setting, key string) string {
	for _, s := range ss {
		if s.Key == key {
			return s.How
		}
	}
	return ""
}

// start is the profile the fit starts from: the textbook engine with what the records
// give directly (the network's round trip and jitter, the server's context and batch
// limit), and the cost model's terms to fit (f.params) at their first guesses. It notes
// how each setting of the profile written is found (f.prov).
func (f *fitter) start(pts []Point) sim.Profile {
	base, _ := sim.LoadProfile("textbook")
	base.Name, base.Seed = "", f.opt.Seed
	base.Engine.Prefill = sim.PrefillColocated
	base.Engine.MaxBatchedTokens = 8192
	if o := f.overhead; !math.IsNaN(o) {
		base.Network.RTTMs = math.Max(0, o)
		// A front end fitted (the discrete stage) takes its share of the round trip.
		f.prov.add(sim.KeyNetworkRTTMs, func(p *sim.Profile) string { return millis(p.Network.RTTMs) }, func(p *sim.Profile) string {
			how := "the median of TTFT minus the server's own queue and prefill times"
			if p.Network.FrontEndMs > 0 {
				how += ", less the front end's"
			}
			return how
		})
	} else {
		f.params = append(f.params, param{key: sim.KeyNetworkRTTMs, ptr: func(p *sim.Profile) *float64 { return &p.Network.RTTMs }, lo: 0, hi: 1e4, off: 0.05})
	}
	var spreads []float64
	for i := range pts {
		if !math.IsNaN(pts[i].SendSpread) {
			spreads = append(spreads, pts[i].SendSpread)
		}
	}
	if len(spreads) > 0 {
		f.jitter = metrics.Median(spreads)
		base.Network.JitterMs = f.jitter
	}
	if n := f.opt.Server.ContextTokens; n > 0 {
		base.Engine.KVCacheTokens = n
		f.prov.add(sim.KeyEngineKVCacheTokens, fixed(fmt.Sprint(n)), fixed("published by the server ("+f.opt.Server.How+")"))
	}
	if n := f.opt.Server.seqTokens(); n > 0 {
		base.Deployment.MaxModelLen = n // llama.cpp refuses a prompt longer than a slot's context
		f.prov.add(sim.KeyDeploymentMaxModelLen, fixed(fmt.Sprint(n)), fixed("a slot's context, published by the server: it refuses a longer prompt"))
	} else if n := truncated(pts); n > 0 {
		base.Deployment.MaxModelLen, base.Deployment.TruncatePrompts = n, true
		f.truncatedAt = n
		f.prov.add(sim.KeyDeploymentMaxModelLen, fixed(fmt.Sprint(n)), fixed("the server cut the probe's longer prompts to this many tokens (its usage.prompt_tokens) rather than refusing them, as Ollama does past num_ctx"))
		f.prov.add(sim.KeyDeploymentTruncatePrompts, fixed("true"), fixed("so simulate cuts them too, and warns of it"))
	}
	if f.opt.Model != nil {
		// A roofline fit: the model's shape on the GPU, with the roofline's constants
		// fitted, so that the profile carries to other GPUs and tensor parallelism (plan).
		base.Model, base.GPU = *f.opt.Model, *f.opt.GPU
		base.Cost = sim.CostConfig{Kind: sim.CostRoofline, Roofline: sim.DefaultRooflineParams()}
		for i, fl := range base.Cost.Roofline.Fields() {
			if fl.Key == sim.CostKeyStepOverheadUs && math.IsNaN(f.overhead) {
				continue // told apart from the network only by the server's own timings
			}
			if (fl.Key == sim.CostKeyMoELayerOverheadUs || fl.Key == sim.CostKeyPrefillMoELayerUs) && !base.Model.MoE() {
				continue // a dense model has no MoE layer for them to cost
			}
			if fl.Key == sim.CostKeyFP4Efficiency {
				continue // on one server compute_efficiency scales the same matmuls
			}
			if fl.Key == sim.CostKeyKVReadBits || fl.Key == sim.CostKeyLaunchUsPerLayer {
				continue // the engine's way of reading its cache, or of launching outside graphs: not rates to fit
			}
			lo := fl.Min
			if fl.Key == sim.CostKeyOverlap {
				lo = 1 // 0 is the other form (full overlap), not a value near 1
			}
			f.params = append(f.params, param{key: "cost." + fl.Key, ptr: func(p *sim.Profile) *float64 { return p.Cost.Roofline.Fields()[i].Value },
				lo: lo, hi: fl.Max, off: rooflineOffset(fl)})
		}
	} else {
		f.linearParams(pts)
		guess(&base, pts)
		// A linear fit knows the server's steps, not its hardware: the GPU keeps the default's
		// figures (they only size a KV cache nobody published) under a name of its own and
		// no price, so that simulate and plan price it only at a price the user gives.
		base.GPU.Name, base.GPU.USDPerHour = "probed-server", 0
	}
	for _, q := range f.params {
		f.prov.add(q.key, func(p *sim.Profile) string { return fmt.Sprintf("%.6g", *q.ptr(p)) }, fixed("fitted"))
	}
	base.Engine.MaxNumSeqs = f.lim.maxSeqs
	if f.lim.maxSeqs == 0 {
		base.Engine.MaxNumSeqs = 256
	}
	f.noteDiscrete(pts)
	return base
}

// noteDiscrete notes how the discrete stage's settings are found (the batch limit, the
// prefill placement and budget, the jitter, the front end) and the step noise.
func (f *fitter) noteDiscrete(pts []Point) {
	f.prov.add(sim.KeyEngineMaxNumSeqs, func(p *sim.Profile) string { return fmt.Sprint(p.Engine.MaxNumSeqs) }, func(p *sim.Profile) string {
		switch {
		case f.lim.maxSeqs > 0:
			return f.lim.how
		case p.Engine.MaxNumSeqs >= maxProbed(pts):
			return fmt.Sprintf("no batch limit seen up to %d requests in flight; %d assumed", maxProbed(pts), p.Engine.MaxNumSeqs)
		}
		return "fitted: where decode stops widening and requests queue"
	})
	// Placement and budget are tried only where long prompts arrived while others decoded.
	mixed := slices.ContainsFunc(pts, func(p Point) bool { return p.mixed() })
	placementHow := "not probed (no point mixes long prompts with decoding): vLLM's default assumed"
	switch {
	case f.opt.Server.Slots > 0:
		// A disaggregated twin of it would prefill beside its slots, unqueued: a held-out
		// fit that chose it predicted 8 requests on 4 slots at a prefill's TTFT.
		placementHow = "colocated: the server's published slots prefill in the batch they decode in"
	case mixed:
		placementHow = "fitted: how long prompts arriving while others decode delay them"
	}
	f.prov.add(sim.KeyEnginePrefill, func(p *sim.Profile) string { return p.Engine.Prefill }, fixed(placementHow))
	f.prov.add(sim.KeyEngineMaxBatchedTokens, func(p *sim.Profile) string { return fmt.Sprint(p.Engine.MaxBatchedTokens) }, func(p *sim.Profile) string {
		switch {
		case !mixed:
			return "not probed: vLLM's default assumed"
		case p.Engine.Prefill == sim.PrefillDisaggregated:
			return "applies to colocated prefill only"
		}
		return "fitted: the longest step a long prompt's prefill adds to others' inter-token gaps"
	})
	if f.jitter > 0 {
		f.prov.add(sim.KeyNetworkJitterMs, func(p *sim.Profile) string { return millis(p.Network.JitterMs) }, func(p *sim.Profile) string {
			if p.Network.JitterMs == 0 {
				return fmt.Sprintf("0: requests sent together (within %.3f ms) are batched together, as the engine gathers arrivals before it steps", f.jitter)
			}
			return "the median spread of the sends of requests started together: the engine starts a step at the first"
		})
	}
	if !math.IsNaN(f.overhead) {
		f.prov.add(sim.KeyNetworkFrontEndMs, func(p *sim.Profile) string { return millis(p.Network.FrontEndMs) }, func(p *sim.Profile) string {
			if p.Network.FrontEndMs > 0 {
				return "fitted: requests sent together reach the engine this far apart, as a front end that takes them in turn (on a CPU the engine leaves it) sends them; its share of the measured round trip"
			}
			return "0: requests sent together reach the engine together (no front end that takes them in turn)"
		})
	}
	noiseHow := "the spread of each request's inter-token gaps about its median, at the lowest concurrency probed"
	if f.noise == 0 {
		noiseHow = "not measured (too few inter-token gaps): P99s are those of a noiseless engine"
	}
	f.prov.add("cost."+sim.CostKeyStepNoise, func(p *sim.Profile) string { return fmt.Sprintf("%.4f", p.Cost.StepNoise) }, fixed(noiseHow))
}

// heldOut fits base on all but the held-out points and judges that fit on them
// (res.HeldOut, res.ByLoad); validation is its prediction of each held-out point.
func (f *fitter) heldOut(base sim.Profile, pts []Point, held []bool, res *Result) (sim.Profile, map[*Point]figure.Values, error) {
	var train, test []*Point
	for i := range pts {
		if held[i] {
			test = append(test, &pts[i])
		} else {
			train = append(train, &pts[i])
		}
	}
	f.say(fmt.Sprintf("fitting %d probe points (%d held out to judge the fit)", len(train), len(test)))
	p, err := f.fitAll(base, train, f.lim.candidates(pts))
	res.HeldOut, res.ByLoad = noErrors(0), LoadErrors{noErrors(0), noErrors(0)}
	if err != nil || len(test) == 0 {
		return p, nil, err
	}
	pv := p
	pv.Cost.StepNoise = f.noise
	validation, err := predictAll(f.ctx, pv, test)
	if err != nil {
		return p, nil, err
	}
	v := func(pt *Point) figure.Values { return validation[pt] }
	res.HeldOut = errorsOf(test, v)
	var closed, open []*Point
	for _, pt := range test {
		if pt.Open {
			open = append(open, pt)
		} else {
			closed = append(closed, pt)
		}
	}
	res.ByLoad = LoadErrors{Closed: errorsOf(closed, v), Open: errorsOf(open, v)}
	f.say(fmt.Sprintf("held-out error: TTFT P50 %.1f%%, TPOT P50 %.1f%%", res.HeldOut.Pct[figure.TTFTP50], res.HeldOut.Pct[figure.TPOTP50]))
	return p, validation, nil
}

// final fits the profile written on every point, starting from the held-out fit (which
// was fitted on every point when none was held out), and judges it on every point
// (res.InSample, res.Points).
func (f *fitter) final(p sim.Profile, pts []Point, held []bool, validation map[*Point]figure.Values, res *Result) (sim.Profile, error) {
	all := make([]*Point, len(pts))
	for i := range pts {
		all[i] = &pts[i]
	}
	if len(validation) > 0 {
		f.say(fmt.Sprintf("fitting all %d probe points", len(all)))
		var err error
		if p, err = f.fitAll(p, all, f.lim.candidates(pts)); err != nil {
			return p, err
		}
	}
	p.Cost.StepNoise = f.noise
	pred, err := predictAll(f.ctx, p, all)
	if err != nil {
		return p, err
	}
	res.InSample = errorsOf(all, func(pt *Point) figure.Values { return pred[pt] })
	for i, pt := range all {
		v, ok := validation[pt]
		if !ok {
			v = figure.Unmeasured()
		}
		res.Points = append(res.Points, Fitted{Point: pts[i], HeldOut: held[i], Predicted: pred[pt], Validation: v})
	}
	return p, nil
}

// contextPerSequence sizes the KV cache of a server that cuts prompts at a context of its
// own as one such context per sequence (Ollama allocates num_ctx for each of
// OLLAMA_NUM_PARALLEL): the simulator's default model would size a cache nobody has.
func (f *fitter) contextPerSequence(p sim.Profile, pts []Point) sim.Profile {
	n, seqs := f.truncatedAt, p.Engine.MaxNumSeqs
	if n == 0 || p.Engine.KVCacheTokens != 0 || f.lim.maxSeqs == 0 && seqs >= maxProbed(pts) {
		return p
	}
	p.Engine.KVCacheTokens = seqs * n
	f.prov.add(sim.KeyEngineKVCacheTokens, func(p *sim.Profile) string { return fmt.Sprint(p.Engine.KVCacheTokens) },
		fixed(fmt.Sprintf("max_num_seqs × the context prompts were cut to (%d × %d): a context per sequence, as Ollama allocates num_ctx for each of OLLAMA_NUM_PARALLEL", seqs, n)))
	return p
}

// linearParams are the linear cost model's settings the fit moves.
func (f *fitter) linearParams(pts []Point) {
	f.params = append(f.params,
		costParam(sim.CostKeyPrefillMsPerToken, 0, false),
		costParam(sim.CostKeyDecodeStepMs, 0, false),
		costParam(sim.CostKeyDecodeGrowth, 1e-3, false),
	)
	// Terms that grow with the prompt are told apart from the per-step ones only where the
	// points' prompts differ: with one prompt length they would trade against decode_step_ms
	// freely, and be extrapolated to prompts nobody sent.
	lo, hi := math.MaxInt, 0
	for i := range pts {
		n := meanPrompt(&pts[i])
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi >= 4*max(lo, 1) {
		f.params = append(f.params,
			costParam(sim.CostKeyPrefillAttnMsPer1M, 0.01, true),
			costParam(sim.CostKeyContextMsPer1k, 0.01, true),
		)
	}
	// A fixed cost of every step is told apart from the network only where the server
	// times its own prefill: otherwise both only add to TTFT (and the step's share to
	// decode_step_ms), so the fit keeps the network and leaves step_ms at 0.
	if !math.IsNaN(f.overhead) {
		f.params = append(f.params, costParam(sim.CostKeyStepMs, 0.01, true))
		// A prompt's own fixed cost is told apart from the step's likewise: the server's
		// prefill time against its decode steps.
		f.params = append(f.params, costParam(sim.CostKeyPrefillSeqMs, 0.01, true))
	}
}

// costParam is the fit's parameter of a key under cost:, over the range the profile's
// table gives it; off and optional are the fit's own choices (see param).
func costParam(key string, off float64, optional bool) param {
	k, ok := sim.LookupCostKey(key)
	if !ok {
		panic("calibrate: no cost key " + key)
	}
	lo, hi := k.FitRange()
	return param{key: "cost." + k.Key, ptr: func(p *sim.Profile) *float64 { return k.Value(&p.Cost) }, lo: lo, hi: hi, off: off, optional: optional}
}

// rooflineOffset is the log scale's offset for a roofline constant: none for one that is
// never 0, a small share of its range for one that may be.
func rooflineOffset(fl sim.RooflineField) float64 {
	if fl.Min > 0 {
		return 0
	}
	return math.Max(fl.Max*1e-4, 1e-3)
}

// frontEnds are the front-end times per request tried, ms (0: none).
var frontEnds = []float64{0, 0.25, 0.5, 1, 2}

type fitter struct {
	ctx         context.Context
	opt         Options
	lim         batch   // the batch limit known before the fit
	jitter      float64 // the measured send spread, ms
	overhead    float64 // the measured round trip and front end, ms (NaN: not measured)
	noise       float64 // the measured step noise (cost.step_noise)
	truncatedAt int     // the context the server cut long prompts to; 0 if none
	params      []param
	prov        provenance
	say         func(string)
	tried       int // profiles simulated on the points (Options.Tried)
}

// fitAll fits the continuous settings on the plain points (one prompt length each), then
// chooses the discrete ones (batch limit, placement, budget) on every point, twice, then
// refits the continuous ones on every point.
func (f *fitter) fitAll(p sim.Profile, pts []*Point, seqCands []int) (sim.Profile, error) {
	var plain []*Point
	for _, pt := range pts {
		if !pt.mixed() {
			plain = append(plain, pt)
		}
	}
	if len(plain) == 0 {
		plain = pts
	}
	// Twice: the plain points' fit is skewed by any it cannot reproduce under the first
	// guess of the discrete settings (a queueing level under a batch limit set too high).
	for range 2 {
		p = f.continuous(p, plain, f.params)
		var err error
		if p, err = f.discrete(p, pts, seqCands); err != nil {
			return p, err
		}
	}
	p = f.continuous(p, pts, f.params)
	return f.prune(p, pts), f.ctx.Err()
}

// pruneChiSquare is how much worse (in the objective's chi-square) the fit may get without
// an optional term before the term is kept: 4, a two-sigma improvement for one parameter.
const pruneChiSquare = 4

// prune drops each optional term the points do not need: refitted without it (and without
// the terms dropped before it), the fit is within pruneChiSquare of the fit with it.
func (f *fitter) prune(p sim.Profile, pts []*Point) sim.Profile {
	with := f.objective(p, pts)
	active := slices.Clone(f.params)
	for i := 0; i < len(active); i++ {
		q := active[i]
		if !q.optional || *q.ptr(&p) == 0 {
			continue
		}
		rest := slices.Delete(slices.Clone(active), i, i+1)
		c := p
		*q.ptr(&c) = 0
		c = f.continuous(c, pts, rest)
		if without := f.objective(c, pts); without <= with+pruneChiSquare {
			p, with, active = c, without, rest
			i-- // active[i] is now the next term
		}
	}
	return p
}

// continuous moves params to minimise the objective on pts.
func (f *fitter) continuous(p sim.Profile, pts []*Point, params []param) sim.Profile {
	x0 := make([]float64, len(params))
	step := make([]float64, len(params))
	for i, q := range params {
		x0[i], step[i] = q.get(&p), 0.3
	}
	cand := p
	obj := func(x []float64) float64 {
		for i, q := range params {
			q.set(&cand, x[i])
		}
		return f.objective(cand, pts)
	}
	x, _ := minimize(obj, x0, step, 400, 1e-6)
	x, _ = minimize(obj, x, step, 200, 1e-7) // a restart escapes a collapsed simplex
	for i, q := range params {
		q.set(&p, x[i])
	}
	return p
}

// discrete tries each batch limit, placement and chunk budget with the continuous settings
// as they are, keeping the best; ties keep the earlier (simpler) choice.
func (f *fitter) discrete(p sim.Profile, pts []*Point, seqCands []int) (sim.Profile, error) {
	best, bestV := p, math.Inf(1)
	mixed := false
	for _, pt := range pts {
		mixed = mixed || pt.mixed()
	}
	placements := []string{sim.PrefillColocated}
	bs := []int{p.Engine.MaxBatchedTokens}
	if mixed {
		bs = budgets
		if f.opt.Server.Slots == 0 {
			placements = append(placements, sim.PrefillDisaggregated)
		}
	}
	// The batch limit first, with the placement and budget as they are: the three that fit
	// best as the continuous settings stand, each then with those refitted (a limit one off
	// can be matched by a skewed growth, a local optimum the scan alone would keep).
	type scored struct {
		n int
		v float64
	}
	var scan []scored
	for _, n := range seqCands {
		c := p
		c.Engine.MaxNumSeqs = n
		c.Engine.MaxBatchedTokens = max(c.Engine.MaxBatchedTokens, n)
		scan = append(scan, scored{n, f.objective(c, pts)})
	}
	sort.SliceStable(scan, func(i, j int) bool { return scan[i].v < scan[j].v })
	for _, s := range scan[:min(3, len(scan))] {
		if math.IsInf(s.v, 1) {
			continue
		}
		c := p
		c.Engine.MaxNumSeqs = s.n
		c.Engine.MaxBatchedTokens = max(c.Engine.MaxBatchedTokens, s.n)
		if len(scan) > 1 {
			c = f.continuous(c, pts, f.params)
		}
		if v := f.objective(c, pts); v < bestV-1e-9 {
			best, bestV = c, v
		}
	}
	n := best.Engine.MaxNumSeqs
	for _, pl := range placements {
		for _, b := range bs {
			if pl == sim.PrefillDisaggregated && b != bs[0] {
				continue // no chunking without a shared step
			}
			if !math.IsInf(bestV, 1) && pl == best.Engine.Prefill && max(b, n) == best.Engine.MaxBatchedTokens {
				continue // best itself
			}
			c := best
			c.Engine.Prefill, c.Engine.MaxBatchedTokens = pl, max(b, n)
			if v := f.objective(c, pts); v < bestV-1e-9 {
				best, bestV = c, v
			}
		}
	}
	// Requests sent together reach some engines spread by the client's sends (vLLM and
	// serve start a step at the first, the others wait for it), while others gather what
	// arrived before stepping (llama.cpp prefills them in one batch): no spread at all.
	if f.jitter > 0 {
		for _, j := range []float64{0, f.jitter} {
			if j == best.Network.JitterMs && !math.IsInf(bestV, 1) {
				continue // best itself
			}
			c := best
			c.Network.JitterMs = j
			if v := f.objective(c, pts); v < bestV-1e-9 {
				best, bestV = c, v
			}
		}
	}
	// A front end that takes requests one at a time carves its share out of the measured
	// round trip; only the server's own timings tell the round trip, so only then.
	if !math.IsNaN(f.overhead) {
		for _, fe := range frontEnds {
			if fe >= f.overhead {
				break
			}
			if fe == best.Network.FrontEndMs && f.overhead-fe == best.Network.RTTMs && !math.IsInf(bestV, 1) {
				continue // best itself
			}
			c := best
			c.Network.FrontEndMs, c.Network.RTTMs = fe, f.overhead-fe
			if v := f.objective(c, pts); v < bestV-1e-9 {
				best, bestV = c, v
			}
		}
	}
	if math.IsInf(bestV, 1) {
		return p, errors.New("no profile reproduces the probe: every candidate refused some request (prompts longer than the KV cache?)")
	}
	return best, nil
}

// objective is the sum over points of squared log errors of TTFT and TPOT P50 (and, where
// prompts of very different lengths share the batch, ITL P99 too), each over
// its measurement's relative standard error (a chi-square: about one a figure when the
// profile explains the point to within its noise); +Inf for a profile that cannot serve
// the points.
func (f *fitter) objective(p sim.Profile, pts []*Point) float64 {
	if f.tried++; f.opt.Tried != nil {
		f.opt.Tried(f.tried)
	}
	var s float64 // an invalid profile fails predict's sim.NewVirtual: +Inf below
	for _, pt := range pts {
		fig, err := predict(f.ctx, p, pt)
		if err != nil {
			return math.Inf(1)
		}
		m, se := pt.Measured, pt.SE
		s += huber(logRatio(fig[figure.TTFTP50], m[figure.TTFTP50])/se[figure.TTFTP50]) + huber(logRatio(fig[figure.TPOTP50], m[figure.TPOTP50])/se[figure.TPOTP50])
		if pt.mixed() {
			// The decoding requests' gaps lengthened where a prefill shared their step (or
			// not, if prefill runs apart) are in ITL's tail.
			s += huber(logRatio(fig[figure.ITLP99], m[figure.ITLP99]) / se[figure.ITLP99])
		}
	}
	return s
}

// huberK is where a figure's squared error in standard errors turns linear: a point the
// cost model cannot explain (llama.cpp's default build prefilled 2–7 times slower beside
// three decoding sequences than alone, on two busy cores, so the mixed point's TTFT P50 read
// 833 ms against 105 predicted) pulls the fit no harder than 2k per standard error, instead
// of bending every other point's figures to it (that profile had put every prefill's TTFT
// 70–150 % high).
const huberK = 3

// huber is z² within huberK standard errors, growing linearly beyond: a chi-square for the
// points the model explains, robust to the ones it does not.
func huber(z float64) float64 {
	if a := math.Abs(z); a > huberK {
		return 2*huberK*a - huberK*huberK
	}
	return z * z
}

// logRatio is ln(pred/meas), 0 when either is not measured.
func logRatio(pred, meas float64) float64 {
	if math.IsNaN(pred) || math.IsNaN(meas) || meas <= 0 {
		return 0
	}
	return math.Log(math.Max(pred, 1e-6) / meas)
}

// mixed says whether the point's prompts differ widely in length: long prompts arriving
// while short ones decode, which shows how prefill shares the engine.
func (pt *Point) mixed() bool {
	r := rangeOf([]Point{*pt}, func(q Request) int { return q.Prompt })
	return r[1] > sim.MixedSpan*max(r[0], 1)
}

// guess sets the linear model's starting values from closed forms: TTFT at concurrency 1
// grows with the prompt by prefill_ms_per_token; TPOT grows with the batch.
func guess(p *sim.Profile, pts []Point) {
	var xs, ys, cs, ts []float64
	for i := range pts {
		pt := &pts[i]
		if pt.Open || pt.mixed() {
			continue
		}
		if pt.Concurrency == 1 {
			xs = append(xs, float64(meanPrompt(pt)))
			ys = append(ys, pt.Measured[figure.TTFTP50])
		}
		if !math.IsNaN(pt.Measured[figure.TPOTP50]) {
			cs = append(cs, float64(pt.Concurrency))
			ts = append(ts, pt.Measured[figure.TPOTP50])
		}
	}
	if a, b, ok := line(xs, ys); ok && b > 0 {
		p.Cost.PrefillMsPerToken = b
		if p.Network.RTTMs == 0 {
			p.Network.RTTMs = math.Max(a, 0)
		}
	} else if len(ys) > 0 {
		p.Cost.PrefillMsPerToken = math.Max(metrics.Median(ys)/math.Max(metrics.Median(xs), 1), 1e-5)
	}
	if a, b, ok := line(cs, ts); ok && a+b > 0 {
		p.Cost.DecodeStepMs = a + b
		p.Cost.DecodeGrowth = math.Max(b/(a+b), 0)
	} else if len(ts) > 0 {
		p.Cost.DecodeStepMs, p.Cost.DecodeGrowth = metrics.Median(ts), 0.01
	}
}

// line is the least-squares y = a + b x; ok is false with fewer than two distinct x.
func line(xs, ys []float64) (a, b float64, ok bool) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if len(xs) < 2 || d <= 1e-12*math.Max(1, sxx*n) {
		return 0, 0, false
	}
	b = (n*sxy - sx*sy) / d
	return (sy - b*sx) / n, b, true
}

func meanPrompt(pt *Point) int {
	s := 0
	for _, q := range pt.Requests {
		s += q.Prompt
	}
	return s / max(len(pt.Requests), 1)
}

// holdOut marks the points judged but not fitted on: where there are enough of a kind to
// leave one out, the ones furthest out — the highest concurrency, the longest prompt at
// concurrency 1, the last mixed point — so the stated error is that of an extrapolation.
func holdOut(pts []Point) []bool {
	held := make([]bool, len(pts))
	// Every point at the furthest key: a level the decode ladder ran twice is held out
	// whole, or its other pass would judge the fit on what it was fitted to.
	mark := func(match func(*Point) bool, key func(*Point) float64) {
		far := math.Inf(-1)
		distinct := map[float64]bool{}
		for i := range pts {
			if match(&pts[i]) {
				k := key(&pts[i])
				distinct[k] = true
				far = math.Max(far, k)
			}
		}
		if len(distinct) < 3 {
			return
		}
		for i := range pts {
			if match(&pts[i]) && key(&pts[i]) == far {
				held[i] = true
			}
		}
	}
	// Every open loop, when closed loops are there to fit on: the error stated for an open
	// loop is then that of a fit to closed loops, as a profile calibrated on a probe's
	// ladder is used for a user's open-loop run.
	closed := slices.ContainsFunc(pts, func(p Point) bool { return !p.Open })
	for i := range pts {
		if pts[i].Open && !pts[i].mixed() && closed {
			held[i] = true
		}
	}
	mark(func(p *Point) bool { return !p.Open && !p.mixed() && p.Concurrency > 1 },
		func(p *Point) float64 { return float64(p.Concurrency) })
	mark(func(p *Point) bool { return !p.Open && !p.mixed() && p.Concurrency == 1 },
		func(p *Point) float64 { return float64(meanPrompt(p)) })
	n := 0
	for i := range pts {
		if pts[i].mixed() {
			n++
		}
	}
	if n >= 2 {
		for i := len(pts) - 1; i >= 0; i-- {
			if pts[i].mixed() {
				held[i] = true
				break
			}
		}
	}
	return held
}

// errorsOf is the largest absolute relative error of each judged figure over pts.
func errorsOf(pts []*Point, pred func(*Point) figure.Values) Errors {
	e := noErrors(len(pts))
	worst := func(dst *float64, p, m float64) {
		if math.IsNaN(p) || math.IsNaN(m) || m <= 0 {
			return
		}
		v := math.Abs(p-m) / m * 100
		if math.IsNaN(*dst) || v > *dst {
			*dst = v
		}
	}
	for _, pt := range pts {
		f, m := pred(pt), pt.Measured
		for _, k := range figure.Judged {
			worst(&e.Pct[k], f[k], m[k])
		}
	}
	return e
}

// overheadOf is the median of the points' server overheads at concurrency 1 (no queueing
// hides in it there); NaN without server timings.
func overheadOf(pts []Point) float64 {
	var xs []float64
	for i := range pts {
		if pts[i].Concurrency == 1 && !math.IsNaN(pts[i].ServerOverhead) {
			xs = append(xs, pts[i].ServerOverhead)
		}
	}
	return metrics.Median(xs)
}

// noiseOf is the step noise measured at the lowest concurrency that measured it (where
// the batch changes least from step to step); 0 when none did.
func noiseOf(pts []Point) float64 {
	byC := map[int][]float64{}
	for i := range pts {
		if pt := &pts[i]; !pt.Open && !pt.mixed() && !math.IsNaN(pt.Noise) {
			byC[pt.Concurrency] = append(byC[pt.Concurrency], pt.Noise)
		}
	}
	if len(byC) == 0 {
		return 0
	}
	cs := make([]int, 0, len(byC))
	for c := range byC {
		cs = append(cs, c)
	}
	sort.Ints(cs)
	return math.Min(metrics.Median(byC[cs[0]]), 1)
}

// gauges are what a level's scrapes of the server's running and waiting requests say once
// the level was under way: the first scrape, taken as the level's requests arrive, is left
// out (it catches them queued for the first step). running is the median scrape's: one
// that caught a request between two states (a finished one not yet gone, a new one
// prefilling beside a full batch) reads above the limit, more often the busier the machine.
// waiting is the median scrape's too: "others waited throughout" is most scrapes seeing one
// wait, not a mean that a few scrapes catching a burst of arrivals lift (serve's twin of a
// 256-sequence server on a busy machine: 41 of 64 ran, the rest between the client and the
// server, waiting mean 1.5, median 0, read as a limit of 41). ok is false with fewer than
// three scrapes after the first: too few to tell a limit from a request that arrived mid-step.
func gauges(s *servermetrics.Summary) (running, waiting float64, ok bool) {
	if s == nil || len(s.Series.Running) != len(s.Series.TS) || len(s.Series.Waiting) != len(s.Series.TS) {
		return 0, 0, false
	}
	var rs, ws []float64
	for i := 1; i < len(s.Series.TS); i++ {
		r, w := s.Series.Running[i], s.Series.Waiting[i]
		if math.IsNaN(r) || math.IsNaN(w) {
			continue
		}
		rs, ws = append(rs, r), append(ws, w)
	}
	if len(rs) < 3 {
		return 0, 0, false
	}
	return metrics.Median(rs), metrics.Median(ws), true
}

// runningLimit reads the batch limit from the server's running-requests gauge: the most
// requests it ran at once (as most scrapes saw it: gauges) at a level where others
// waited throughout (one or more waiting in most scrapes, with fewer running than were sent).
func runningLimit(pts []Point) (int, string) {
	best, at := 0, -1
	for i := range pts {
		r, w, ok := gauges(pts[i].Server)
		if n := int(math.Round(r)); ok && w >= 1 && n > 0 && (pts[i].Open || n < pts[i].Concurrency) && n > best {
			best, at = n, i
		}
	}
	if at < 0 {
		return 0, ""
	}
	return best, fmt.Sprintf("the server's running-requests gauge (%s /metrics): %d ran, in most scrapes of %s, while others waited", pts[at].Server.Family, best, pts[at].Name)
}

// probedConcurrencies are the batch limits worth trying when nothing says which: every
// whole number up to the most requests probed in flight (a limit between two probed
// levels shows as the queueing at the higher one), and 256 (vLLM's default) for "no limit
// seen". Largest first: with equal fits, "no limit below what was seen" is the safer claim.
func probedConcurrencies(pts []Point) []int {
	out := []int{256}
	for c := maxProbed(pts); c >= 1; c-- {
		if c < 256 {
			out = append(out, c)
		}
	}
	return out
}

func maxProbed(pts []Point) int {
	m := 0
	for i := range pts {
		m = max(m, pts[i].Concurrency, peakInFlight(&pts[i]))
	}
	return m
}

func minProbed(pts []Point) int {
	m := 0
	for i := range pts {
		if c := pts[i].Concurrency; c > 0 && (m == 0 || c < m) {
			m = c
		}
	}
	return max(m, 1)
}

// peakInFlight is an open-loop point's most requests in flight, as the server's running
// gauge saw them; 0 when it was not scraped.
func peakInFlight(pt *Point) int {
	if pt.Server != nil && pt.Server.Running != nil {
		return int(math.Round(pt.Server.Running.Max))
	}
	return 0
}

func rangeOf(pts []Point, v func(Request) int) [2]int {
	r := [2]int{math.MaxInt, 0}
	for i := range pts {
		for _, q := range pts[i].Requests {
			r[0], r[1] = min(r[0], v(q)), max(r[1], v(q))
		}
	}
	if r[1] == 0 {
		return [2]int{}
	}
	return r
}

// describe is a setting list in words, for the console.
func describe(ss []Setting) string {
	var b strings.Builder
	for _, s := range ss {
		head := fmt.Sprintf("  %-33s %-10s ", s.Key, s.Value)
		// How a setting was found wraps under itself, so the table stays within a terminal.
		fmt.Fprintf(&b, "%s%s\n", head, console.Wrap(s.How, len(head), len(head), console.Width))
	}
	return b.String()
}

// openRates is the lowest and highest arrival rate (req/s) of the open-loop points that are
// not the mixed phase's bursts; zero without any.
func openRates(pts []Point) [2]float64 {
	var r [2]float64
	for i := range pts {
		pt := &pts[i]
		if !pt.Open || pt.mixed() || len(pt.Requests) < 2 {
			continue
		}
		first, last := pt.Requests[0].Arrival, pt.Requests[0].Arrival
		for _, q := range pt.Requests {
			first, last = min(first, q.Arrival), max(last, q.Arrival)
		}
		if last <= first {
			continue
		}
		rate := float64(len(pt.Requests)-1) / (last - first).Seconds()
		if r[1] == 0 {
			r = [2]float64{rate, rate}
		}
		r = [2]float64{math.Min(r[0], rate), math.Max(r[1], rate)}
	}
	return r
}

// measuredPower is the power the probe's GPU telemetry measured (a run's sampled GPU metrics), for the
// profile: each level's GPU energy over its window and GPUs, weighted by GPU-seconds — the
// mean per GPU while the probe loaded the server, its idle gaps between steps included — and
// the most GPUs a level saw. Zero without measured energy (a simulator's estimate is no
// measurement).
func measuredPower(pts []Point) sim.PowerConfig {
	var joules, gpuSeconds float64
	var levels, gpus int
	var sources []string
	for _, pt := range pts {
		g := pt.GPU
		if g == nil || g.Source == gpumetrics.SourceEstimate || g.Source == gpumetrics.SourceCalibrated || g.EnergyJ == nil || g.WindowS <= 0 || g.GPUs <= 0 {
			continue
		}
		joules += *g.EnergyJ
		gpuSeconds += g.WindowS * float64(g.GPUs)
		levels++
		gpus = max(gpus, g.GPUs)
		if !slices.Contains(sources, g.Source) {
			sources = append(sources, g.Source)
		}
	}
	if !(joules > 0) || !(gpuSeconds > 0) {
		return sim.PowerConfig{}
	}
	return sim.PowerConfig{WattsPerGPU: joules / gpuSeconds, GPUs: gpus,
		Source: fmt.Sprintf("the mean per-GPU power of %d probe level%s with GPU telemetry (%s)", levels, map[bool]string{true: "s"}[levels != 1], strings.Join(sources, ", "))}
}
