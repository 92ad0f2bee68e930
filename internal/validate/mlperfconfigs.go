package validate

import "fmt"

// mlperfConfig is what a submitter's own files state about an MLPerf row that the
// groundtruth file leaves without parallelism or engine limits (tp null, serving settings
// "not extracted"), read by hand from the file named, in mlcommons/inference_results_v5.1 at
// the row's commit. Facts, not fits: a value a file does not state is marked ASSUMED in
// Assumed, with where the default comes from, or the row keeps a reason to be skipped.
type mlperfConfig struct {
	From string // the file the facts were read from
	What string // what that file says, as the row's provenance
	// Model is the simulator's preset where an open-division submission served another
	// model than the benchmark's; "" for the benchmark's own.
	Model                        string
	TP, Replicas                 int
	MaxNumSeqs, MaxBatchedTokens int
	WeightDtype, KVDtype         string
	GPUMemoryUtilization         float64 // 0: the engine's default
	Assumed                      []string
	Skip                         string
}

// nvidiaHarness is a config of NVIDIA's MLPerf harness (TensorRT-LLM): tp 1 on each GPU. kv
// is the kv_cache_dtype its checkpoint flags state, "" for none (mlperfRow: nvidiaKVUnstated).
func nvidiaHarness(from string, seqs, tokens int, qps, kv string) mlperfConfig {
	return mlperfConfig{From: from, TP: 1, Replicas: 8, MaxNumSeqs: seqs, MaxBatchedTokens: tokens,
		WeightDtype: "nvfp4", KVDtype: kv,
		What: fmt.Sprintf("the Custom harness's MaxP setting states tensor_parallelism 1, gpu_batch_size %d, max_num_tokens %d, "+
			"precision fp4, %s and server_target_qps %s (the row's QPS)", seqs, tokens, kvStated(kv), qps)}
}

// kvStated is what a config's checkpoint flags state of the KV cache: kv_cache_dtype kv, or
// none where kv is "".
func kvStated(kv string) string {
	if kv == "" {
		return "no kv_cache_dtype"
	}
	return "kv_cache_dtype " + kv
}

// nvidiaRuntimeBudget is a config of NVIDIA's harness (TensorRT-LLM, tp 1 on each of 8 GPUs)
// whose engine is built for a larger step (trtllm_build_flags max_num_tokens) than it runs
// (trtllm_runtime_flags max_num_tokens): the harness's executor core hands TensorRT-LLM the
// run-time figure (ExecutorConfig's max_num_tokens, code/llmlib/cores/trtllm_executor_core.py)
// and asserts it within the built one (code/llmlib/config.py), so the run-time one is the
// step's token budget. settings names the file's settings that state them; kv the
// kv_cache_dtype their checkpoint flags state, "" for none (mlperfRow: nvidiaKVUnstated).
func nvidiaRuntimeBudget(from, settings string, seqs, built, runtime int, precision, kv string) mlperfConfig {
	c := mlperfConfig{From: from, TP: 1, Replicas: 8, MaxNumSeqs: seqs, MaxBatchedTokens: runtime,
		WeightDtype: precision, KVDtype: kv}
	c.What = fmt.Sprintf("%s state tensor_parallelism 1, gpu_batch_size %d, precision %s, %s, and max_num_tokens %d "+
		"built and %d at run time: the submitter's harness runs TensorRT-LLM's executor with the run-time figure "+
		"(code/llmlib/cores/trtllm_executor_core.py) and asserts it within the built one", settings, seqs, precision, kvStated(kv), built, runtime)
	return c
}

// kraiOpenAI is one of Krai's open-division submissions: Llama-3.1-70B-Instruct served by
// data-parallel OpenAI-compatible servers, its settings the performance command in the
// measurement's README.
func kraiOpenAI(from, engine string, tp, dp, seqs, tokens int, mem float64, weights string) mlperfConfig {
	c := mlperfConfig{From: from, Model: "llama-3.1-70b", TP: tp, Replicas: dp, MaxNumSeqs: seqs, MaxBatchedTokens: tokens,
		WeightDtype: "fp8", KVDtype: "bf16", GPUMemoryUtilization: mem,
		Assumed: []string{
			"an open-division submission: Llama-3.1-70B-Instruct (" + weights + ") on the Llama-2-70B benchmark's OpenOrca " +
				"prompts, whose lengths are counted in Llama-2's tokens: Llama-3.1's tokenizer may count them differently (ASSUMED the same)",
			"KV cache ASSUMED bf16: the command sets no KV cache dtype, and the engine's default is the model's"}}
	switch engine {
	case "vllm":
		c.What = fmt.Sprintf("vLLM 0.9.2, tp %d, dp %d, quantization as the model path says, max_num_seqs %d, "+
			"max_num_batched_tokens %d, gpu_memory_utilization %g", tp, dp, seqs, tokens, mem)
	case "sglang":
		c.What = fmt.Sprintf("SGLang 0.4.9, tp %d, dp %d, max_running_requests %d, mem_fraction_static %g", tp, dp, seqs, mem)
		c.Assumed = append(c.Assumed, fmt.Sprintf("max_batched_tokens ASSUMED %d: the command sets no chunked_prefill_size, "+
			"and SGLang's server_args.py of that time sizes it %d on a GPU of 35-160 GB", tokens, tokens))
	}
	return c
}

