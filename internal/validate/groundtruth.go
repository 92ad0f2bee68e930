package validate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

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

// inferencexModels are InferenceX's models as presets.
var inferencexModels = map[string]string{"DeepSeek-R1-0528": "deepseek-r1"}

// inferencexRow converts an InferenceX row: a closed loop of 10 × concurrency requests,
// lengths uniform in [0.8 L, L] (the groundtruth README, from InferenceX's client flags),
// on one aggregated server of the row's GPUs. The rows carry no server flags, so the
// engine limits are assumptions, stated on the row, never fitted to it.
func inferencexRow(raw json.RawMessage) (Row, error) {
	var e inferencexExperiment
	if err := json.Unmarshal(raw, &e); err != nil {
		return Row{}, err
	}
	gpu, _ := gpuPreset(e.GPU)
	name := strings.Fields(e.Model)[0]
	family := inferencexModels[name]
	engine := engineName(strings.TrimPrefix(e.Framework, "dynamo-"))
	r := Row{ID: e.ID, Source: Source{Name: "inferencex", Repo: e.Repo, Path: e.Path, Commit: e.Commit, Licence: e.Licence},
		Group: Group{Family: family, GPU: gpu, Engine: engine, Load: "closed"},
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
	if _, ok := m["median_itl"]; ok {
		r.Assumptions = append(r.Assumptions, "ITL not compared: the source's is the gap between stream events (llmbench's chunk gap), and InferenceX's servers send one every several tokens (stream_interval / --stream-interval 10 or 30 in SemiAnalysisAI/InferenceX benchmarks/single_node/fixed_seq_len/dsr1_*.sh at 843c6254), the simulator one a token; TPOT is compared")
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
	case family == "":
		r.Skip = fmt.Sprintf("no model preset for %s (presets: %s); nor are its server flags in the source", e.Model, presets())
	case gpu == "":
		r.Skip = fmt.Sprintf("no GPU preset for %q", e.GPU)
	case e.Serving.Disagg:
		r.Skip = fmt.Sprintf("disaggregated prefill and decode pools (%d and %d GPUs): a row is one aggregated server yet", e.NumGPUs["prefill"], e.NumGPUs["decode"])
	case e.Serving.Spec == "mtp":
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
	switch e.Dtype {
	case "fp8":
		dep["weight_dtype"] = "fp8"
	case "fp4":
		dep["weight_dtype"] = "nvfp4"
		r.Assumptions = append(r.Assumptions, "fp4 ASSUMED NVFP4 for every weight (NVIDIA's DeepSeek-R1-0528-FP4 quantises the transformer blocks' linear layers)")
	default:
		r.Skip = fmt.Sprintf("dtype %q is not one the simulator names", e.Dtype)
		return r, nil
	}
	dep["kv_dtype"] = "fp8"
	limit := e.Workload.ISL + e.Workload.OSL
	budget, budgetWhy := inferencexStepBudget(e, tp)
	r.Profile = map[string]any{"model": family, "gpu": gpu,
		"engine":     engineKeys(engine, map[string]any{"max_num_seqs": e.Workload.Concurrency, "max_batched_tokens": budget}),
		"deployment": dep}
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
// where a script changed within the rows' span (2025-11 to 2026-07).
func inferencexStepBudget(e inferencexExperiment, tp int) (int, string) {
	const src = " in SemiAnalysisAI/InferenceX's dsr1 script on the row's date"
	switch {
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

// inferencePerfExperiment is what inferencePerfRow reads of a kubernetes-sigs/inference-perf
// row.
type inferencePerfExperiment struct {
	ID        string `json:"id"`
	Repo      string `json:"source_repo"`
	Path      string `json:"path"`
	Commit    string `json:"commit"`
	Model     string `json:"model"`
	TP        int    `json:"tp"`
	Framework string `json:"framework"`
	Workload  struct {
		Stages []struct {
			Rate float64 `json:"rate"`
		} `json:"stages"`
		Data struct {
			SharedPrefix struct {
				MultiTurn bool `json:"enable_multi_turn_chat"`
			} `json:"shared_prefix"`
		} `json:"data"`
	} `json:"workload"`
	Measured struct {
		Summary struct {
			Latency    map[string]map[string]float64 `json:"latency_s"`
			Throughput map[string]float64            `json:"throughput"`
		} `json:"summary"`
	} `json:"measured"`
}

// inferencePerfModels are the inference-perf rows' models as presets.
var inferencePerfModels = map[string]string{
	"meta-llama/Llama-2-70b-hf": "llama-2-70b", "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
}

// inferencePerfRow converts an inference-perf row's facts; every row of the file is a
// multi-turn chat of constant-rate stages, which a row (one level, no conversation
// history) does not express yet, so each is skipped with that reason.
func inferencePerfRow(raw json.RawMessage) (Row, error) {
	var e inferencePerfExperiment
	if err := json.Unmarshal(raw, &e); err != nil {
		return Row{}, err
	}
	family := inferencePerfModels[e.Model]
	r := Row{ID: e.ID, Source: Source{Name: "inference-perf", Repo: e.Repo, Path: e.Path, Commit: e.Commit},
		Group:    Group{Family: family, GPU: "h100", Engine: engineName(e.Framework), Load: "constant"},
		Measured: map[string]float64{}}
	if family == "" {
		r.Group.Family = e.Model
	}
	for from, to := range map[string]string{"ttft": "ttft_ms", "e2e_latency": "e2el_ms"} {
		for stat, key := range map[string]string{"mean": "mean", "median": "p50", "p90": "p90", "p99": "p99"} {
			if v, ok := e.Measured.Summary.Latency[from][stat]; ok {
				r.Measured[to+"."+key] = v * 1000
			}
		}
	}
	if v, ok := e.Measured.Summary.Throughput["output_tokens_per_sec"]; ok {
		r.Measured["output_throughput"] = v
	}
	switch {
	case family == "":
		r.Skip = fmt.Sprintf("no model preset for %s (presets: %s)", e.Model, presets())
	case len(e.Workload.Stages) != 1:
		r.Skip = fmt.Sprintf("%d constant-rate stages: a row is one level", len(e.Workload.Stages))
	case e.Workload.Data.SharedPrefix.MultiTurn:
		r.Skip = "a multi-turn shared-prefix chat at constant arrivals, with prefix caching and a CPU KV offload: not expressible as a row yet"
	default:
		r.Skip = "a single-turn inference-perf row: its converter is not written yet (only multi-turn rows are known)"
	}
	return r, nil
}

func presets() string {
	p := sim.ModelPresets()
	sort.Strings(p)
	return strings.Join(p, ", ")
}
