package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/testtier"
)

// stepPoint is one measured figure the roofline is fitted to: a step (or a whole run) of a
// model on a GPU, with what it is grouped by when held out.
type stepPoint struct {
	label    string // e.g. "decode 8x512"
	source   string // calibration file or publication (public-steps.json's sources)
	engine   string // the engine's kind, for its own constants (engineKVReadBits); "" is vLLM
	model    ModelShape
	gpu      GPU
	batch    int // sequences in the step or run
	context  int // the decode context, prompt tokens, or a run's mean context
	measured float64
	// predict is the figure the roofline gives for what was measured, in the same unit.
	predict func(r *Roofline) float64
}

func (p stepPoint) shape() string {
	if p.model.BytesPerParam == 1 {
		return p.model.Name + " fp8"
	}
	return p.model.Name
}

type publicRun struct {
	Source        string  `json:"source"`
	Model         string  `json:"model"`
	GPU           string  `json:"gpu"`
	TFLOPS        float64 `json:"tflops"`
	BytesPerParam float64 `json:"bytes_per_param"`
	Batch         int     `json:"batch"`
	Input         int     `json:"input"`
	Output        int     `json:"output"`
	Prefill       bool    `json:"prefill"`
	StepMs        float64 `json:"step_ms"`
	TotalMs       float64 `json:"total_ms"`
	OutTokPerS    float64 `json:"out_tok_per_s"`
	Quoted        string  `json:"quoted"`
}

type publicSteps struct {
	Sources map[string]struct {
		URL        string `json:"url"`
		Level      string `json:"level"`
		EngineKind string `json:"engine_kind"`
	} `json:"sources"`
	Runs []publicRun `json:"runs"`
}

// runMs prices a static batch run: b sequences of in prompt tokens prefilled in one step
// (when prefill), then out-1 decode steps over contexts in+1 .. in+out-1, priced at up to
// 32 evenly spread steps (midpoint rule: a step is linear in the context between the
// roofline's kinks, so this is exact to well under 0.1 %).
func runMs(r *Roofline, b, in, out int, prefill bool) (total, meanStep float64) {
	if prefill {
		n := float64(in)
		total = float64(r.Step(StepWork{PrefillSeqs: b, PrefillTokens: b * in, PrefillAttn: float64(b) * n * n / 2})) / 1e6
	}
	steps := out - 1
	samples := min(steps, 32)
	var sum float64
	for i := range samples {
		k := 1 + int((float64(i)+0.5)*float64(steps)/float64(samples))
		ctx := int64(in + k)
		sum += float64(r.Step(StepWork{DecodeSeqs: b, DecodeContext: int64(b) * ctx})) / 1e6
	}
	meanStep = sum / float64(samples)
	return total + meanStep*float64(steps), meanStep
}

// TestRunMsSampling: pricing a long run at 32 of its decode steps gives what pricing every
// step gives, to 0.1 %.
func TestRunMsSampling(t *testing.T) {
	m, _ := ModelPreset("llama-2-70b")
	g, _ := GPUPreset("h200")
	r := NewRoofline(m, g, DefaultRooflineParams())
	for _, c := range [][3]int{{192, 128, 2048}, {96, 128, 4096}, {1, 2000, 4000}, {8, 32, 128}} {
		b, in, out := c[0], c[1], c[2]
		got, _ := runMs(r, b, in, out, true)
		n := float64(in)
		want := float64(r.Step(StepWork{PrefillSeqs: b, PrefillTokens: b * in, PrefillAttn: float64(b) * n * n / 2})) / 1e6
		for k := 1; k < out; k++ {
			want += float64(r.Step(StepWork{DecodeSeqs: b, DecodeContext: int64(b) * int64(in+k)})) / 1e6
		}
		if math.Abs(got/want-1) > 0.001 {
			t.Errorf("run %dx%d+%d: sampled %.3f ms, every step %.3f ms", b, in, out, got, want)
		}
	}
}

