package sim

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Cost model kinds.
const (
	CostLinear   = "linear"
	CostRoofline = "roofline"
	CostTable    = "table"
)

// Prefill placements.
const (
	PrefillColocated     = "colocated"
	PrefillDisaggregated = "disaggregated"
)

// DefaultProfile is the profile used when none is named.
const DefaultProfile = "h200-llama-3.1-8b"

// Profile describes a simulated deployment: model, GPU, cost model and engine settings.
type Profile struct {
	Name   string // built-in name, or the YAML file's path
	Model  ModelShape
	GPU    GPU
	Cost   CostConfig
	Engine EngineConfig
	Seed   int64 // seeds the lengths of sequences without ignore_eos

	table *StepTable // loaded from Cost.File for the table model
}

// CostConfig selects and parameterises the cost model.
type CostConfig struct {
	Kind              string // CostLinear, CostRoofline or CostTable
	PrefillMsPerToken float64
	DecodeStepMs      float64
	DecodeGrowth      float64
	File              string // table: calibration-shaped JSON
	// Roofline holds the roofline's constants; the zero value means DefaultRooflineParams
	// (a YAML profile starts from the defaults and overrides the keys it sets).
	Roofline RooflineParams
}

// rooflineParams is the roofline's constants, the defaults where none are set.
func (c CostConfig) rooflineParams() RooflineParams {
	if c.Roofline == (RooflineParams{}) {
		return DefaultRooflineParams()
	}
	return c.Roofline
}

// EngineConfig is the scheduler's configuration, named after vLLM's options.
type EngineConfig struct {
	Prefill          string // PrefillColocated or PrefillDisaggregated
	MaxNumSeqs       int
	MaxBatchedTokens int // per-step token budget (chunked prefill)
	BlockSize        int // tokens per KV-cache block
	KVCacheTokens    int // KV-cache capacity; 0 derives it from the GPU and the model
	// GPUMemoryUtilization is the fraction of GPU memory the engine may use (weights plus
	// KV cache) when deriving the capacity, like vLLM's --gpu-memory-utilization.
	GPUMemoryUtilization float64
	PrefixCaching        bool
	// PrefillWorkers is the size of the disaggregated prefill pool, each prefilling one
	// sequence at a time; 0 is as many as needed (prefill never queues).
	PrefillWorkers int
}

func defaultEngine() EngineConfig {
	return EngineConfig{Prefill: PrefillColocated, MaxNumSeqs: 256, MaxBatchedTokens: 8192, BlockSize: 16, GPUMemoryUtilization: 0.9}
}

// builtinProfile returns a built-in profile by name.
func builtinProfile(name string) (Profile, bool) {
	m, _ := ModelPreset("llama-3.1-8b")
	g, _ := GPUPreset("h200")
	switch name {
	case "textbook":
		e := defaultEngine()
		e.Prefill = PrefillDisaggregated
		return Profile{Name: name, Model: m, GPU: g, Seed: 1, Engine: e,
			Cost: CostConfig{Kind: CostLinear, PrefillMsPerToken: 0.02, DecodeStepMs: 8, DecodeGrowth: 0.12}}, true
	case "h200-llama-3.1-8b":
		return Profile{Name: name, Model: m, GPU: g, Seed: 1, Engine: defaultEngine(),
			Cost: CostConfig{Kind: CostRoofline, Roofline: DefaultRooflineParams()}}, true
	}
	return Profile{}, false
}

// BuiltinProfiles lists the built-in profile names.
func BuiltinProfiles() []string { return []string{"textbook", "h200-llama-3.1-8b"} }

// ModelName is the model id the simulator serves: the model preset's name, or the
// profile's for the linear model (which has no model shape of its own).
func (p Profile) ModelName() string {
	if p.Cost.Kind == CostLinear && p.Name != "" {
		return filepath.Base(strings.TrimSuffix(strings.TrimSuffix(p.Name, ".yaml"), ".yml"))
	}
	if p.Model.Name != "" {
		return p.Model.Name
	}
	return "llmbench-sim"
}

