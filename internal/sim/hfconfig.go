package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// hfArchitectures are the Hugging Face architectures ParseHFConfig models, by the
// "architectures" entry of config.json: decoder-only transformers with gated MLPs, GQA,
// sliding-window layers, mixtures of experts and DeepSeek's multi-head latent attention.
var hfArchitectures = map[string]bool{
	"LlamaForCausalLM": true, "MistralForCausalLM": true, "Qwen2ForCausalLM": true, "Qwen3ForCausalLM": true,
	"MixtralForCausalLM": true, "Qwen2MoeForCausalLM": true, "Qwen3MoeForCausalLM": true, "GptOssForCausalLM": true,
	"DeepseekV2ForCausalLM": true, "DeepseekV3ForCausalLM": true,
	"Llama4ForConditionalGeneration": true, "Llama4ForCausalLM": true,
}

// hfIgnored are config.json keys that do not change what the roofline prices: training,
// tokenizer, normalisation and position-encoding settings, routing details that leave k of
// E experts per token, and the multimodal parts of Llama 4 (its vision encoder is not
// modelled).
var hfIgnored = map[string]bool{
	"_name_or_path": true, "attention_bias": true, "attention_dropout": true, "auto_map": true, "bos_token_id": true,
	"eos_token_id": true, "pad_token_id": true, "hidden_act": true, "initializer_range": true, "rms_norm_eps": true,
	"rope_theta": true, "rope_scaling": true, "torch_dtype": true, "transformers_version": true, "use_cache": true,
	"mlp_bias": true, "pretraining_tp": true, "output_router_logits": true, "router_aux_loss_coef": true,
	"router_jitter_noise": true, "norm_topk_prob": true, "aux_loss_alpha": true, "ep_size": true, "n_group": true,
	"topk_group": true, "topk_method": true, "scoring_func": true, "routed_scaling_factor": true, "seq_aux": true,
	"num_nextn_predict_layers": true, "swiglu_limit": true, "initial_context_length": true, "rope_interleave": true,
	"attn_temperature_tuning": true, "floor_scale": true, "attn_scale": true, "use_qk_norm": true, "no_rope_layers": true,
	"attention_chunk_size": true, "cache_implementation": true, "vision_config": true, "boi_token_index": true,
	"eoi_token_index": true, "image_token_index": true, "dtype": true,
	"layer_norm_eps": true, "max_window_layers": true, "rope_parameters": true,
}

