package sim

import (
	"errors"
	"sort"
	"time"
)

// ModelShape is a decoder-only transformer's shape: enough to count its parameters, the
// FLOPs of a forward pass and the bytes of its KV cache.
type ModelShape struct {
	Name         string
	Layers       int
	Hidden       int
	Heads        int
	KVHeads      int
	HeadDim      int
	Intermediate int // MLP width (gated MLP: gate, up and down projections)
	Vocab        int
	// TiedEmbeddings: the output projection reuses the embedding matrix (Llama 3.2 1B, 3B).
	TiedEmbeddings bool
	// BytesPerParam is the weight and KV-cache element size; 0 means 2 (bf16). A
	// deployment's weight_dtype and kv_dtype, when given, decide instead.
	BytesPerParam float64
	// KVBytesPerElem is the KV-cache element size when it differs from the weights' (a
	// deployment's kv_dtype); 0 means BytesPerParam.
	KVBytesPerElem float64
	// MaxContext is the longest sequence the model was trained for (config.json's
	// max_position_embeddings); 0 is unknown. A deployment's max_model_len may not exceed it.
	MaxContext int
}

// GPU is one accelerator: published dense bf16 tensor throughput, memory bandwidth and size.
type GPU struct {
	Name          string
	TFLOPS        float64 // dense bf16 tensor TFLOP/s
	BandwidthGBps float64 // HBM bandwidth, GB/s
	MemoryGB      float64 // memory, GB (10^9 bytes)
	// SMs is the number of streaming multiprocessors: attention of few sequences cannot
	// spread its KV reads over all of them. 0 disables that limit.
	SMs int
	// USDPerHour is what the GPU costs an hour (gpu.usd_per_hour); 0 takes the preset's
	// list price (price.go), and a GPU of its own figures then has none.
	USDPerHour float64
	// InterconnectGBps is the GPU-to-GPU bandwidth in each direction (NVLink, or PCIe where
	// there is none), GB/s; InterconnectLatency is the time of an all-reduce too small for
	// bandwidth to matter. Tensor parallelism pays them; 0 leaves the GPU without a
	// tensor-parallel figure.
	InterconnectGBps    float64
	InterconnectLatency time.Duration
}