// LoadProfile returns a built-in profile ("textbook", "h200-llama-3.1-8b"; "" is the
// default) or reads a YAML profile file.
func LoadProfile(nameOrPath string) (Profile, error) {
	if nameOrPath == "" {
		nameOrPath = DefaultProfile
	}
	if p, ok := builtinProfile(nameOrPath); ok {
		return p, nil
	}
	b, err := os.ReadFile(nameOrPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Profile{}, fmt.Errorf("profile %q is neither a built-in (%s) nor a readable file", nameOrPath, strings.Join(BuiltinProfiles(), ", "))
		}
		return Profile{}, err
	}
	p, err := ParseProfile(b, filepath.Dir(nameOrPath))
	if err != nil {
		return Profile{}, fmt.Errorf("%s: %w", nameOrPath, err)
	}
	p.Name = nameOrPath
	return p, nil
}

// ParseProfile reads a YAML profile; dir resolves a relative cost.file. Every problem is
// reported at once, each naming its key (and line).
func ParseProfile(b []byte, dir string) (Profile, error) {
	m, _ := ModelPreset("llama-3.1-8b")
	g, _ := GPUPreset("h200")
	p := Profile{Model: m, GPU: g, Seed: 1, Engine: defaultEngine(), Cost: CostConfig{Kind: CostRoofline, Roofline: DefaultRooflineParams()}}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return Profile{}, err
	}
	d := &yamlDecoder{bad: map[string]bool{}}
	if len(doc.Content) > 0 {
		d.profile(doc.Content[0], &p)
	}
	errs := d.errs
	if p.Cost.Kind == CostRoofline && p.Cost.Roofline == (RooflineParams{}) {
		// Every constant set to 0: report them rather than fall back to the defaults.
		errs = append(errs, p.Cost.Roofline.validate("cost.")...)
	}
	if p.Cost.Kind == CostTable && p.Cost.File != "" && !d.bad["cost.file"] {
		path := p.Cost.File
		if !filepath.IsAbs(path) && dir != "" {
			path = filepath.Join(dir, path)
		}
		t, err := LoadStepTable(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("cost.file: %w", err))
			d.bad["cost.file"] = true
		}
		p.table = t
	}
	// Report the settings' problems too, except for keys whose value could not be read
	// (their defaults would only add noise).
	for _, err := range p.validate() {
		key, _, _ := strings.Cut(err.Error(), ":")
		if !d.bad[key] && !d.bad[strings.Split(key, ".")[0]] {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return Profile{}, errors.Join(errs...)
	}
	return p, nil
}

// yamlDecoder walks the YAML tree by hand: model and gpu are a preset name or a mapping,
// and every unknown key or bad value is collected rather than stopping at the first.
type yamlDecoder struct {
	errs []error
	bad  map[string]bool // keys with an error
}

func (d *yamlDecoder) errorf(n *yaml.Node, key, format string, a ...any) {
	d.bad[key] = true
	d.errs = append(d.errs, fmt.Errorf("line %d: %s: %s", n.Line, key, fmt.Sprintf(format, a...)))
}

// mapping calls fields[key] for each key of n; unknown keys are errors listing the known.
func (d *yamlDecoder) mapping(n *yaml.Node, path string, fields map[string]func(key string, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, strings.TrimSuffix(path, "."), "want a mapping, got %s", nodeKind(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, ok := fields[k.Value]
		if !ok {
			d.errorf(k, path+k.Value, "unknown key (known: %s)", strings.Join(sortedKeys(fields), ", "))
			continue
		}
		f(path+k.Value, v)
	}
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func (d *yamlDecoder) str(dst *string) func(string, *yaml.Node) {
	return func(key string, v *yaml.Node) {
		if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
			d.errorf(v, key, "want a string, got %s", nodeKind(v))
			return
		}
		*dst = v.Value
	}
}

func (d *yamlDecoder) integer(dst *int) func(string, *yaml.Node) {
	return func(key string, v *yaml.Node) {
		var x int
		if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&x) != nil {
			d.errorf(v, key, "want an integer, got %s", nodeKind(v))
			return
		}
		*dst = x
	}
}

