package validate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/sim"
)

// inferencexExperiment is what inferencexRow reads of an InferenceX row.
type inferencexExperiment struct {
	ID          string          `json:"id"`
	Repo        string          `json:"source_repo"`
	Path        string          `json:"path"`
	Commit      string          `json:"commit"`
	Licence     string          `json:"licence"`
	Model       string          `json:"model"`
	GPU         string          `json:"gpu"`
	NumGPUs     map[string]int  `json:"num_gpus"`
	TP          map[string]int  `json:"tp"`
	EP          map[string]int  `json:"ep"`
	DPAttention map[string]bool `json:"dp_attention"`
	Framework   string          `json:"framework"`
	Dtype       string          `json:"dtype"`
	Date        string          `json:"date"`
	Serving     struct {
		Disagg bool   `json:"disagg"`
		Spec   string `json:"spec_method"`
	} `json:"serving_settings"`
	Workload struct {
		ISL         int `json:"isl"`
		OSL         int `json:"osl"`
		Concurrency int `json:"concurrency"`
	} `json:"workload"`
	Measured map[string]float64 `json:"measured"`
}

// inferencexModels are InferenceX's models as presets, by the prefix of the model field's
// first word (its Hugging Face name, any organisation left off), case aside; the first that
// matches. A preset of "" is a model whose name matches a preset's but whose architecture is
// not that preset's, with why.
var inferencexModels = []struct{ prefix, preset, why string }{
	// DeepSeek-V3.2 adds a sparse attention (DSA, its lightning indexer) that V3 has not.
	{"deepseek-v3.2", "", "DeepSeek-V3.2's sparse attention (DSA) is not DeepSeek-V3's, which the deepseek-v3 preset is"},
	// R1 and its -0528 are DeepSeek-V3's architecture (their config.json is V3's), as is V3.1.
	{"deepseek-r1", "deepseek-r1", ""}, {"deepseek-v3", "deepseek-v3", ""},
	{"gpt-oss-120b", "gpt-oss-120b", ""}, {"gpt-oss-20b", "gpt-oss-20b", ""},
	// Llama 3.3 70B is Llama 3.1 70B's architecture (its config.json has the same shapes,
	// vocabulary and context), further trained.
	{"llama-3.3-70b", "llama-3.1-70b", ""}, {"llama-3.1-70b", "llama-3.1-70b", ""},
	{"llama-3.1-405b", "llama-3.1-405b", ""}, {"llama-3.1-8b", "llama-3.1-8b", ""},
	{"qwen3-235b-a22b", "qwen3-235b-a22b", ""},
}

// inferencexModel is an InferenceX model field's first word (organisation left off) and its
// preset; "" with why not, or "" alone for a model no preset is named like.
func inferencexModel(model string) (name, preset, why string) {
	if f := strings.Fields(model); len(f) > 0 {
		name = path.Base(f[0])
	}
	for _, m := range inferencexModels {
		if strings.HasPrefix(strings.ToLower(name), m.prefix) {
			return name, m.preset, m.why
		}
	}
	return name, "", ""
}

// inferencexScriptModel is the model whose InferenceX scripts (dsr1_*.sh) were read for the
// engine flags the rows lack, and inferencexScriptGPUs the GPUs whose scripts were read: those
// rows alone take the flags (inferencexStepBudget, inferencexRecvInterval, dp_balance_wait).
const inferencexScriptModel = "deepseek-r1"

var inferencexScriptGPUs = []string{"b200", "h200"}

