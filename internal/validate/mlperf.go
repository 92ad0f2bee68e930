package validate

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/sim"
)

// mlperfExperiment is what mlperfRow reads of an MLPerf Inference row of the groundtruth
// file (../shared/groundtruth/README.md).
type mlperfExperiment struct {
	ID              string          `json:"id"`
	Repo            string          `json:"source_repo"`
	Path            string          `json:"path"`
	Commit          string          `json:"commit"`
	Model           string          `json:"model"`
	GPU             string          `json:"gpu"`
	NumGPUs         int             `json:"num_gpus"`
	TP              *int            `json:"tp"`
	Framework       string          `json:"framework_and_version"`
	DtypeWeights    string          `json:"dtype_weights"`
	ServingSettings json.RawMessage `json:"serving_settings"`
	DuplicateOf     string          `json:"duplicate_of"`
	Workload        mlperfWorkload  `json:"workload"`
	Measured        map[string]any  `json:"measured"`
	Constraints     struct {
		TTFTP99 float64 `json:"ttft_p99_limit_ns"`
		TPOTP99 float64 `json:"tpot_p99_limit_ns"`
	} `json:"constraints"`
}

type mlperfWorkload struct {
	Scenario   string  `json:"scenario"`
	TargetQPS  float64 `json:"target_qps"`
	Dataset    string  `json:"dataset"`
	AccuracyOK string  `json:"mean_output_tokens_accuracy_run"`
}

// mlperfLicence is the MLPerf results' licence: these rows may be committed.
const mlperfLicence = "Apache-2.0 (mlcommons/inference_results_v5.1); MLPerf results-usage rules apply to published claims"

// mlperfModels are the MLPerf benchmarks' models as the simulator's presets.
var mlperfModels = map[string]string{
	"llama2-70b-99": "llama-2-70b", "llama2-70b-99.9": "llama-2-70b",
	"llama3.1-8b": "llama-3.1-8b", "mixtral-8x7b": "mixtral-8x7b",
	"llama3.1-405b": "llama-3.1-405b", "deepseek-r1": "deepseek-r1",
}

// mlperfInputs are the input lengths of the MLPerf datasets whose length distribution is
// known, each with where it comes from; a benchmark not here is skipped.
var mlperfInputs = map[string]struct{ dist, why string }{
	// The results state only the cap (processorca.py --seqlen_limit=1024). The dataset's own
	// lengths (tok_input_length of the 24,576 prompts of
	// open_orca_gpt4_tokenized_llama.sampled_24576.pkl, MD5 5fe8be0a…) are summarised in
	// openshift-psap/performance-dashboard, mlperf-data/summaries/llama2-70b-99.csv at commit
	// 7cd1065d1e2c53ee745cbda08e2a8f13a42c93bb (Apache-2.0): mean 222.3, standard deviation
	// 171.5, median 152, P90 519, P99 791, 48-1,021 tokens. The lognormal shape of those
	// moments is the assumption (its median 176, P99 about 1,000); the same for every row.
	"llama-2-70b": {"lognormal:222.3:171.5", "input lengths lognormal of OpenOrca's mean 222.3 and " +
		"standard deviation 171.5 tokens (the 24,576 prompts' tok_input_length, summarised in " +
		"openshift-psap/performance-dashboard mlperf-data/summaries/llama2-70b-99.csv at 7cd1065d; " +
		"median 152, P99 791): the lognormal shape is ASSUMED"},
	// The results name the datasets only. Their prompts' token counts are summarised in the
	// same repository: llama3-1-8b-datacenter.csv at 7cd1065d (len(tok_input) of the 13,368
	// articles of cnn_eval.json: mean 870.7, standard deviation 430.1, median 784, P90 1,480,
	// P99 2,118, 79-2,540) and mixtral-8x7b.csv at 67033bae (tok_input_len of the 15,000
	// prompts of 09292024_mixtral_15k_mintoken2_v1.pkl: mean 427.4, standard deviation
	// 328.6, median 283, P99 1,561, 35-1,948); lognormal of those moments, as above.
	"llama-3.1-8b": {"lognormal:870.7:430.1", "input lengths lognormal of CNN/DailyMail's mean 870.7 and " +
		"standard deviation 430.1 tokens (the 13,368 articles' len(tok_input) in cnn_eval.json, summarised in " +
		"openshift-psap/performance-dashboard mlperf-data/summaries/llama3-1-8b-datacenter.csv at 7cd1065d; " +
		"median 784, P99 2,118): the lognormal shape is ASSUMED"},
	"mixtral-8x7b": {"lognormal:427.4:328.6", "input lengths lognormal of the MLPerf Mixtral mix's mean 427.4 and " +
		"standard deviation 328.6 tokens (the 15,000 prompts' tok_input_len in 09292024_mixtral_15k_mintoken2_v1.pkl, " +
		"summarised in openshift-psap/performance-dashboard mlperf-data/summaries/mixtral-8x7b.csv at 67033bae; " +
		"median 283, P99 1,561): the lognormal shape is ASSUMED"},
	// The same repository's summaries of the two larger benchmarks' datasets (tok_input_len):
	// llama3-1-405b.csv at 67033bae, the 8,313 prompts of
	// mlperf_llama3.1_405b_dataset_8313_processed_fp16_eval.pkl: mean 9,428.6, standard
	// deviation 4,067.2, median 10,112, P99 18,958, 476-19,988; deepseek-r1.csv at 7cd1065d, the
	// 4,388 of mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl: mean 803.8, standard deviation
	// 405.7, median 901, P99 1,432, 52-3,140. Both medians lie above their means (the lengths
	// lean left), so a normal of those moments, not a lognormal, is the assumed shape.
	"llama-3.1-405b": {"normal:9428.6:4067.2", "input lengths normal of the MLPerf Llama-3.1-405B set's mean 9,428.6 and " +
		"standard deviation 4,067.2 tokens (the 8,313 prompts' tok_input_len in mlperf_llama3.1_405b_dataset_8313_processed_fp16_eval.pkl, " +
		"summarised in openshift-psap/performance-dashboard mlperf-data/summaries/llama3-1-405b.csv at 67033bae; " +
		"median 10,112, P99 18,958): the normal shape is ASSUMED"},
	"deepseek-r1": {"normal:803.8:405.7", "input lengths normal of the MLPerf DeepSeek-R1 set's mean 803.8 and " +
		"standard deviation 405.7 tokens (the 4,388 prompts' tok_input_len in mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl, " +
		"summarised in openshift-psap/performance-dashboard mlperf-data/summaries/deepseek-r1.csv at 7cd1065d; " +
		"median 901, P99 1,432): the normal shape is ASSUMED"},
}

