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

// nvidiaHarness is a config of NVIDIA's MLPerf harness (TensorRT-LLM): tp 1 on each GPU.
func nvidiaHarness(from string, seqs, tokens int, qps string) mlperfConfig {
	return mlperfConfig{From: from, TP: 1, Replicas: 8, MaxNumSeqs: seqs, MaxBatchedTokens: tokens,
		WeightDtype: "nvfp4", KVDtype: "fp8",
		What: fmt.Sprintf("the Custom harness's MaxP setting states tensor_parallelism 1, gpu_batch_size %d, max_num_tokens %d, "+
			"precision fp4, kv_cache_dtype fp8 and server_target_qps %s (the row's QPS)", seqs, tokens, qps)}
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
		"closed/Lambda/configs/B200-SXM-180GBx8_TRT/Server/llama2-70b.py", 2048, 3584, "364"),
	"5.1-0086|Supermicro|AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99|Server": nvidiaHarness(
		"closed/Supermicro/configs/AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT/Server/llama2-70b.py", 2048, 3584, "364"),
	"5.1-0086|Supermicro|AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99.9|Server": nvidiaHarness(
		"closed/Supermicro/configs/AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT/Server/llama2-70b.py", 2048, 3584, "364"),
	"5.1-0086|Supermicro|AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT|llama3.1-8b|Interactive": nvidiaHarness(
		"closed/Supermicro/configs/AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT/Interactive/llama3_1-8b.py", 6000, 12000, "950"),
	"5.1-0086|Supermicro|AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT|llama3.1-8b|Server": nvidiaHarness(
		"closed/Supermicro/configs/AS-4126GS-NBR-LCC_B200-SXM-180GBx8_TRT/Server/llama3_1-8b.py", 6000, 12000, "1000"),
	"5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99|Interactive": nvidiaHarness(
		"closed/Supermicro/configs/SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT/Interactive/llama2-70b.py", 768, 768, "220"),
	"5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99|Server": nvidiaHarness(
		"closed/Supermicro/configs/SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT/Server/llama2-70b.py", 2048, 3584, "364"),
	"5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99.9|Interactive": nvidiaHarness(
		"closed/Supermicro/configs/SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT/Interactive/llama2-70b.py", 768, 768, "220"),
	"5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99.9|Server": nvidiaHarness(
		"closed/Supermicro/configs/SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT/Server/llama2-70b.py", 2048, 3584, "364"),
	"5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama3.1-8b|Server": nvidiaHarness(
		"closed/Supermicro/configs/SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT/Server/llama3_1-8b.py", 6000, 12000, "950"),

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
	"5.1-0377|Krai|b200_x8|llama2-70b-99.9|Server": {
		From: "open/Krai/measurements/b200_x8/llama3_1-70b-fp8_trtllm/server/README.md", Model: "llama-3.1-70b",
		Skip: "an open-division Llama-3.1-70B on trtllm-serve whose command states tp 1, dp 8 and max_batch_size 512 but " +
			"neither its token budget nor its KV cache dtype"},
}
