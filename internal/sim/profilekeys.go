package sim

import (
	"fmt"
	"slices"
	"strings"
)

// Keys of a profile that another package names (calibrate's provenance).
const (
	KeyNetworkRTTMs              = "network.rtt_ms"
	KeyNetworkJitterMs           = "network.jitter_ms"
	KeyNetworkFrontEndMs         = "network.frontend_ms"
	KeyEnginePrefill             = "engine.prefill"
	KeyEngineMaxNumSeqs          = "engine.max_num_seqs"
	KeyEngineMaxBatchedTokens    = "engine.max_batched_tokens"
	KeyEngineKVCacheTokens       = "engine.kv_cache_tokens"
	KeyDeploymentMaxModelLen     = "deployment.max_model_len"
	KeyDeploymentTruncatePrompts = "deployment.truncate_prompts"
)

// profileKey is one key of a profile file: where it lies in a Profile, its valid range and
// when Profile.YAML writes it. profileKeys is the one spelling of each that the decoder,
// Profile.YAML and Validate read (cost:'s numbers come from costKeys).
type profileKey struct {
	Path string // "engine.max_num_seqs"
	// ptr locates a plain value: *int, *float64, *string, *bool or *[2]int. nil: a key with
	// structure (a model, a list, a mapping of figures), read and written by hand.
	ptr func(p *Profile) any
	// Must states the valid range in messages ("must be in 1..1000000"); "" is none the
	// table checks. Min, Max are that range, inclusive but for Min when MinOpen; ZeroOK
	// admits 0 outside it (0 = the default).
	Must            string
	Min, Max        float64
	MinOpen, ZeroOK bool
	write           writeRule
	when            func(p *Profile) bool // for writeWhen
	quote           bool                  // a string written quoted
	// atLeastOne: a count a file must state as 1 or more (0 reads as 1 in Go).
	atLeastOne bool
}

// writeRule is when Profile.YAML writes a plain key.
type writeRule uint8

const (
	writeByHand writeRule = iota // keys with structure, and cost:'s
	writeAlways
	writeSet      // when not the zero value
	writePositive // when above 0
	writeWhen     // when the key's when says so
)

// profileKeys are a profile's keys, each section's in the order Profile.YAML writes them.
// The top level's are read and written by hand: each is a mapping, a preset's name, or
// needs more than its value (model_config's line, seed's int64).
var profileKeys = slices.Concat(
	[]profileKey{
		{Path: "model"}, {Path: "model_config"}, {Path: "gpu"}, {Path: "cost"}, {Path: "engine"},
		{Path: "deployment"}, {Path: "network"}, {Path: "tools"}, {Path: "power"},
		{Path: "calibration"}, {Path: "speculative"}, {Path: "seed"},
	},
	modelKeys(), gpuKeys, costProfileKeys(), engineKeys, deploymentKeys, networkKeys, otherKeys,
	calibrationKeys, speculativeKeys)