// loadStepPoints reads every measurement the roofline is fitted to: the H200 / Llama-3.1-8B
// calibration file (decode steps, prefills of 1,024+ tokens, batched prefills; the shorter
// prefills were timed eagerly and are bound by the CPU's kernel launches, which no roofline
// term models) and the published runs of public-steps.json.
func loadStepPoints(t testing.TB) []stepPoint {
	t.Helper()
	cal, _ := loadCalibration(t)
	m8, _ := ModelPreset("llama-3.1-8b")
	h200, _ := GPUPreset("h200")
	const file = "h200-llama-3.1-8b.json"
	var pts []stepPoint
	for k, v := range cal.Decode {
		b, c := parseBxC(t, k)
		w := StepWork{DecodeSeqs: b, DecodeContext: int64(b) * int64(c)}
		pts = append(pts, stepPoint{label: "decode " + k, source: file, model: m8, gpu: h200, batch: b, context: c, measured: v,
			predict: func(r *Roofline) float64 { return float64(r.Step(w)) / 1e6 }})
	}
	for k, v := range cal.Prefill {
		n, _ := strconv.Atoi(k)
		if n < 1024 {
			continue
		}
		pts = append(pts, stepPoint{label: "prefill " + k, source: file, model: m8, gpu: h200, batch: 1, context: n, measured: v,
			predict: func(r *Roofline) float64 { return float64(r.Prefill(n)) / 1e6 }})
	}
	for k, v := range cal.PrefillBatch {
		b, n := parseBxC(t, k)
		w := StepWork{PrefillSeqs: b, PrefillTokens: b * n, PrefillAttn: float64(b) * float64(n) * float64(n) / 2}
		pts = append(pts, stepPoint{label: "prefill " + k, source: file, model: m8, gpu: h200, batch: b, context: n, measured: v,
			predict: func(r *Roofline) float64 { return float64(r.Step(w)) / 1e6 }})
	}

	raw, err := os.ReadFile("testdata/public-steps.json")
	if err != nil {
		t.Fatal(err)
	}
	var pub publicSteps
	if err := json.Unmarshal(raw, &pub); err != nil {
		t.Fatal(err)
	}
	for i, run := range pub.Runs {
		m, okm := ModelPreset(run.Model)
		g, okg := GPUPreset(run.GPU)
		src, oks := pub.Sources[run.Source]
		measures := 0
		for _, v := range []float64{run.StepMs, run.TotalMs, run.OutTokPerS} {
			if v > 0 {
				measures++
			}
		}
		if !okm || !okg || !oks || src.URL == "" || (src.Level != "kernel" && src.Level != "engine") || run.Quoted == "" ||
			measures != 1 || run.Batch <= 0 || run.Input <= 0 || run.Output < 2 {
			t.Fatalf("public-steps.json run %d: unknown model, GPU or source, no citation or level, or not exactly one measured figure: %+v", i, run)
		}
		if run.TFLOPS > 0 {
			g.TFLOPS = run.TFLOPS
		}
		m.BytesPerParam = run.BytesPerParam
		p := stepPoint{source: run.Source, engine: src.EngineKind, model: m, gpu: g, batch: run.Batch, context: run.Input + run.Output/2}
		b, in, out, pre := run.Batch, run.Input, run.Output, run.Prefill
		switch {
		case run.StepMs > 0:
			p.label = fmt.Sprintf("decode step %dx%d+%d", b, in, out)
			p.measured = run.StepMs
			p.predict = func(r *Roofline) float64 { _, s := runMs(r, b, in, out, pre); return s }
		default:
			p.label = fmt.Sprintf("run %dx%d+%d", b, in, out)
			p.measured = run.TotalMs
			if run.OutTokPerS > 0 {
				p.measured = float64(out) * float64(b) / run.OutTokPerS * 1e3
			}
			p.predict = func(r *Roofline) float64 { tot, _ := runMs(r, b, in, out, pre); return tot }
		}
		p.label += " " + g.Name
		pts = append(pts, p)
	}
	sort.SliceStable(pts, func(i, j int) bool {
		a, b := pts[i], pts[j]
		if a.source != b.source {
			return a.source < b.source
		}
		return a.label < b.label
	})
	return pts
}