// mlperfConfigs are the rows whose facts were read from the submitters' files.
var mlperfConfigs = map[string]mlperfConfig{
	"5.1-0060|Lambda|B200-SXM-180GBx8_TRT|llama2-70b-99|Server": nvidiaHarness(
		"closed/Lambda/configs/B200-SXM-180GBx8_TRT/Server/llama2-70b.py", 2048, 3584, "364", "fp8"),
	"5.1-0086|Supermicro|AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99|Server": nvidiaHarness(
		"closed/Supermicro/configs/AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT/Server/llama2-70b.py", 2048, 3584, "364", "fp8"),
	"5.1-0086|Supermicro|AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99.9|Server": nvidiaHarness(
		"closed/Supermicro/configs/AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT/Server/llama2-70b.py", 2048, 3584, "364", "fp8"),
	"5.1-0086|Supermicro|AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT|llama3.1-8b|Interactive": nvidiaHarness(
		"closed/Supermicro/configs/AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT/Interactive/llama3_1-8b.py", 6000, 12000, "950", "fp8"),
	"5.1-0086|Supermicro|AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT|llama3.1-8b|Server": nvidiaHarness(
		"closed/Supermicro/configs/AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT/Server/llama3_1-8b.py", 6000, 12000, "1000", "fp8"),
	"5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99|Interactive": nvidiaHarness(
		"closed/Supermicro/configs/SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT/Interactive/llama2-70b.py", 768, 768, "220", ""),
	"5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99|Server": nvidiaHarness(
		"closed/Supermicro/configs/SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT/Server/llama2-70b.py", 2048, 3584, "364", "fp8"),
	"5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99.9|Interactive": nvidiaHarness(
		"closed/Supermicro/configs/SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT/Interactive/llama2-70b.py", 768, 768, "220", ""),
	"5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99.9|Server": nvidiaHarness(
		"closed/Supermicro/configs/SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT/Server/llama2-70b.py", 2048, 3584, "364", "fp8"),
	"5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama3.1-8b|Server": nvidiaHarness(
		"closed/Supermicro/configs/SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT/Server/llama3_1-8b.py", 6000, 12000, "950", "fp8"),

	"5.1-0378|Krai|xd670_h200_x16_vllm_092|llama2-70b-99.9|Server": kraiOpenAI(
		"open/Krai/measurements/xd670_h200_x16_vllm_092/llama3_1-70b-fp8_dyn/server/README.md", "vllm", 1, 16, 909, 25162, 0.95,
		"weights quantized to fp8 by vLLM at load"),
	"5.1-0379|Krai|xd670_h200_x24_vllm_092|llama2-70b-99.9|Server": kraiOpenAI(
		"open/Krai/measurements/xd670_h200_x24_vllm_092/llama3_1-70b-fp8_dyn/server/README.md", "vllm", 1, 24, 914, 31167, 0.95,
		"weights quantized to fp8 by vLLM at load"),
	"5.1-0380|Krai|xd670_h200_x8_sglang_049|llama2-70b-99.9|Server": kraiOpenAI(
		"open/Krai/measurements/xd670_h200_x8_sglang_049/llama3_1-70b-fp8_dyn/server/README.md", "sglang", 1, 8, 1558, 8192, 0.9,
		"weights quantized to fp8 by SGLang at load"),
	"5.1-0381|Krai|xd670_h200_x8_sglang_049|llama2-70b-99.9|Server": kraiOpenAI(
		"open/Krai/measurements/xd670_h200_x8_sglang_049/llama3_1-70b-fp8_pre/server/README.md", "sglang", 1, 8, 1405, 8192, 0.9,
		"Meta-Llama-3.1-70B-Instruct-FP8, a checkpoint quantized beforehand"),
	"5.1-0382|Krai|xd670_h200_x8_vllm_092|llama2-70b-99.9|Server": kraiOpenAI(
		"open/Krai/measurements/xd670_h200_x8_vllm_092/llama3_1-70b-fp8_dyn/server/README.md", "vllm", 1, 8, 858, 36498, 0.95,
		"weights quantized to fp8 by vLLM at load"),
	"5.1-0383|Krai|xd670_h200_x8_vllm_092|llama2-70b-99.9|Server": kraiOpenAI(
		"open/Krai/measurements/xd670_h200_x8_vllm_092/llama3_1-70b-fp8_pre/server/README.md", "vllm", 1, 8, 917, 30850, 0.95,
		"Meta-Llama-3.1-70B-Instruct-FP8, a checkpoint quantized beforehand (compressed-tensors)"),
	"5.1-0384|Krai|xe9680_h100_x8_vllm_092|llama2-70b-99.9|Interactive": kraiOpenAI(
		"open/Krai/measurements/xe9680_h100_x8_vllm_092/llama3_1-70b-fp8_dyn/interactive/README.md", "vllm", 2, 4, 2476, 12140, 0.9,
		"weights quantized to fp8 by vLLM at load"),
	"5.1-0384|Krai|xe9680_h100_x8_vllm_092|llama2-70b-99.9|Server": kraiOpenAI(
		"open/Krai/measurements/xe9680_h100_x8_vllm_092/llama3_1-70b-fp8_dyn/server/README.md", "vllm", 2, 4, 2476, 12140, 0.9,
		"weights quantized to fp8 by vLLM at load"),
	// Mixtral: the file's three settings (Custom MaxP, Triton MaxP, Custom MaxQ) differ in QPS
	// and power only.
	"5.1-0007|ASUSTeK|ESC_N8_H200-SXM-141GBx8_TRT|mixtral-8x7b|Server": withAssumed(nvidiaRuntimeBudget(
		"closed/ASUSTeK/configs/ESC_N8_H200-SXM-141GBx8/Server/mixtral-8x7b.py", "all three of its settings (Custom and Triton MaxP, Custom MaxQ)",
		3072, 16384, 8192, "fp8", "fp8"),
		mixtralEffectiveBits,
		"the limits are ASSUMED to be the run's: the run's QPS, 410 (mlperf_log_detail.txt), is neither the config's "+
			"(413 Custom MaxP, 410.88 Triton, 311.6 MaxQ) nor the measurement's user.conf's (379.96), so the run was launched "+
			"with a QPS given elsewhere; the file states the same limits in every setting"),
	"5.1-0049|HPE|HPE_Cray_XD670_H200_SXM_141GBx8_TRT|mixtral-8x7b|Server": withAssumed(nvidiaRuntimeBudget(
		"closed/HPE/configs/HPE_Cray_XD670_H200_SXM_141GBx8/Server/mixtral-8x7b.py", "the Custom harness's MaxP setting (server_target_qps 416, "+
			"the row's QPS) and the file's two others",
		3072, 16384, 8192, "fp8", "fp8"),
		mixtralEffectiveBits),
	"5.1-0046|GigaComputing|G894-SD1_B200-SXM-180GBx8_TRT|llama2-70b-99|Interactive": nvidiaRuntimeBudget(
		"closed/GigaComputing/configs/G894-SD1_B200-SXM-180GBx8/Interactive/llama2-70b.py", "the Custom harness's MaxP settings "+
			"of both accuracy targets (server_target_qps 230, the row's QPS)",
		768, 768, 512, "fp4", ""),

	// Rows whose files state too little.
	"5.1-0076|Oracle|B200-SXM-180GBx8_TRT|llama3.1-8b|Server": {
		From: "closed/Oracle/configs/B200-SXM-180GBx8/Server/llama3_1-8b.py",
		Skip: "the submitter's config is not the one that ran: it states max_num_tokens 1,536 built and 12,000 at run time, " +
			"which Oracle's own harness refuses (code/llmlib/config.py asserts the run-time figure within the built one), and " +
			"server_target_qps 850 where the run's was 1,000 (mlperf_log_detail.txt): the token budget that ran is not known"},
	"5.1-0070|NVIDIA|GB200-NVL72_GB200-186GB_aarch64x4_TRT|llama2-70b-99|Interactive": {
		From: "closed/NVIDIA/measurements/GB200-NVL72_GB200-186GB_aarch64x4_TRT/llama2-70b-99/Interactive/",
		Skip: "NVIDIA's configs hold no Interactive llama2-70b.py for GB200-NVL72_GB200-186GB_aarch64x4 (only Offline and " +
			"Server), and the measurement folder states only target_qps 110 (user.conf) and NVIDIA's make commands (README.md); " +
			"mlperf_log_detail.txt records loadgen's settings only: tensor parallelism and engine limits not stated"},
	"5.1-0013|Cisco|C885A_M8_H200_SXM_141GBx16_TRT|llama2-70b-99|Server": ciscoUnstated("C885A_M8_H200_SXM_141GBx16_TRT", "llama2-70b-99", "2 nodes of 8 H200s", "228.48"),
	"5.1-0015|Cisco|HGX-H100_H100-SXM-80GBx16_TRT|llama2-70b-99|Server":  ciscoUnstated("HGX-H100_H100-SXM-80GBx16_TRT", "llama2-70b-99", "2 nodes of 8 H100s", "210"),
	"5.1-0016|Cisco|HGX-H100_H100-SXM-80GBx32_TRT|llama2-70b-99|Server":  ciscoUnstated("HGX-H100_H100-SXM-80GBx32_TRT", "llama2-70b-99", "4 nodes of 8 H100s", "420"),
	"5.1-0014|Cisco|C885_H200x8_TRT|llama3.1-8b|Server":                  ciscoUnstated("C885_H200x8_TRT", "llama3.1-8b", "8 H200s, whose configs hold llama2-70b, mixtral-8x7b and others but no llama3_1-8b", "294.4"),

	// Red Hat's vLLM on one H100: the README's command "used during final submission",
	// whose target QPS, 39.5, is the run's (mlperf_log_detail.txt).
	"5.1-0083|RedHat|XE8640_4xH100_vLLM|llama3.1-8b|Server": {
		From: "closed/RedHat/code/llama3.1-8b/README.md", TP: 1, Replicas: 1, MaxNumSeqs: 512, MaxBatchedTokens: 1024,
		WeightDtype: "fp8", KVDtype: "bf16", GPUMemoryUtilization: 0.91,
		What: "vLLM 0.10.0 serving on one GPU (CUDA_VISIBLE_DEVICES 0 in run_server_submission.sh; the system file's " +
			"hw_notes: 1 GPU used) with no tensor_parallel_size (vLLM's default, 1), max_num_seqs 512, max_num_batched_tokens 1024, " +
			"gpu_memory_utilization 0.91, long_prefill_token_threshold 256, and target QPS 39.5; the weights are " +
			"RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8 (documentation/calibration.md)",
		Assumed: []string{
			"KV cache ASSUMED bf16: the command sets no KV cache dtype, and the engine's default is the model's",
			"long_prefill_token_threshold 256 is not simulated: vLLM prefills a long prompt at most 256 tokens a step, " +
				"the simulator up to the whole step budget (1,024), so its TTFT of a long prompt is likely low"}},

	"5.1-0377|Krai|b200_x8|llama2-70b-99.9|Server": {
		From: "open/Krai/measurements/b200_x8/llama3_1-70b-fp8_trtllm/server/README.md", Model: "llama-3.1-70b",
		Skip: "an open-division Llama-3.1-70B on trtllm-serve whose command states tp 1, dp 8 and max_batch_size 512 but " +
			"neither its token budget nor its KV cache dtype"},
}

// mixtralEffectiveBits is what NVIDIA's Mixtral configs leave unsaid about the weights.
const mixtralEffectiveBits = "weights ASSUMED all fp8: the checkpoint flags' effective_bits 8.75 keep some weights " +
	"wider than fp8's 8 bits, and the file does not say which"

// withAssumed is c with the assumptions its file leaves the row.
func withAssumed(c mlperfConfig, assumed ...string) mlperfConfig {
	c.Assumed = append(c.Assumed, assumed...)
	return c
}

// ciscoUnstated is a Cisco row whose system has no config among Cisco's files.
func ciscoUnstated(system, benchmark, what, qps string) mlperfConfig {
	dir := "closed/Cisco/measurements/" + system + "/" + benchmark + "/Server/"
	return mlperfConfig{From: dir,
		Skip: fmt.Sprintf("closed/Cisco/configs holds no config for %s (%s); its measurement folder states only target_qps "+
			"%s (user.conf) and NVIDIA's make commands (README.md), and mlperf_log_detail.txt records loadgen's settings only: "+
			"tensor parallelism and engine limits not stated", system, what, qps)}
}
