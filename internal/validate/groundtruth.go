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
	ID        string         `json:"id"`
	Repo      string         `json:"source_repo"`
	Path      string         `json:"path"`
	Commit    string         `json:"commit"`
	Licence   string         `json:"licence"`
	Model     string         `json:"model"`
	GPU       string         `json:"gpu"`
	NumGPUs   map[string]int `json:"num_gpus"`
	Framework string         `json:"framework"`
	Serving   struct {
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

// inferencexRow converts an InferenceX row: a closed loop of 10 × concurrency requests,
// lengths uniform in [0.8 L, L] (the groundtruth README, from InferenceX's client flags).
func inferencexRow(raw json.RawMessage) (Row, error) {
	var e inferencexExperiment
	if err := json.Unmarshal(raw, &e); err != nil {
		return Row{}, err
	}
	gpu, _ := gpuPreset(e.GPU)
	r := Row{ID: e.ID, Source: Source{Name: "inferencex", Repo: e.Repo, Path: e.Path, Commit: e.Commit, Licence: e.Licence},
		Group: Group{Family: strings.Fields(e.Model)[0], GPU: gpu, Engine: engineName(strings.TrimPrefix(e.Framework, "dynamo-")), Load: "closed"},
		Workload: Workload{Concurrency: e.Workload.Concurrency, Requests: 10 * e.Workload.Concurrency,
			InputTokens:  fmt.Sprintf("uniform:%d:%d", e.Workload.ISL*8/10, e.Workload.ISL),
			OutputTokens: fmt.Sprintf("uniform:%d:%d", e.Workload.OSL*8/10, e.Workload.OSL)},
		Measured: map[string]float64{}}
	m := e.Measured
	for _, metric := range []string{"ttft", "tpot", "itl", "e2el"} {
		for stat, key := range map[string]string{"mean": "mean", "median": "p50", "p99": "p99"} {
			if v, ok := m[stat+"_"+metric]; ok {
				r.Measured[metric+"_ms."+key] = v * 1000
			}
		}
	}
	if v, ok := m["output_tput_per_gpu"]; ok {
		r.Measured["output_throughput"] = v * float64(e.NumGPUs["prefill"]+e.NumGPUs["decode"]*boolInt(e.Serving.Disagg))
	}
	if _, ok := sim.ModelPreset(r.Group.Family); !ok {
		r.Skip = fmt.Sprintf("no model preset for %s (presets: %s); nor are its server flags in the source", e.Model, presets())
	}
	return r, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
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
