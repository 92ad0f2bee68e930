package sim

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmbench/llmbench/internal/figure"
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

// Profile describes a simulated deployment: model, GPU, cost model, engine settings, and
// how many GPUs serve it how (Deployment).
type Profile struct {
	Name   string // built-in name, or the YAML file's path
	Model  ModelShape
	GPU    GPU
	Cost   CostConfig
	Engine EngineConfig
	Seed   int64 // seeds the lengths of sequences without ignore_eos
	// Network is the client-to-engine overhead a calibration measured apart from the
	// engine's steps; the virtual clock (simulate) adds it, serve does not (a real network
	// adds its own).
	Network NetworkConfig
	// Tools is how the simulated model answers requests that offer tools.
	Tools ToolConfig
	// Calibration is where a fitted profile came from and what it was fitted on; nil for
	// a profile nobody fitted.
	Calibration *Calibration
	// Power is what a calibration's probe measured its GPUs draw (power.go); zero when it
	// measured none, and the energy is estimated from the cost model instead.
	Power PowerConfig

	Deployment Deployment // replicas, tensor parallelism, precisions
	// ModelConfig is the Hugging Face config.json the model was read from (model_config:,
	// --model-config), absolute; "" for a preset or a shape given in the profile.
	ModelConfig string
	// Speculative is speculative decoding (spec.go); the zero value is off.
	Speculative Speculative
	// Pace multiplies every engine step's duration (0 and 1: as the cost model says). No
	// profile file sets it: it is the same server run slower or faster, as a busy host or
	// a drifting server runs it, for how far a prediction moves with the server's pace
	// (simulate's pace sensitivity).
	Pace float64

	table *StepTable // loaded from Cost.File for the table model
}

// CostConfig selects and parameterises the cost model.
type CostConfig struct {
	Kind               string // CostLinear, CostRoofline or CostTable
	PrefillMsPerToken  float64
	DecodeStepMs       float64
	DecodeGrowth       float64
	StepMs             float64 // linear: paid by every step
	ContextMsPer1k     float64 // linear: per 1,000 tokens of context the decoding sequences attend to
	PrefillAttnMsPer1M float64 // linear: per million query-key pairs of prefill chunks
	PrefillSeqMs       float64 // linear: per sequence a step prefills (a prompt or a chunk of one)
	File               string  // table: calibration-shaped JSON
	// Roofline holds the roofline's constants; the zero value means DefaultRooflineParams
	// (a YAML profile starts from the defaults and overrides the keys it sets).
	Roofline RooflineParams
	// StepNoise is the coefficient of variation of step times (any kind): each step's
	// duration is multiplied by a seeded log-normal factor of mean 1 (noise.go). 0 is none.
	StepNoise float64
}

// rooflineParams is the roofline's constants, the defaults where none are set.
func (c CostConfig) rooflineParams() RooflineParams {
	if c.Roofline == (RooflineParams{}) {
		return DefaultRooflineParams()
	}
	return c.Roofline
}

// NetworkConfig is the time a request and its tokens spend outside the engine.
type NetworkConfig struct {
	// RTTMs is the round trip, in ms, between the client and the engine's step loop
	// (network, HTTP front end, tokenisation): half delays the request's arrival at the
	// engine, half every token's arrival at the client.
	RTTMs float64
	// JitterMs spreads the requests' arrivals over [0, JitterMs): requests sent together do
	// not reach a real engine at one instant, so the first starts a step the others wait for.
	JitterMs float64
	// FrontEndMs is the server's front end's time per request, one request at a time,
	// before the engine sees it (part of the round trip a probe measures, kept apart): on a
	// CPU server requests that arrive together reach the engine in turn.
	FrontEndMs float64
	// PromptUsPerToken is the server's time per prompt token before the engine sees a
	// request (tokenising the prompt, the chat template, parsing the body), each request on
	// its own: llama.cpp's TTFT outside its own prefill grew 2.2 → 5.6 ms from 32 to 1,476
	// tokens, which a constant round trip would leave to the prefill's curvature.
	PromptUsPerToken float64
}