// inferencexRow converts an InferenceX row: a closed loop of 10 × concurrency requests,
// lengths uniform in [0.8 L, L] (the groundtruth README, from InferenceX's client flags),
// on one aggregated server of the row's GPUs. The rows carry no server flags, so the
// engine limits are assumptions, stated on the row, never fitted to it.
func inferencexRow(raw json.RawMessage) (Row, error) {
	var e inferencexExperiment
	if err := json.Unmarshal(raw, &e); err != nil {
		return Row{}, err
	}
	gpu := gpuPreset(e.GPU)
	name, family, modelWhy := inferencexModel(e.Model)
	scripted := family == inferencexScriptModel
	flagsRead := scripted && slices.Contains(inferencexScriptGPUs, gpu)
	engine := engineName(strings.TrimPrefix(e.Framework, "dynamo-"))
	r := Row{ID: e.ID, Source: Source{Name: "inferencex", Repo: e.Repo, Path: e.Path, Commit: e.Commit, Licence: e.Licence},
		Group: predict.Group{Family: family, GPU: gpu, Engine: engine, Load: predict.Closed},
		Workload: Workload{Concurrency: e.Workload.Concurrency, Requests: 10 * e.Workload.Concurrency,
			InputTokens:  fmt.Sprintf("uniform:%d:%d", e.Workload.ISL*8/10, e.Workload.ISL),
			OutputTokens: fmt.Sprintf("uniform:%d:%d", e.Workload.OSL*8/10, e.Workload.OSL)},
		Measured: map[string]float64{}}
	if family == "" {
		r.Group.Family = name
	}
	m := e.Measured
	// InferenceX's ITL is not llmbench's: its client (vLLM's benchmark_serving) times the gap
	// between stream events, which llmbench calls the chunk gap, and its servers send an event
	// every several tokens (their stream interval: 10 or 30 in InferenceX's single-node
	// DeepSeek-R1 scripts), which the simulator, streaming every token, does not model. TPOT is the per-token figure both compute alike.
	if _, ok := m["median_itl"]; ok && scripted {
		r.Assumptions = append(r.Assumptions, "ITL not compared: the source's is the gap between stream events (llmbench's chunk gap), and InferenceX's servers send one every several tokens (stream_interval / --stream-interval 10 or 30 in SemiAnalysisAI/InferenceX benchmarks/single_node/fixed_seq_len/dsr1_*.sh at 843c6254), the simulator one a token; TPOT is compared")
	} else if ok {
		r.Assumptions = append(r.Assumptions, "ITL not compared: the source's is the gap between stream events (llmbench's chunk gap), and this row's server's stream interval is not in the source (InferenceX's DeepSeek-R1 servers send one every 10 or 30 tokens), the simulator one a token; TPOT is compared")
	}
	for _, metric := range []string{"ttft", "tpot", "e2el"} {
		for stat, key := range map[string]string{"mean": "mean", "median": "p50", "p99": "p99"} {
			if v, ok := m[stat+"_"+metric]; ok {
				r.Measured[metric+"_ms."+key] = v * 1000
			}
		}
	}
	// An aggregated row's throughput is per GPU of its one server of tp GPUs (its num_gpus
	// is tp × ep where ep > 1, which one node cannot hold: 8 users at 102 tokens/s each
	// read 97 tokens/s per GPU, 8 GPUs' worth).
	tp := e.TP["decode"]
	if v, ok := m["output_tput_per_gpu"]; ok && !e.Serving.Disagg {
		r.Measured["output_throughput"] = v * float64(tp)
	}
	switch {
	case modelWhy != "":
		r.Skip = modelWhy
	case family == "":
		r.Skip = fmt.Sprintf("no model preset for %s (presets: %s); nor are its server flags in the source", e.Model, presets())
	case gpu == "":
		r.Skip = fmt.Sprintf("no GPU preset for %q", e.GPU)
	case !simEngine(engine):
		r.Skip = fmt.Sprintf("engine %q is not one the simulator models (%s, %s, %s)", e.Framework, sim.EngineVLLM, sim.EngineSGLang, sim.EngineTensorRTLLM)
	case e.Serving.Disagg:
		r.Skip = fmt.Sprintf("disaggregated prefill and decode pools (%d and %d GPUs): a row is one aggregated server yet", e.NumGPUs["prefill"], e.NumGPUs["decode"])
	case e.Serving.Spec == "mtp" && scripted:
		// The draft lengths are in InferenceX's scripts; the acceptance is nowhere, and the
		// figures hang on it (docs/measurements.md: with DeepSeek-V3's reported 85 % these
		// rows' TPOT P50 came out 35 % low in median).
		r.Skip = "speculative decoding by mtp: its acceptance rate is not in the source (its draft length is: SGLang's EAGLE drafts 2 tokens, TensorRT-LLM's MTP 3, or 1 with DP attention, in SemiAnalysisAI/InferenceX benchmarks/single_node/fixed_seq_len/dsr1_*_mtp.sh)"
	case e.Serving.Spec != "" && e.Serving.Spec != "none":
		r.Skip = fmt.Sprintf("speculative decoding by %s: its draft length and acceptance are not in the source", e.Serving.Spec)
	case tp < 1:
		r.Skip = "tensor parallelism not stated"
	}
	if r.Skip != "" {
		return r, nil
	}
	// DP attention: the GPUs each attend to their own sequences (tp 1 each, dp of them),
	// the MoE blocks spanning them all.
	dep := map[string]any{"tp": tp}
	if e.DPAttention["decode"] {
		dep = map[string]any{"tp": 1, "dp": tp}
	}
	if e.EP["decode"] > 1 {
		dep["expert_parallel"] = true
	}
	shape, _ := sim.ModelPreset(family)
	switch d := strings.ToLower(e.Dtype); {
	case (d == "fp4" || d == sim.DtypeMXFP4) && shape.ExpertBytesPerParam > 0 && shape.ExpertBytesPerParam < 1:
		// gpt-oss is published with its routed experts in MXFP4 and the rest in bf16
		// (quantization_config): its fp4 is the checkpoint as shipped, on any GPU.
		dep["expert_dtype"] = sim.DtypeMXFP4
		r.Assumptions = append(r.Assumptions, fmt.Sprintf("fp4 ASSUMED %s's published checkpoint as shipped: its routed experts MXFP4, the rest bf16 (its config.json's quantization_config)", family))
	case d == "fp4" && !amd(gpu):
		dep["weight_dtype"] = sim.DtypeNVFP4
		if scripted {
			r.Assumptions = append(r.Assumptions, "fp4 ASSUMED NVFP4 for every weight (NVIDIA's DeepSeek-R1-0528-FP4 quantises the transformer blocks' linear layers)")
		} else {
			r.Assumptions = append(r.Assumptions, "fp4 on NVIDIA ASSUMED NVFP4 for every weight (NVIDIA's fp4 checkpoints, nvidia/*-FP4, are NVFP4; the row names no checkpoint)")
		}
	default:
		wd, why := weightDtype(d, gpu)
		if wd == "" {
			r.Skip = fmt.Sprintf("dtype %q is not one the simulator names", e.Dtype)
			return r, nil
		}
		dep["weight_dtype"] = wd
		if why != "" {
			r.Assumptions = append(r.Assumptions, why)
		}
	}
	dep["kv_dtype"] = "fp8"
	limit := e.Workload.ISL + e.Workload.OSL
	budget, budgetWhy := inferencexStepBudget(e, tp, flagsRead)
	eng := map[string]any{"max_num_seqs": e.Workload.Concurrency, "max_batched_tokens": budget}
	if f, why := inferencexMemFraction(e, tp, flagsRead); f > 0 {
		eng["gpu_memory_utilization"] = f
		r.Assumptions = append(r.Assumptions, why)
	}
	if n, why := inferencexRecvInterval(e, tp, flagsRead); n > 1 {
		eng["recv_interval"] = n
		r.Assumptions = append(r.Assumptions, why)
	}
	if flagsRead && e.Framework == "trt" && e.DPAttention["decode"] && e.Date >= "2025-09-18" {
		// attention_dp_config in every script since 2025-09-18: enable_balance, timeout_iters 60,
		// batching_wait_iters 0.
		eng["dp_balance_wait"] = 60
		r.Assumptions = append(r.Assumptions, "engine.dp_balance_wait 60: TensorRT-LLM's attention_dp_config (enable_balance, timeout_iters 60) with DP attention in SemiAnalysisAI/InferenceX's dsr1 script on the row's date")
	}
	r.Profile = map[string]any{"model": family, "gpu": gpu, "engine": engineKeys(engine, eng), "deployment": dep}
	r.Assumptions = append(r.Assumptions,
		"engine.max_num_seqs ASSUMED the concurrency: a closed loop never has more in flight, so a larger limit serves it alike",
		budgetWhy,
		"kv_dtype ASSUMED fp8 (the run's flags are not in the source)",
		fmt.Sprintf("every request fits: prompts and outputs up to %d tokens", limit))
	return r, nil
}

