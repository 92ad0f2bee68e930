package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every preset with a fixture is what ParseHFConfig makes of its published config.json.
func TestMoEPresetsMatchConfigs(t *testing.T) {
	for _, name := range []string{"gpt-oss-20b", "gpt-oss-120b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "deepseek-r1",
		"kimi-k2", "llama-4-scout", "llama-4-maverick", "mixtral-8x7b", "llama-3.1-8b", "qwen2.5-7b"} {
		got, err := LoadHFConfig(filepath.Join("testdata", "hf-configs", name, "config.json"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want, _ := ModelPreset(name); got != want {
			t.Errorf("%s: config.json reads as\n%+v\nwant the preset\n%+v", name, got, want)
		}
	}
}

// The published totals: parameters in all and per token (the matmuls, embeddings aside).
func TestMoEParameterCounts(t *testing.T) {
	for _, c := range []struct {
		name          string
		total, active float64 // billions, as the model cards state them
	}{
		{"gpt-oss-120b", 117, 5.1}, {"gpt-oss-20b", 21, 3.6}, {"qwen3-30b-a3b", 30.5, 3.3}, {"qwen3-235b-a22b", 235, 22},
		{"deepseek-v3", 671, 37}, {"kimi-k2", 1000, 32}, {"llama-4-maverick", 400, 17}, {"mixtral-8x7b", 46.7, 12.9},
	} {
		m, _ := ModelPreset(c.name)
		total, active := float64(m.Params())/1e9, float64(m.MatmulParams())/1e9
		if total < 0.96*c.total || total > 1.04*c.total || active < 0.9*c.active || active > 1.1*c.active {
			t.Errorf("%s: %.2f B parameters, %.2f B per token; the model card says %g B and %g B", c.name, total, active, c.total, c.active)
		}
	}
}

// Mistral-7B-v0.1's sliding_window applies to every layer; Qwen's use_sliding_window:
// false switches its window off; gpt-oss's layer_types name half its layers sliding.
func TestHFConfigSlidingWindows(t *testing.T) {
	m, err := LoadHFConfig(filepath.Join("testdata", "hf-configs", "mistral-7b-v0.1", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.SlidingWindow != 4096 || m.SlidingLayers != 32 || m.Name != "mistral-7b-v0.1" {
		t.Errorf("mistral-7b-v0.1: window %d on %d layers, name %q", m.SlidingWindow, m.SlidingLayers, m.Name)
	}
	q, _ := ModelPreset("qwen2.5-7b")
	g, _ := ModelPreset("gpt-oss-120b")
	if q.SlidingLayers != 0 || g.SlidingLayers != 18 || g.SlidingWindow != 128 {
		t.Errorf("qwen2.5-7b %d sliding layers, gpt-oss-120b %d of window %d", q.SlidingLayers, g.SlidingLayers, g.SlidingWindow)
	}
}

// An architecture it does not model is refused, naming it and the keys it could not use.
func TestHFConfigRefusesUnknownArchitecture(t *testing.T) {
	_, err := LoadHFConfig(filepath.Join("testdata", "hf-configs", "mamba-2.8b", "config.json"))
	if err == nil {
		t.Fatal("a Mamba config.json was accepted")
	}
	for _, want := range []string{`architecture "MambaForCausalLM" is not one llmbench models`, "keys it could not use: ", "conv_kernel", "state_size", "time_step_rank"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	for _, c := range []struct{ doc, want string }{
		{`[1, 2]`, "not a config.json"},
		{`{"architectures": ["LlamaForCausalLM"], "hidden_size": "big"}`, "hidden_size"},
		{`{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "quantization_config": {"quant_method": "gptq"}}`, `quant_method "gptq"`},
		{`{"architectures": ["MixtralForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "num_local_experts": 8, "num_experts_per_tok": 9}`, "experts_per_token"},
	} {
		if _, err := ParseHFConfig([]byte(c.doc), "x"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.doc, err, c.want)
		}
	}
}

// model_config: reads a config.json relative to the profile, refuses model: beside it, and
// best.yaml (Profile.YAML) names the file again.
func TestProfileModelConfig(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "hf-configs", "mixtral-8x7b", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m", "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte("model_config: m/config.json\ngpu: h200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ModelPreset("mixtral-8x7b")
	want.Name = "m"
	if p.Model != want {
		t.Errorf("model_config read %+v, want %+v", p.Model, want)
	}
	if err := os.WriteFile(path, p.YAML(""), 0o644); err != nil {
		t.Fatal(err)
	}
	if q, err := LoadProfile(path); err != nil || q.Model != p.Model || !strings.Contains(string(p.YAML("")), "model_config: ") {
		t.Errorf("YAML round trip: %v, %+v", err, q.Model)
	}
	_, err = ParseProfile([]byte("model: llama-3.1-8b\nmodel_config: m/config.json\n"), dir)
	if err == nil || !strings.Contains(err.Error(), "model_config: and model: (line 1) both name the model") {
		t.Errorf("model and model_config together: %v", err)
	}
	_, err = ParseProfile([]byte("model_config: nothere.json\n"), dir)
	if err == nil || !strings.Contains(err.Error(), "model_config: ") || !strings.Contains(err.Error(), "nothere.json") {
		t.Errorf("a missing config.json: %v", err)
	}
}

// Every family's config.json serves on a deployment it fits, and its steps are priced.
func TestEveryConfigFamilyDeploys(t *testing.T) {
	base, _ := LoadProfile("")
	for _, c := range []struct {
		dir string
		dep Deployment
	}{
		{"llama-3.1-8b", Deployment{}}, {"qwen2.5-7b", Deployment{}}, {"mistral-7b-v0.1", Deployment{}},
		{"mixtral-8x7b", Deployment{TP: 2}}, {"qwen3-30b-a3b", Deployment{}}, {"gpt-oss-120b", Deployment{TP: 2, ExpertParallel: true}},
		{"deepseek-v3", Deployment{TP: 8}}, {"kimi-k2", Deployment{TP: 8, DP: 2, ExpertParallel: true}},
		{"llama-4-scout", Deployment{TP: 4}}, {"llama-4-maverick", Deployment{TP: 8, WeightDtype: DtypeFP8}},
	} {
		p, err := base.WithModelConfig(filepath.Join("testdata", "hf-configs", c.dir, "config.json"))
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		p.Deployment = c.dep
		if err := p.Validate(); err != nil {
			t.Errorf("%s on h200 (%s): %v", c.dir, c.dep, err)
			continue
		}
		cm, _ := p.NewCostModel()
		if d := cm.Step(StepWork{DecodeSeqs: 8, DecodeContext: 8000}); d <= 0 || d > time.Second {
			t.Errorf("%s: a decode step of 8 takes %v", c.dir, d)
		}
	}
}