// Calibration is a fitted profile's provenance and validity range: the loads its probe
// measured. Predictions far outside them are extrapolations (simulate warns).
type Calibration struct {
	Source       string // the server probed, or the run folders fitted
	Date         string // when, RFC 3339 date
	PromptTokens [2]int // shortest and longest prompt measured
	OutputTokens [2]int // shortest and longest output measured
	Concurrency  [2]int // lowest and highest requests in flight measured
	MaxNumSeqs   string // where engine.max_num_seqs came from (probe, server, flag)
	// Error is the prediction error on probe points the fit did not see: the largest
	// absolute relative error of each judged figure (figure.Judged), in percent; NaN when
	// not measured.
	Error figure.Values
	// ErrorClosed and ErrorOpen are Error over the held-out closed-loop points and the
	// open-loop ones (NaN figures where none was held out); OpenRates the lowest and
	// highest open-loop arrival rate probed, req/s (zero: no open loop probed).
	ErrorClosed, ErrorOpen figure.Values
	OpenRates              [2]float64
	// NotTrusted are the probed loads calibrate's verdict did not trust (TTFT or TPOT P50
	// beyond its bound), and NotProbed the closed loops its probe left unchecked: simulate
	// names a level that falls in either.
	NotTrusted []LoadRange
	NotProbed  Corner
}

// EngineConfig is the scheduler's configuration, named after vLLM's options.
type EngineConfig struct {
	// Kind is the serving engine the profile stands for, EngineVLLM ("" is vLLM),
	// EngineSGLang or EngineTensorRTLLM: which limits it accepts (TensorRT-LLM runs a batch
	// larger than its token budget; vLLM refuses to start so).
	Kind             string
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
	// RecvInterval is how many decode-only steps the scheduler runs between taking in the
	// requests that arrived, as SGLang's --scheduler-recv-interval: a step with prefill
	// work, or an idle engine, takes them in at once. 0 or 1: every step.
	RecvInterval int
	// DPBalanceWait is how many steps, with DP attention (deployment.dp above 1), a new
	// request may be held until every DP group has one to start, so that all prefill in the
	// same step: TensorRT-LLM's attention_dp_config (enable_balance, timeout_iters). 0: none.
	DPBalanceWait int
	// CUDAGraphs is which steps run as CUDA graphs, their kernels launched as one: GraphsAll
	// (vLLM's piecewise graphs), GraphsDecode (decode-only steps, SGLang's), GraphsNone; ""
	// is the engine.kind's (engineCUDAGraphs). The others wait on their launches (cost:
	// launch_us_per_layer).
	CUDAGraphs string
}

// CUDA graph coverages (engine.cuda_graphs).
const (
	GraphsAll    = "all"
	GraphsDecode = "decode"
	GraphsNone   = "none"
)

// Engines a profile may name (engine.kind).
const (
	EngineVLLM        = "vllm"
	EngineSGLang      = "sglang"
	EngineTensorRTLLM = "tensorrt-llm"
)

// enginePrefillMoELayerUs are the engines' roofline cost prefill_moe_layer_overhead_us where a
// profile's cost: leaves it out (RooflineParams.PrefillMoELayerOverheadUs): vLLM's rows show
// none; SGLang's and TensorRT-LLM's (its PyTorch backend, trtllm-serve's) were fitted on
// InferenceX's DeepSeek-R1 rows (docs/measurements.md, "A step that prefills").
var enginePrefillMoELayerUs = map[string]float64{EngineVLLM: 0, EngineSGLang: 2100, EngineTensorRTLLM: 2100}

// engineKVReadBits are the engines' roofline cost kv_read_bits where a profile's cost: leaves
// it out (RooflineParams.KVReadBits): vLLM dequantizes an fp8 cache for attention (its docs
// to v0.11; InferenceX's Llama-3.3-70B fp8 rows on H100 measure TPOT as a 16-bit cache's);
// TensorRT-LLM's attention kernels read fp8 KV as stored, and SGLang's DeepSeek-R1 rows fit
// the cache's own size (docs/measurements.md, "An fp8 KV cache on vLLM").
var engineKVReadBits = map[string]float64{EngineVLLM: 16, EngineSGLang: 0, EngineTensorRTLLM: 0}