var tokensPerSample = regexp.MustCompile(`TOKENS_PER_SAMPLE:\s*([0-9.]+)`)

// mlperfRow converts an MLPerf Server/Interactive row: Poisson arrivals at the target QPS
// on num_gpus/tp replicas of the submitter's engine limits.
func mlperfRow(raw json.RawMessage) (Row, error) {
	var e mlperfExperiment
	if err := json.Unmarshal(raw, &e); err != nil {
		return Row{}, err
	}
	r := Row{ID: e.ID, Source: Source{Name: "mlperf", Repo: e.Repo, Path: e.Path, Commit: e.Commit, Licence: mlperfLicence},
		Measured: mlperfMeasured(e.Measured)}
	model := mlperfModels[e.Model]
	dataset := model // the benchmark's model, whose dataset the prompts are
	cfg, fromFiles := mlperfConfigs[e.ID]
	if fromFiles {
		if cfg.Model != "" {
			model = cfg.Model
		}
		if cfg.TP > 0 {
			tp, gpus := cfg.TP, cfg.TP*cfg.Replicas
			e.TP, e.NumGPUs, e.DtypeWeights = &tp, gpus, cfg.WeightDtype
		}
	}
	gpu := gpuPreset(e.GPU)
	r.Group = predict.Group{Family: model, GPU: gpu, Engine: engineName(e.Framework), Load: predict.Poisson}
	if r.Group.Family == "" {
		r.Group.Family = e.Model
	}
	if r.Group.GPU == "" {
		r.Group.GPU = strings.TrimPrefix(e.GPU, "NVIDIA ")
	}
	if r.Skip = cfg.Skip; r.Skip == "" {
		r.Skip = mlperfSkip(&e, model, dataset, gpu)
	}
	if r.Skip != "" {
		return r, nil
	}
	seqs, tokens, kv, err := cfg.MaxNumSeqs, cfg.MaxBatchedTokens, cfg.KVDtype, ""
	if fromFiles {
		r.Assumptions = append(r.Assumptions, fmt.Sprintf("parallelism and engine limits read from %s at %.8s (the "+
			"groundtruth file left them out): %s", cfg.From, e.Commit, cfg.What))
		r.Assumptions = append(r.Assumptions, cfg.Assumed...)
	} else if seqs, tokens, err = mlperfLimits(e.ServingSettings); err != "" {
		r.Skip = err
		return r, nil
	}
	switch {
	case kv != "":
	case r.Group.Engine == sim.EngineTensorRTLLM && nvidiaKVUnstated(e.Model, gpu, e.Workload.Scenario):
		kv = sim.DtypeBF16
		r.Assumptions = append(r.Assumptions, nvidiaKVUnstatedWhy)
	default:
		kv = "fp8" // NVIDIA's harness configs state kv_cache_dtype fp8
		if amd(gpu) {
			r.Assumptions = append(r.Assumptions, "kv_dtype ASSUMED fp8, as NVIDIA's harness configs state it (the AMD submitter's are not read)")
		}
	}
	wd, wdWhy := weightDtype(e.DtypeWeights, gpu)
	if wdWhy != "" {
		r.Assumptions = append(r.Assumptions, wdWhy)
	}
	out, outWhy := meanOutput(&e)
	in := mlperfInputs[dataset]
	r.Assumptions = append(r.Assumptions, in.why, fmt.Sprintf("output lengths ASSUMED normal, mean %.4g "+
		"(%s), standard deviation half the mean", out, outWhy))
	r.Workload = Workload{Rate: e.Workload.TargetQPS, InputTokens: in.dist,
		OutputTokens: fmt.Sprintf("normal:%.4g:%.4g", out, out/2)}
	r.Workload.Requests, r.Workload.Warmup = openLoopRequests(e.Workload.TargetQPS)
	if c := e.Constraints; c.TTFTP99 > 0 && c.TPOTP99 > 0 {
		r.Limits = &Limits{TTFTP99Ms: c.TTFTP99 / 1e6, TPOTP99Ms: c.TPOTP99 / 1e6, SubmittedRate: e.Workload.TargetQPS}
	}
	tp := *e.TP
	engine := map[string]any{"max_num_seqs": seqs, "max_batched_tokens": tokens}
	if cfg.GPUMemoryUtilization > 0 {
		engine["gpu_memory_utilization"] = cfg.GPUMemoryUtilization
	}
	if r.Group.Engine == sim.EngineTensorRTLLM {
		if graphs, why := mlperfGraphs(e.ID, e.Model, gpu); graphs != "" {
			engine["cuda_graphs"] = graphs
			r.Assumptions = append(r.Assumptions, why)
		}
	}
	deployment := map[string]any{"tp": tp, "replicas": e.NumGPUs / tp, "weight_dtype": wd, "kv_dtype": kv}
	if r.Group.Engine == sim.EngineTensorRTLLM && e.NumGPUs/tp > 1 {
		router, why := mlperfRouter(e.Workload.Scenario)
		deployment["router"] = router
		r.Assumptions = append(r.Assumptions, why)
	}
	r.Profile = map[string]any{
		"model": model, "gpu": gpu,
		"engine":     engineKeys(r.Group.Engine, engine),
		"deployment": deployment,
	}
	if shape, _ := sim.ModelPreset(model); r.Group.Engine == sim.EngineTensorRTLLM && shape.MoE() && shape.KVLoraRank == 0 {
		// TensorRT-LLM's prefill constant is its PyTorch backend's (trtllm-serve's), fitted on
		// InferenceX's rows; MLPerf's harness runs engines it builds, but for DeepSeek's
		// (multi-head latent attention), which TensorRT-LLM runs in its PyTorch backend alone.
		r.Profile["cost"] = map[string]any{sim.CostKeyPrefillMoELayerUs: 0}
		r.Assumptions = append(r.Assumptions, "cost.prefill_moe_layer_overhead_us 0: the submitters' TensorRT-LLM runs TensorRT engines "+
			"their harness builds (trtllm_build_flags; NVIDIA's code/llmlib/cores/trtllm_executor_core.py), not the PyTorch backend "+
			"whose cost a step that prefills InferenceX's rows measured")
	}
	return r, nil
}