func (d *yamlDecoder) number(dst *float64) func(string, *yaml.Node) {
	return func(key string, v *yaml.Node) {
		var x float64
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || v.Decode(&x) != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			d.errorf(v, key, "want a number, got %s", nodeKind(v))
			return
		}
		*dst = x
	}
}

func (d *yamlDecoder) boolean(dst *bool) func(string, *yaml.Node) {
	return func(key string, v *yaml.Node) {
		var x bool
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&x) != nil {
			d.errorf(v, key, "want true or false, got %s", nodeKind(v))
			return
		}
		*dst = x
	}
}

func (d *yamlDecoder) profile(n *yaml.Node, p *Profile) {
	var seed int
	seedSet := false
	d.mapping(n, "", map[string]func(string, *yaml.Node){
		"model": func(key string, v *yaml.Node) { d.model(key, v, &p.Model) },
		"gpu":   func(key string, v *yaml.Node) { d.gpu(key, v, &p.GPU) },
		"cost": func(key string, v *yaml.Node) {
			fields := map[string]func(string, *yaml.Node){
				"kind":                 d.str(&p.Cost.Kind),
				"prefill_ms_per_token": d.number(&p.Cost.PrefillMsPerToken),
				"decode_step_ms":       d.number(&p.Cost.DecodeStepMs),
				"decode_growth":        d.number(&p.Cost.DecodeGrowth),
				"file":                 d.str(&p.Cost.File),
			}
			for _, f := range p.Cost.Roofline.Fields() {
				fields[f.Key] = d.number(f.Value)
			}
			d.mapping(v, key+".", fields)
		},
		"engine": func(key string, v *yaml.Node) {
			e := &p.Engine
			d.mapping(v, key+".", map[string]func(string, *yaml.Node){
				"prefill":                d.str(&e.Prefill),
				"max_num_seqs":           d.integer(&e.MaxNumSeqs),
				"max_batched_tokens":     d.integer(&e.MaxBatchedTokens),
				"block_size":             d.integer(&e.BlockSize),
				"kv_cache_tokens":        d.integer(&e.KVCacheTokens),
				"gpu_memory_utilization": d.number(&e.GPUMemoryUtilization),
				"prefix_caching":         d.boolean(&e.PrefixCaching),
				"prefill_workers":        d.integer(&e.PrefillWorkers),
			})
		},
		"seed": func(key string, v *yaml.Node) { seedSet = true; d.integer(&seed)(key, v) },
	})
	if seedSet {
		p.Seed = int64(seed)
	}
	// Keys that belong to another cost kind are mistakes, not silently ignored settings.
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "cost" && n.Content[i+1].Kind == yaml.MappingNode {
				d.costKeysForKind(n.Content[i+1], p.Cost.Kind)
			}
		}
	}
}

func (d *yamlDecoder) costKeysForKind(n *yaml.Node, kind string) {
	owner := map[string]string{"prefill_ms_per_token": CostLinear, "decode_step_ms": CostLinear, "decode_growth": CostLinear, "file": CostTable}
	var rp RooflineParams
	for _, f := range rp.Fields() {
		owner[f.Key] = CostRoofline
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if o, ok := owner[k.Value]; ok && o != kind && (kind == CostLinear || kind == CostRoofline || kind == CostTable) {
			d.errorf(k, "cost."+k.Value, "applies to kind %s only, not %s", o, kind)
		}
	}
}

