package sim

import (
	"errors"
	"fmt"
	"sort"
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
	// BytesPerParam is the weight and KV-cache element size; 0 means 2 (bf16).
	BytesPerParam float64
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
}

// Model presets: the published Hugging Face config.json shapes.
var modelPresets = map[string]ModelShape{
	"llama-3.1-8b":  {Name: "llama-3.1-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 128256},
	"llama-3.1-70b": {Name: "llama-3.1-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 128256},
	"llama-3.2-1b":  {Name: "llama-3.2-1b", Layers: 16, Hidden: 2048, Heads: 32, KVHeads: 8, HeadDim: 64, Intermediate: 8192, Vocab: 128256, TiedEmbeddings: true},
	"llama-3.2-3b":  {Name: "llama-3.2-3b", Layers: 28, Hidden: 3072, Heads: 24, KVHeads: 8, HeadDim: 128, Intermediate: 8192, Vocab: 128256, TiedEmbeddings: true},
	"llama-2-70b":   {Name: "llama-2-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 32000},
	"qwen2.5-7b":    {Name: "qwen2.5-7b", Layers: 28, Hidden: 3584, Heads: 28, KVHeads: 4, HeadDim: 128, Intermediate: 18944, Vocab: 152064},
	"mistral-7b":    {Name: "mistral-7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 32768},
}

// GPU presets: vendor datasheet figures (SXM parts; dense, not sparse, tensor FLOP/s).
var gpuPresets = map[string]GPU{
	"a100": {Name: "a100", TFLOPS: 312, BandwidthGBps: 2039, MemoryGB: 80, SMs: 108},
	"h100": {Name: "h100", TFLOPS: 989, BandwidthGBps: 3350, MemoryGB: 80, SMs: 132},
	"h200": {Name: "h200", TFLOPS: 989, BandwidthGBps: 4800, MemoryGB: 141, SMs: 132},
	"b200": {Name: "b200", TFLOPS: 2250, BandwidthGBps: 7700, MemoryGB: 180, SMs: 148},
	"l40s": {Name: "l40s", TFLOPS: 362, BandwidthGBps: 864, MemoryGB: 48, SMs: 142},
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

// KVBytesPerToken is the KV cache per token: K and V for every layer's KV heads.
func (m ModelShape) KVBytesPerToken() float64 {
	return 2 * float64(m.Layers*m.KVHeads*m.HeadDim) * m.bytesPerParam()
}

// Shape and GPU limits: far beyond any real model or accelerator, and small enough that
// parameter counts stay within int64 (at most about 4.3e17) and step times stay finite.
const (
	maxLayers    = 1_000
	maxHidden    = 1_000_000
	maxHeads     = 10_000     // heads, kv_heads, head_dim
	maxWidth     = 10_000_000 // intermediate, vocab
	maxGPUFigure = 1e6        // tflops, bandwidth_gbps, memory_gb
	maxSMs       = 1_000_000
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
			errs = append(errs, fmt.Errorf("%s.%s: must be an integer in 1..%d, got %d", prefix, f.name, f.max, f.v))
		}
	}
	if m.Heads > 0 && m.KVHeads > 0 && m.Heads%m.KVHeads != 0 {
		errs = append(errs, fmt.Errorf("%s.kv_heads: %d does not divide heads %d", prefix, m.KVHeads, m.Heads))
	}
	// 1 bit (0.125 bytes) to fp64 (8 bytes); 0 is the bf16 default.
	if m.BytesPerParam != 0 && !(m.BytesPerParam >= 0.125 && m.BytesPerParam <= 8) {
		errs = append(errs, fmt.Errorf("%s.bytes_per_param: must be in 0.125..8 (0 = 2, bf16), got %g", prefix, m.BytesPerParam))
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
			errs = append(errs, fmt.Errorf("%s.%s: must be a number in (0, %.0f], got %g", prefix, f.name, float64(maxGPUFigure), f.v))
		}
	}
	if g.SMs < 0 || g.SMs > maxSMs {
		errs = append(errs, fmt.Errorf("%s.sms: must be an integer in 0..%d (0 = no limit), got %d", prefix, maxSMs, g.SMs))
	}
	return errors.Join(errs...)
}