// inferencexStepBudget is a row's per-step token budget and where it comes from: the server
// flags of InferenceX's single-node DeepSeek-R1 scripts on the row's date
// (SemiAnalysisAI/InferenceX benchmarks/dsr1_*.sh, later benchmarks/single_node/fixed_seq_len/),
// read from that repository's history, as the fixture carries no flags. The dates below are
// where a script changed within the rows' span (2025-11 to 2026-07). Another model's or
// GPU's rows (read false) take the stated default.
func inferencexStepBudget(e inferencexExperiment, tp int, read bool) (int, string) {
	const src = " in SemiAnalysisAI/InferenceX's dsr1 script on the row's date"
	switch {
	case !read:
	case e.Framework == "sglang" && e.GPU == "b200" && e.Dtype == "fp4":
		if e.DPAttention["decode"] && e.Date >= "2026-06-15" {
			return 32768, "engine.max_batched_tokens 32768: SGLang's --chunked-prefill-size with DP attention" + src
		}
		return 16384, "engine.max_batched_tokens 16384: SGLang's --chunked-prefill-size" + src
	case e.Framework == "sglang" && e.GPU == "b200" && e.Dtype == "fp8" && tp == 4:
		return 8192, "engine.max_batched_tokens 8192: SGLang's --chunked-prefill-size at TP 4" + src
	case e.Framework == "sglang" && (e.GPU == "b200" || e.GPU == "h200") && e.Dtype == "fp8":
		return 32768, "engine.max_batched_tokens 32768: SGLang's --chunked-prefill-size" + src
	case e.Framework == "trt":
		// The concurrency's decode tokens and one whole prompt, rounded up to 64.
		n := (e.Workload.Concurrency + e.Workload.ISL + 64 + 63) / 64 * 64
		how := "ceil64(concurrency + ISL + 64)"
		if e.Date >= "2026-01-22" {
			n, how = max(n, 8192), "ceil64(concurrency + ISL + 64), at least 8192,"
		}
		return n, fmt.Sprintf("engine.max_batched_tokens %d: TensorRT-LLM's --max_num_tokens, %s%s", n, how, src)
	}
	return max(8192, e.Workload.ISL), "engine.max_batched_tokens ASSUMED 8192 (SGLang's and TensorRT-LLM's usual chunk budget; no script read for this row), at least one prompt"
}

