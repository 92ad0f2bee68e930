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
		b.WriteString("model:\n")
		writeKeys(&b, &p, "model", "  ", nil)
	}
	if pg, ok := GPUPreset(p.GPU.Name); ok && pg == p.GPU {
		fmt.Fprintf(&b, "gpu: %s\n", p.GPU.Name)
	} else {
		b.WriteString("gpu:\n")
		writeKeys(&b, &p, "gpu", "  ", nil)
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
	b.WriteString("engine:\n")
	writeKeys(&b, &p, "engine", "  ", nil)
	// The fleet, each key once, so that editing one number gives the same deployment with
	// one replica (or GPU) fewer.
	q := p
	q.Deployment.Replicas, q.Deployment.TP, q.Deployment.Router = p.Deployment.replicas(), p.Deployment.tp(), p.Deployment.router()
	b.WriteString("deployment:\n")
	writeKeys(&b, &q, "deployment", "  ", nil)
	if n := p.Network; n.RTTMs > 0 || n.JitterMs > 0 || n.FrontEndMs > 0 || n.PromptUsPerToken > 0 {
		b.WriteString("network:\n")
		writeKeys(&b, &p, "network", "  ", nil)
	}
	if f := p.Tools.AutoCall; f != nil {
		fmt.Fprintf(&b, "tools:\n  auto_call_fraction: %s\n", num(*f))
	}
	if p.Power.WattsPerGPU > 0 {
		b.WriteString("power:                   # measured by the calibration's probe (run --gpu-metrics)\n")
		writeKeys(&b, &p, "power", "  ", nil)
	}
	if k := p.Calibration; k != nil {
		b.WriteString("calibration:\n")
		writeKeys(&b, &p, "calibration", "  ", nil)
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

// writeKeys writes the plain keys under section in p at indent, in the table's order, each
// when its rule says. byHand, if not nil, is offered each key first: it reports a key it
// wrote itself, or leaves out.
func writeKeys(b *strings.Builder, p *Profile, section, indent string, byHand func(profileKey) bool) {
	for _, k := range keysUnder(section) {
		if byHand != nil && byHand(k) || k.ptr == nil {
			continue
		}
		if v, ok := k.written(p); ok {
			_, name := splitKey(k.Path)
			fmt.Fprintf(b, "%s%s: %s\n", indent, name, v)
		}
	}
}

// written is k's value in p as YAML, and whether its rule writes it.
func (k profileKey) written(p *Profile) (string, bool) {
	var s string
	var set, positive bool
	switch v := k.ptr(p).(type) {
	case *int:
		s, set, positive = strconv.Itoa(*v), *v != 0, *v > 0
	case *float64:
		s, set, positive = num(*v), *v != 0, *v > 0
	case *string:
		s, set = *v, *v != ""
		if k.quote {
			s = yamlString(*v)
		}
	case *bool:
		s, set = strconv.FormatBool(*v), *v
	case *[2]int:
		s, set = fmt.Sprintf("[%d, %d]", v[0], v[1]), *v != [2]int{}
	}
	switch k.write {
	case writeAlways:
		return s, true
	case writeSet:
		return s, set
	case writePositive:
		return s, positive
	case writeWhen:
		return s, k.when(p)
	}
	return s, false
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