// engineLaunchUsPerLayer are the engines' roofline cost launch_us_per_layer where a profile's
// cost: leaves it out (RooflineParams.LaunchUsPerLayer): TensorRT-LLM's was fitted on MLPerf's
// B200 Llama-2-70B rows (TensorRT engines, CUDA graphs off: docs/measurements.md, "Launches a
// step waits on"); vLLM runs every step in graphs, and SGLang's eager steps are unmeasured.
var engineLaunchUsPerLayer = map[string]float64{EngineVLLM: 0, EngineSGLang: 0, EngineTensorRTLLM: 190}

// engineCUDAGraphs are the engines' engine.cuda_graphs where a profile leaves it out: vLLM's
// V1 captures piecewise graphs of mixed batches too; SGLang captures decode batches only;
// TensorRT-LLM as trtllm-serve runs it in InferenceX's scripts (its PyTorch backend,
// enable_piecewise_cuda_graph since 2026-03-27), every step — its TensorRT engines, as
// MLPerf's harness runs them, state theirs (use_graphs).
var engineCUDAGraphs = map[string]string{EngineVLLM: GraphsAll, EngineSGLang: GraphsDecode, EngineTensorRTLLM: GraphsAll}

// cudaGraphs is which steps run as CUDA graphs: CUDAGraphs, else the engine's.
func (e EngineConfig) cudaGraphs() string { return cmp.Or(e.CUDAGraphs, engineCUDAGraphs[e.kind()]) }

// kind is the engine, "" read as vLLM.
func (e EngineConfig) kind() string {
	if e.Kind == "" {
		return EngineVLLM
	}
	return e.Kind
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
		return Profile{Name: name, Model: m, GPU: g, Seed: 1, Engine: e, Deployment: defaultDeployment(),
			Cost: CostConfig{Kind: CostLinear, PrefillMsPerToken: 0.02, DecodeStepMs: 8, DecodeGrowth: 0.12}}, true
	case "h200-llama-3.1-8b":
		return Profile{Name: name, Model: m, GPU: g, Seed: 1, Engine: defaultEngine(), Deployment: defaultDeployment(),
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
	p := Profile{Model: m, GPU: g, Seed: 1, Engine: defaultEngine(), Deployment: defaultDeployment(), Cost: CostConfig{Kind: CostRoofline, Roofline: DefaultRooflineParams()}}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return Profile{}, err
	}
	d := &yamlDecoder{bad: map[string]bool{}}
	d.duplicateKeys(&doc, "")
	if len(doc.Content) > 0 {
		d.profile(doc.Content[0], &p)
	}
	d.loadModelConfig(&p, dir)
	if len(doc.Content) == 0 || !hasKey(doc.Content[0], "cost", CostKeyPrefillMoELayerUs) {
		p.Cost.Roofline.PrefillMoELayerOverheadUs = enginePrefillMoELayerUs[p.Engine.kind()]
	}
	if len(doc.Content) == 0 || !hasKey(doc.Content[0], "cost", CostKeyKVReadBits) {
		p.Cost.Roofline.KVReadBits = engineKVReadBits[p.Engine.kind()]
	}
	if len(doc.Content) == 0 || !hasKey(doc.Content[0], "cost", CostKeyLaunchUsPerLayer) {
		p.Cost.Roofline.LaunchUsPerLayer = engineLaunchUsPerLayer[p.Engine.kind()]
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
		var ke *keyError
		if errors.As(err, &ke) && (d.bad[ke.Key] || d.bad[strings.Split(ke.Key, ".")[0]]) {
			continue
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return Profile{}, errors.Join(errs...)
	}
	return p, nil
}

// loadModelConfig reads model_config's config.json (relative to dir) into p.Model.
func (d *yamlDecoder) loadModelConfig(p *Profile, dir string) {
	if d.modelConfigLine == 0 || d.bad["model_config"] {
		return
	}
	if d.modelLine != 0 {
		d.bad["model_config"] = true
		d.errs = append(d.errs, fmt.Errorf("line %d: model_config: and model: (line %d) both name the model: keep one", d.modelConfigLine, d.modelLine))
		return
	}
	path := p.ModelConfig
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	m, err := LoadHFConfig(path)
	if err != nil {
		d.bad["model_config"], d.bad["model"] = true, true
		d.errs = append(d.errs, fmt.Errorf("line %d: model_config: %w", d.modelConfigLine, err))
		return
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	p.Model, p.ModelConfig = m, path
}

// hasKey says whether the mapping n holds the key path (its keys, outermost first).
func hasKey(n *yaml.Node, path ...string) bool {
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			return false
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return false
		}
		n = next
	}
	return true
}