// inferencexMemFraction is a row's static memory fraction where its script sets one the
// simulator's default (0.9) would misstate, and where it comes from; 0 for the default. SGLang
// at TP 4 on B200 at fp8 runs 0.95 (since 2026-01-13): what lets 671 GB of fp8 weights serve
// from four GPUs. Its 0.82 at TP 8 leaves the KV cache as ample as 0.9 does.
func inferencexMemFraction(e inferencexExperiment, tp int, read bool) (float64, string) {
	if !read || e.Framework != "sglang" || e.GPU != "b200" || e.Dtype != "fp8" || tp != 4 || e.Date < "2026-01-13" {
		return 0, ""
	}
	return 0.95, "engine.gpu_memory_utilization 0.95: SGLang's --mem-fraction-static at TP 4 in SemiAnalysisAI/InferenceX's dsr1 script on the row's date"
}

// inferencexRecvInterval is how many decode steps a row's SGLang scheduler ran between
// taking in new requests (--scheduler-recv-interval), and where it comes from: the B200
// scripts set it since 2025-09-23, unchanged through the rows' span (10, or 30 from
// concurrency 16, and 10 at TP 4 on fp8; 1 with DP attention, which SGLang's receive skipper
// does not support); the H200 script and TensorRT-LLM's never do. Another model's or GPU's
// rows (read false) take SGLang's default, 1.
func inferencexRecvInterval(e inferencexExperiment, tp int, read bool) (int, string) {
	if !read || e.Framework != "sglang" || e.GPU != "b200" || e.DPAttention["decode"] {
		return 1, ""
	}
	const src = " in SemiAnalysisAI/InferenceX's dsr1 script on the row's date"
	switch {
	case e.Dtype == "fp8" && tp == 4:
		return 10, "engine.recv_interval 10: SGLang's --scheduler-recv-interval at TP 4" + src
	case e.Workload.Concurrency >= 16:
		return 30, "engine.recv_interval 30: SGLang's --scheduler-recv-interval from concurrency 16" + src
	}
	return 10, "engine.recv_interval 10: SGLang's --scheduler-recv-interval below concurrency 16" + src
}

