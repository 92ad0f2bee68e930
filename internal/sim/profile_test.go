package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestBuiltinProfiles(t *testing.T) {
	for _, name := range append(BuiltinProfiles(), "") {
		p, err := LoadProfile(name)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	tb := mustProfile(t, "textbook")
	if tb.Cost != (CostConfig{Kind: CostLinear, PrefillMsPerToken: 0.02, DecodeStepMs: 8, DecodeGrowth: 0.12}) || tb.Engine.Prefill != PrefillDisaggregated {
		t.Errorf("textbook = %+v", tb)
	}
	if tb.ModelName() != "textbook" {
		t.Errorf("textbook serves %q", tb.ModelName())
	}
	def := mustProfile(t, "")
	if def.Name != DefaultProfile || def.Cost.Kind != CostRoofline || def.ModelName() != "llama-3.1-8b" {
		t.Errorf("default = %+v", def)
	}
	// H200: 0.9 × 150.8 GB (143,771 MiB) minus 16.06 GB of weights, over 128 KiB per token.
	kv, _ := def.KVCacheTokens()
	if kv < 905000 || kv > 920000 || kv%16 != 0 {
		t.Errorf("h200 llama-3.1-8b KV capacity %d tokens", kv)
	}
	if _, err := LoadProfile("no-such-profile"); err == nil || !strings.Contains(err.Error(), "textbook") {
		t.Errorf("unknown profile: %v", err)
	}
}

func writeProfile(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseProfileFull(t *testing.T) {
	dir := t.TempDir()
	cal, _ := os.ReadFile("testdata/h200-llama-3.1-8b.json")
	os.WriteFile(filepath.Join(dir, "steps.json"), cal, 0o644)
	path := filepath.Join(dir, "p.yaml")
	os.WriteFile(path, []byte(`
model:
  name: tiny
  layers: 4
  hidden: 512
  heads: 8
  kv_heads: 2
  intermediate: 1024
  vocab: 1000
gpu:
  tflops: 100
  bandwidth_gbps: 1000
  memory_gb: 8
cost:
  kind: table
  file: steps.json
engine:
  prefill: colocated
  max_num_seqs: 8
  max_batched_tokens: 512
  block_size: 32
  kv_cache_tokens: 1000
  prefix_caching: true
seed: 42
`), 0o644)
	p, err := LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Model.HeadDim != 64 || p.Model.Name != "tiny" || p.GPU.Name != "custom" || p.Seed != 42 {
		t.Errorf("parsed %+v", p)
	}
	if kv, _ := p.KVCacheTokens(); kv != 992 {
		t.Errorf("kv_cache_tokens 1000 with block 32 = %d tokens, want 992 (whole blocks)", kv)
	}
	if e := p.Engine; e.MaxNumSeqs != 8 || e.MaxBatchedTokens != 512 || e.BlockSize != 32 || !e.PrefixCaching {
		t.Errorf("engine %+v", e)
	}
	if _, err := p.NewCostModel(); err != nil {
		t.Error(err)
	}
	// Preset names, and a minimal file taking every default.
	p, err = ParseProfile([]byte("model: qwen2.5-7b\ngpu: h100\n"), "")
	if err != nil || p.Model.Name != "qwen2.5-7b" || p.GPU.Name != "h100" || p.Cost.Kind != CostRoofline {
		t.Errorf("presets: %+v, %v", p, err)
	}
}

// TestRooflineKeys: the roofline's constants are optional keys under cost:, each unset one
// keeps its default, and the cost model uses them.
func TestRooflineKeys(t *testing.T) {
	p, err := ParseProfile([]byte("cost:\n  kind: roofline\n  bandwidth_efficiency: 0.9\n  layer_overhead_us: 12.5\n  step_overhead_us: 300\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultRooflineParams()
	want.BandwidthEfficiency, want.LayerOverheadUs, want.StepOverheadUs = 0.9, 12.5, 300
	if p.Cost.Roofline != want {
		t.Errorf("parsed %+v, want %+v", p.Cost.Roofline, want)
	}
	cm, _ := p.NewCostModel()
	w := StepWork{DecodeSeqs: 1, DecodeContext: 512}
	if got, exp := cm.Step(w), NewRoofline(p.Model, p.GPU, want).Step(w); got != exp {
		t.Errorf("cost model step %v, the roofline with those constants %v", got, exp)
	}
	// A profile built in code with no constants gets the defaults; the built-in one names them.
	code := Profile{Model: p.Model, GPU: p.GPU, Engine: defaultEngine(), Cost: CostConfig{Kind: CostRoofline}}
	if err := code.Validate(); err != nil {
		t.Fatal(err)
	}
	cm, _ = code.NewCostModel()
	if got, exp := cm.Step(w), NewRoofline(p.Model, p.GPU, DefaultRooflineParams()).Step(w); got != exp {
		t.Errorf("zero constants: step %v, the defaults give %v", got, exp)
	}
	if def := mustProfile(t, DefaultProfile); def.Cost.Roofline != DefaultRooflineParams() {
		t.Errorf("built-in profile constants %+v", def.Cost.Roofline)
	}
	// Every field has a key and a range that holds its default, and writes through.
	var rp RooflineParams
	fields := rp.Fields()
	d := DefaultRooflineParams()
	seen := map[string]bool{}
	for i, f := range fields {
		dv := *d.Fields()[i].Value
		if f.Key == "" || seen[f.Key] || !(dv >= f.Min && dv <= f.Max) || f.Min >= f.Max {
			t.Errorf("field %d %q: range [%g, %g], default %g", i, f.Key, f.Min, f.Max, dv)
		}
		seen[f.Key] = true
		*f.Value = float64(i + 1)
	}
	if rp != (RooflineParams{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) || len(fields) != 12 {
		t.Errorf("Fields do not write every parameter once: %+v", rp)
	}
}

func TestParseProfileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // every one must appear in the single error
	}{
		{"unknown keys everywhere", `
modle: x
cost: {kind: linear, decode_step_ms: 8, speed: 3}
engine: {max_seqs: 4}
gpu: {tflops: 1, bandwidth_gbps: 1, memory_gb: 80, fast: true}
`, []string{"line 2: modle: unknown key", "cost.speed: unknown key", "engine.max_seqs: unknown key", "gpu.fast: unknown key"}},
		{"bad values", `
cost: {kind: linear, decode_step_ms: fast, prefill_ms_per_token: -1}
engine: {max_num_seqs: 2.5, prefix_caching: maybe, block_size: 0}
seed: one
`, []string{"cost.decode_step_ms: want a number", "engine.max_num_seqs: want an integer", "engine.prefix_caching: want true or false", "seed: want an integer"}},
		{"invalid settings", `
cost: {kind: linear, decode_step_ms: 0, prefill_ms_per_token: -1, decode_growth: -0.5}
engine: {prefill: split, max_num_seqs: 0, block_size: 0, max_batched_tokens: -1, gpu_memory_utilization: 1.5}
`, []string{"cost.decode_step_ms: must be in (0, 1000000] ms, got 0", "cost.prefill_ms_per_token", "cost.decode_growth", "engine.prefill: \"split\"", "engine.max_num_seqs", "engine.block_size", "engine.max_batched_tokens", "engine.gpu_memory_utilization"}},
		{"unknown presets and kinds", "model: llama-9000\ngpu: tpu\ncost: {kind: magic}\n",
			[]string{"model: unknown model preset \"llama-9000\"", "gpu: unknown GPU preset \"tpu\"", "cost.kind: \"magic\""}},
		{"keys of another kind", "cost: {kind: roofline, decode_step_ms: 8, file: x.json}\n",
			[]string{"cost.decode_step_ms: applies to kind linear only", "cost.file: applies to kind table only"}},
		{"roofline keys with another kind", "cost: {kind: linear, decode_step_ms: 8,\n  compute_efficiency: 0.5}\n",
			[]string{"line 2: cost.compute_efficiency: applies to kind roofline only, not linear"}},
		{"roofline constants out of range", "cost:\n  kind: roofline\n  compute_efficiency: 1.5\n  bandwidth_efficiency: 0\n  layer_overhead_us: -1\n  step_overhead_us: fast\n",
			[]string{"cost.compute_efficiency: must be in [0.01, 1], got 1.5", "cost.bandwidth_efficiency: must be in [0.01, 1], got 0",
				"cost.layer_overhead_us: must be in [0, 1000], got -1", "line 6: cost.step_overhead_us: want a number"}},
		{"every roofline constant 0", "cost: {compute_efficiency: 0, bandwidth_efficiency: 0, attn_units_per_sm: 0, layer_overhead_us: 0, seq_overhead_us: 0, step_overhead_us: 0}\n",
			[]string{"cost.compute_efficiency: must be in [0.01, 1], got 0"}},
		{"table without file", "cost: {kind: table}\n", []string{"cost.file: kind table needs a file"}},
		{"missing table file", "cost: {kind: table, file: nope.json}\n", []string{"cost.file:", "nope.json"}},
		{"weights do not fit", "model: llama-3.1-70b\ngpu: h100\n", []string{"deployment.tp: llama-3.1-70b's bf16 weights at tp 1 (141.1 GB per GPU) leave no room", "h100's 85.5 GB", "use tp 2"}},
		{"bad custom shape", "model: {layers: 0, hidden: 4096, heads: 32, kv_heads: 5, head_dim: 128, intermediate: 1, vocab: 1}\n",
			[]string{"model.layers: must be an integer in 1..1000, got 0", "model.kv_heads: 5 does not divide heads 32"}},
		{"wrong node kinds", "engine: [1, 2]\ncost: fast\n", []string{"engine: want a mapping", "cost: want a mapping"}},
		{"settings for the other placement", "engine: {prefill: colocated, prefill_workers: 2}\n", []string{"engine.prefill_workers: applies to prefill: disaggregated only"}},
		{"prefix caching when disaggregated", "engine: {prefill: disaggregated, prefix_caching: true}\n", []string{"engine.prefix_caching"}},
		{"not YAML", "model: [\n", []string{"yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadProfile(writeProfile(t, tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestProfileBounds: every numeric setting has a sane range named in its error, all
// reported at once, and settings each in range whose product is absurd fail as a whole.
// A fuzzed decode_step_ms: 1e308 used to be accepted and priced steps as negative durations.
func TestProfileBounds(t *testing.T) {
	// One past the limit: a range error, or on 32-bit systems (the limit is the largest
	// int) a number that no int holds.
	kvTooBig := fmt.Sprintf("engine.kv_cache_tokens: must be in 0..%d", maxKVCacheTokens)
	if strconv.IntSize == 32 {
		kvTooBig = "engine.kv_cache_tokens: want an integer"
	}
	for _, tc := range []struct {
		name, yaml string
		want       []string // every one must appear in the single error; none = accepted
	}{
		{"huge linear costs", "cost: {kind: linear, prefill_ms_per_token: 1e7, decode_step_ms: 1e308, decode_growth: 1e308}\n",
			[]string{"cost.prefill_ms_per_token: must be in [0, 1000000] ms, got 1e+07", "cost.decode_step_ms: must be in (0, 1000000] ms, got 1e+308",
				"cost.decode_growth: must be in [0, 1000000], got 1e+308"}},
		{"linear at its limits", "cost: {kind: linear, prefill_ms_per_token: 0, decode_step_ms: 1e6, decode_growth: 0}\nengine: {prefill: disaggregated}\n", nil},
		{"in range, absurd together", "cost: {kind: linear, decode_step_ms: 1e6, decode_growth: 1e6}\n",
			[]string{"cost: a full step (256 sequences decoding", "beyond the 1h limit"}},
		{"longest prefill too slow", "cost: {kind: linear, prefill_ms_per_token: 50, decode_step_ms: 8}\nengine: {prefill: disaggregated}\n",
			[]string{"cost: a prefill of 131072 tokens (the longest a request may be) alone would take"}},
		{"whole-cache prefill too slow without a model context", "model: {layers: 32, hidden: 4096, heads: 32, kv_heads: 8, intermediate: 14336, vocab: 128256}\n" +
			"cost: {kind: linear, prefill_ms_per_token: 5, decode_step_ms: 8}\nengine: {prefill: disaggregated}\n",
			[]string{"cost: a prefill of 912608 tokens (the longest a request may be) alone would take"}},
		{"GPU figures", "gpu: {tflops: 1e7, bandwidth_gbps: 0, memory_gb: .inf, sms: -1}\n",
			[]string{"gpu.tflops: must be a number in (0, 1000000], got 1e+07", "gpu.bandwidth_gbps: must be a number in (0, 1000000], got 0",
				"gpu.memory_gb: want a number", "gpu.sms: must be an integer in 0..1000000"}},
		{"GPU in range but far too slow", "gpu: {tflops: 1e-9, bandwidth_gbps: 1e-9, memory_gb: 141}\n",
			[]string{"cost: a full step", "beyond the 1h limit"}},
		{"model shape", "model: {layers: 1001, hidden: 2000000, heads: 20000, kv_heads: 20000, head_dim: 10001, intermediate: 10000001, vocab: 10000001, bytes_per_param: 1e-300}\n",
			[]string{"model.layers: must be an integer in 1..1000, got 1001", "model.hidden: must be an integer in 1..1000000", "model.heads: must be an integer in 1..10000",
				"model.kv_heads:", "model.head_dim:", "model.intermediate: must be an integer in 1..10000000", "model.vocab:", "model.bytes_per_param: must be in 0.125..8"}},
		{"engine sizes", fmt.Sprintf("engine: {max_num_seqs: 1000001, max_batched_tokens: 100000001, block_size: 1000001, kv_cache_tokens: %d, prefill_workers: 1000001}\n", int64(maxKVCacheTokens)+1),
			[]string{"engine.max_num_seqs: must be in 1..1000000", "engine.max_batched_tokens: must be in 1..100000000", "engine.block_size: must be in 1..1000000",
				kvTooBig, "engine.prefill_workers: must be in 0..1000000"}},
		{"derived KV cache beyond the limit", "model: {layers: 1, hidden: 64, heads: 1, kv_heads: 1, head_dim: 1, intermediate: 1, vocab: 1, bytes_per_param: 0.125}\ngpu: {tflops: 1000, bandwidth_gbps: 1e6, memory_gb: 1e6}\n",
			[]string{"engine.kv_cache_tokens:", fmt.Sprintf("beyond the %d limit; set kv_cache_tokens", maxKVCacheTokens)}},
		{"sane custom profile", "model: {layers: 2, hidden: 256, heads: 4, kv_heads: 4, intermediate: 512, vocab: 100}\ngpu: {tflops: 10, bandwidth_gbps: 100, memory_gb: 1}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProfile([]byte(tc.yaml), t.TempDir())
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				cm, _ := p.NewCostModel()
				if d := cm.Step(StepWork{DecodeSeqs: p.Engine.MaxNumSeqs, DecodeContext: 1 << 20}); d < 0 || d > time.Hour {
					t.Errorf("accepted profile prices a full step at %v", d)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// Every problem Validate finds names its key as a keyError, which ParseProfile reads to
// leave out the problems of keys it could not decode (no key is cut out of a message).
func TestValidateErrorsNameTheirKey(t *testing.T) {
	p, _ := LoadProfile("textbook")
	p.Model.Layers, p.Model.BytesPerParam = 0, 99
	p.GPU.TFLOPS, p.GPU.SMs = -1, -1
	p.Cost.DecodeStepMs, p.Cost.StepNoise = 0, 5
	p.Network.RTTMs = -1
	p.Engine.MaxNumSeqs, p.Engine.GPUMemoryUtilization = 0, 2
	p.Deployment.Replicas = -1
	r, _ := LoadProfile("h200-llama-3.1-8b")
	r.Cost.Roofline.ComputeEfficiency = 2
	big, _ := LoadProfile("h200-llama-3.1-8b")
	big.Deployment.MaxModelLen = big.Model.MaxContext + 1 // past the model's context (and an int on 32-bit platforms)
	for _, q := range []Profile{p, r, big} {
		errs := q.validate()
		if len(errs) == 0 {
			t.Fatal("no problem found")
		}
		for _, err := range errs {
			var ke *keyError
			if !errors.As(err, &ke) || !strings.HasPrefix(err.Error(), ke.Key+": ") {
				t.Errorf("%q names no key", err)
			}
		}
	}
}

// A profile's tools section sets the fraction of auto requests answered with a tool call,
// which must be a fraction; CallsTool follows tool_choice and the seeded fraction.
func TestProfileTools(t *testing.T) {
	p, err := ParseProfile([]byte("tools:\n  auto_call_fraction: 0.25\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Tools.AutoCallFraction() != 0.25 {
		t.Fatalf("auto call fraction %v", p.Tools.AutoCallFraction())
	}
	if !strings.Contains(string(p.YAML("")), "tools:\n  auto_call_fraction: 0.25\n") {
		t.Errorf("YAML leaves the tools out:\n%s", p.YAML(""))
	}
	calls := 0
	for k := range uint64(4000) {
		if p.Tools.CallsTool("auto", 7, k) {
			calls++
		}
		if p.Tools.CallsTool("none", 7, k) || !p.Tools.CallsTool("required", 7, k) || !p.Tools.CallsTool("get_weather", 7, k) {
			t.Fatal("none calls a tool, or required or a named function does not")
		}
		if p.Tools.CallsTool("", 7, k) != p.Tools.CallsTool("auto", 7, k) {
			t.Fatal("no tool_choice is not auto")
		}
	}
	if calls < 900 || calls > 1100 {
		t.Errorf("%d of 4000 auto requests called a tool, want about 1000", calls)
	}
	if (ToolConfig{}).AutoCallFraction() != DefaultAutoToolCall {
		t.Error("the default fraction")
	}
	if _, err := ParseProfile([]byte("tools:\n  auto_call_fraction: 1.5\n"), ""); err == nil || !strings.Contains(err.Error(), "tools.auto_call_fraction") {
		t.Errorf("a fraction of 1.5: %v", err)
	}
}