// modelKeys are the keys of a model: mapping (a draft_model: mapping's too).
func modelKeys() []profileKey {
	m := func(f func(m *ModelShape) any) func(p *Profile) any {
		return func(p *Profile) any { return f(&p.Model) }
	}
	dim := func(key string, max int, f func(m *ModelShape) any) profileKey {
		return profileKey{Path: "model." + key, ptr: m(f), Must: fmt.Sprintf("must be an integer in 1..%d", max), Min: 1, Max: float64(max), write: writeAlways}
	}
	part := func(key string, f func(m *ModelShape) any) profileKey {
		return profileKey{Path: "model." + key, ptr: m(f), write: writeSet}
	}
	return []profileKey{
		{Path: "model.name", ptr: m(func(m *ModelShape) any { return &m.Name }), write: writeAlways, quote: true},
		dim("layers", maxLayers, func(m *ModelShape) any { return &m.Layers }),
		dim("hidden", maxHidden, func(m *ModelShape) any { return &m.Hidden }),
		dim("heads", maxHeads, func(m *ModelShape) any { return &m.Heads }),
		dim("kv_heads", maxHeads, func(m *ModelShape) any { return &m.KVHeads }),
		dim("head_dim", maxHeads, func(m *ModelShape) any { return &m.HeadDim }),
		dim("intermediate", maxWidth, func(m *ModelShape) any { return &m.Intermediate }),
		dim("vocab", maxWidth, func(m *ModelShape) any { return &m.Vocab }),
		{Path: "model.tied_embeddings", ptr: m(func(m *ModelShape) any { return &m.TiedEmbeddings }), write: writeSet},
		{Path: "model.bytes_per_param", ptr: m(func(m *ModelShape) any { return &m.BytesPerParam }), Must: "must be in 0.125..8 (0 = 2, bf16)", Min: 0.125, Max: 8, ZeroOK: true, write: writeSet},
		// Beyond the dense shape: mixture of experts, MLA and sliding windows (a config.json
		// gives them with model_config instead). validateParts checks them together.
		part("max_context", func(m *ModelShape) any { return &m.MaxContext }),
		part("experts", func(m *ModelShape) any { return &m.Experts }),
		part("experts_per_token", func(m *ModelShape) any { return &m.ExpertsPerToken }),
		part("moe_layers", func(m *ModelShape) any { return &m.MoELayers }),
		part("moe_intermediate", func(m *ModelShape) any { return &m.MoEIntermediate }),
		part("shared_intermediate", func(m *ModelShape) any { return &m.SharedIntermediate }),
		part("kv_lora_rank", func(m *ModelShape) any { return &m.KVLoraRank }),
		part("q_lora_rank", func(m *ModelShape) any { return &m.QLoraRank }),
		part("qk_nope_head_dim", func(m *ModelShape) any { return &m.QKNopeDim }),
		part("qk_rope_head_dim", func(m *ModelShape) any { return &m.QKRopeDim }),
		part("v_head_dim", func(m *ModelShape) any { return &m.VHeadDim }),
		part("sliding_window", func(m *ModelShape) any { return &m.SlidingWindow }),
		part("sliding_layers", func(m *ModelShape) any { return &m.SlidingLayers }),
		part("expert_bytes_per_param", func(m *ModelShape) any { return &m.ExpertBytesPerParam }),
		part("kv_bytes_per_elem", func(m *ModelShape) any { return &m.KVBytesPerElem }),
	}
}

var gpuKeys = []profileKey{
	{Path: "gpu.name", ptr: func(p *Profile) any { return &p.GPU.Name }, write: writeAlways, quote: true},
	gpuFigure("tflops", func(p *Profile) any { return &p.GPU.TFLOPS }),
	gpuFigure("bandwidth_gbps", func(p *Profile) any { return &p.GPU.BandwidthGBps }),
	gpuFigure("memory_gb", func(p *Profile) any { return &p.GPU.MemoryGB }),
	{Path: "gpu.sms", ptr: func(p *Profile) any { return &p.GPU.SMs }, Must: fmt.Sprintf("must be an integer in 0..%d (0 = no limit)", maxSMs), Max: maxSMs, write: writeAlways},
	{Path: "gpu.usd_per_hour", ptr: func(p *Profile) any { return &p.GPU.USDPerHour }, Must: fmt.Sprintf("must be a number in [0, %.0f] (0 = the preset's list price)", float64(maxUSDPerHour)), Max: maxUSDPerHour, write: writePositive},
	lowPrecision("fp8_tflops", func(p *Profile) any { return &p.GPU.FP8TFLOPS }),
	lowPrecision("fp4_tflops", func(p *Profile) any { return &p.GPU.FP4TFLOPS }),
	// power_w and idle_power_w are checked together (GPU.validate).
	{Path: "gpu.power_w", ptr: func(p *Profile) any { return &p.GPU.PowerW }, write: writePositive},
	{Path: "gpu.idle_power_w", ptr: func(p *Profile) any { return &p.GPU.IdlePowerW }, write: writePositive},
}