// inferencePerfExperiment is what inferencePerfRows reads of a kubernetes-sigs/inference-perf
// run: its deployment, the configuration inference-perf echoed into its results (what ran),
// and each stage's figures.
type inferencePerfExperiment struct {
	ID        string `json:"id"`
	Repo      string `json:"source_repo"`
	Path      string `json:"path"`
	Commit    string `json:"commit"`
	Licence   string `json:"licence"`
	Model     string `json:"model"`
	GPU       string `json:"gpu"`
	TP        int    `json:"tp"`
	Framework string `json:"framework"`
	Serving   struct {
		Engine struct {
			MaxModelLen     int `json:"max_model_len"`
			MaxBatchedToken int `json:"max_num_batched_tokens"`
			MaxNumSeqs      int `json:"max_num_seqs"`
		} `json:"exp_config_yaml"`
	} `json:"serving_settings"`
	Workload struct {
		Config string `json:"inference_perf_results_config_yaml"`
	} `json:"workload"`
	Measured struct {
		Stages []inferencePerfStage `json:"stages"`
	} `json:"measured"`
}

// inferencePerfConfig is what inferencePerfRows reads of inference-perf's own configuration.
type inferencePerfConfig struct {
	Data struct {
		Type         string `yaml:"type"`
		SharedPrefix struct {
			Groups       int  `yaml:"num_groups"`
			SystemPrompt int  `yaml:"system_prompt_len"`
			OutputLen    int  `yaml:"output_len"`
			MultiTurn    bool `yaml:"enable_multi_turn_chat"`
		} `yaml:"shared_prefix"`
	} `yaml:"data"`
	Load struct {
		Type   string `yaml:"type"`
		Stages []struct {
			Rate float64 `yaml:"rate"`
		} `yaml:"stages"`
	} `yaml:"load"`
	Server struct {
		IgnoreEOS bool `yaml:"ignore_eos"`
	} `yaml:"server"`
}

// inferencePerfStage is one stage's figures: latencies in seconds, lengths in tokens.
type inferencePerfStage struct {
	File      string `json:"stage_file"`
	Successes int    `json:"successes_count"`
	Failures  int    `json:"failures_count"`
	Load      struct {
		Rate float64 `json:"requested_rate"`
	} `json:"load_summary"`
	Latency map[string]map[string]float64 `json:"latency_s"`
	Prompt  struct {
		Min float64 `json:"min"`
		Max float64 `json:"max"`
	} `json:"prompt_len_tokens"`
}

// inferencePerfModels are the inference-perf rows' models as presets.
var inferencePerfModels = map[string]string{
	"meta-llama/Llama-2-7b-hf": "llama-2-7b", "meta-llama/Llama-2-70b-hf": "llama-2-70b",
	"mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b", "codellama/CodeLlama-34b-Instruct-hf": "codellama-34b",
}

// inferencePerfMaxRequests caps a stage's simulated requests: its 3,000–12,000 arrivals at a
// constant rate below capacity say no more about the median than 2,000 do.
const inferencePerfMaxRequests = 2000

