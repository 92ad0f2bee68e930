package sim

import (
	"errors"
	"fmt"
	"github.com/llmbench/llmbench/internal/route"
	"math/bits"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Deployment is how a profile's model is served: Replicas copies of the engine behind a
// router, each a tensor-parallel group of TP GPUs, with the weights and KV cache at the
// precisions given and an optional limit on a request's length. The zero value is one GPU
// in the model's own precision (model.bytes_per_param), routed least-outstanding.
type Deployment struct {
	Replicas int    // data-parallel engines behind the router; 0 = 1
	TP       int    // tensor-parallel GPUs per replica, a power of two; 0 = 1
	Router   string // RouterRoundRobin, RouterLeastOutstanding (""), RouterPrefixAffinity
	// WeightDtype is DtypeBF16, DtypeFP8, DtypeInt4, DtypeMXFP4 or DtypeNVFP4, every weight;
	// ExpertDtype the same for an MoE model's routed experts alone (after WeightDtype);
	// KVDtype DtypeBF16 or DtypeFP8. "" keeps the model's own (bytes_per_param, 2, bf16,
	// unless the model says otherwise; a preset's experts as its checkpoint ships them).
	WeightDtype, ExpertDtype, KVDtype string
	// DP is data-parallel attention (vLLM's --data-parallel-size with an MoE model): each
	// replica is DP groups of TP GPUs, each group attending to its own sequences with its
	// own copy of the attention and dense weights and its own KV cache, and the MoE blocks
	// spanning all TP × DP GPUs; 0 = 1. ExpertParallel places whole experts on those GPUs
	// (vLLM's --enable-expert-parallel), exchanging tokens all-to-all, instead of splitting
	// each expert's width (tensor parallelism over TP × DP).
	DP             int
	ExpertParallel bool
	// MaxModelLen is the longest prompt plus max_tokens a request may ask for, as vLLM's
	// --max-model-len (longer ones get 400); 0 leaves the KV cache as the only bound.
	MaxModelLen int
	// TruncatePrompts says a prompt longer than MaxModelLen is cut to its last MaxModelLen
	// tokens and served, not refused, as Ollama does past its num_ctx.
	TruncatePrompts bool
}

// Routers: how a request is given to one of a deployment's replicas.
// They are the route package's policies, the ones run --balance takes.
const (
	RouterRoundRobin       = route.RoundRobin
	RouterLeastOutstanding = route.LeastOutstanding
	RouterSession          = route.Session
	RouterPrefixAffinity   = route.PrefixAffinity
)

// Element types of weights and KV cache.
const (
	DtypeBF16 = "bf16"
	DtypeFP8  = "fp8"
	DtypeInt4 = "int4" // weights only
	// DtypeMXFP4 is OCP's microscaling FP4: 4-bit elements with an 8-bit scale per 32, 4.25
	// bits; DtypeNVFP4 NVIDIA's, an fp8 scale per 16, 4.5 bits (weights only).
	DtypeMXFP4 = "mxfp4"
	DtypeNVFP4 = "nvfp4"
)

const (
	mxfp4Bytes = 4.25 / 8
	nvfp4Bytes = 4.5 / 8
)

// dtypeBytes are the element sizes. int4's group scales (about 3 % more at group size 128)
// are not counted; the FP4 formats' are.
var dtypeBytes = map[string]float64{DtypeBF16: 2, DtypeFP8: 1, DtypeInt4: 0.5, DtypeMXFP4: mxfp4Bytes, DtypeNVFP4: nvfp4Bytes}

// weightDtypes are the weight precisions in the order messages list them.
var weightDtypes = []string{DtypeBF16, DtypeFP8, DtypeInt4, DtypeMXFP4, DtypeNVFP4}

// WeightDtypes lists the weight precisions a deployment may name.
func WeightDtypes() []string { return slices.Clone(weightDtypes) }

// Deployment limits: far beyond real fleets, small enough for a scan per request.
const (
	maxReplicas = 1_000
	maxTP       = 64
)

// activationBytes is the element size of the activations tensor parallelism all-reduces:
// bf16, whatever the weights' precision (fp8 and int4 kernels dequantise into bf16).
const activationBytes = 2

func (d Deployment) replicas() int { return max(d.Replicas, 1) }
func (d Deployment) tp() int       { return max(d.TP, 1) }
func (d Deployment) dp() int       { return max(d.DP, 1) }
func (d Deployment) router() string {
	if d.Router == "" {
		return RouterLeastOutstanding
	}
	return d.Router
}

// String describes the deployment in words ("2 replicas of tp 4 = 8 GPUs, router
// least-outstanding, fp8 weights"); "" for one GPU with the model's precisions and no limit.
func (d Deployment) String() string {
	var parts []string
	n, tp := d.replicas(), d.tp()
	switch {
	case n > 1:
		parts = append(parts, fmt.Sprintf("%d replicas of tp %d = %d GPUs, router %s", n, tp, n*tp*d.dp(), d.router()))
	case tp > 1:
		parts = append(parts, fmt.Sprintf("tp %d", tp))
	}
	if dp := d.dp(); dp > 1 {
		if n == 1 && tp == 1 {
			parts = append(parts, "tp 1")
		}
		parts = append(parts, fmt.Sprintf("dp %d (%d GPUs a replica)", dp, dp*tp))
	}
	if d.ExpertParallel {
		parts = append(parts, "expert parallel")
	}
	if d.WeightDtype != "" {
		parts = append(parts, d.WeightDtype+" weights")
	}
	if d.ExpertDtype != "" {
		parts = append(parts, d.ExpertDtype+" experts")
	}
	if d.KVDtype != "" {
		parts = append(parts, d.KVDtype+" KV cache")
	}
	if d.MaxModelLen > 0 {
		parts = append(parts, fmt.Sprintf("max_model_len %d", d.MaxModelLen))
		if d.TruncatePrompts {
			parts = append(parts, "longer prompts truncated")
		}
	}
	return strings.Join(parts, ", ")
}

// DescribeServing is how p serves its model in words, for the console: its deployment
// (Deployment.String) and its speculative decoding, if on; "" for one GPU in the model's
// precisions.
func (p Profile) DescribeServing() string {
	d := p.Deployment.String()
	if p.Speculative.On() {
		if d != "" {
			d += ", "
		}
		d += "speculative decoding " + p.Speculative.String()
	}
	return d
}

func defaultDeployment() Deployment {
	return Deployment{Replicas: 1, TP: 1, Router: RouterLeastOutstanding}
}

// GPUs is the deployment's GPU count: tp × dp × replicas.
func (p Profile) GPUs() int { return p.Deployment.tp() * p.Deployment.dp() * p.Deployment.replicas() }

// ShardModel is the model as one GPU of a replica holds and computes it: the deployment's
// precisions applied (when given), split over its tp GPUs (ModelShape.Shard) and its MoE
// blocks over all tp × dp (ShardExperts).
func (p Profile) ShardModel() ModelShape {
	m := p.PrecisionModel()
	tp, dp := p.Deployment.tp(), p.Deployment.dp()
	s := m.Shard(tp)
	if dp > 1 {
		e := m.ShardExperts(tp * dp)
		s.MoEIntermediate, s.SharedIntermediate = e.MoEIntermediate, e.SharedIntermediate
	}
	return s
}

// PrecisionModel is the model with the deployment's precisions applied, unsplit.
func (p Profile) PrecisionModel() ModelShape {
	m := p.Model
	if b, ok := dtypeBytes[p.Deployment.WeightDtype]; ok {
		// The KV cache keeps the model's element size unless kv_dtype changes it too.
		m.KVBytesPerElem = m.kvBytesPerElem()
		m.BytesPerParam = b
		m.ExpertBytesPerParam = 0
	}
	if b, ok := dtypeBytes[p.Deployment.ExpertDtype]; ok && m.MoE() {
		m.ExpertBytesPerParam = b
	}
	if b, ok := dtypeBytes[p.Deployment.KVDtype]; ok {
		m.KVBytesPerElem = b
	}
	return m
}

// WeightDtype is the weights' precision by name (bf16, fp8, int4), as the deployment or the
// model's bytes_per_param gives it; "N bytes per parameter" for a size without a name.
func (p Profile) WeightDtype() string {
	if p.Deployment.WeightDtype != "" {
		return p.Deployment.WeightDtype
	}
	return elemName(p.Model.bytesPerParam())
}

// KVDtype is the KV cache's precision by name, as ShardModel applies it: kv_dtype, else the
// model's element size (weight_dtype alone leaves the cache at bytes_per_param).
func (p Profile) KVDtype() string {
	if p.Deployment.KVDtype != "" {
		return p.Deployment.KVDtype
	}
	return elemName(p.Model.kvBytesPerElem())
}

// ExpertDtype is an MoE model's routed experts' precision by name, as PrecisionModel
// applies it; "" for a dense model.
func (p Profile) ExpertDtype() string {
	if !p.Model.MoE() {
		return ""
	}
	return elemName(p.PrecisionModel().expertBytesPerParam())
}

func elemName(b float64) string {
	for _, name := range weightDtypes {
		if dtypeBytes[name] == b {
			return name
		}
	}
	return fmt.Sprintf("%g bytes per parameter", b)
}

// fit checks that one GPU's share of the weights leaves room for a KV cache in the memory
// the engine may use, and returns that room in bytes. The message names what to change.
func (p Profile) fit() (free float64, err error) {
	usable := p.GPU.MemoryGB * 1e9 * p.Engine.GPUMemoryUtilization
	w := p.ShardModel().WeightBytes()
	if free = usable - w; free > 0 {
		return free, nil
	}
	tp, dp := p.Deployment.tp(), p.Deployment.dp()
	split := fmt.Sprintf("tp %d", tp)
	if dp > 1 {
		split += fmt.Sprintf(" × dp %d", dp)
	}
	what := p.WeightDtype()
	if e := p.ExpertDtype(); e != "" && e != what {
		what += " (" + e + " experts)"
	}
	what += " weights"
	if p.Model.MoE() {
		what += fmt.Sprintf(" (%.1f GB in all)", p.PrecisionModel().WeightBytes()/1e9)
	}
	msg := fmt.Sprintf("%s's %s at %s (%.1f GB per GPU) leave no room for a KV cache in %.0f%% of %s's %.1f GB",
		p.Model.Name, what, split, w/1e9, p.Engine.GPUMemoryUtilization*100, p.GPU.Name, p.GPU.MemoryGB)
	gpus := func(n int) string {
		if dp == 1 && !p.Model.MoE() {
			return ""
		}
		return fmt.Sprintf(" (%d GPUs a replica)", n)
	}
	var fixes []string
	for t := tp * 2; t*dp <= maxTP && p.Model.Heads%t == 0; t *= 2 {
		q := p
		q.Deployment.TP = t
		if q.ShardModel().WeightBytes() < usable {
			fixes = append(fixes, fmt.Sprintf("tp %d%s", t, gpus(t*dp)))
			break
		}
	}
	for d := dp * 2; p.Model.MoE() && d*tp <= maxTP; d *= 2 {
		q := p
		q.Deployment.DP = d
		if q.ShardModel().WeightBytes() < usable {
			fixes = append(fixes, fmt.Sprintf("dp %d%s", d, gpus(d*tp)))
			break
		}
	}
	for _, dt := range []string{DtypeFP8, DtypeInt4} {
		q := p
		q.Deployment.WeightDtype = dt
		if dtypeBytes[dt] < p.Model.bytesPerParam() && q.ShardModel().WeightBytes() < usable {
			fixes = append(fixes, "weight_dtype "+dt)
			break
		}
	}
	if len(fixes) > 0 {
		msg += ": use " + strings.Join(fixes, ", or ")
	} else {
		msg += ": use a GPU with more memory"
	}
	return 0, &keyError{Key: "deployment.tp", Err: errors.New(msg)}
}

// deploymentErrors reports every problem with the deployment, each naming its key.
func (p Profile) deploymentErrors() []error {
	var errs []error
	add := func(key, format string, a ...any) {
		errs = append(errs, keyErrorf("deployment."+key, format, a...))
	}
	d := p.Deployment
	p.checkKeys(&errs, "deployment.replicas")
	tp := d.tp()
	switch {
	case d.TP < 0 || d.TP > maxTP || bits.OnesCount(uint(tp)) != 1:
		add("tp", "must be a power of two in 1..%d, got %d", maxTP, d.TP)
	case tp > 1 && p.Cost.Kind != CostRoofline:
		add("tp", "%d needs cost kind roofline: a %s model describes one measured server, not how it splits over GPUs (measure the tensor-parallel server itself and keep tp 1)", tp, p.Cost.Kind)
	case tp > 1 && p.Model.Heads > 0 && p.Model.Heads%tp != 0:
		add("tp", "%d does not divide %s's %d attention heads", tp, p.Model.Name, p.Model.Heads)
	case tp > 1 && p.Model.KVHeads > 0 && p.Model.KVHeads%tp != 0 && tp%p.Model.KVHeads != 0:
		add("tp", "%d neither divides %s's %d KV heads nor is a multiple of them (to replicate each)", tp, p.Model.Name, p.Model.KVHeads)
	case tp > 1 && !(p.GPU.InterconnectGBps > 0):
		add("tp", "%d needs the GPU's interconnect bandwidth and latency, which %s has none of: use a GPU preset (%s)", tp, p.GPU.Name, strings.Join(GPUPresets(), ", "))
	}
	errs = append(errs, p.parallelErrors()...)
	switch d.router() {
	case RouterRoundRobin, RouterLeastOutstanding, RouterSession:
	case RouterPrefixAffinity:
		if !p.Engine.PrefixCaching {
			add("router", "prefix-affinity needs engine.prefix_caching: true (without a cache there is no prefix to be near)")
		}
	default:
		add("router", "%v", route.Check(d.Router, route.Policies...))
	}
	if _, ok := dtypeBytes[d.WeightDtype]; d.WeightDtype != "" && !ok {
		add("weight_dtype", "%q is not one of %s", d.WeightDtype, strings.Join(weightDtypes, ", "))
	}
	if _, ok := dtypeBytes[d.ExpertDtype]; d.ExpertDtype != "" && !ok {
		add("expert_dtype", "%q is not one of %s", d.ExpertDtype, strings.Join(weightDtypes, ", "))
	} else if d.ExpertDtype != "" && !p.Model.MoE() {
		add("expert_dtype", "applies to a mixture of experts, and %s is dense (use weight_dtype)", p.Model.Name)
	}
	if d.KVDtype != "" && d.KVDtype != DtypeBF16 && d.KVDtype != DtypeFP8 {
		add("kv_dtype", "%q is not one of bf16, fp8", d.KVDtype)
	}
	if p.checkKeys(&errs, KeyDeploymentMaxModelLen) && d.MaxModelLen > p.Model.MaxContext && p.Model.MaxContext > 0 {
		add("max_model_len", "%d exceeds %s's context of %d tokens", d.MaxModelLen, p.Model.Name, p.Model.MaxContext)
	}
	if d.TruncatePrompts && d.MaxModelLen == 0 {
		add("truncate_prompts", "needs max_model_len: the length prompts are truncated to")
	}
	return errs
}

// parallelErrors are the problems with dp and expert_parallel.
func (p Profile) parallelErrors() []error {
	var errs []error
	add := func(key, format string, a ...any) {
		errs = append(errs, keyErrorf("deployment."+key, format, a...))
	}
	d, m := p.Deployment, p.Model
	tp, dp := d.tp(), d.dp()
	switch {
	case !p.checkKeys(&errs, "deployment.dp"): // reported
	case dp > 1 && p.Cost.Kind != CostRoofline:
		add("dp", "%d needs cost kind roofline (a %s model describes one measured server)", dp, p.Cost.Kind)
	case dp > 1 && !m.MoE():
		add("dp", "%d: data-parallel attention applies to a mixture of experts, whose MoE blocks span the dp groups; %s is dense, so its dp groups would be independent replicas (use replicas)", dp, m.Name)
	case dp > 1 && tp*dp > maxTP:
		add("dp", "tp %d × dp %d = %d GPUs a replica, beyond %d", tp, dp, tp*dp, maxTP)
	case dp > 1 && !(p.GPU.InterconnectGBps > 0):
		add("dp", "%d needs the GPU's interconnect bandwidth and latency, which %s has none of: use a GPU preset", dp, p.GPU.Name)
	}
	if d.ExpertParallel {
		switch n := tp * dp; {
		case !m.MoE():
			add("expert_parallel", "applies to a mixture of experts, and %s is dense", m.Name)
		case n == 1:
			add("expert_parallel", "needs tp × dp > 1 GPUs a replica to place the experts on (set tp or dp)")
		case m.Experts%n != 0:
			add("expert_parallel", "%s's %d experts do not divide over tp %d × dp %d = %d GPUs", m.Name, m.Experts, tp, dp, n)
		}
	}
	return errs
}

// checkFleet is what the deployment asks of a replica of kv tokens of cache: the roofline's
// weights fit each GPU even when kv_cache_tokens is given (a model that does not fit is
// never priced), and max_model_len fits the cache, as vLLM refuses to start when one
// sequence of max_model_len could not be cached.
func (p Profile) checkFleet(kv int) error {
	if p.Cost.Kind == CostRoofline && p.Engine.KVCacheTokens > 0 {
		if _, err := p.fit(); err != nil {
			return err
		}
	}
	// With dp, a sequence's cache lies in one dp group's share.
	if n, dp := p.Deployment.MaxModelLen, p.Deployment.dp(); n > kv/dp {
		return keyErrorf("deployment.max_model_len", "%d exceeds the KV cache of %d tokens per replica: lower it, or give the cache more room (gpu_memory_utilization, tp, kv_dtype fp8)", n, kv/dp)
	}
	return nil
}

// tensorParallel wraps the cost model of one GPU's shard for a replica of tp × dp GPUs;
// with one GPU it is the shard's model itself.
func (p Profile) tensorParallel(shard CostModel) CostModel {
	d := p.Deployment
	if d.tp() == 1 && d.dp() == 1 {
		return shard
	}
	t := NewTensorParallel(shard, p.Model, p.GPU, d.tp())
	t.setMoE(p.Model, p.GPU, d.dp(), d.ExpertParallel)
	return t
}

// TensorParallel prices a step of a tensor-parallel group: every GPU runs its shard of the
// step at once (Shard prices one GPU's share), and then the partial results are summed,
// twice per layer — after attention's output projection and after the MLP — by a ring
// all-reduce of the step's activations over the GPUs' interconnect:
//
//	all-reduce = latency + 2(tp−1)/tp × tokens × hidden × 2 bytes / bandwidth
//
// It does not overlap communication with compute, as vLLM and TensorRT-LLM by default do not.
//
// An MoE model's MoE blocks span all TP × DP GPUs of the replica (setMoE): each dp group
// all-reduces its own tokens after attention (and after a dense layer's MLP) within its tp
// GPUs, and the MoE block either all-reduces every token of the step over all TP × DP
// (its experts split in width), or, with expert parallelism, sends each token to its k
// experts and back, all-to-all: from each GPU its 1/(TP × DP) share of the step's tokens,
// k × hidden × 2 bytes each, (n−1)/n of them to other GPUs, twice, each with one latency.
type TensorParallel struct {
	Shard CostModel
	TP    int

	perStep  float64 // ns of all-reduce latency per step: 2 × layers × latency
	perToken float64 // ns of all-reduce transfer per token in the step

	// MoE: dp groups, the latency and per-token costs of the attention (and dense MLP)
	// all-reduces within a tp group per token of a dp group, and of the MoE blocks' exchange
	// per token of the step. moe false: the dense formula above.
	moe                 bool
	dp                  float64
	groupStep, groupTok float64
	moeStep, moeTok     float64
}

// NewTensorParallel prices m split over tp GPUs of g, whose shard's own cost is shard.
func NewTensorParallel(shard CostModel, m ModelShape, g GPU, tp int) *TensorParallel {
	t := &TensorParallel{Shard: shard, TP: tp}
	if tp > 1 {
		n := 2 * float64(m.Layers)
		t.perStep = n * float64(g.InterconnectLatency)
		ring := 2 * float64(tp-1) / float64(tp)
		t.perToken = n * ring * float64(m.Hidden) * activationBytes / (g.InterconnectGBps * 1e9) * 1e9
	}
	return t
}

// setMoE prices an MoE model's exchanges over dp groups of the tp GPUs (see TensorParallel).
func (t *TensorParallel) setMoE(m ModelShape, g GPU, dp int, expertParallel bool) {
	if !m.MoE() {
		return
	}
	t.moe, t.dp = true, float64(dp)
	lat, bw := float64(g.InterconnectLatency), g.InterconnectGBps*1e9/1e9 // bytes per ns
	tokBytes := float64(m.Hidden) * activationBytes
	ring := func(n int) float64 { return 2 * float64(n-1) / float64(n) }
	moe := float64(m.moeLayers())
	if t.TP > 1 {
		reduces := 2*float64(m.Layers) - moe // after every attention and every dense MLP
		t.groupStep = reduces * lat
		t.groupTok = reduces * ring(t.TP) * tokBytes / bw
	}
	n := t.TP * dp
	switch {
	case n == 1:
	case expertParallel:
		t.moeStep = 2 * moe * lat
		t.moeTok = 2 * moe * float64(m.ExpertsPerToken) * tokBytes * float64(n-1) / float64(n) / float64(n) / bw
	default:
		t.moeStep = moe * lat
		t.moeTok = moe * ring(n) * tokBytes / bw
	}
}

// AllReduce is the communication time of a step computing tokens tokens.
func (t *TensorParallel) AllReduce(tokens int) time.Duration {
	if tokens <= 0 || t.TP <= 1 && !t.moe {
		return 0
	}
	if t.moe {
		n := float64(tokens)
		return nanos(t.groupStep + t.groupTok*n/t.dp + t.moeStep + t.moeTok*n)
	}
	return nanos(t.perStep + t.perToken*float64(tokens))
}

// Step implements CostModel.
func (t *TensorParallel) Step(w StepWork) time.Duration {
	d := t.Shard.Step(w)
	if d == 0 {
		return 0
	}
	return nanos(float64(d) + float64(t.AllReduce(w.DecodeSeqs+w.PrefillTokens)))
}

// Prefill implements CostModel.
func (t *TensorParallel) Prefill(n int) time.Duration {
	d := t.Shard.Prefill(n)
	if d == 0 {
		return 0
	}
	return nanos(float64(d) + float64(t.AllReduce(n)))
}

// atLeastOne reads a count that a file must state: 0 would read as the default of 1 in a
// Deployment built in Go, so one replica fewer than 1 is refused here.
func (d *yamlDecoder) atLeastOne(dst *int, must string) func(string, *yaml.Node) {
	return func(key string, v *yaml.Node) {
		x := *dst
		d.integer(&x)(key, v)
		if d.bad[key] {
			return
		}
		if x < 1 {
			d.errorf(v, key, "%s, got %d", must, x)
			return
		}
		*dst = x
	}
}

// duplicateKeys reports every mapping key given twice, anywhere in the document: YAML
// forbids it, yaml.v3 keeps the last silently when decoding into a node, and a fleet edited
// by hand (replicas: 3 above, replicas: 4 below) must not be read as either.
func (d *yamlDecoder) duplicateKeys(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for i, c := range n.Content {
			p := path
			if n.Kind == yaml.SequenceNode {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			d.duplicateKeys(c, p)
		}
	case yaml.MappingNode:
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			key := k.Value
			if path != "" {
				key = path + "." + k.Value
			}
			if line, ok := first[k.Value]; ok {
				d.errorf(k, key, "appears twice (first on line %d): keep one", line)
			} else {
				first[k.Value] = k.Line
			}
			d.duplicateKeys(n.Content[i+1], key)
		}
	}
}