// rooflineErrs is each point's prediction error, log(predicted / measured).
func rooflineErrs(pts []stepPoint, p RooflineParams) []float64 {
	errs := make([]float64, len(pts))
	// Keyed by what tells the points' rooflines apart (a struct, not a formatted string: the
	// fits evaluate this loss millions of times).
	type key struct {
		model, gpu, engine string
		bytes, tflops      float64
	}
	cache := map[key]*Roofline{}
	for i, pt := range pts {
		key := key{pt.model.Name, pt.gpu.Name, pt.engine, pt.model.BytesPerParam, pt.gpu.TFLOPS}
		r := cache[key]
		if r == nil {
			ep := p
			ep.KVReadBits = engineKVReadBits[EngineConfig{Kind: pt.engine}.kind()]
			r = NewRoofline(pt.model, pt.gpu, ep)
			cache[key] = r
		}
		errs[i] = math.Log(pt.predict(r) / pt.measured)
	}
	return errs
}

// fitPrior is the ridge penalty that shrinks each overhead toward 0 unless the data need
// it: an overhead at its typical size (20 µs per layer, 10 µs per sequence, 1 ms per step)
// weighs in the loss as much as a 4.5 % error on every point (4.5 % squared is 0.002).
// Without it, a term the points left in cannot pin down takes whatever value fits a handful
// of them (a cost per sequence from TensorRT-LLM's large-batch runs alone, say), and the
// leave-one-out would measure that accident.
const fitPrior = 0.002

// fitLoss is the mean squared log error over the points, every measured figure weighted
// alike, plus the prior on the overheads.
func fitLoss(pts []stepPoint, p RooflineParams) float64 {
	var s float64
	for _, e := range rooflineErrs(pts, p) {
		s += e * e
	}
	return s/float64(len(pts)) + fitPrior*(sq(p.LayerOverheadUs/20)+sq(p.SeqOverheadUs/10)+sq(p.StepOverheadUs/1000))
}

func sq(x float64) float64 { return x * x }

// fitRoofline fits the parameters named in free (their YAML keys) to pts: Nelder–Mead from
// start and from starts with attention's parallelism limit far stronger and the bandwidth
// efficiency near 1 (the loss has a second valley there when few batch sizes are left),
// keeping the best.
func fitRoofline(pts []stepPoint, start RooflineParams, free []string) (RooflineParams, float64) {
	best, bestLoss := nelderMead(pts, start, free)
	for _, v := range []struct{ units, bw float64 }{{4, 0}, {30, 0}, {0, 0.95}, {4, 0.95}, {30, 0.95}} {
		st := start
		if v.units > 0 && slices.Contains(free, "attn_units_per_sm") {
			st.AttnUnitsPerSM = v.units
		}
		if v.bw > 0 && slices.Contains(free, "bandwidth_efficiency") {
			st.BandwidthEfficiency = v.bw
		}
		if p, l := nelderMead(pts, st, free); l < bestLoss {
			best, bestLoss = p, l
		}
	}
	return best, bestLoss
}