// mlperfGraphsStated are the llama3_1-8b configs of NVIDIA's harness on H200 that state
// use_graphs True (the others on H200 and H200 NVL state False; every B200 one, True).
var mlperfGraphsStated = map[string]bool{"5.1-0049|HPE|HPE_Cray_XD670_H200_SXM_141GBx8_TRT|llama3.1-8b|Server": true}

// mlperfGraphs is engine.cuda_graphs of an MLPerf row of NVIDIA's harness, which runs the
// TensorRT engines it builds with CUDA graphs as its config's use_graphs says (v5.1's
// closed/*/configs/*/{Server,Interactive}/*.py, read at 965182b0), with why; "" for a
// benchmark not read. TensorRT-LLM's runtime replays graphs of generation-only steps.
func mlperfGraphs(id, benchmark, gpu string) (graphs, why string) {
	switch {
	case strings.HasPrefix(benchmark, "llama2-70b"), benchmark == "mixtral-8x7b":
		return sim.GraphsNone, "engine.cuda_graphs none: every Server and Interactive config of NVIDIA's harness for llama2-70b " +
			"(65 files) and mixtral-8x7b (18) in v5.1 states use_graphs False"
	case benchmark != "llama3.1-8b":
		return "", ""
	case gpu == "b200" || mlperfGraphsStated[id]:
		return sim.GraphsDecode, "engine.cuda_graphs decode: the submitter's llama3_1-8b config states use_graphs True (every B200 " +
			"one in v5.1 does), and TensorRT-LLM's runtime replays graphs of generation-only steps"
	}
	return sim.GraphsNone, "engine.cuda_graphs none: the submitter's llama3_1-8b config states use_graphs False, as every " +
		"H200 and H200 NVL one in v5.1 does but HPE's Server config"
}

