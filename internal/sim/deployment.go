package sim

import (
	"errors"
	"fmt"
	"math/bits"
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
	// WeightDtype is DtypeBF16, DtypeFP8 or DtypeInt4; KVDtype DtypeBF16 or DtypeFP8. ""
	// keeps the model's bytes_per_param (2, bf16, unless the model says otherwise).
	WeightDtype, KVDtype string
	// MaxModelLen is the longest prompt plus max_tokens a request may ask for, as vLLM's
	// --max-model-len (longer ones get 400); 0 leaves the KV cache as the only bound.
	MaxModelLen int
	// TruncatePrompts says a prompt longer than MaxModelLen is cut to its last MaxModelLen
	// tokens and served, not refused, as Ollama does past its num_ctx.
	TruncatePrompts bool
}

// Routers: how a request is given to one of a deployment's replicas.
const (
	RouterRoundRobin       = "round-robin"       // in turn
	RouterLeastOutstanding = "least-outstanding" // fewest requests in flight, ties to the lowest index
	RouterPrefixAffinity   = "prefix-affinity"   // the replica that last served the prompt's first block, else least-outstanding
)

// Element types of weights and KV cache.
const (
	DtypeBF16 = "bf16"
	DtypeFP8  = "fp8"
	DtypeInt4 = "int4" // weights only
)