// nelderMead minimises fitLoss over the free parameters within each one's valid range,
// restarting its simplex until that stops improving.
func nelderMead(pts []stepPoint, start RooflineParams, free []string) (RooflineParams, float64) {
	p := start
	var fields []RooflineField
	for _, f := range p.Fields() {
		for _, k := range free {
			if f.Key == k {
				fields = append(fields, f)
			}
		}
	}
	n := len(fields)
	set := func(x []float64) {
		for i, f := range fields {
			*f.Value = min(max(x[i], f.Min), f.Max)
		}
	}
	loss := func(x []float64) float64 { set(x); return fitLoss(pts, p) }
	x0 := make([]float64, n)
	for i, f := range fields {
		x0[i] = *f.Value
	}
	best := loss(x0)
	for restart := 0; restart < 8; restart++ {
		// A simplex around x0: each parameter moved by a quarter of its value (or of a
		// typical scale where it is 0).
		simplex := make([][]float64, n+1)
		vals := make([]float64, n+1)
		for i := range simplex {
			simplex[i] = append([]float64(nil), x0...)
			if i > 0 {
				f := fields[i-1]
				d := 0.25 * math.Abs(x0[i-1])
				if d == 0 {
					d = math.Min(0.25*(f.Max-f.Min), 10)
				}
				simplex[i][i-1] += d
			}
			vals[i] = loss(simplex[i])
		}
		for iter := 0; iter < 400*n; iter++ {
			idx := make([]int, n+1)
			for i := range idx {
				idx[i] = i
			}
			sort.Slice(idx, func(a, b int) bool { return vals[idx[a]] < vals[idx[b]] })
			lo, hi, nh := idx[0], idx[n], idx[n-1]
			if vals[hi]-vals[lo] < 1e-12 {
				break
			}
			c := make([]float64, n)
			for _, i := range idx[:n] {
				for j := range c {
					c[j] += simplex[i][j] / float64(n)
				}
			}
			at := func(t float64) []float64 {
				y := make([]float64, n)
				for j := range y {
					y[j] = c[j] + t*(simplex[hi][j]-c[j])
				}
				return y
			}
			xr := at(-1)
			fr := loss(xr)
			switch {
			case fr < vals[lo]:
				if xe := at(-2); loss(xe) < fr {
					simplex[hi], vals[hi] = xe, loss(xe)
				} else {
					simplex[hi], vals[hi] = xr, fr
				}
			case fr < vals[nh]:
				simplex[hi], vals[hi] = xr, fr
			default:
				if xc := at(0.5); loss(xc) < vals[hi] {
					simplex[hi], vals[hi] = xc, loss(xc)
				} else {
					for _, i := range idx[1:] {
						for j := range simplex[i] {
							simplex[i][j] = simplex[lo][j] + 0.5*(simplex[i][j]-simplex[lo][j])
						}
						vals[i] = loss(simplex[i])
					}
				}
			}
		}
		bi := 0
		for i := range vals {
			if vals[i] < vals[bi] {
				bi = i
			}
		}
		improved := vals[bi] < best*(1-1e-6)
		if vals[bi] <= best {
			best = vals[bi]
			copy(x0, simplex[bi])
			for i, f := range fields {
				x0[i] = min(max(x0[i], f.Min), f.Max)
			}
		}
		if !improved && restart > 0 {
			break
		}
	}
	set(x0)
	return p, best
}

// The two forms compared: the fixed per-step overhead the roofline had, and the overheads
// per layer, per sequence and per step that replaced it.
var (
	fixedForm    = []string{"compute_efficiency", "bandwidth_efficiency", "attn_units_per_sm", "step_overhead_us"}
	physicalForm = []string{"compute_efficiency", "bandwidth_efficiency", "attn_units_per_sm", "layer_overhead_us", "seq_overhead_us", "step_overhead_us"}
	// fixedOverheadParams are the constants of the fixed-overhead roofline, as calibrated on
	// the 8B file alone (1.6 ms per step).
	fixedOverheadParams = RooflineParams{ComputeEfficiency: 0.63, BandwidthEfficiency: 0.78, AttnUnitsPerSM: 0.5, StepOverheadUs: 1600}
)

type looGroup struct {
	name string
	in   func(stepPoint) bool
}

// looGroups holds out each shape, each batch size and each context length in turn.
func looGroups(pts []stepPoint) []looGroup {
	var gs []looGroup
	shapes, batches, ctxs := map[string]bool{}, map[int]bool{}, map[int]bool{}
	for _, p := range pts {
		shapes[p.shape()], batches[p.batch], ctxs[p.context] = true, true, true
	}
	for _, s := range sortedKeys(shapes) {
		gs = append(gs, looGroup{"shape " + s, func(p stepPoint) bool { return p.shape() == s }})
	}
	for _, b := range sortedInts(batches) {
		gs = append(gs, looGroup{fmt.Sprintf("batch %d", b), func(p stepPoint) bool { return p.batch == b }})
	}
	for _, c := range sortedInts(ctxs) {
		gs = append(gs, looGroup{fmt.Sprintf("context %d", c), func(p stepPoint) bool { return p.context == c }})
	}
	return gs
}

