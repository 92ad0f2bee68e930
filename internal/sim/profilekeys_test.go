package sim

import (
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/figure"
)

// keySample is a valid value of a key other than the default profile's, and what the
// profile needs besides for it to be valid.
type keySample struct {
	v    any
	prep func(p *Profile)
}

func linearCost(p *Profile) {
	p.Cost = CostConfig{Kind: CostLinear, PrefillMsPerToken: 0.02, DecodeStepMs: 8, DecodeGrowth: 0.12}
}

// linearTerms leaves cost.kind to its sample.
func linearTerms(p *Profile) {
	linearCost(p)
	p.Cost.Kind = CostRoofline
}

func moeModel(p *Profile) { p.Model, _ = ModelPreset("qwen3-30b-a3b") }

func moeShape(p *Profile) {
	p.Model.Experts, p.Model.ExpertsPerToken, p.Model.MoELayers, p.Model.MoEIntermediate = 8, 2, 32, 1024
}

func mla(p *Profile) {
	p.Model.KVLoraRank, p.Model.QKRopeDim, p.Model.QKNopeDim, p.Model.VHeadDim = 512, 64, 128, 128
}

func sliding(p *Profile) { p.Model.SlidingWindow, p.Model.SlidingLayers = 4096, 16 }

func calibrated(p *Profile) {
	p.Calibration = &Calibration{Error: figure.Unmeasured(), ErrorClosed: figure.Unmeasured(), ErrorOpen: figure.Unmeasured()}
}

func drafting(method string) func(p *Profile) {
	return func(p *Profile) {
		p.Speculative = Speculative{DraftTokens: 2, Acceptance: 0.7, Method: method}
		if method == SpecEagle {
			p.Speculative.DraftMsPerToken = 0.5
		}
	}
}

// keySamples has a sample of every plain key in profileKeys.
var keySamples = map[string]keySample{
	"model.name": {"custom-model", nil}, "model.layers": {40, nil}, "model.hidden": {5120, nil},
	"model.heads": {64, nil}, "model.kv_heads": {4, nil}, "model.head_dim": {64, nil},
	"model.intermediate": {10000, nil}, "model.vocab": {100000, nil}, "model.tied_embeddings": {true, nil},
	"model.bytes_per_param": {1.0, nil}, "model.max_context": {65536, nil},
	"model.experts": {16, moeShape}, "model.experts_per_token": {4, moeShape}, "model.moe_layers": {16, moeShape},
	"model.moe_intermediate": {2048, moeShape}, "model.shared_intermediate": {512, moeShape},
	"model.expert_bytes_per_param": {0.5, moeShape}, "model.kv_bytes_per_elem": {1.0, nil},
	"model.kv_lora_rank": {256, mla}, "model.q_lora_rank": {1536, mla}, "model.qk_nope_head_dim": {64, mla},
	"model.qk_rope_head_dim": {32, mla}, "model.v_head_dim": {64, mla},
	"model.sliding_window": {1024, sliding}, "model.sliding_layers": {8, sliding},

	"gpu.name": {"my-gpu", nil}, "gpu.tflops": {500.0, nil}, "gpu.bandwidth_gbps": {3000.0, nil},
	"gpu.memory_gb": {80.0, nil}, "gpu.sms": {100, nil}, "gpu.usd_per_hour": {3.5, nil},
	"gpu.fp8_tflops": {1500.0, nil}, "gpu.fp4_tflops": {3000.0, nil}, "gpu.power_w": {500.0, nil},
	"gpu.idle_power_w": {90.0, func(p *Profile) { p.GPU.PowerW = 700 }},

	"cost.kind": {CostLinear, linearTerms}, "cost.file": {"", nil}, // cost.file: see below
	"cost.prefill_ms_per_token": {0.03, linearCost}, "cost.decode_step_ms": {9.0, linearCost},
	"cost.decode_growth": {0.2, linearCost}, "cost.step_ms": {1.0, linearCost}, "cost.context_ms_per_1k": {0.1, linearCost},
	"cost.prefill_attention_ms_per_1m": {0.5, linearCost}, "cost.prefill_seq_ms": {0.2, linearCost},
	"cost.compute_efficiency": {0.5, nil}, "cost.bandwidth_efficiency": {0.7, nil}, "cost.attn_units_per_sm": {2.0, nil},
	"cost.layer_overhead_us": {10.0, nil}, "cost.seq_overhead_us": {5.0, nil}, "cost.step_overhead_us": {100.0, nil},
	"cost.moe_layer_overhead_us": {3.0, nil}, "cost.prefill_moe_layer_overhead_us": {250.0, nil}, "cost.step_noise": {0.1, nil}, "cost.overlap": {2.0, nil},
	"cost.fp4_efficiency": {0.5, nil}, "cost.kv_read_bits": {8.0, nil}, "cost.launch_us_per_layer": {150.0, nil},

	"engine.kind": {EngineSGLang, nil}, "engine.prefill": {PrefillDisaggregated, nil}, "engine.max_num_seqs": {128, nil},
	"engine.max_batched_tokens": {4096, nil}, "engine.block_size": {32, nil}, "engine.kv_cache_tokens": {100000, nil},
	"engine.gpu_memory_utilization": {0.8, nil}, "engine.prefix_caching": {true, nil},
	"engine.prefill_workers": {4, func(p *Profile) { p.Engine.Prefill = PrefillDisaggregated }}, "engine.recv_interval": {30, nil},
	"engine.cuda_graphs":     {GraphsNone, nil},
	"engine.dp_balance_wait": {60, func(p *Profile) { moeModel(p); p.Deployment.DP = 2 }},

	"deployment.replicas": {2, nil}, "deployment.tp": {2, nil}, "deployment.router": {RouterRoundRobin, nil},
	"deployment.dp": {2, moeModel}, "deployment.expert_parallel": {true, func(p *Profile) { moeModel(p); p.Deployment.TP = 2 }},
	"deployment.weight_dtype": {DtypeFP8, nil}, "deployment.expert_dtype": {DtypeFP8, moeModel}, "deployment.kv_dtype": {DtypeFP8, nil},
	"deployment.max_model_len": {8192, nil}, "deployment.truncate_prompts": {true, func(p *Profile) { p.Deployment.MaxModelLen = 8192 }},

	"network.rtt_ms": {1.5, nil}, "network.jitter_ms": {0.5, nil}, "network.frontend_ms": {2.0, nil},
	"network.prompt_us_per_token": {3.0, nil},

	"power.watts_per_gpu": {300.0, nil}, "power.gpus": {1, func(p *Profile) { p.Power.WattsPerGPU = 300 }},
	"power.source": {"nvidia-smi", func(p *Profile) { p.Power.WattsPerGPU = 300 }},

	"calibration.source": {"http://server", calibrated}, "calibration.date": {"2026-01-02", calibrated},
	"calibration.prompt_tokens": {[2]int{10, 100}, calibrated}, "calibration.output_tokens": {[2]int{5, 50}, calibrated},
	"calibration.concurrency": {[2]int{1, 8}, calibrated}, "calibration.max_num_seqs": {"probe", calibrated},

	"speculative.draft_tokens": {4, drafting(SpecNgram)}, "speculative.acceptance": {0.6, drafting(SpecNgram)},
	"speculative.method": {SpecNgram, drafting(SpecEagle)}, "speculative.draft_ms_per_token": {0.25, drafting(SpecEagle)},
	"speculative.draft_step_fraction": {0.1, func(p *Profile) { drafting(SpecEagle)(p); p.Speculative.DraftMsPerToken = 0 }},
}