func gpuFigure(key string, ptr func(p *Profile) any) profileKey {
	return profileKey{Path: "gpu." + key, ptr: ptr, Must: fmt.Sprintf("must be a number in (0, %.0f]", float64(maxGPUFigure)), Max: maxGPUFigure, MinOpen: true, write: writeAlways}
}

func lowPrecision(key string, ptr func(p *Profile) any) profileKey {
	return profileKey{Path: "gpu." + key, ptr: ptr, Must: fmt.Sprintf("must be a number in [0, %.0f] (0 = none: bf16's rate)", float64(maxGPUFigure)), Max: maxGPUFigure, write: writePositive}
}

// costProfileKeys are cost:'s keys; costKeys checks and writes its numbers by kind.
func costProfileKeys() []profileKey {
	out := []profileKey{
		{Path: "cost.kind", ptr: func(p *Profile) any { return &p.Cost.Kind }},
		{Path: "cost." + costFile, ptr: func(p *Profile) any { return &p.Cost.File }},
	}
	for _, k := range costKeys {
		out = append(out, profileKey{Path: "cost." + k.Key, ptr: func(p *Profile) any { return k.Value(&p.Cost) }})
	}
	return out
}

var engineKeys = []profileKey{
	{Path: "engine.kind", ptr: func(p *Profile) any { return &p.Engine.Kind }, write: writeSet},
	{Path: KeyEnginePrefill, ptr: func(p *Profile) any { return &p.Engine.Prefill }, write: writeAlways},
	{Path: KeyEngineMaxNumSeqs, ptr: func(p *Profile) any { return &p.Engine.MaxNumSeqs }, Must: fmt.Sprintf("must be in 1..%d", maxNumSeqs), Min: 1, Max: maxNumSeqs, write: writeAlways},
	{Path: KeyEngineMaxBatchedTokens, ptr: func(p *Profile) any { return &p.Engine.MaxBatchedTokens }, Must: fmt.Sprintf("must be in 1..%d", maxBatchedTokens), Min: 1, Max: maxBatchedTokens, write: writeAlways},
	{Path: "engine.block_size", ptr: func(p *Profile) any { return &p.Engine.BlockSize }, Must: fmt.Sprintf("must be in 1..%d", maxBlockSize), Min: 1, Max: maxBlockSize, write: writeAlways},
	{Path: KeyEngineKVCacheTokens, ptr: func(p *Profile) any { return &p.Engine.KVCacheTokens }, Must: fmt.Sprintf("must be in 0..%d (0 derives it from the GPU)", maxKVCacheTokens), Max: maxKVCacheTokens, write: writeAlways},
	{Path: "engine.gpu_memory_utilization", ptr: func(p *Profile) any { return &p.Engine.GPUMemoryUtilization }, Must: "must be in (0, 1]", Max: 1, MinOpen: true, write: writeAlways},
	{Path: "engine.prefix_caching", ptr: func(p *Profile) any { return &p.Engine.PrefixCaching }, write: writeAlways},
	{Path: "engine.prefill_workers", ptr: func(p *Profile) any { return &p.Engine.PrefillWorkers }, Must: fmt.Sprintf("must be in 0..%d (0 = as many as needed)", maxNumSeqs), Max: maxNumSeqs,
		write: writeWhen, when: func(p *Profile) bool { return p.Engine.Prefill == PrefillDisaggregated }},
	{Path: "engine.recv_interval", ptr: func(p *Profile) any { return &p.Engine.RecvInterval }, Must: fmt.Sprintf("must be in 0..%d (steps between taking in new requests; 0 or 1: every step)", maxRecvInterval), Max: maxRecvInterval, write: writePositive},
	{Path: "engine.cuda_graphs", ptr: func(p *Profile) any { return &p.Engine.CUDAGraphs }, write: writeSet},
	{Path: "engine.dp_balance_wait", ptr: func(p *Profile) any { return &p.Engine.DPBalanceWait }, Must: fmt.Sprintf("must be in 0..%d (steps a new request may wait for every DP group to have one; 0: none)", maxRecvInterval), Max: maxRecvInterval, write: writePositive},
}

