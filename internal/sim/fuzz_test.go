package sim

import (
	"testing"
	"time"
)

// FuzzParseProfile: ParseProfile never panics on any YAML; a profile it accepts validates,
// has a KV cache of at least one block, builds its cost model, and that model prices steps
// as finite, non-negative durations that do not shrink when a sequence is added. Seed
// corpus: testdata/fuzz/FuzzParseProfile.
//
//	go test ./internal/sim -run '^$' -fuzz '^FuzzParseProfile$' -fuzztime 30s
func FuzzParseProfile(f *testing.F) {
	for _, s := range []string{
		"model: llama-3.1-8b\ngpu: h200\n",
		"model: qwen2.5-7b\ngpu: h100\nseed: 3\n",
		"cost:\n  kind: linear\n  prefill_ms_per_token: 0.02\n  decode_step_ms: 8\n  decode_growth: 0.12\nengine:\n  prefill: disaggregated\n  prefill_workers: 2\n",
		"model:\n  name: tiny\n  layers: 4\n  hidden: 512\n  heads: 8\n  kv_heads: 2\n  intermediate: 1024\n  vocab: 1000\ngpu:\n  tflops: 100\n  bandwidth_gbps: 1000\n  memory_gb: 8\nengine:\n  max_num_seqs: 8\n  max_batched_tokens: 512\n  block_size: 32\n  kv_cache_tokens: 1000\n  prefix_caching: true\n",
		"cost:\n  kind: table\n  file: missing.json\n",
		"cost:\n  kind: roofline\n  compute_efficiency: 0.5\n  bandwidth_efficiency: 0.7\n  attn_units_per_sm: 0\n  layer_overhead_us: 12\n  seq_overhead_us: 1000\n  step_overhead_us: 100000\n",
		"engine:\n  gpu_memory_utilization: 1.5\n  block_size: 0\n",
		"model: [1, 2]\ngpu: {tflops: .nan}\nunknown: 1\n",
		"model: llama-3.1-70b\ngpu: h100\nengine: {prefix_caching: true}\ndeployment: {replicas: 2, tp: 4, router: prefix-affinity, weight_dtype: fp8, kv_dtype: fp8, max_model_len: 8192}\n",
		"deployment: {tp: 2, tp: 4}\n",
		"engine: {kind: sglang, recv_interval: 30}\n",
		"model: deepseek-r1\ngpu: b200\nengine: {kind: tensorrt-llm, dp_balance_wait: 60}\ndeployment: {tp: 1, dp: 8, expert_parallel: true, weight_dtype: fp8}\n",
		"a: &a [*a, *a]\n", "", "---\n", "- 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProfile(b, t.TempDir())
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted profile does not validate: %v\n%s", err, b)
		}
		kv, err := p.KVCacheTokens()
		if err != nil || kv < p.Engine.BlockSize || kv%p.Engine.BlockSize != 0 {
			t.Fatalf("KV cache %d tokens (block %d), %v", kv, p.Engine.BlockSize, err)
		}
		cm, err := p.NewCostModel()
		if err != nil {
			t.Fatalf("accepted profile has no cost model: %v", err)
		}
		var prev time.Duration
		for _, n := range []int{1, 2, 8} {
			d := cm.Step(StepWork{DecodeSeqs: n, DecodeContext: int64(n) * 1024})
			if d < 0 || d < prev {
				t.Fatalf("step of %d sequences costs %v (previous %v)", n, d, prev)
			}
			prev = d
		}
		if d := cm.Prefill(512); d < 0 {
			t.Fatalf("prefill of 512 tokens costs %v", d)
		}
	})
}