// inferencePerfRows converts an inference-perf run into a row per stage: constant arrivals
// at the stage's rate of shared-prefix prompts (inference-perf's shared_prefix data: each
// prompt one of num_groups system prompts and a question of its own) on vLLM with the
// run's engine limits and prefix caching. Latencies are compared (TTFT, E2E, and TPOT's
// mean from theirs); the source's output counts are not reliable (the groundtruth README),
// so neither its throughput nor its TPOT is.
func inferencePerfRows(raw json.RawMessage) ([]Row, error) {
	var e inferencePerfExperiment
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, err
	}
	var cfg inferencePerfConfig
	if err := yaml.Unmarshal([]byte(e.Workload.Config), &cfg); err != nil {
		return nil, fmt.Errorf("%s: inference-perf's config: %w", e.ID, err)
	}
	family := inferencePerfModels[e.Model]
	gpu := gpuPreset(e.GPU)
	sp := cfg.Data.SharedPrefix
	var rows []Row
	for i, st := range e.Measured.Stages {
		r := Row{ID: fmt.Sprintf("%s/stage_%d", e.ID, i),
			Source:   Source{Name: "inference-perf", Repo: e.Repo, Path: path.Join(e.Path, "results", path.Base(st.File)), Commit: e.Commit, Licence: e.Licence},
			Group:    predict.Group{Family: cmp.Or(family, e.Model), GPU: gpu, Engine: engineName(e.Framework), Load: cfg.Load.Type},
			Measured: map[string]float64{}}
		for from, to := range map[string]string{"ttft": "ttft_ms", "e2e_latency": "e2el_ms"} {
			for stat, key := range map[string]string{"mean": "mean", "median": "p50", "p90": "p90", "p99": "p99"} {
				if v, ok := st.Latency[from][stat]; ok {
					r.Measured[to+"."+key] = v * 1000
				}
			}
		}
		// Every request streamed output_len tokens (ignore_eos), so the mean of each request's
		// (E2E − TTFT) / (tokens − 1) is the means' difference over output_len − 1.
		e2e, okE := r.Measured["e2el_ms.mean"]
		ttft, okT := r.Measured["ttft_ms.mean"]
		if okE && okT && sp.OutputLen > 1 && cfg.Server.IgnoreEOS {
			r.Measured["tpot_ms.mean"] = (e2e - ttft) / float64(sp.OutputLen-1)
		}
		switch {
		case family == "":
			r.Skip = fmt.Sprintf("no model preset for %s (presets: %s)", e.Model, presets())
		case gpu == "":
			r.Skip = fmt.Sprintf("no GPU preset for %q", e.GPU)
		case cfg.Data.Type != "shared_prefix" || sp.MultiTurn || sp.OutputLen == 0 || !cfg.Server.IgnoreEOS:
			r.Skip = fmt.Sprintf("inference-perf data %q (multi-turn %v, output_len %d, ignore_eos %v): only single-turn shared-prefix prompts of a fixed output length are converted",
				cfg.Data.Type, sp.MultiTurn, sp.OutputLen, cfg.Server.IgnoreEOS)
		case cfg.Load.Type != predict.Constant && cfg.Load.Type != predict.Poisson:
			r.Skip = fmt.Sprintf("inference-perf load type %q: only constant and poisson arrivals are converted", cfg.Load.Type)
		case i >= len(cfg.Load.Stages) || cfg.Load.Stages[i].Rate != st.Load.Rate:
			r.Skip = fmt.Sprintf("stage %d's rate %g is not the configuration's", i, st.Load.Rate)
		case st.Failures > 0:
			r.Skip = fmt.Sprintf("overloaded: %d of %d requests failed (TTFT P50 %.0f s), and a backlog's figures say how long it ran, not what the server does",
				st.Failures, st.Failures+st.Successes, st.Latency["ttft"]["median"])
		}
		if r.Skip != "" {
			rows = append(rows, r)
			continue
		}
		eng := e.Serving.Engine
		r.Profile = map[string]any{"model": family, "gpu": gpu,
			"deployment": map[string]any{"tp": e.TP, "max_model_len": eng.MaxModelLen},
			"engine": map[string]any{"kind": r.Group.Engine, "max_num_seqs": eng.MaxNumSeqs,
				"max_batched_tokens": eng.MaxBatchedToken, "prefix_caching": true}}
		r.Workload = Workload{Rate: st.Load.Rate, Arrival: cfg.Load.Type,
			InputTokens:  fmt.Sprintf("uniform:%.0f:%.0f", st.Prompt.Min, st.Prompt.Max),
			OutputTokens: strconv.Itoa(sp.OutputLen),
			Requests:     min(st.Successes, inferencePerfMaxRequests), Warmup: int(math.Ceil(10 * st.Load.Rate)),
			PrefixTokens: sp.SystemPrompt, PrefixGroups: sp.Groups}
		r.Assumptions = []string{
			"GPU " + e.GPU + ": the run files do not record it",
			"fp16 weights and KV cache: the design document's (exp-config.yaml does not record a dtype)",
			"prompts single-turn, as inference-perf's echoed results/config.yaml (what ran) configures them and their realised lengths show (" +
				fmt.Sprintf("%.0f–%.0f tokens, no history)", st.Prompt.Min, st.Prompt.Max),
			fmt.Sprintf("outputs of exactly %d tokens: output_len with ignore_eos (TPOT's mean is (E2E − TTFT) / %d from the means); the source's own output counts are not reliable", sp.OutputLen, sp.OutputLen-1),
			"vLLM's 8 GiB CPU KV offload not simulated: at these rates the GPUs' own cache holds every request in flight",
			fmt.Sprintf("the first %d arrivals (10 s) warm the server and are not measured", r.Workload.Warmup),
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func presets() string {
	p := sim.ModelPresets()
	sort.Strings(p)
	return strings.Join(p, ", ")
}