// deploymentKeys: tp (a power of two) and dp are checked by hand, with the model and GPU.
var deploymentKeys = []profileKey{
	{Path: "deployment.replicas", ptr: func(p *Profile) any { return &p.Deployment.Replicas }, Must: fmt.Sprintf("must be in 1..%d", maxReplicas), Max: maxReplicas, atLeastOne: true, write: writeAlways},
	{Path: "deployment.tp", ptr: func(p *Profile) any { return &p.Deployment.TP }, Must: fmt.Sprintf("must be in 1..%d", maxTP), Max: maxTP, atLeastOne: true, write: writeAlways},
	{Path: "deployment.router", ptr: func(p *Profile) any { return &p.Deployment.Router }, write: writeAlways},
	{Path: "deployment.dp", ptr: func(p *Profile) any { return &p.Deployment.DP }, Must: fmt.Sprintf("must be in 1..%d", maxTP), Max: maxTP, atLeastOne: true,
		write: writeWhen, when: func(p *Profile) bool { return p.Deployment.DP > 1 }},
	{Path: "deployment.expert_parallel", ptr: func(p *Profile) any { return &p.Deployment.ExpertParallel }, write: writeSet},
	{Path: "deployment.weight_dtype", ptr: func(p *Profile) any { return &p.Deployment.WeightDtype }, write: writeSet},
	{Path: "deployment.expert_dtype", ptr: func(p *Profile) any { return &p.Deployment.ExpertDtype }, write: writeSet},
	{Path: "deployment.kv_dtype", ptr: func(p *Profile) any { return &p.Deployment.KVDtype }, write: writeSet},
	{Path: KeyDeploymentMaxModelLen, ptr: func(p *Profile) any { return &p.Deployment.MaxModelLen }, Must: fmt.Sprintf("must be in 0..%d (0 = bounded by the KV cache only)", maxKVCacheTokens), Max: maxKVCacheTokens, write: writePositive},
	{Path: KeyDeploymentTruncatePrompts, ptr: func(p *Profile) any { return &p.Deployment.TruncatePrompts },
		write: writeWhen, when: func(p *Profile) bool { return p.Deployment.MaxModelLen > 0 && p.Deployment.TruncatePrompts }},
}

// networkKeys: the mapping is written when any is above 0, and then the round trip and
// jitter always.
var networkKeys = []profileKey{
	{Path: KeyNetworkRTTMs, ptr: func(p *Profile) any { return &p.Network.RTTMs }, Must: fmt.Sprintf("must be in [0, %.0f] ms", float64(maxCostMs)), Max: maxCostMs, write: writeAlways},
	{Path: KeyNetworkJitterMs, ptr: func(p *Profile) any { return &p.Network.JitterMs }, Must: fmt.Sprintf("must be in [0, %.0f] ms", float64(maxCostMs)), Max: maxCostMs, write: writeAlways},
	{Path: KeyNetworkFrontEndMs, ptr: func(p *Profile) any { return &p.Network.FrontEndMs }, Must: fmt.Sprintf("must be in [0, %.0f] ms", float64(maxCostMs)), Max: maxCostMs, write: writePositive},
	{Path: "network.prompt_us_per_token", ptr: func(p *Profile) any { return &p.Network.PromptUsPerToken }, Must: fmt.Sprintf("must be in [0, %.0f] µs", float64(maxPromptUsPerToken)), Max: maxPromptUsPerToken, write: writePositive},
}

// otherKeys are tools: (a pointer: unset is not 0) and power:.
var otherKeys = []profileKey{
	{Path: "tools.auto_call_fraction"},
	{Path: "power.watts_per_gpu", ptr: func(p *Profile) any { return &p.Power.WattsPerGPU }, Must: fmt.Sprintf("must be a number in [0, %g] W", float64(maxGPUPowerW)), Max: maxGPUPowerW, write: writeAlways},
	{Path: "power.gpus", ptr: func(p *Profile) any { return &p.Power.GPUs }, Must: fmt.Sprintf("must be 0 (the deployment's) to %d", maxGPUsMeasured), Max: maxGPUsMeasured, write: writeAlways},
	{Path: "power.source", ptr: func(p *Profile) any { return &p.Power.Source }, write: writeAlways, quote: true},
}