// nvidiaKVUnstated says whether a benchmark's configs of NVIDIA's harness for a scenario on a
// GPU state no kv_cache_dtype: none of the 14 Interactive llama2-70b.py on B200 in v5.1 does
// (965182b0), where every Server one states fp8, as every config on H200 does.
func nvidiaKVUnstated(benchmark, gpu, scenario string) bool {
	return strings.HasPrefix(benchmark, "llama2-70b") && gpu == "b200" && scenario == "Interactive"
}

// nvidiaKVUnstatedWhy is the KV cache such a row takes, with why: the harness quantizes the
// checkpoint with the config's checkpoint flags alone (code/llmlib/builder.py), and TensorRT-LLM's
// examples/quantization/quantize.py leaves the cache unquantized without --kv_cache_dtype.
const nvidiaKVUnstatedWhy = "kv_dtype bf16 (16-bit; the harness quantizes from fp16): the config's checkpoint flags state no " +
	"kv_cache_dtype, as none of the 14 Interactive llama2-70b configs on B200 in v5.1 does (every Server one states fp8), and " +
	"NVIDIA's harness passes only those flags (code/llmlib/builder.py) to TensorRT-LLM's quantize.py, whose kv_cache_dtype " +
	"defaults to none, the cache unquantized. ASSUMED that the engine was built from that checkpoint: the harness keeps one " +
	"checkpoint directory per precision, which a Server run's quantization (fp8 KV) could have filled first"

// mlperfRouter is deployment.router of an MLPerf row of NVIDIA's harness, with why. Its LLM
// server hands each query to one GPU's engine by the scenario's traffic distribution policy
// (code/llmlib/config.py and factory.py, the same in every submitter's copy in v5.1, and no
// config sets another): to the engine with the fewest pending samples in the Server
// scenario, round robin in the others. Round robin spreads a Poisson stream into each
// engine's far smoother one (every replicas-th arrival).
func mlperfRouter(scenario string) (router, why string) {
	const src = "NVIDIA's harness (code/llmlib/config.py, every submitter's copy in v5.1) distributes queries over its engines "
	if scenario == "Server" {
		return sim.RouterLeastOutstanding, "deployment.router least-outstanding: " + src +
			"to the engine with the fewest pending samples in the Server scenario (load_balancing)"
	}
	return sim.RouterRoundRobin, "deployment.router round-robin: " + src + "round robin in the " + scenario + " scenario"
}