// TestProfileKeysRoundTrip sets each plain key of the table to a valid value, writes the
// profile, reads it back, and wants the value back and the profile valid.
func TestProfileKeysRoundTrip(t *testing.T) {
	table, err := filepath.Abs("testdata/h200-llama-3.1-8b.json")
	if err != nil {
		t.Fatal(err)
	}
	keySamples["cost.file"] = keySample{table, func(p *Profile) { p.Cost.Kind = CostTable }}
	for _, k := range profileKeys {
		if k.ptr == nil {
			continue
		}
		s, ok := keySamples[k.Path]
		if !ok {
			t.Errorf("%s: no sample in keySamples", k.Path)
			continue
		}
		p, _ := builtinProfile(DefaultProfile)
		p.Name = ""
		if s.prep != nil {
			s.prep(&p)
		}
		if reflect.DeepEqual(reflect.ValueOf(k.ptr(&p)).Elem().Interface(), s.v) {
			t.Errorf("%s: sample %v is the profile's own value: it would not show the key written", k.Path, s.v)
		}
		reflect.ValueOf(k.ptr(&p)).Elem().Set(reflect.ValueOf(s.v))
		if p.Cost.Kind == CostTable {
			tab, err := LoadStepTable(table)
			if err != nil {
				t.Fatal(err)
			}
			p = p.WithTable(tab)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v: sample not valid: %v", k.Path, s.v, err)
			continue
		}
		y := p.YAML("")
		q, err := ParseProfile(y, "")
		if err != nil {
			t.Errorf("%s: %v: reading back\n%s: %v", k.Path, s.v, y, err)
			continue
		}
		if got := reflect.ValueOf(k.ptr(&q)).Elem().Interface(); !reflect.DeepEqual(got, s.v) {
			t.Errorf("%s: wrote %v, read back %v from\n%s", k.Path, s.v, got, y)
		}
	}
}

// TestProfileKeysRange sets each key the table bounds beyond its range and wants Validate
// to name it.
func TestProfileKeysRange(t *testing.T) {
	for _, k := range profileKeys {
		if k.Must == "" {
			continue
		}
		p, _ := builtinProfile(DefaultProfile)
		switch v := k.ptr(&p).(type) {
		case *int:
			*v = int(k.Max) + 1
		case *float64:
			*v = k.Max * 2
		default:
			t.Fatalf("%s: a range on a %T", k.Path, v)
		}
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), k.Path+": ") {
			t.Errorf("%s beyond %g: Validate says %v", k.Path, k.Max, err)
		}
	}
}

// TestProfileKeysDecoder wants each mapping the decoder reads to know exactly the table's
// keys under it, so that a key cannot be read without an entry: the known keys an unknown
// one's error lists are the decoder's.
func TestProfileKeysDecoder(t *testing.T) {
	known := regexp.MustCompile(`: ([a-z_]*)\.?zz_unknown: unknown key \(known: ([^)]*)\)`)
	for _, section := range []string{"", "model", "gpu", "cost", "engine", "deployment", "network", "tools", "power", "calibration", "speculative"} {
		y := "zz_unknown: 1\n"
		if section != "" {
			y = section + ":\n  zz_unknown: 1\n"
		}
		_, err := ParseProfile([]byte(y), "")
		m := known.FindStringSubmatch(errString(err))
		if m == nil || m[1] != section {
			t.Errorf("%q: no unknown key's error naming %q: %v", y, section, err)
			continue
		}
		var want []string
		for _, k := range keysUnder(section) {
			_, name := splitKey(k.Path)
			want = append(want, name)
		}
		slices.Sort(want)
		if got := strings.Split(m[2], ", "); !slices.Equal(got, want) {
			t.Errorf("%s: the decoder reads %v, the table lists %v", section, got, want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
