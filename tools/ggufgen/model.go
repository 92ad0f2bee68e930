package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Config describes the random Llama model.
type Config struct {
	Layers  int
	Embd    int // hidden size
	Heads   int
	KVHeads int
	FF      int // feed-forward size
	Context int
	Seed    uint64
	F16     bool // store the matrices as f16 (norms stay f32, as llama.cpp expects)
}

func (c Config) Validate() error {
	var errs []error
	pos := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be > 0, got %d", name, v))
		}
	}
	pos("layers", c.Layers)
	pos("embd", c.Embd)
	pos("heads", c.Heads)
	pos("kv-heads", c.KVHeads)
	pos("ff", c.FF)
	pos("ctx", c.Context)
	if c.Heads > 0 && c.Embd%c.Heads != 0 {
		errs = append(errs, fmt.Errorf("embd %d is not a multiple of heads %d", c.Embd, c.Heads))
	}
	if c.Heads > 0 && c.KVHeads > 0 && c.Heads%c.KVHeads != 0 {
		errs = append(errs, fmt.Errorf("heads %d is not a multiple of kv-heads %d", c.Heads, c.KVHeads))
	}
	if c.Heads > 0 && c.Embd%c.Heads == 0 && (c.Embd/c.Heads)%2 != 0 {
		errs = append(errs, fmt.Errorf("head size %d must be even for RoPE", c.Embd/c.Heads))
	}
	if c.Embd > 0 && c.Embd < 2 {
		errs = append(errs, errors.New("embd must be at least 2 (one dimension is the constant carrier)"))
	}
	return errors.Join(errs...)
}

// The suppression mechanism. Hidden dimension carrier holds the constant carrierValue in
// every token embedding, and no layer writes to it (row carrier of attn_output and
// ffn_down is zero), so it reaches the final norm unchanged and, being the largest
// component of the residual stream, stays large after normalisation. Output rows of
// suppressed tokens are zero except suppressWeight on that dimension, giving them a logit
// of about suppressWeight × sqrt(embd) × (share of the norm): hundreds below the others.
const (
	carrier        = 0
	carrierValue   = 1.0
	embdStd        = 0.1  // other embedding dimensions: the carrier stays dominant
	layerStd       = 0.02 // layer matrices: small updates to the residual stream
	outputStd      = 0.5  // normal output rows: logits with a std of a few units, so sampling varies
	suppressWeight = -100.0
)

// Build returns the metadata and tensors of a random Llama model over vocabulary v.
func Build(c Config, v *Vocab) ([]KV, []Tensor) {
	rng := rand.New(rand.NewPCG(c.Seed, 0x6767756667656e)) // "ggufgen"
	nv, ne := len(v.Tokens), c.Embd
	headDim := ne / c.Heads
	kvDim := headDim * c.KVHeads
	mat := uint32(ggmlF32)
	fileType := uint32(0) // LLAMA_FTYPE_ALL_F32
	if c.F16 {
		mat, fileType = ggmlF16, 1 // LLAMA_FTYPE_MOSTLY_F16
	}
	randn := func(n int, std float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64() * std)
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	// zeroRow clears output row r of a matrix with `in` columns.
	zeroRow := func(m []float32, in, r int) {
		clear(m[r*in : (r+1)*in])
	}

	var ts []Tensor
	emb := randn(nv*ne, embdStd)
	for t := 0; t < nv; t++ {
		emb[t*ne+carrier] = carrierValue
	}
	ts = append(ts, Tensor{Name: "token_embd.weight", Shape: []uint64{uint64(ne), uint64(nv)}, Type: mat, Data: emb})
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		wo := randn(ne*ne, layerStd)
		zeroRow(wo, ne, carrier)
		down := randn(c.FF*ne, layerStd)
		zeroRow(down, c.FF, carrier)
		ts = append(ts,
			Tensor{Name: p + "attn_norm.weight", Shape: []uint64{uint64(ne)}, Type: ggmlF32, Data: ones(ne)},
			Tensor{Name: p + "attn_q.weight", Shape: []uint64{uint64(ne), uint64(ne)}, Type: mat, Data: randn(ne*ne, layerStd)},
			Tensor{Name: p + "attn_k.weight", Shape: []uint64{uint64(ne), uint64(kvDim)}, Type: mat, Data: randn(ne*kvDim, layerStd)},
			Tensor{Name: p + "attn_v.weight", Shape: []uint64{uint64(ne), uint64(kvDim)}, Type: mat, Data: randn(ne*kvDim, layerStd)},
			Tensor{Name: p + "attn_output.weight", Shape: []uint64{uint64(ne), uint64(ne)}, Type: mat, Data: wo},
			Tensor{Name: p + "ffn_norm.weight", Shape: []uint64{uint64(ne)}, Type: ggmlF32, Data: ones(ne)},
			Tensor{Name: p + "ffn_gate.weight", Shape: []uint64{uint64(ne), uint64(c.FF)}, Type: mat, Data: randn(ne*c.FF, layerStd)},
			Tensor{Name: p + "ffn_up.weight", Shape: []uint64{uint64(ne), uint64(c.FF)}, Type: mat, Data: randn(ne*c.FF, layerStd)},
			Tensor{Name: p + "ffn_down.weight", Shape: []uint64{uint64(c.FF), uint64(ne)}, Type: mat, Data: down},
		)
	}
	out := randn(nv*ne, outputStd)
	for t := 0; t < nv; t++ {
		row := out[t*ne : (t+1)*ne]
		if v.Suppressed(t) {
			clear(row)
			row[carrier] = suppressWeight
		} else {
			row[carrier] = 0
		}
	}
	ts = append(ts,
		Tensor{Name: "output_norm.weight", Shape: []uint64{uint64(ne)}, Type: ggmlF32, Data: ones(ne)},
		Tensor{Name: "output.weight", Shape: []uint64{uint64(ne), uint64(nv)}, Type: mat, Data: out},
	)

	kvs := []KV{
		{"general.architecture", "llama"},
		{"general.type", "model"},
		{"general.name", "llmbench-tiny"},
		{"general.file_type", fileType},
		{"llama.context_length", uint32(c.Context)},
		{"llama.embedding_length", uint32(ne)},
		{"llama.block_count", uint32(c.Layers)},
		{"llama.feed_forward_length", uint32(c.FF)},
		{"llama.attention.head_count", uint32(c.Heads)},
		{"llama.attention.head_count_kv", uint32(c.KVHeads)},
		{"llama.rope.dimension_count", uint32(headDim)},
		{"llama.rope.freq_base", float32(500000)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.vocab_size", uint32(nv)},
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "llama-bpe"},
		{"tokenizer.ggml.tokens", v.Tokens},
		{"tokenizer.ggml.token_type", v.Types},
		{"tokenizer.ggml.merges", v.Merges},
		{"tokenizer.ggml.bos_token_id", uint32(v.BOS)},
		{"tokenizer.ggml.eos_token_id", uint32(v.EOS)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.chat_template", llama3Template},
	}
	return kvs, ts
}