// mlperfSkip is why an MLPerf row cannot be simulated; "" when it can.
func mlperfSkip(e *mlperfExperiment, model, dataset, gpu string) string {
	weights, _ := weightDtype(e.DtypeWeights, gpu)
	switch {
	case e.DuplicateOf != "":
		return "the same run as " + e.DuplicateOf + " submitted under another accuracy target"
	case model == "":
		return fmt.Sprintf("no model preset for MLPerf benchmark %q", e.Model)
	case gpu == "":
		return fmt.Sprintf("no GPU preset for %q", e.GPU)
	case e.TP == nil || *e.TP < 1:
		return "tensor parallelism not stated (not extracted from the submitter's code)"
	case e.NumGPUs%*e.TP != 0:
		return fmt.Sprintf("%d GPUs is not a whole number of tp-%d replicas", e.NumGPUs, *e.TP)
	case !simEngine(engineName(e.Framework)):
		return fmt.Sprintf("engine %q is not one the simulator models (%s, %s, %s)", e.Framework, sim.EngineVLLM, sim.EngineSGLang, sim.EngineTensorRTLLM)
	case weights == "":
		return fmt.Sprintf("weight dtype %q not stated", e.DtypeWeights)
	case mlperfInputs[dataset].dist == "":
		return "the dataset's input-length distribution is not in the source (" + e.Workload.Dataset + ")"
	}
	if out, _ := meanOutput(e); out <= 0 {
		return "the row states no mean output tokens (TOKENS_PER_SAMPLE, or completed tokens and samples per second)"
	}
	return ""
}

// meanOutput is a row's mean output tokens a sample and where it was read: its accuracy
// run's TOKENS_PER_SAMPLE, else its performance run's completed tokens over completed
// samples (the llama3.1-8b accuracy runs state GEN_LEN, a sum of characters). Where a row
// states both, they agree within 0.1 % (Llama-2-70B: 292.7 and 292.74).
func meanOutput(e *mlperfExperiment) (float64, string) {
	if m := tokensPerSample.FindStringSubmatch(e.Workload.AccuracyOK); m != nil {
		v, _ := strconv.ParseFloat(m[1], 64)
		return v, "the row's own accuracy run's TOKENS_PER_SAMPLE"
	}
	tok, _ := e.Measured["completed_tokens_per_s"].(float64)
	samples, _ := e.Measured["completed_samples_per_s"].(float64)
	if tok > 0 && samples > 0 {
		return tok / samples, "the row's performance run's completed tokens per completed sample"
	}
	return 0, ""
}

// mlperfLimits are the engine's max_num_seqs and max_batched_tokens from the submitter's
// config; a reason instead when the config holds none or several.
func mlperfLimits(raw json.RawMessage) (seqs, tokens int, skip string) {
	var s struct {
		Batch  []int `json:"gpu_batch_size"`
		Tokens []int `json:"max_num_tokens"`
	}
	if json.Unmarshal(raw, &s) != nil || len(s.Batch) == 0 || len(s.Tokens) == 0 {
		return 0, 0, "engine limits (gpu_batch_size, max_num_tokens) not extracted from the submitter's config"
	}
	if len(s.Batch) > 1 || len(s.Tokens) > 1 {
		return 0, 0, fmt.Sprintf("the submitter's config holds several engine limits (gpu_batch_size %v, max_num_tokens %v): which ran is not known", s.Batch, s.Tokens)
	}
	return s.Batch[0], s.Tokens[0], ""
}

// mlperfMeasured maps the loadgen's figures to summary.json's names (docs/metrics.md).
func mlperfMeasured(m map[string]any) map[string]float64 {
	out := map[string]float64{}
	num := func(k string) (float64, bool) { v, ok := m[k].(float64); return v, ok }
	for _, metric := range []struct{ from, to string }{{"ttft", "ttft_ms"}, {"tpot", "tpot_ms"}, {"e2e", "e2el_ms"}} {
		for _, stat := range []string{"mean", "p50", "p90", "p95", "p99"} {
			if v, ok := num(metric.from + "_" + stat + "_ns"); ok {
				out[metric.to+"."+stat] = v / 1e6
			}
		}
	}
	if v, ok := num("completed_tokens_per_s"); ok {
		out["output_throughput"] = v
	}
	if v, ok := num("completed_samples_per_s"); ok {
		out["request_throughput"] = v
	}
	return out
}

// gpuPreset maps a source's GPU name (MLPerf's "NVIDIA B200-SXM-180GB", "AMD Instinct
// MI300X", "MI325X_x8"; InferenceX's "b200", "mi355x") to the simulator's preset; "" when
// none: the first of gpuNames its name matches.
func gpuPreset(name string) string {
	n := strings.ToUpper(name)
	for _, g := range gpuNames {
		if g.name.MatchString(n) {
			return g.preset
		}
	}
	return ""
}