// Model presets: the published Hugging Face config.json shapes.
var modelPresets = map[string]ModelShape{
	"llama-3.1-8b":  {Name: "llama-3.1-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 128256, MaxContext: 131072},
	"llama-3.1-70b": {Name: "llama-3.1-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 128256, MaxContext: 131072},
	"llama-3.2-1b":  {Name: "llama-3.2-1b", Layers: 16, Hidden: 2048, Heads: 32, KVHeads: 8, HeadDim: 64, Intermediate: 8192, Vocab: 128256, TiedEmbeddings: true, MaxContext: 131072},
	"llama-3.2-3b":  {Name: "llama-3.2-3b", Layers: 28, Hidden: 3072, Heads: 24, KVHeads: 8, HeadDim: 128, Intermediate: 8192, Vocab: 128256, TiedEmbeddings: true, MaxContext: 131072},
	"llama-2-70b":   {Name: "llama-2-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 32000, MaxContext: 4096},
	"qwen2.5-7b":    {Name: "qwen2.5-7b", Layers: 28, Hidden: 3584, Heads: 28, KVHeads: 4, HeadDim: 128, Intermediate: 18944, Vocab: 152064, MaxContext: 32768},
	"mistral-7b":    {Name: "mistral-7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 32768, MaxContext: 32768},
}

// GPU presets: vendor datasheet figures (SXM parts; dense, not sparse, tensor FLOP/s). The
// interconnect is half the datasheet's bidirectional figure — NVLink 3/4/4/5 at 600, 900,
// 900 and 1,800 GB/s; the L40S has no NVLink, so PCIe Gen4 x16 at 64 GB/s — and the
// all-reduce latency is measured: vLLM's custom all-reduce of 512 B to 32 KB on H100s took
// 8.7–11.8 µs at TP 2, 4 and 8 (sgl-project/sglang#2904); NCCL's 8-byte all-reduce over
// PCIe on 8 RTX 4090s (the L40S's chip and bus) 42 µs (NVIDIA/nccl#1530).
var gpuPresets = map[string]GPU{
	"a100": {Name: "a100", TFLOPS: 312, BandwidthGBps: 2039, MemoryGB: 80, SMs: 108, InterconnectGBps: 300, InterconnectLatency: nvlinkLatency},
	"h100": {Name: "h100", TFLOPS: 989, BandwidthGBps: 3350, MemoryGB: 80, SMs: 132, InterconnectGBps: 450, InterconnectLatency: nvlinkLatency},
	"h200": {Name: "h200", TFLOPS: 989, BandwidthGBps: 4800, MemoryGB: 141, SMs: 132, InterconnectGBps: 450, InterconnectLatency: nvlinkLatency},
	"b200": {Name: "b200", TFLOPS: 2250, BandwidthGBps: 7700, MemoryGB: 180, SMs: 148, InterconnectGBps: 900, InterconnectLatency: nvlinkLatency},
	"l40s": {Name: "l40s", TFLOPS: 362, BandwidthGBps: 864, MemoryGB: 48, SMs: 142, InterconnectGBps: 32, InterconnectLatency: pcieLatency},
}

const (
	nvlinkLatency = 10 * time.Microsecond
	pcieLatency   = 40 * time.Microsecond
)

// samePart says whether g and o are the same part by its datasheet figures (what the
// roofline reads), whatever their prices and interconnects.
func (g GPU) samePart(o GPU) bool {
	return g.Name == o.Name && g.TFLOPS == o.TFLOPS && g.BandwidthGBps == o.BandwidthGBps && g.MemoryGB == o.MemoryGB && g.SMs == o.SMs
}

// ModelPreset returns a built-in model shape by name.
func ModelPreset(name string) (ModelShape, bool) { m, ok := modelPresets[name]; return m, ok }

// GPUPreset returns a built-in GPU by name.
func GPUPreset(name string) (GPU, bool) { g, ok := gpuPresets[name]; return g, ok }

// ModelPresets lists the built-in model names, sorted.
func ModelPresets() []string { return sortedKeys(modelPresets) }

// GPUPresets lists the built-in GPU names, sorted.
func GPUPresets() []string { return sortedKeys(gpuPresets) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (m ModelShape) bytesPerParam() float64 {
	if m.BytesPerParam > 0 {
		return m.BytesPerParam
	}
	return 2
}

// layerParams is the parameter count of one decoder layer: attention projections, gated
// MLP and two norms.
func (m ModelShape) layerParams() int64 {
	h := int64(m.Hidden)
	q := h * int64(m.Heads*m.HeadDim)
	kv := 2 * h * int64(m.KVHeads*m.HeadDim)
	o := int64(m.Heads*m.HeadDim) * h
	mlp := 3 * h * int64(m.Intermediate)
	return q + kv + o + mlp + 2*h
}

// Params is the total parameter count (embeddings included).
func (m ModelShape) Params() int64 {
	emb := int64(m.Vocab) * int64(m.Hidden)
	n := int64(m.Layers)*m.layerParams() + emb + int64(m.Hidden) // + final norm
	if !m.TiedEmbeddings {
		n += emb
	}
	return n
}

// MatmulParams is the parameters multiplied per token: every layer and the output
// projection, not the embedding lookup (a gather, not a matmul).
func (m ModelShape) MatmulParams() int64 {
	return int64(m.Layers)*m.layerParams() + int64(m.Vocab)*int64(m.Hidden)
}

// WeightBytes is the size of the weights in memory.
func (m ModelShape) WeightBytes() float64 { return float64(m.Params()) * m.bytesPerParam() }

func (m ModelShape) kvBytesPerElem() float64 {
	if m.KVBytesPerElem > 0 {
		return m.KVBytesPerElem
	}
	return m.bytesPerParam()
}

// KVBytesPerToken is the KV cache per token: K and V for every layer's KV heads.
func (m ModelShape) KVBytesPerToken() float64 {
	return 2 * float64(m.Layers*m.KVHeads*m.HeadDim) * m.kvBytesPerElem()
}

// Shard is the part of m that one GPU of a tensor-parallel group of tp holds and computes,
// as Megatron-style serving engines (vLLM, TensorRT-LLM) split it: each GPU has heads/tp
// query heads, kv_heads/tp KV heads (one replicated head when kv_heads < tp), an
// intermediate/tp slice of the MLP and a vocab/tp slice of the embeddings and output
// projection (rounded up: engines pad the vocabulary). The norms are replicated. The
// caller checks that tp divides heads; Shard(1) is m.
func (m ModelShape) Shard(tp int) ModelShape {
	if tp <= 1 {
		return m
	}
	s := m
	s.Heads = m.Heads / tp
	s.KVHeads = max(1, m.KVHeads/tp)
	s.Intermediate = ceilDiv(m.Intermediate, tp)
	s.Vocab = ceilDiv(m.Vocab, tp)
	return s
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Shape and GPU limits: far beyond any real model or accelerator, and small enough that
// parameter counts stay within int64 (at most about 4.3e17) and step times stay finite.
const (
	maxLayers    = 1_000
	maxHidden    = 1_000_000
	maxHeads     = 10_000     // heads, kv_heads, head_dim
	maxWidth     = 10_000_000 // intermediate, vocab
	maxGPUFigure = 1e6        // tflops, bandwidth_gbps, memory_gb
	maxSMs       = 1_000_000
	// maxUSDPerHour bounds gpu.usd_per_hour: a hundred times any GPU's list price.
	maxUSDPerHour = 10_000
)

// validate reports every problem with the shape at once; prefix names the YAML key.
func (m ModelShape) validate(prefix string) error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{{"layers", m.Layers, maxLayers}, {"hidden", m.Hidden, maxHidden}, {"heads", m.Heads, maxHeads}, {"kv_heads", m.KVHeads, maxHeads},
		{"head_dim", m.HeadDim, maxHeads}, {"intermediate", m.Intermediate, maxWidth}, {"vocab", m.Vocab, maxWidth}} {
		if f.v <= 0 || f.v > f.max {
			errs = append(errs, keyErrorf(prefix+"."+f.name, "must be an integer in 1..%d, got %d", f.max, f.v))
		}
	}
	if m.Heads > 0 && m.KVHeads > 0 && m.Heads%m.KVHeads != 0 {
		errs = append(errs, keyErrorf(prefix+".kv_heads", "%d does not divide heads %d", m.KVHeads, m.Heads))
	}
	// 1 bit (0.125 bytes) to fp64 (8 bytes); 0 is the bf16 default.
	if m.BytesPerParam != 0 && !(m.BytesPerParam >= 0.125 && m.BytesPerParam <= 8) {
		errs = append(errs, keyErrorf(prefix+".bytes_per_param", "must be in 0.125..8 (0 = 2, bf16), got %g", m.BytesPerParam))
	}
	return errors.Join(errs...)
}

func (g GPU) validate(prefix string) error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{{"tflops", g.TFLOPS}, {"bandwidth_gbps", g.BandwidthGBps}, {"memory_gb", g.MemoryGB}} {
		if !(f.v > 0 && f.v <= maxGPUFigure) {
			errs = append(errs, keyErrorf(prefix+"."+f.name, "must be a number in (0, %.0f], got %g", float64(maxGPUFigure), f.v))
		}
	}
	if g.SMs < 0 || g.SMs > maxSMs {
		errs = append(errs, keyErrorf(prefix+".sms", "must be an integer in 0..%d (0 = no limit), got %d", maxSMs, g.SMs))
	}
	if !(g.USDPerHour >= 0 && g.USDPerHour <= maxUSDPerHour) {
		errs = append(errs, keyErrorf(prefix+".usd_per_hour", "must be a number in [0, %.0f] (0 = the preset's list price), got %g", float64(maxUSDPerHour), g.USDPerHour))
	}
	// Set in code only (presets, or a profile's GPU built in Go): 0 is "unknown".
	if !(g.InterconnectGBps >= 0 && g.InterconnectGBps <= maxGPUFigure) {
		errs = append(errs, keyErrorf(prefix, "interconnect bandwidth must be in [0, %.0f] GB/s, got %g", float64(maxGPUFigure), g.InterconnectGBps))
	}
	if g.InterconnectLatency < 0 || g.InterconnectLatency > time.Second {
		errs = append(errs, keyErrorf(prefix, "interconnect latency must be in [0, 1s], got %v", g.InterconnectLatency))
	}
	return errors.Join(errs...)
}
