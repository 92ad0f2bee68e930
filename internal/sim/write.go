package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/figure"
)

// YAML writes p as a profile file that LoadProfile reads back to the same profile (what
// calibrate writes). A model or GPU equal to a preset is written by its name. header, if
// not empty, is written first as comment lines.
func (p Profile) YAML(header string) []byte {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if header != "" {
			fmt.Fprintf(&b, "# %s\n", l)
		}
	}
	if m, err := LoadHFConfig(p.ModelConfig); p.ModelConfig != "" && err == nil && m == p.Model {
		fmt.Fprintf(&b, "model_config: %s\n", yamlString(p.ModelConfig))
	} else if pm, ok := ModelPreset(p.Model.Name); ok && pm == p.Model {
		fmt.Fprintf(&b, "model: %s\n", p.Model.Name)
	} else {
		m := p.Model
		fmt.Fprintf(&b, "model:\n  name: %s\n  layers: %d\n  hidden: %d\n  heads: %d\n  kv_heads: %d\n  head_dim: %d\n  intermediate: %d\n  vocab: %d\n",
			yamlString(m.Name), m.Layers, m.Hidden, m.Heads, m.KVHeads, m.HeadDim, m.Intermediate, m.Vocab)
		if m.TiedEmbeddings {
			b.WriteString("  tied_embeddings: true\n")
		}
		if m.BytesPerParam != 0 {
			fmt.Fprintf(&b, "  bytes_per_param: %s\n", num(m.BytesPerParam))
		}
		writeModelParts(&b, m)
	}
	if pg, ok := GPUPreset(p.GPU.Name); ok && pg == p.GPU {
		fmt.Fprintf(&b, "gpu: %s\n", p.GPU.Name)
	} else {
		g := p.GPU
		fmt.Fprintf(&b, "gpu:\n  name: %s\n  tflops: %s\n  bandwidth_gbps: %s\n  memory_gb: %s\n  sms: %d\n",
			yamlString(g.Name), num(g.TFLOPS), num(g.BandwidthGBps), num(g.MemoryGB), g.SMs)
		if g.USDPerHour > 0 {
			fmt.Fprintf(&b, "  usd_per_hour: %s\n", num(g.USDPerHour))
		}
		for _, f := range []struct {
			key string
			v   float64
		}{{"fp8_tflops", g.FP8TFLOPS}, {"fp4_tflops", g.FP4TFLOPS}, {"power_w", g.PowerW}, {"idle_power_w", g.IdlePowerW}} {
			if f.v > 0 {
				fmt.Fprintf(&b, "  %s: %s\n", f.key, num(f.v))
			}
		}
	}
	c := p.Cost
	fmt.Fprintf(&b, "cost:\n  kind: %s\n", c.Kind)
	switch c.Kind {
	case CostLinear:
		for _, k := range CostKeysOf(CostLinear) {
			if v := *k.Value(&c); !k.OmitZero || v != 0 {
				fmt.Fprintf(&b, "  %s: %s\n", k.Key, num(v))
			}
		}
	case CostRoofline:
		rp := c.rooflineParams()
		for _, f := range rp.Fields() {
			fmt.Fprintf(&b, "  %s: %s\n", f.Key, num(*f.Value))
		}
	case CostTable:
		fmt.Fprintf(&b, "  %s: %s\n", costFile, yamlString(c.File))
	}
	if c.StepNoise > 0 {
		fmt.Fprintf(&b, "  %s: %s\n", CostKeyStepNoise, num(c.StepNoise))
	}
	e := p.Engine
	b.WriteString("engine:\n")
	if e.Kind != "" {
		fmt.Fprintf(&b, "  kind: %s\n", e.Kind)
	}
	fmt.Fprintf(&b, "  prefill: %s\n  max_num_seqs: %d\n  max_batched_tokens: %d\n  block_size: %d\n  kv_cache_tokens: %d\n  gpu_memory_utilization: %s\n  prefix_caching: %t\n",
		e.Prefill, e.MaxNumSeqs, e.MaxBatchedTokens, e.BlockSize, e.KVCacheTokens, num(e.GPUMemoryUtilization), e.PrefixCaching)
	if e.Prefill == PrefillDisaggregated {
		fmt.Fprintf(&b, "  prefill_workers: %d\n", e.PrefillWorkers)
	}
	// The fleet, each key once, so that editing one number gives the same deployment with
	// one replica (or GPU) fewer.
	dep := p.Deployment
	fmt.Fprintf(&b, "deployment:\n  replicas: %d\n  tp: %d\n  router: %s\n", dep.replicas(), dep.tp(), dep.router())
	if dep.DP > 1 {
		fmt.Fprintf(&b, "  dp: %d\n", dep.DP)
	}
	if dep.ExpertParallel {
		b.WriteString("  expert_parallel: true\n")
	}
	if dep.WeightDtype != "" {
		fmt.Fprintf(&b, "  weight_dtype: %s\n", dep.WeightDtype)
	}
	if dep.ExpertDtype != "" {
		fmt.Fprintf(&b, "  expert_dtype: %s\n", dep.ExpertDtype)
	}
	if dep.KVDtype != "" {
		fmt.Fprintf(&b, "  kv_dtype: %s\n", dep.KVDtype)
	}
	if dep.MaxModelLen > 0 {
		fmt.Fprintf(&b, "  max_model_len: %d\n", dep.MaxModelLen)
		if dep.TruncatePrompts {
			fmt.Fprintf(&b, "  truncate_prompts: true\n")
		}
	}
	if n := p.Network; n.RTTMs > 0 || n.JitterMs > 0 || n.FrontEndMs > 0 || n.PromptUsPerToken > 0 {
		fmt.Fprintf(&b, "network:\n  rtt_ms: %s\n  jitter_ms: %s\n", num(n.RTTMs), num(n.JitterMs))
		if n.FrontEndMs > 0 {
			fmt.Fprintf(&b, "  frontend_ms: %s\n", num(n.FrontEndMs))
		}
		if n.PromptUsPerToken > 0 {
			fmt.Fprintf(&b, "  prompt_us_per_token: %s\n", num(n.PromptUsPerToken))
		}
	}
	if f := p.Tools.AutoCall; f != nil {
		fmt.Fprintf(&b, "tools:\n  auto_call_fraction: %s\n", num(*f))
	}
	if w := p.Power; w.WattsPerGPU > 0 {
		fmt.Fprintf(&b, "power:                   # measured by the calibration's probe (run --gpu-metrics)\n  watts_per_gpu: %s\n  gpus: %d\n  source: %s\n", num(w.WattsPerGPU), w.GPUs, yamlString(w.Source))
	}
	if k := p.Calibration; k != nil {
		fmt.Fprintf(&b, "calibration:\n  source: %s\n  date: %s\n  prompt_tokens: [%d, %d]\n  output_tokens: [%d, %d]\n  concurrency: [%d, %d]\n",
			yamlString(k.Source), yamlString(k.Date), k.PromptTokens[0], k.PromptTokens[1], k.OutputTokens[0], k.OutputTokens[1], k.Concurrency[0], k.Concurrency[1])
		if k.MaxNumSeqs != "" {
			fmt.Fprintf(&b, "  max_num_seqs: %s\n", yamlString(k.MaxNumSeqs))
		}
		if errs := fitErrorYAML(k.Error, "    "); errs != "" {
			b.WriteString("  error_pct:             # largest error on held-out probe points\n")
			b.WriteString(errs)
		}
		closed, open := fitErrorYAML(k.ErrorClosed, "      "), fitErrorYAML(k.ErrorOpen, "      ")
		if closed != "" || open != "" {
			b.WriteString("  error_pct_by_load:     # the same, over closed loops and over open ones\n")
			if closed != "" {
				b.WriteString("    closed:\n" + closed)
			}
			if open != "" {
				b.WriteString("    open:\n" + open)
			}
		}
		if r := k.OpenRates; r[1] > 0 {
			fmt.Fprintf(&b, "  open_rates: [%s, %s]  # req/s of the open loops probed\n", num(roundSig(r[0])), num(roundSig(r[1])))
		}
		if len(k.NotTrusted) > 0 {
			b.WriteString("  not_trusted:           # probed loads this profile missed (TTFT or TPOT P50): simulate names them\n")
			for _, t := range k.NotTrusted {
				fmt.Fprintf(&b, "    - load: %s\n", t.Load)
				switch t.Load {
				case LoadClosed:
					fmt.Fprintf(&b, "      concurrency: [%d, %d]\n", t.Concurrency[0], t.Concurrency[1])
				case LoadOpen:
					fmt.Fprintf(&b, "      rate_per_s: [%s, %s]\n", num(roundSig(t.Rate[0])), num(roundSig(t.Rate[1])))
				}
				fmt.Fprintf(&b, "      prompt_tokens: [%d, %d]\n      error_pct: %s\n", t.PromptTokens[0], t.PromptTokens[1], num(math.Round(t.ErrorPct*10)/10))
			}
		}
		if n := k.NotProbed; n.PromptTokens > 0 {
			fmt.Fprintf(&b, "  not_probed:            # closed loops of longer prompts at more in flight: never probed\n    prompt_tokens: %d\n    concurrency: %d\n", n.PromptTokens, n.Concurrency)
		}
	}
	b.WriteString(specYAML(p.Speculative))
	fmt.Fprintf(&b, "seed: %d\n", p.Seed)
	return []byte(b.String())
}