func sortedInts(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func maxAbs(es []float64) float64 {
	var m float64
	for _, e := range es {
		m = math.Max(m, math.Abs(math.Expm1(e)))
	}
	return m
}

func meanAbs(es []float64) float64 {
	var s float64
	for _, e := range es {
		s += math.Abs(math.Expm1(e))
	}
	return s / float64(len(es))
}

// rmsErr is the root mean square relative error, the loss without its prior.
func rmsErr(pts []stepPoint, p RooflineParams) float64 {
	var s float64
	for _, e := range rooflineErrs(pts, p) {
		s += e * e
	}
	return math.Expm1(math.Sqrt(s / float64(len(pts))))
}

// TestRooflineFit: DefaultRooflineParams are the constants fitted over every measurement
// (no more than 1 % worse than the optimum the fit finds), every point is within 45 % of
// them, and -v prints each point's error under the fixed-overhead constants and the
// defaults, and how the fit's error grows when a per-layer overhead is forced on it
// (docs/simulator.md shows all three).
func TestRooflineFit(t *testing.T) {
	pts := loadStepPoints(t)
	def := DefaultRooflineParams()
	fit, loss := fitRoofline(pts, def, physicalForm)
	defLoss := fitLoss(pts, def)
	var b strings.Builder
	fmt.Fprintf(&b, "fitted: %+v\nRMS error %.1f%% (defaults %.1f%%; the fixed-overhead constants %.1f%%)\n",
		fit, rmsErr(pts, fit)*100, rmsErr(pts, def)*100, rmsErr(pts, fixedOverheadParams)*100)
	fixedErrs := rooflineErrs(pts, fixedOverheadParams)
	errs := rooflineErrs(pts, def)
	b.WriteString("\n| source | point | shape | measured ms | fixed 1.6 ms | error | roofline ms | error |\n|---|---|---|---|---|---|---|---|\n")
	for i, p := range pts {
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %.2f | %+.1f%% | %.2f | %+.1f%% |\n", p.source, p.label, p.shape(), p.measured,
			p.measured*math.Exp(fixedErrs[i]), math.Expm1(fixedErrs[i])*100, p.measured*math.Exp(errs[i]), math.Expm1(errs[i])*100)
		if e := math.Abs(math.Expm1(errs[i])); e > 0.45 {
			t.Errorf("%s %s: %+.1f%% off with the default constants, beyond 45%%", p.source, p.label, math.Expm1(errs[i])*100)
		}
	}
	// How much the data dislike a per-layer cost: fix it, refit the rest.
	b.WriteString("\n| per-layer overhead, µs (fixed) | RMS error, rest refitted | bandwidth efficiency | per-sequence µs |\n|---|---|---|---|\n")
	for _, us := range []float64{0, 5, 10, 20, 40} {
		st := def
		st.LayerOverheadUs = us
		f, _ := fitRoofline(pts, st, []string{"compute_efficiency", "bandwidth_efficiency", "attn_units_per_sm", "seq_overhead_us", "step_overhead_us"})
		fmt.Fprintf(&b, "| %g | %.1f%% | %.3f | %.1f |\n", us, rmsErr(pts, f)*100, f.BandwidthEfficiency, f.SeqOverheadUs)
	}
	t.Logf("\n%s", b.String())
	if defLoss > loss*1.01+1e-6 {
		t.Errorf("DefaultRooflineParams() loss %.5f, the fit reaches %.5f with %+v: update the defaults and docs/simulator.md", defLoss, loss, fit)
	}
}