// forward computes the logits of a one-token sequence in float64, the way llama.cpp's
// llama graph does (with one position attention returns V, so RoPE drops out). Tests use
// it to check that suppressed tokens can never win; values are read back as stored (f16
// rounding included) by passing the decoded tensors.
func forward(c Config, tensors map[string][]float32, tok int) []float64 {
	ne := c.Embd
	headDim := ne / c.Heads
	kvDim := headDim * c.KVHeads
	group := c.Heads / c.KVHeads
	emb := tensors["token_embd.weight"]
	x := make([]float64, ne)
	for i := range x {
		x[i] = float64(emb[tok*ne+i])
	}
	rms := func(v []float64, g []float32) []float64 {
		s := 0.0
		for _, a := range v {
			s += a * a
		}
		k := 1 / math.Sqrt(s/float64(len(v))+1e-5)
		out := make([]float64, len(v))
		for i, a := range v {
			out[i] = a * k * float64(g[i])
		}
		return out
	}
	matvec := func(m []float32, in, outN int, v []float64) []float64 {
		out := make([]float64, outN)
		for r := range out {
			s := 0.0
			for i := 0; i < in; i++ {
				s += float64(m[r*in+i]) * v[i]
			}
			out[r] = s
		}
		return out
	}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		h := rms(x, tensors[p+"attn_norm.weight"])
		val := matvec(tensors[p+"attn_v.weight"], ne, kvDim, h)
		att := make([]float64, ne)
		for hd := 0; hd < c.Heads; hd++ {
			kv := hd / group
			copy(att[hd*headDim:(hd+1)*headDim], val[kv*headDim:(kv+1)*headDim])
		}
		o := matvec(tensors[p+"attn_output.weight"], ne, ne, att)
		for i := range x {
			x[i] += o[i]
		}
		h = rms(x, tensors[p+"ffn_norm.weight"])
		gate := matvec(tensors[p+"ffn_gate.weight"], ne, c.FF, h)
		up := matvec(tensors[p+"ffn_up.weight"], ne, c.FF, h)
		for i := range gate {
			gate[i] = gate[i] / (1 + math.Exp(-gate[i])) * up[i] // SiLU(gate) · up
		}
		d := matvec(tensors[p+"ffn_down.weight"], c.FF, ne, gate)
		for i := range x {
			x[i] += d[i]
		}
	}
	h := rms(x, tensors["output_norm.weight"])
	return matvec(tensors["output.weight"], ne, len(emb)/ne, h)
}