func (d *yamlDecoder) model(key string, v *yaml.Node, m *ModelShape) {
	if v.Kind == yaml.ScalarNode {
		pm, ok := ModelPreset(v.Value)
		if !ok {
			d.errorf(v, key, "unknown model preset %q (presets: %s; or a mapping of layers, hidden, heads, kv_heads, head_dim, intermediate, vocab)", v.Value, strings.Join(ModelPresets(), ", "))
			return
		}
		*m = pm
		return
	}
	*m = ModelShape{Name: "custom"}
	d.mapping(v, key+".", map[string]func(string, *yaml.Node){
		"name":            d.str(&m.Name),
		"layers":          d.integer(&m.Layers),
		"hidden":          d.integer(&m.Hidden),
		"heads":           d.integer(&m.Heads),
		"kv_heads":        d.integer(&m.KVHeads),
		"head_dim":        d.integer(&m.HeadDim),
		"intermediate":    d.integer(&m.Intermediate),
		"vocab":           d.integer(&m.Vocab),
		"tied_embeddings": d.boolean(&m.TiedEmbeddings),
		"bytes_per_param": d.number(&m.BytesPerParam),
	})
	if v.Kind == yaml.MappingNode && m.HeadDim == 0 && m.Heads > 0 && m.Hidden%m.Heads == 0 {
		m.HeadDim = m.Hidden / m.Heads // the usual convention when head_dim is not given
	}
}

func (d *yamlDecoder) gpu(key string, v *yaml.Node, g *GPU) {
	if v.Kind == yaml.ScalarNode {
		pg, ok := GPUPreset(v.Value)
		if !ok {
			d.errorf(v, key, "unknown GPU preset %q (presets: %s; or a mapping of tflops, bandwidth_gbps, memory_gb)", v.Value, strings.Join(GPUPresets(), ", "))
			return
		}
		*g = pg
		return
	}
	*g = GPU{Name: "custom"}
	d.mapping(v, key+".", map[string]func(string, *yaml.Node){
		"name":           d.str(&g.Name),
		"tflops":         d.number(&g.TFLOPS),
		"bandwidth_gbps": d.number(&g.BandwidthGBps),
		"memory_gb":      d.number(&g.MemoryGB),
		"sms":            d.integer(&g.SMs),
	})
}

// Profile limits. Each numeric setting has a physically sane range, so that no value a
// YAML file can hold makes a step's duration overflow time.Duration (decode_step_ms: 1e308
// once priced steps as negative durations).
const (
	maxCostMs          = 1e6 // prefill_ms_per_token, decode_step_ms: 1,000 s
	maxDecodeGrowth    = 1e6
	maxNumSeqs         = 1_000_000 // max_num_seqs, prefill_workers
	maxBatchedTokens   = 100_000_000
	maxBlockSize       = 1_000_000
	maxKVCacheTokens   = min(1_000_000_000_000, math.MaxInt) // an int on 32-bit systems too
	maxStepTime        = time.Hour                           // a full step, or a lone prefill of the whole KV cache
	maxStepTimeInWords = "1h"
)

// Validate reports every problem with the profile at once, each naming its YAML key.
func (p Profile) Validate() error { return errors.Join(p.validate()...) }