// LoadHFConfig reads a Hugging Face config.json into a model shape (ParseHFConfig), named
// after its folder (a file called config.json) or itself.
func LoadHFConfig(path string) (ModelShape, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ModelShape{}, err
	}
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	if name == "config" {
		name = filepath.Base(filepath.Dir(path))
	}
	m, err := ParseHFConfig(b, name)
	if err != nil {
		return ModelShape{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// hfConfig is a config.json's keys, with which of them were read.
type hfConfig struct {
	raw  map[string]json.RawMessage
	used map[string]bool
	errs []error
}

func (c *hfConfig) has(key string) bool {
	v, ok := c.raw[key]
	return ok && string(v) != "null"
}

// get decodes key into dst when present (not null), and marks it read.
func (c *hfConfig) get(key string, dst any) bool {
	c.used[key] = true
	if !c.has(key) {
		return false
	}
	if err := json.Unmarshal(c.raw[key], dst); err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %s is not what it should be (%v)", key, c.raw[key], err))
		return false
	}
	return true
}

func (c *hfConfig) int(key string) int {
	var v int
	c.get(key, &v)
	return v
}

// first is the first of keys present, the others marked read too.
func (c *hfConfig) first(keys ...string) int {
	v := 0
	for _, k := range keys {
		if x := c.int(k); x != 0 && v == 0 {
			v = x
		}
	}
	return v
}

// unused are the keys neither read nor known not to matter, sorted.
func (c *hfConfig) unused() []string {
	var out []string
	for k := range c.raw {
		if !c.used[k] && !hfIgnored[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// ParseHFConfig reads a Hugging Face config.json — Llama, Mistral, Qwen 2/3 dense and MoE,
// Mixtral, gpt-oss, DeepSeek-V2/V3 (and Kimi K2, its architecture) and Llama 4's text
// model — into a model shape named name, with the checkpoint's precision where its
// quantization_config gives one (fp8, or gpt-oss's MXFP4 experts). An architecture it
// does not know is refused, naming the keys it could not use.
func ParseHFConfig(b []byte, name string) (ModelShape, error) {
	top := &hfConfig{used: map[string]bool{}}
	if err := json.Unmarshal(b, &top.raw); err != nil {
		return ModelShape{}, fmt.Errorf("not a config.json (a JSON object): %w", err)
	}
	var archs []string
	top.get("architectures", &archs)
	top.used["model_type"] = true
	c := top
	if top.has("text_config") { // Llama 4: the language model's keys are under text_config
		c = &hfConfig{used: map[string]bool{}}
		if err := json.Unmarshal(top.raw["text_config"], &c.raw); err != nil {
			return ModelShape{}, fmt.Errorf("text_config: not a JSON object: %w", err)
		}
		top.used["text_config"] = true
		c.used["model_type"] = true
	}
	known := slices.ContainsFunc(archs, func(a string) bool { return hfArchitectures[a] })
	m := c.shape(name)
	top.tiedAndQuantized(c, &m)
	if !known {
		unused := append(top.unused(), prefixed("text_config.", c, top != c)...)
		what := fmt.Sprintf("architecture %q", strings.Join(archs, ", "))
		if len(archs) == 0 {
			what = "a config.json without \"architectures\""
		}
		msg := fmt.Sprintf("%s is not one llmbench models (%s)", what, strings.Join(sortedKeys(hfArchitectures), ", "))
		if len(unused) > 0 {
			msg += "; keys it could not use: " + strings.Join(unused, ", ")
		}
		return ModelShape{}, errors.New(msg + ": give the shape as a model: mapping in a profile instead")
	}
	errs := append(top.errs, c.errs...)
	if err := m.validate("config.json"); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return ModelShape{}, errors.Join(errs...)
	}
	return m, nil
}

func prefixed(p string, c *hfConfig, nested bool) []string {
	if !nested {
		return nil
	}
	var out []string
	for _, k := range c.unused() {
		out = append(out, p+k)
	}
	return out
}

// shape reads the dense shape, the sliding-window layers, the experts and MLA.
func (c *hfConfig) shape(name string) ModelShape {
	m := ModelShape{Name: name, Hidden: c.int("hidden_size"), Layers: c.int("num_hidden_layers"), Heads: c.int("num_attention_heads"),
		KVHeads: c.int("num_key_value_heads"), HeadDim: c.int("head_dim"), Intermediate: c.int("intermediate_size"),
		Vocab: c.int("vocab_size"), MaxContext: c.int("max_position_embeddings")}
	if m.KVHeads == 0 {
		m.KVHeads = m.Heads // multi-head attention: config.json leaves the key out
	}
	if m.HeadDim == 0 && m.Heads > 0 {
		m.HeadDim = m.Hidden / m.Heads
	}
	c.sliding(&m)
	c.experts(&m)
	if m.KVLoraRank = c.int("kv_lora_rank"); m.KVLoraRank > 0 {
		m.QLoraRank, m.QKNopeDim, m.QKRopeDim, m.VHeadDim = c.int("q_lora_rank"), c.int("qk_nope_head_dim"), c.int("qk_rope_head_dim"), c.int("v_head_dim")
		m.HeadDim = m.QKNopeDim + m.QKRopeDim
	}
	return m
}

// sliding reads the sliding-window layers: layer_types' "sliding_attention" ones (gpt-oss),
// else every layer when sliding_window is set (Mistral) and not switched off (Qwen's
// use_sliding_window: false).
func (c *hfConfig) sliding(m *ModelShape) {
	w := c.int("sliding_window")
	var off bool
	if c.has("use_sliding_window") {
		var on bool
		c.get("use_sliding_window", &on)
		off = !on
	}
	var types []string
	if c.get("layer_types", &types) {
		n := 0
		for _, t := range types {
			if t == "sliding_attention" {
				n++
			}
		}
		if w > 0 && !off {
			m.SlidingWindow, m.SlidingLayers = w, n
		}
		return
	}
	if w > 0 && !off {
		m.SlidingWindow, m.SlidingLayers = w, m.Layers
	}
}

// experts reads a mixture of experts: its routed experts and k, their width, the shared
// experts, and which layers are dense (DeepSeek's first_k_dense_replace, Qwen's
// mlp_only_layers and decoder_sparse_step, Llama 4's interleave_moe_layer_step).
func (c *hfConfig) experts(m *ModelShape) {
	m.Experts = c.first("num_local_experts", "num_experts", "n_routed_experts")
	m.ExpertsPerToken = c.first("num_experts_per_tok", "experts_per_token")
	moeWidth := c.int("moe_intermediate_size")
	sharedWidth := c.int("shared_expert_intermediate_size")
	shared := c.int("n_shared_experts")
	firstDense := c.int("first_k_dense_replace")
	freq := max(c.int("moe_layer_freq"), 1)
	step := max(c.int("decoder_sparse_step"), 1)
	var mlpOnly, moeList []int
	c.get("mlp_only_layers", &mlpOnly)
	c.get("moe_layers", &moeList)
	interleave := c.int("interleave_moe_layer_step")
	denseWidth := c.int("intermediate_size_mlp")
	if m.Experts == 0 {
		return
	}
	if moeWidth == 0 {
		moeWidth = m.Intermediate // Mixtral and gpt-oss: each expert is intermediate_size wide
	}
	m.MoEIntermediate = moeWidth
	switch {
	case interleave > 0 || denseWidth > 0: // Llama 4: one shared expert as wide as a routed one
		m.SharedIntermediate = moeWidth
		m.Intermediate = max(denseWidth, m.Intermediate)
	case shared > 0:
		m.SharedIntermediate = shared * moeWidth
	default:
		m.SharedIntermediate = sharedWidth
	}
	n := 0
	for i := range m.Layers {
		isMoE := i >= firstDense && i%freq == 0 && (i+1)%step == 0 && !slices.Contains(mlpOnly, i)
		if interleave > 0 {
			isMoE = (i+1)%interleave == 0
		}
		if moeList != nil {
			isMoE = slices.Contains(moeList, i)
		}
		if isMoE {
			n++
		}
	}
	m.MoELayers = n
}

// tiedAndQuantized reads tie_word_embeddings (at the top of the file or in text_config)
// and the checkpoint's precision from quantization_config.
func (top *hfConfig) tiedAndQuantized(c *hfConfig, m *ModelShape) {
	for _, cfg := range []*hfConfig{top, c} {
		var tied bool
		if cfg.get("tie_word_embeddings", &tied) {
			m.TiedEmbeddings = tied
		}
	}
	var q struct {
		Method  string   `json:"quant_method"`
		Format  string   `json:"fmt"`
		NotConv []string `json:"modules_to_not_convert"`
	}
	if !top.get("quantization_config", &q) {
		return
	}
	switch q.Method {
	case "fp8":
		// Every linear layer in fp8 with block scales (DeepSeek-V3, Kimi K2); the KV cache
		// stays at the activations' bf16.
		m.BytesPerParam, m.KVBytesPerElem = dtypeBytes[DtypeFP8], 2
	case "mxfp4":
		// gpt-oss: the experts in MXFP4, attention, router and embeddings (modules_to_not_convert) bf16.
		m.ExpertBytesPerParam = mxfp4Bytes
	default:
		top.errs = append(top.errs, fmt.Errorf("quantization_config.quant_method %q is not one llmbench reads (fp8, mxfp4): remove quantization_config and give the precision as deployment.weight_dtype", q.Method))
	}
}

// WithModelConfig is p serving the model of the config.json at path (--model-config), not
// yet validated:
// a roofline profile only, since a linear or table model describes one measured server's
// model, whatever the file says.
func (p Profile) WithModelConfig(path string) (Profile, error) {
	if p.Cost.Kind != CostRoofline {
		return p, fmt.Errorf("profile %s has a %s cost model, which describes its own measured server: a model config applies to a roofline profile (a preset GPU's, or calibrate --model-config's fit)", p.Name, p.Cost.Kind)
	}
	m, err := LoadHFConfig(path)
	if err != nil {
		return p, err
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	p.Model, p.ModelConfig = m, path
	return p, nil // validated where it is deployed: a plan's space changes the GPUs and tp first
}