// dtypeBytes are the element sizes. int4's group scales (about 3 % more at group size 128)
// are not counted.
var dtypeBytes = map[string]float64{DtypeBF16: 2, DtypeFP8: 1, DtypeInt4: 0.5}

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
		parts = append(parts, fmt.Sprintf("%d replicas of tp %d = %d GPUs, router %s", n, tp, n*tp, d.router()))
	case tp > 1:
		parts = append(parts, fmt.Sprintf("tp %d", tp))
	}
	if d.WeightDtype != "" {
		parts = append(parts, d.WeightDtype+" weights")
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

func defaultDeployment() Deployment {
	return Deployment{Replicas: 1, TP: 1, Router: RouterLeastOutstanding}
}

// GPUs is the deployment's GPU count: tp × replicas.
func (p Profile) GPUs() int { return p.Deployment.tp() * p.Deployment.replicas() }

// ShardModel is the model as one GPU of a replica holds and computes it: the deployment's
// precisions applied (when given), split over its tp GPUs (ModelShape.Shard).
func (p Profile) ShardModel() ModelShape {
	m := p.Model
	if b, ok := dtypeBytes[p.Deployment.WeightDtype]; ok {
		// The KV cache keeps the model's element size unless kv_dtype changes it too.
		m.KVBytesPerElem = m.kvBytesPerElem()
		m.BytesPerParam = b
	}
	if b, ok := dtypeBytes[p.Deployment.KVDtype]; ok {
		m.KVBytesPerElem = b
	}
	return m.Shard(p.Deployment.tp())
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

func elemName(b float64) string {
	for _, name := range []string{DtypeBF16, DtypeFP8, DtypeInt4} {
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
	tp := p.Deployment.tp()
	msg := fmt.Sprintf("%s's %s weights at tp %d (%.1f GB per GPU) leave no room for a KV cache in %.0f%% of %s's %.0f GB",
		p.Model.Name, p.WeightDtype(), tp, w/1e9, p.Engine.GPUMemoryUtilization*100, p.GPU.Name, p.GPU.MemoryGB)
	var fixes []string
	for t := tp * 2; t <= maxTP && p.Model.Heads%t == 0; t *= 2 {
		q := p
		q.Deployment.TP = t
		if q.ShardModel().WeightBytes() < usable {
			fixes = append(fixes, fmt.Sprintf("tp %d", t))
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
	if d.Replicas < 0 || d.Replicas > maxReplicas {
		add("replicas", "must be in 1..%d, got %d", maxReplicas, d.Replicas)
	}
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
	switch d.router() {
	case RouterRoundRobin, RouterLeastOutstanding:
	case RouterPrefixAffinity:
		if !p.Engine.PrefixCaching {
			add("router", "prefix-affinity needs engine.prefix_caching: true (without a cache there is no prefix to be near)")
		}
	default:
		add("router", "%q is not one of %s, %s, %s", d.Router, RouterRoundRobin, RouterLeastOutstanding, RouterPrefixAffinity)
	}
	if _, ok := dtypeBytes[d.WeightDtype]; d.WeightDtype != "" && !ok {
		add("weight_dtype", "%q is not one of bf16, fp8, int4", d.WeightDtype)
	}
	if d.KVDtype != "" && d.KVDtype != DtypeBF16 && d.KVDtype != DtypeFP8 {
		add("kv_dtype", "%q is not one of bf16, fp8", d.KVDtype)
	}
	switch {
	case d.MaxModelLen < 0 || d.MaxModelLen > maxKVCacheTokens:
		add("max_model_len", "must be in 0..%d (0 = bounded by the KV cache only), got %d", maxKVCacheTokens, d.MaxModelLen)
	case d.MaxModelLen > p.Model.MaxContext && p.Model.MaxContext > 0:
		add("max_model_len", "%d exceeds %s's context of %d tokens", d.MaxModelLen, p.Model.Name, p.Model.MaxContext)
	}
	if d.TruncatePrompts && d.MaxModelLen == 0 {
		add("truncate_prompts", "needs max_model_len: the length prompts are truncated to")
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
	if n := p.Deployment.MaxModelLen; n > kv {
		return keyErrorf("deployment.max_model_len", "%d exceeds the KV cache of %d tokens per replica: lower it, or give the cache more room (gpu_memory_utilization, tp, kv_dtype fp8)", n, kv)
	}
	return nil
}

// tensorParallel wraps the cost model of one GPU's shard for a group of tp GPUs; with tp
// 1 it is the shard's model itself.
func (p Profile) tensorParallel(shard CostModel) CostModel {
	tp := p.Deployment.tp()
	if tp == 1 {
		return shard
	}
	return NewTensorParallel(shard, p.Model, p.GPU, tp)
}

// TensorParallel prices a step of a tensor-parallel group: every GPU runs its shard of the
// step at once (Shard prices one GPU's share), and then the partial results are summed,
// twice per layer — after attention's output projection and after the MLP — by a ring
// all-reduce of the step's activations over the GPUs' interconnect:
//
//	all-reduce = latency + 2(tp−1)/tp × tokens × hidden × 2 bytes / bandwidth
//
// It does not overlap communication with compute, as vLLM and TensorRT-LLM by default do not.
type TensorParallel struct {
	Shard CostModel
	TP    int

	perStep  float64 // ns of all-reduce latency per step: 2 × layers × latency
	perToken float64 // ns of all-reduce transfer per token in the step
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

// AllReduce is the communication time of a step computing tokens tokens.
func (t *TensorParallel) AllReduce(tokens int) time.Duration {
	if tokens <= 0 || t.TP <= 1 {
		return 0
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

// deployment reads the profile's top-level deployment mapping.
func (d *yamlDecoder) deployment(key string, v *yaml.Node, dep *Deployment) {
	d.mapping(v, key+".", map[string]func(string, *yaml.Node){
		"replicas":         d.atLeastOne(&dep.Replicas, maxReplicas),
		"tp":               d.atLeastOne(&dep.TP, maxTP),
		"router":           d.str(&dep.Router),
		"weight_dtype":     d.str(&dep.WeightDtype),
		"kv_dtype":         d.str(&dep.KVDtype),
		"max_model_len":    d.integer(&dep.MaxModelLen),
		"truncate_prompts": d.boolean(&dep.TruncatePrompts),
	})
}

// atLeastOne reads a count that a file must state: 0 would read as the default of 1 in a
// Deployment built in Go, so one replica fewer than 1 is refused here.
func (d *yamlDecoder) atLeastOne(dst *int, limit int) func(string, *yaml.Node) {
	return func(key string, v *yaml.Node) {
		x := *dst
		d.integer(&x)(key, v)
		if d.bad[key] {
			return
		}
		if x < 1 {
			d.errorf(v, key, "must be in 1..%d, got %d", limit, x)
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