func (p Profile) validate() []error {
	var errs []error
	add := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...)))
	}
	if err := p.Model.validate("model"); err != nil {
		errs = append(errs, err)
	}
	if err := p.GPU.validate("gpu"); err != nil {
		errs = append(errs, err)
	}
	c := p.Cost
	switch c.Kind {
	case CostLinear:
		if !(c.PrefillMsPerToken >= 0 && c.PrefillMsPerToken <= maxCostMs) {
			add("cost.prefill_ms_per_token", "must be in [0, %.0f] ms, got %g", float64(maxCostMs), c.PrefillMsPerToken)
		}
		if !(c.DecodeStepMs > 0 && c.DecodeStepMs <= maxCostMs) {
			add("cost.decode_step_ms", "must be in (0, %.0f] ms, got %g", float64(maxCostMs), c.DecodeStepMs)
		}
		if !(c.DecodeGrowth >= 0 && c.DecodeGrowth <= maxDecodeGrowth) {
			add("cost.decode_growth", "must be in [0, %.0f], got %g", float64(maxDecodeGrowth), c.DecodeGrowth)
		}
	case CostRoofline:
		errs = append(errs, c.rooflineParams().validate("cost.")...)
	case CostTable:
		if c.File == "" {
			add("cost.file", "kind table needs a file of measured step times (the shape of internal/sim/testdata/h200-llama-3.1-8b.json)")
		} else if p.table == nil {
			add("cost.file", "%q was not loaded (use LoadProfile or ParseProfile)", c.File)
		}
	default:
		add("cost.kind", "%q is not one of linear, roofline, table", c.Kind)
	}
	e := p.Engine
	switch e.Prefill {
	case PrefillColocated, PrefillDisaggregated:
	default:
		add("engine.prefill", "%q is not one of colocated, disaggregated", e.Prefill)
	}
	if e.MaxNumSeqs <= 0 || e.MaxNumSeqs > maxNumSeqs {
		add("engine.max_num_seqs", "must be in 1..%d, got %d", maxNumSeqs, e.MaxNumSeqs)
	}
	if e.MaxBatchedTokens <= 0 || e.MaxBatchedTokens > maxBatchedTokens {
		add("engine.max_batched_tokens", "must be in 1..%d, got %d", maxBatchedTokens, e.MaxBatchedTokens)
	} else if e.MaxNumSeqs > 0 && e.MaxBatchedTokens < e.MaxNumSeqs {
		add("engine.max_batched_tokens", "%d is below max_num_seqs %d: a full batch could not decode in one step", e.MaxBatchedTokens, e.MaxNumSeqs)
	}
	if e.BlockSize <= 0 || e.BlockSize > maxBlockSize {
		add("engine.block_size", "must be in 1..%d, got %d", maxBlockSize, e.BlockSize)
	}
	if e.KVCacheTokens < 0 || e.KVCacheTokens > maxKVCacheTokens {
		add("engine.kv_cache_tokens", "must be in 0..%d (0 derives it from the GPU), got %d", maxKVCacheTokens, e.KVCacheTokens)
	}
	if !(e.GPUMemoryUtilization > 0 && e.GPUMemoryUtilization <= 1) {
		add("engine.gpu_memory_utilization", "must be in (0, 1], got %g", e.GPUMemoryUtilization)
	}
	if e.PrefillWorkers < 0 || e.PrefillWorkers > maxNumSeqs {
		add("engine.prefill_workers", "must be in 0..%d (0 = as many as needed), got %d", maxNumSeqs, e.PrefillWorkers)
	} else if e.PrefillWorkers > 0 && e.Prefill != PrefillDisaggregated {
		add("engine.prefill_workers", "applies to prefill: disaggregated only")
	}
	if e.PrefixCaching && e.Prefill == PrefillDisaggregated {
		add("engine.prefix_caching", "is simulated for prefill: colocated only")
	}
	if len(errs) == 0 {
		if kv, err := p.KVCacheTokens(); err != nil {
			errs = append(errs, err)
		} else if err := p.checkStepTimes(kv); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkStepTimes prices the heaviest work the engine can give the cost model and holds it
// to maxStepTime. Each setting may be within its range while their product is not (a slow
// GPU and a huge model, or decode_growth times max_num_seqs), and a table extrapolates.
func (p Profile) checkStepTimes(kv int) error {
	cm, err := p.NewCostModel()
	if err != nil {
		return err
	}
	e := p.Engine
	n, b := e.MaxNumSeqs, e.MaxBatchedTokens
	// Decoding sequences read at most the whole cache, or each all of it when prefixes are
	// shared; the budget's prefill chunk attends to a full cache too.
	ctx := int64(kv)
	if e.PrefixCaching {
		ctx *= int64(n)
	}
	chunk := StepWork{PrefillSeqs: 1, PrefillTokens: b, PrefillAttn: float64(b) * (float64(kv) + float64(b)/2), PrefillContext: int64(kv)}
	full := chunk
	full.DecodeSeqs, full.DecodeContext = n, ctx
	work := []struct {
		what string
		d    time.Duration
	}{
		{fmt.Sprintf("a full step (%d sequences decoding over %d cached tokens, %d prefill tokens)", n, ctx, b), cm.Step(full)},
		// One sequence alone cannot spread its reads over the GPU (roofline's parallelism).
		{fmt.Sprintf("one sequence decoding over the whole cache of %d tokens", kv), cm.Step(StepWork{DecodeSeqs: 1, DecodeContext: int64(kv)})},
		{fmt.Sprintf("a prefill of %d tokens (the whole cache) alone", kv), cm.Prefill(kv)},
	}
	for _, w := range work {
		if w.d < 0 || w.d > maxStepTime {
			return fmt.Errorf("cost: %s would take %v, beyond the %s limit: check the cost settings, model and GPU", w.what, w.d, maxStepTimeInWords)
		}
	}
	return nil
}

// KVCacheTokens is the KV-cache capacity in tokens (a whole number of blocks): the
// configured figure, or the GPU memory the engine may use minus the weights, over the KV
// bytes per token.
func (p Profile) KVCacheTokens() (int, error) {
	e := p.Engine
	bs := e.BlockSize
	if bs <= 0 {
		bs = 1
	}
	n := e.KVCacheTokens
	if n == 0 {
		usable := p.GPU.MemoryGB * 1e9 * e.GPUMemoryUtilization
		free := usable - p.Model.WeightBytes()
		if free <= 0 {
			return 0, fmt.Errorf("engine.kv_cache_tokens: %s's weights (%.1f GB) leave no room for a KV cache in %.0f%% of %s's %.0f GB",
				p.Model.Name, p.Model.WeightBytes()/1e9, e.GPUMemoryUtilization*100, p.GPU.Name, p.GPU.MemoryGB)
		}
		f := free / p.Model.KVBytesPerToken()
		if f > maxKVCacheTokens {
			return 0, fmt.Errorf("engine.kv_cache_tokens: %s's memory would hold %.3g tokens of %s's KV cache, beyond the %d limit; set kv_cache_tokens",
				p.GPU.Name, f, p.Model.Name, maxKVCacheTokens)
		}
		n = int(f)
	}
	n -= n % bs
	if n < bs {
		return 0, fmt.Errorf("engine.kv_cache_tokens: capacity %d tokens is less than one block of %d", n, bs)
	}
	return n, nil
}

// NewCostModel builds the profile's cost model.
func (p Profile) NewCostModel() (CostModel, error) {
	switch p.Cost.Kind {
	case CostLinear:
		return Linear{PrefillMsPerToken: p.Cost.PrefillMsPerToken, DecodeStepMs: p.Cost.DecodeStepMs, DecodeGrowth: p.Cost.DecodeGrowth}, nil
	case CostRoofline:
		return NewRoofline(p.Model, p.GPU, p.Cost.rooflineParams()), nil
	case CostTable:
		if p.table == nil {
			return nil, fmt.Errorf("cost.file: %q was not loaded", p.Cost.File)
		}
		return Table{T: p.table}, nil
	}
	return nil, fmt.Errorf("cost.kind: %q is not one of linear, roofline, table", p.Cost.Kind)
}

// WithTable returns p using the table model over t (for profiles built in code).
func (p Profile) WithTable(t *StepTable) Profile {
	p.Cost.Kind = CostTable
	p.table = t
	if p.Cost.File == "" {
		p.Cost.File = "(in memory)"
	}
	return p
}