// gpuNames are the GPU names the presets stand for, in the order they are tried where one
// name holds another (GB300 holds B300, GB200 B200, GH200 and H200 NVL H200, H200 H20, L40S
// and L40 L4, A100 A10); a name that must stand alone (H20, L4) is matched as a word of its own ("NVIDIA
// L4", "L4_x8", "h20-96gb"). A preset of "" is a GPU whose name holds a preset's but which is
// not that preset: a GB300 (Blackwell Ultra: other rates and memory) is not a GB200 or a
// B300, a GH200 (96 GB HBM3 or 144 GB HBM3e) neither the h100 nor the h200, an MI350X the
// MI355X's chip at lower clocks and power.
var gpuNames = []struct {
	name   *regexp.Regexp
	preset string
}{
	{name: regexp.MustCompile(`GB300|GH200|MI350X`)},
	{regexp.MustCompile(`GB200`), "gb200"},
	{regexp.MustCompile(`H200.*NVL|NVL.*H200`), "h200-nvl"},
	{regexp.MustCompile(`H200`), "h200"},
	{regexp.MustCompile(`H100`), "h100"},
	{gpuWord("H20"), "h20"},
	{regexp.MustCompile(`B300`), "b300"},
	{regexp.MustCompile(`B200`), "b200"},
	{regexp.MustCompile(`L40S`), "l40s"},
	{gpuWord("L4"), "l4"},
	{regexp.MustCompile(`A100`), "a100"},
	{regexp.MustCompile(`A10G`), "a10g"},
	{regexp.MustCompile(`RTX[^A-Z0-9]*PRO[^A-Z0-9]*6000`), "rtx-pro-6000"},
	{regexp.MustCompile(`MI300X`), "mi300x"},
	{regexp.MustCompile(`MI325X`), "mi325x"},
	{regexp.MustCompile(`MI355X`), "mi355x"},
}

// gpuWord matches name as a word of its own in an upper-case GPU name.
func gpuWord(name string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^A-Z0-9])` + name + `($|[^A-Z0-9])`)
}

// engineName is a framework string's engine.
func engineName(fw string) string {
	f := strings.ToLower(fw)
	switch {
	case strings.Contains(f, "tensorrt"), f == "trt":
		return "tensorrt-llm"
	case strings.Contains(f, "vllm"):
		return "vllm"
	case strings.Contains(f, "sglang"):
		return "sglang"
	}
	return f
}

// simEngine says whether the simulator names an engine (engineName's).
func simEngine(engine string) bool {
	switch engine {
	case sim.EngineVLLM, sim.EngineSGLang, sim.EngineTensorRTLLM:
		return true
	}
	return false
}

// engineKeys are a row's engine keys with its engine's kind, where the simulator names it.
func engineKeys(engine string, keys map[string]any) map[string]any {
	if simEngine(engine) {
		keys["kind"] = engine
	}
	return keys
}

// weightDtype is a source's weight dtype on a GPU preset as the simulator names it, with
// the assumption it rests on where the name is not the simulator's own; "" when unstated.
func weightDtype(d, gpu string) (dtype, why string) {
	switch d := strings.ToLower(d); d {
	case sim.DtypeFP8, sim.DtypeMXFP4, sim.DtypeNVFP4, sim.DtypeBF16:
		return d, ""
	case "fp16":
		return sim.DtypeBF16, "fp16 weights simulated as bf16: the same 2 bytes an element and the same tensor rate"
	case "fp4":
		if amd(gpu) {
			return sim.DtypeMXFP4, amdFP4
		}
		return sim.DtypeNVFP4, "" // NVIDIA's MLPerf fp4 submissions are NVFP4
	}
	return "", ""
}

// amdFP4 is why fp4 on an AMD GPU is simulated as MXFP4.
const amdFP4 = "fp4 on AMD ASSUMED MXFP4 for every weight: AMD's fp4 is OCP's microscaling format (CDNA 4's " +
	"matrix cores compute MXFP4 and have no NVFP4; AMD's fp4 checkpoints, amd/*-MXFP4, are quantised with Quark to it)"

// openLoopRequests is how many requests a Poisson row at rate simulates, and how many
// before them it leaves out while the deployment fills: MLPerf's Server scenario runs at
// least 600 s, and a fleet whose requests decode hundreds of tokens takes tens of seconds to
// fill, so a minute's run ends before its figures settle or its backlog could show whether
// it keeps up.
func openLoopRequests(rate float64) (requests, warmup int) {
	return max(2000, int(rate*600)), max(500, int(rate*60))
}