// keyError is a problem with one key of a profile ("engine.max_num_seqs", or a mapping's:
// "cost"), so that ParseProfile can leave out those of keys it could not read.
type keyError struct {
	Key string
	Err error
}

func (e *keyError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *keyError) Unwrap() error { return e.Err }

func keyErrorf(key, format string, a ...any) error {
	return &keyError{Key: key, Err: fmt.Errorf(format, a...)}
}

// yamlDecoder walks the YAML tree by hand: model and gpu are a preset name or a mapping,
// and every unknown key or bad value is collected rather than stopping at the first.
type yamlDecoder struct {
	errs []error
	bad  map[string]bool // keys with an error
	// modelConfigLine is model_config's line (0: none), modelLine model's.
	modelConfigLine, modelLine int
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

// fields are the mapping's fields of the plain keys under section in the table, read
// into p.
func (d *yamlDecoder) fields(section string, p *Profile) map[string]func(key string, v *yaml.Node) {
	out := map[string]func(string, *yaml.Node){}
	for _, k := range keysUnder(section) {
		if k.ptr == nil {
			continue // read by hand
		}
		_, name := splitKey(k.Path)
		switch ptr := k.ptr(p).(type) {
		case *int:
			out[name] = d.integer(ptr)
			if k.atLeastOne {
				out[name] = d.atLeastOne(ptr, k.Must)
			}
		case *float64:
			out[name] = d.number(ptr)
		case *string:
			out[name] = d.str(ptr)
		case *bool:
			out[name] = d.boolean(ptr)
		case *[2]int:
			out[name] = d.intRange(ptr)
		}
	}
	return out
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

// intRange reads a [low, high] list of two whole numbers, low <= high.
func (d *yamlDecoder) intRange(dst *[2]int) func(string, *yaml.Node) {
	return func(key string, v *yaml.Node) {
		var x [2]int
		ok := v.Kind == yaml.SequenceNode && len(v.Content) == 2
		for i := 0; ok && i < 2; i++ {
			n := v.Content[i]
			ok = n.Kind == yaml.ScalarNode && n.Tag == "!!int" && n.Decode(&x[i]) == nil && x[i] >= 0
		}
		if !ok || x[0] > x[1] {
			d.errorf(v, key, "want [low, high], two whole numbers with low <= high, got %s", nodeKind(v))
			return
		}
		*dst = x
	}
}

// numberRange reads [low, high], two non-negative numbers with low <= high.
func (d *yamlDecoder) numberRange(dst *[2]float64) func(string, *yaml.Node) {
	return func(key string, v *yaml.Node) {
		var x [2]float64
		ok := v.Kind == yaml.SequenceNode && len(v.Content) == 2
		for i := 0; ok && i < 2; i++ {
			n := v.Content[i]
			ok = n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") && n.Decode(&x[i]) == nil && x[i] >= 0 && !math.IsInf(x[i], 0)
		}
		if !ok || x[0] > x[1] {
			d.errorf(v, key, "want [low, high], two numbers with 0 <= low <= high, got %s", nodeKind(v))
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
		"model_config": func(key string, v *yaml.Node) {
			d.str(&p.ModelConfig)(key, v)
			d.modelConfigLine = v.Line
		},
		"gpu":         func(key string, v *yaml.Node) { d.gpu(key, v, p) },
		"cost":        func(key string, v *yaml.Node) { d.mapping(v, key+".", d.fields(key, p)) },
		"engine":      func(key string, v *yaml.Node) { d.mapping(v, key+".", d.fields(key, p)) },
		"deployment":  func(key string, v *yaml.Node) { d.mapping(v, key+".", d.fields(key, p)) },
		"speculative": func(key string, v *yaml.Node) { d.speculative(key, v, p) },
		"seed":        func(key string, v *yaml.Node) { seedSet = true; d.integer(&seed)(key, v) },
		"network":     func(key string, v *yaml.Node) { d.mapping(v, key+".", d.fields(key, p)) },
		"tools": func(key string, v *yaml.Node) {
			d.mapping(v, key+".", map[string]func(string, *yaml.Node){
				"auto_call_fraction": func(key string, v *yaml.Node) {
					var f float64
					d.number(&f)(key, v)
					p.Tools.AutoCall = &f
				},
			})
		},
		"power":       func(key string, v *yaml.Node) { d.mapping(v, key+".", d.fields(key, p)) },
		"calibration": func(key string, v *yaml.Node) { d.calibration(key, v, p) },
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

// calibration reads the profile's calibration mapping.
func (d *yamlDecoder) calibration(key string, v *yaml.Node, p *Profile) {
	c := &Calibration{Error: figure.Unmeasured(), ErrorClosed: figure.Unmeasured(), ErrorOpen: figure.Unmeasured()}
	p.Calibration = c
	fitError := func(e *figure.Values) func(string, *yaml.Node) {
		return func(key string, v *yaml.Node) {
			keys := map[string]func(string, *yaml.Node){}
			for _, k := range figure.Judged {
				keys[k.Name()] = d.number(&e[k])
			}
			d.mapping(v, key+".", keys)
		}
	}
	fields := d.fields(key, p)
	maps.Copy(fields, map[string]func(string, *yaml.Node){
		"error_pct": fitError(&c.Error),
		"error_pct_by_load": func(key string, v *yaml.Node) {
			d.mapping(v, key+".", map[string]func(string, *yaml.Node){
				"closed": fitError(&c.ErrorClosed),
				"open":   fitError(&c.ErrorOpen),
			})
		},
		"open_rates": d.numberRange(&c.OpenRates),
		"not_trusted": func(key string, v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				d.errorf(v, key, "want a list of loads, got %s", nodeKind(v))
				return
			}
			for i, n := range v.Content {
				t, at := LoadRange{}, fmt.Sprintf("%s[%d]", key, i)
				d.mapping(n, at+".", map[string]func(string, *yaml.Node){
					"load":          d.str(&t.Load),
					"concurrency":   d.intRange(&t.Concurrency),
					"rate_per_s":    d.numberRange(&t.Rate),
					"prompt_tokens": d.intRange(&t.PromptTokens),
					"error_pct":     d.number(&t.ErrorPct),
				})
				if err := validTrust(t); err != nil {
					d.errorf(n, at, "%v", err)
					continue
				}
				c.NotTrusted = append(c.NotTrusted, t)
			}
		},
		"not_probed": func(key string, v *yaml.Node) {
			d.mapping(v, key+".", map[string]func(string, *yaml.Node){
				"prompt_tokens": d.integer(&c.NotProbed.PromptTokens),
				"concurrency":   d.integer(&c.NotProbed.Concurrency),
			})
		},
	})
	d.mapping(v, key+".", fields)
}

func (d *yamlDecoder) costKeysForKind(n *yaml.Node, kind string) {
	owner := map[string]string{costFile: CostTable}
	for _, k := range costKeys {
		if k.Kind != "" {
			owner[k.Key] = k.Kind
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if o, ok := owner[k.Value]; ok && o != kind && (kind == CostLinear || kind == CostRoofline || kind == CostTable) {
			d.errorf(k, "cost."+k.Value, "applies to kind %s only, not %s", o, kind)
		}
	}
}

func (d *yamlDecoder) model(key string, v *yaml.Node, m *ModelShape) {
	d.modelLine = v.Line
	if v.Kind == yaml.ScalarNode {
		pm, ok := ModelPreset(v.Value)
		if !ok {
			d.errorf(v, key, "unknown model preset %q (presets: %s; or a mapping of layers, hidden, heads, kv_heads, head_dim, intermediate, vocab)", v.Value, strings.Join(ModelPresets(), ", "))
			return
		}
		*m = pm
		return
	}
	// The table locates a model's keys in a Profile's; the draft model is read the same way.
	q := Profile{Model: ModelShape{Name: "custom"}}
	d.mapping(v, key+".", d.fields("model", &q))
	*m = q.Model
	if v.Kind == yaml.MappingNode && m.HeadDim == 0 && m.Heads > 0 && m.Hidden%m.Heads == 0 {
		m.HeadDim = m.Hidden / m.Heads // the usual convention when head_dim is not given
	}
}

func (d *yamlDecoder) gpu(key string, v *yaml.Node, p *Profile) {
	g := &p.GPU
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
	d.mapping(v, key+".", d.fields("gpu", p))
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
	maxRecvInterval    = 10_000                              // recv_interval, dp_balance_wait: published scripts use up to 60
	maxKVCacheTokens   = min(1_000_000_000_000, math.MaxInt) // an int on 32-bit systems too
	maxStepTime        = time.Hour                           // a full step, or a lone prefill of the whole KV cache
	maxStepTimeInWords = "1h"
)

// Validate reports every problem with the profile at once, each naming its YAML key.
func (p Profile) Validate() error { return errors.Join(p.validate()...) }

func (p Profile) validate() []error {
	var errs []error
	add := func(key, format string, a ...any) {
		errs = append(errs, keyErrorf(key, format, a...))
	}
	if err := p.Model.validate("model"); err != nil {
		errs = append(errs, err)
	}
	p.checkKeys(&errs, "power.watts_per_gpu", "power.gpus")
	if err := p.GPU.validate(); err != nil {
		errs = append(errs, err)
	}
	c := p.Cost
	switch c.Kind {
	case CostLinear:
		for _, k := range CostKeysOf(CostLinear) {
			if err := k.check("cost.", *k.Value(&c)); err != nil {
				errs = append(errs, err)
			}
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
	for _, k := range CostKeysOf("") { // every kind's
		if err := k.check("cost.", *k.Value(&c)); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, p.Tools.validate()...)
	if !(p.Pace >= 0 && p.Pace <= maxPace) {
		add("pace", "must be in [0, %g] (0 and 1: as costed), got %g", float64(maxPace), p.Pace)
	}
	p.checkKeys(&errs, KeyNetworkRTTMs, KeyNetworkFrontEndMs, "network.prompt_us_per_token", KeyNetworkJitterMs)
	e := p.Engine
	switch e.Prefill {
	case PrefillColocated, PrefillDisaggregated:
	default:
		add("engine.prefill", "%q is not one of colocated, disaggregated", e.Prefill)
	}
	p.checkKeys(&errs, KeyEngineMaxNumSeqs)
	if p.checkKeys(&errs, KeyEngineMaxBatchedTokens) && e.MaxNumSeqs > 0 && e.MaxBatchedTokens < e.MaxNumSeqs && e.kind() == EngineVLLM {
		add("engine.max_batched_tokens", "%d is below max_num_seqs %d: vLLM refuses to start so (a full batch could not decode in one step); TensorRT-LLM runs it (engine.kind: tensorrt-llm), its steps decoding the oldest sequences the budget allows", e.MaxBatchedTokens, e.MaxNumSeqs)
	}
	switch e.Kind {
	case "", EngineVLLM, EngineSGLang, EngineTensorRTLLM:
	default:
		add("engine.kind", "%q is not one of %s, %s, %s", e.Kind, EngineVLLM, EngineSGLang, EngineTensorRTLLM)
	}
	switch e.CUDAGraphs {
	case "", GraphsAll, GraphsDecode, GraphsNone:
	default:
		add("engine.cuda_graphs", "%q is not one of %s (every step in CUDA graphs), %s (decode-only steps), %s", e.CUDAGraphs, GraphsAll, GraphsDecode, GraphsNone)
	}
	p.checkKeys(&errs, "engine.block_size", KeyEngineKVCacheTokens, "engine.gpu_memory_utilization", "engine.recv_interval")
	if p.checkKeys(&errs, "engine.dp_balance_wait") && e.DPBalanceWait > 0 && p.Deployment.dp() < 2 {
		add("engine.dp_balance_wait", "balances new requests over DP attention groups: give deployment.dp above 1, or leave it out")
	}
	if p.checkKeys(&errs, "engine.prefill_workers") && e.PrefillWorkers > 0 && e.Prefill != PrefillDisaggregated {
		add("engine.prefill_workers", "applies to prefill: disaggregated only")
	}
	if e.PrefixCaching && e.Prefill == PrefillDisaggregated {
		add("engine.prefix_caching", "is simulated for prefill: colocated only")
	}
	errs = append(errs, p.deploymentErrors()...)
	errs = append(errs, p.specErrors()...)
	if len(errs) == 0 {
		if kv, err := p.KVCacheTokens(); err != nil {
			errs = append(errs, err)
		} else if err := p.checkFleet(kv); err != nil {
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
	// One sequence holds at most the longest a request may ask for.
	one := kv
	if m := p.MaxSeqLen(); m > 0 {
		one = min(one, m)
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
		{fmt.Sprintf("one sequence decoding over %d tokens (the longest a request may be)", one), cm.Step(StepWork{DecodeSeqs: 1, DecodeContext: int64(one)})},
		{fmt.Sprintf("a prefill of %d tokens (the longest a request may be) alone", one), cm.Prefill(one)},
	}
	if sc, err := p.newSpecCost(cm); err != nil {
		return err
	} else if sc != nil {
		passes := make([]StepWork, p.Speculative.DraftTokens)
		for j := range passes {
			passes[j] = StepWork{DecodeSeqs: n, DecodeContext: ctx}
		}
		work = append(work, struct {
			what string
			d    time.Duration
		}{fmt.Sprintf("a full step with its drafting (%d passes of %d sequences)", len(passes), n), cm.Step(full) + sc.draftTime(passes, chunk)})
	}
	for _, w := range work {
		if w.d < 0 || w.d > maxStepTime {
			return keyErrorf("cost", "%s would take %v, beyond the %s limit: check the cost settings, model and GPU", w.what, w.d, maxStepTimeInWords)
		}
	}
	return nil
}

// KVCacheTokens is one replica's KV-cache capacity in tokens (a whole number of blocks):
// the configured figure, or the GPU memory the engine may use minus one GPU's share of the
// weights, over one GPU's share of the KV bytes per token (ShardModel: each of a replica's
// tp GPUs caches its KV heads of every token).
func (p Profile) KVCacheTokens() (int, error) {
	e := p.Engine
	bs := e.BlockSize
	if bs <= 0 {
		bs = 1
	}
	n := e.KVCacheTokens
	if n == 0 {
		free, err := p.fit()
		if err != nil {
			return 0, err
		}
		perToken := p.ShardModel().KVBytesPerToken()
		if dm, ok := p.draftShard(); ok {
			// The draft model's weights and its own KV cache of every token share the memory.
			if free -= dm.WeightBytes(); free <= 0 {
				return 0, keyErrorf("speculative.draft_model", "%s's weights and %s's (%.1f GB per GPU) leave no room for a KV cache on %s: use a smaller draft model, or more GPUs (tp)",
					p.Model.Name, dm.Name, dm.WeightBytes()/1e9, p.GPU.Name)
			}
			perToken += dm.KVBytesPerToken()
		}
		// Each dp group caches its own sequences.
		f := free / perToken * float64(p.Deployment.dp())
		if f > maxKVCacheTokens {
			return 0, keyErrorf("engine.kv_cache_tokens", "%s's memory would hold %.3g tokens of %s's KV cache, beyond the %d limit; set kv_cache_tokens",
				p.GPU.Name, f, p.Model.Name, maxKVCacheTokens)
		}
		n = int(f)
	}
	n -= n % bs
	if n < bs {
		return 0, keyErrorf("engine.kv_cache_tokens", "capacity %d tokens is less than one block of %d", n, bs)
	}
	return n, nil
}

// NewCostModel builds the profile's cost model, at its Pace.
func (p Profile) NewCostModel() (CostModel, error) {
	cm, err := p.costModel()
	if err != nil || p.Pace == 0 || p.Pace == 1 {
		return cm, err
	}
	return paced{cm, p.Pace}, nil
}

// costModel is the cost model the profile's cost: names.
func (p Profile) costModel() (CostModel, error) {
	switch p.Cost.Kind {
	case CostLinear:
		c := p.Cost
		return Linear{PrefillMsPerToken: c.PrefillMsPerToken, DecodeStepMs: c.DecodeStepMs, DecodeGrowth: c.DecodeGrowth,
			StepMs: c.StepMs, ContextMsPer1k: c.ContextMsPer1k, PrefillAttnMsPer1M: c.PrefillAttnMsPer1M, PrefillSeqMs: c.PrefillSeqMs}, nil
	case CostRoofline:
		r := NewRoofline(p.ShardModel(), p.GPU, p.Cost.rooflineParams())
		r.DP, r.Graphs = p.Deployment.dp(), p.Engine.cudaGraphs()
		return p.tensorParallel(r), nil
	case CostTable:
		if p.table == nil {
			return nil, keyErrorf("cost.file", "%q was not loaded", p.Cost.File)
		}
		return Table{T: p.table}, nil
	}
	return nil, keyErrorf("cost.kind", "%q is not one of linear, roofline, table", p.Cost.Kind)
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

// maxPace bounds Profile.Pace: a server ten times slower than it was fitted is another
// server.
const maxPace = 10

// maxPromptUsPerToken bounds network.prompt_us_per_token: 1 ms a token is far beyond
// any tokenizer, and a 100,000-token prompt would wait 100 s.
const maxPromptUsPerToken = 1000

// NetworkDelays are Network's round trip, arrival jitter and front-end time as durations,
// and its time per prompt token.
func (p Profile) NetworkDelays() (rtt, jitter, frontEnd, perPromptToken time.Duration) {
	return ms(p.Network.RTTMs), ms(p.Network.JitterMs), ms(p.Network.FrontEndMs), nanos(p.Network.PromptUsPerToken * float64(time.Microsecond))
}

// farOutside is how far beyond its probe a prediction may go before it is called an
// extrapolation: twice the longest prompt or the most requests in flight measured.
const farOutside = 2

// Outside lists how a load of prompts and outputs of the given [shortest, longest] lengths
// and at most maxInFlight concurrent requests (0: unknown, as in an open loop) lies far
// outside what c was fitted on, in words; none when it lies within.
func (c *Calibration) Outside(prompt, output [2]int, maxInFlight int) []string {
	var out []string
	far := func(what string, got [2]int, fit [2]int) {
		if fit[1] == 0 || got[1] == 0 { // nothing fitted, or lengths the dataset brings
			return
		}
		if got[1] > farOutside*fit[1] {
			out = append(out, fmt.Sprintf("%s up to %d tokens, beyond %d× the longest probed (%d)", what, got[1], farOutside, fit[1]))
		} else if got[0]*farOutside < fit[0] {
			out = append(out, fmt.Sprintf("%s down to %d tokens, below half the shortest probed (%d)", what, got[0], fit[0]))
		}
	}
	far("prompts", prompt, c.PromptTokens)
	far("outputs", output, c.OutputTokens)
	if c.Concurrency[1] > 0 && maxInFlight > farOutside*c.Concurrency[1] {
		out = append(out, fmt.Sprintf("%d requests in flight, beyond %d× the most probed (%d)", maxInFlight, farOutside, c.Concurrency[1]))
	}
	return out
}

// MaxSeqLen is the longest prompt plus max_tokens a request may ask for: the deployment's
// max_model_len, else the model's own context (vLLM's default for --max-model-len); 0 when
// neither is known, and the KV cache is the only bound.
func (p Profile) MaxSeqLen() int {
	if p.Deployment.MaxModelLen > 0 {
		return p.Deployment.MaxModelLen
	}
	return p.Model.MaxContext
}