// calibrationKeys: a nil Calibration has none; its figures and loads are written by hand.
var calibrationKeys = []profileKey{
	{Path: "calibration.source", ptr: func(p *Profile) any { return &p.Calibration.Source }, write: writeAlways, quote: true},
	{Path: "calibration.date", ptr: func(p *Profile) any { return &p.Calibration.Date }, write: writeAlways, quote: true},
	{Path: "calibration.prompt_tokens", ptr: func(p *Profile) any { return &p.Calibration.PromptTokens }, write: writeAlways},
	{Path: "calibration.output_tokens", ptr: func(p *Profile) any { return &p.Calibration.OutputTokens }, write: writeAlways},
	{Path: "calibration.concurrency", ptr: func(p *Profile) any { return &p.Calibration.Concurrency }, write: writeAlways},
	{Path: "calibration.max_num_seqs", ptr: func(p *Profile) any { return &p.Calibration.MaxNumSeqs }, write: writeSet, quote: true},
	{Path: "calibration.error_pct"}, {Path: "calibration.error_pct_by_load"}, {Path: "calibration.open_rates"},
	{Path: "calibration.not_trusted"}, {Path: "calibration.not_probed"},
}

// speculativeKeys: method and the drafting costs are checked together (specErrors).
var speculativeKeys = []profileKey{
	{Path: "speculative.draft_tokens", ptr: func(p *Profile) any { return &p.Speculative.DraftTokens }, Must: fmt.Sprintf("must be in 0..%d (0 = off)", maxDraftTokens), Max: maxDraftTokens, write: writeAlways},
	{Path: "speculative.acceptance", ptr: func(p *Profile) any { return &p.Speculative.Acceptance }, Must: "must be in [0, 1] (the chance each drafted token is accepted)", Max: 1, write: writeAlways},
	{Path: "speculative.method", ptr: func(p *Profile) any { return &p.Speculative.Method }, write: writeAlways},
	{Path: "speculative.draft_model"},
	{Path: "speculative.draft_ms_per_token", ptr: func(p *Profile) any { return &p.Speculative.DraftMsPerToken }, write: writeSet},
	{Path: "speculative.draft_step_fraction", ptr: func(p *Profile) any { return &p.Speculative.DraftStepFraction }, write: writeSet},
}

// profileKeyIndex finds an entry by path.
var profileKeyIndex = func() map[string]profileKey {
	m := map[string]profileKey{}
	for _, k := range profileKeys {
		m[k.Path] = k
	}
	return m
}()

// keysUnder lists the entries directly under section ("engine"; "" the top level).
func keysUnder(section string) []profileKey {
	var out []profileKey
	for _, k := range profileKeys {
		if parent, _ := splitKey(k.Path); parent == section {
			out = append(out, k)
		}
	}
	return out
}

// splitKey splits "engine.max_num_seqs" into its section and name.
func splitKey(path string) (section, name string) {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i], path[i+1:]
	}
	return "", path
}

// check reports k's value in p outside its range, naming the key as name.
func (k profileKey) check(p *Profile, name string) error {
	if k.Must == "" {
		return nil
	}
	var v any
	var x float64
	switch ptr := k.ptr(p).(type) {
	case *int:
		v, x = *ptr, float64(*ptr)
	case *float64:
		v, x = *ptr, *ptr
	}
	if (x > k.Min || !k.MinOpen && x == k.Min) && x <= k.Max || k.ZeroOK && x == 0 {
		return nil
	}
	return keyErrorf(name, "%s, got %v", k.Must, v)
}

// checkKeys appends the errors of the keys at paths in p to errs, and reports whether
// there were none.
func (p *Profile) checkKeys(errs *[]error, paths ...string) bool {
	ok := true
	for _, path := range paths {
		if err := profileKeyIndex[path].check(p, path); err != nil {
			*errs, ok = append(*errs, err), false
		}
	}
	return ok
}