// writeModelParts writes a custom model's keys beyond the dense shape's, those it sets.
func writeModelParts(b *strings.Builder, m ModelShape) {
	for _, f := range []struct {
		key string
		v   int
	}{{"max_context", m.MaxContext}, {"experts", m.Experts}, {"experts_per_token", m.ExpertsPerToken}, {"moe_layers", m.MoELayers},
		{"moe_intermediate", m.MoEIntermediate}, {"shared_intermediate", m.SharedIntermediate}, {"kv_lora_rank", m.KVLoraRank},
		{"q_lora_rank", m.QLoraRank}, {"qk_nope_head_dim", m.QKNopeDim}, {"qk_rope_head_dim", m.QKRopeDim}, {"v_head_dim", m.VHeadDim},
		{"sliding_window", m.SlidingWindow}, {"sliding_layers", m.SlidingLayers}} {
		if f.v != 0 {
			fmt.Fprintf(b, "  %s: %d\n", f.key, f.v)
		}
	}
	if m.ExpertBytesPerParam != 0 {
		fmt.Fprintf(b, "  expert_bytes_per_param: %s\n", num(m.ExpertBytesPerParam))
	}
	if m.KVBytesPerElem != 0 {
		fmt.Fprintf(b, "  kv_bytes_per_elem: %s\n", num(m.KVBytesPerElem))
	}
}

// num writes a float so that it reads back to the same value.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// yamlString quotes s as a YAML double-quoted scalar (JSON's escapes are YAML's).
func yamlString(s string) string { return strconv.Quote(s) }

// fitErrorYAML is e's measured figures as YAML lines at indent, one decimal; "" when none
// was measured.
func fitErrorYAML(e figure.Values, indent string) string {
	var b strings.Builder
	for _, k := range figure.Judged {
		if v := e[k]; !math.IsNaN(v) {
			fmt.Fprintf(&b, "%s%s: %s\n", indent, k.Name(), num(math.Round(v*10)/10))
		}
	}
	return b.String()
}

// roundSig rounds v to three significant digits.
func roundSig(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}