type looRow struct {
	group               string
	n                   int
	fixedMax, fixedMean float64 // fixed-overhead form, refitted without the group
	newMax, newMean     float64 // per-layer/sequence/step form, refitted without the group
	inFitMax            float64 // the form fitted on everything, on the group's points
	todayMax            float64 // today's fixed constants (no refit)
}

// looStart is where the new form's refits start: the fixed-overhead constants with that
// overhead spread per layer (1.6 ms over the 8B's 32 layers), so that both forms start alike,
// and the new form's partial overlap of compute and memory.
var looStart = RooflineParams{ComputeEfficiency: 0.63, BandwidthEfficiency: 0.78, AttnUnitsPerSM: 0.5, LayerOverheadUs: 50,
	Overlap: DefaultRooflineParams().Overlap}

func leaveOneOut(pts []stepPoint) []looRow {
	fullFit, _ := fitRoofline(pts, looStart, physicalForm)
	full := rooflineErrs(pts, fullFit)
	today := rooflineErrs(pts, fixedOverheadParams)
	var rows []looRow
	for _, g := range looGroups(pts) {
		var train, test []stepPoint
		var inFit, tod []float64
		for i, p := range pts {
			if g.in(p) {
				test = append(test, p)
				inFit = append(inFit, full[i])
				tod = append(tod, today[i])
			} else {
				train = append(train, p)
			}
		}
		fx, _ := fitRoofline(train, fixedOverheadParams, fixedForm)
		nw, _ := fitRoofline(train, looStart, physicalForm)
		fe, ne := rooflineErrs(test, fx), rooflineErrs(test, nw)
		rows = append(rows, looRow{group: g.name, n: len(test), fixedMax: maxAbs(fe), fixedMean: meanAbs(fe),
			newMax: maxAbs(ne), newMean: meanAbs(ne), inFitMax: maxAbs(inFit), todayMax: maxAbs(tod)})
	}
	return rows
}

// looBound is what a held-out group's worst error may reach. The 8B shape is reported but
// not held: it is 22 of the 30 points, and the 8 left (one-sequence 1B steps and
// TensorRT-LLM's large-batch 70B runs) cannot tell how many sequences attention needs to
// stream at full bandwidth, so the fit to them prices the 8B file's few-sequence,
// long-context decodes an order of magnitude too slow, whatever the overhead terms.
const looBound = 0.50

// TestRooflineLeaveOneOut holds out each shape, each batch size and each context length in
// turn, refits both forms (the fixed per-step overhead and the per-layer, per-sequence and
// per-step overheads) on the rest and prints each group's held-out error (the table in
// docs/simulator.md). It fails if the new form's worst held-out error in a group passes
// looBound, or its mean held-out error over the groups passes 20 %.
func TestRooflineLeaveOneOut(t *testing.T) {
	testtier.Accuracy(t, "the roofline refitted 50 times, each held-out group's error within its bound (about a minute)")
	pts := loadStepPoints(t)
	rows := leaveOneOut(pts)
	var b strings.Builder
	b.WriteString("\n| held out | points | before: 1.6 ms constants, max | fixed overhead refitted: max | mean | after: refitted, max | mean | after, fitted on all: max |\n|---|---|---|---|---|---|---|---|\n")
	var sum float64
	var n int
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", r.group, r.n, r.todayMax*100, r.fixedMax*100, r.fixedMean*100, r.newMax*100, r.newMean*100, r.inFitMax*100)
		if r.group == "shape llama-3.1-8b" {
			continue
		}
		sum += r.newMean
		n++
		if r.newMax > looBound {
			t.Errorf("held out %s: worst error %.1f%%, beyond %.0f%%", r.group, r.newMax*100, looBound*100)
		}
	}
	fmt.Fprintf(&b, "\nmean over the groups (but the 8B shape) of the new form's mean held-out error: %.1f%%\n", sum/float64(n)*100)
	t.Logf("%s", b.String())
	if sum/float64(n) > 0.20 {
		t.Errorf("mean held-out error %.1f%%, beyond 20%%", sum/float64(n)*100)
	}
}
