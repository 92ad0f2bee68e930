package sim

import (
	"strconv"
)

// Keys under a profile's cost: that another package names (calibrate's fit).
const (
	CostKeyPrefillMsPerToken  = "prefill_ms_per_token"
	CostKeyDecodeStepMs       = "decode_step_ms"
	CostKeyDecodeGrowth       = "decode_growth"
	CostKeyStepMs             = "step_ms"
	CostKeyContextMsPer1k     = "context_ms_per_1k"
	CostKeyPrefillAttnMsPer1M = "prefill_attention_ms_per_1m"
	CostKeyPrefillSeqMs       = "prefill_seq_ms"
	CostKeyStepNoise          = "step_noise"
	CostKeyStepOverheadUs     = "step_overhead_us"
	CostKeyMoELayerOverheadUs = "moe_layer_overhead_us"
	CostKeyPrefillMoELayerUs  = "prefill_moe_layer_overhead_us"
	CostKeyOverlap            = "overlap"
	CostKeyFP4Efficiency      = "fp4_efficiency"
	CostKeyKVReadBits         = "kv_read_bits"
	CostKeyLaunchUsPerLayer   = "launch_us_per_layer"
)

// CostKey is one number under a profile's cost: with the cost kind that owns it, where it
// lies in a profile and its valid range. costKeys is the one spelling of each that the
// decoder, Profile.YAML, Validate and calibrate's fit read.
type CostKey struct {
	Key  string // YAML key under cost:
	Kind string // the cost kind it applies to; "" for every kind
	// Exactly one of cost and roof locates the value (roof: a roofline constant, also
	// reachable from a RooflineParams alone).
	cost func(c *CostConfig) *float64
	roof func(r *RooflineParams) *float64
	// Min, Max are the valid range, inclusive but for Min when MinOpen.
	Min, Max float64
	MinOpen  bool
	Note     string // after the range in messages: " ms"
	// FitMin, FitMax narrow the range a fit searches; both 0: the valid range.
	FitMin, FitMax float64
	// OmitZero keys are written only when not 0.
	OmitZero bool
}

// costKeys are the numbers under cost:, in the order Profile.YAML writes and Validate
// reports them.
var costKeys = []CostKey{
	{Key: CostKeyPrefillMsPerToken, Kind: CostLinear, cost: func(c *CostConfig) *float64 { return &c.PrefillMsPerToken }, Max: maxCostMs, Note: " ms", FitMin: 1e-6, FitMax: 1e3},
	{Key: CostKeyDecodeStepMs, Kind: CostLinear, cost: func(c *CostConfig) *float64 { return &c.DecodeStepMs }, Max: maxCostMs, MinOpen: true, Note: " ms", FitMin: 1e-3, FitMax: 1e5},
	{Key: CostKeyDecodeGrowth, Kind: CostLinear, cost: func(c *CostConfig) *float64 { return &c.DecodeGrowth }, Max: maxDecodeGrowth, FitMax: 100},
	// The terms the textbook leaves at 0.
	{Key: CostKeyStepMs, Kind: CostLinear, cost: func(c *CostConfig) *float64 { return &c.StepMs }, Max: maxCostMs, Note: " ms", FitMax: 1e4, OmitZero: true},
	{Key: CostKeyContextMsPer1k, Kind: CostLinear, cost: func(c *CostConfig) *float64 { return &c.ContextMsPer1k }, Max: maxCostMs, Note: " ms", FitMax: 1e4, OmitZero: true},
	{Key: CostKeyPrefillAttnMsPer1M, Kind: CostLinear, cost: func(c *CostConfig) *float64 { return &c.PrefillAttnMsPer1M }, Max: maxCostMs, Note: " ms", FitMax: 1e5, OmitZero: true},
	{Key: CostKeyPrefillSeqMs, Kind: CostLinear, cost: func(c *CostConfig) *float64 { return &c.PrefillSeqMs }, Max: maxCostMs, Note: " ms", FitMax: 1e4, OmitZero: true},
	// The roofline's constants. The ranges are far beyond what hardware and serving engines
	// reach (an eager, CPU-bound PyTorch layer costs about 400 µs) and bound what a
	// numerical fit may try.
	{Key: "compute_efficiency", Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.ComputeEfficiency }, Min: 0.01, Max: 1},
	{Key: "bandwidth_efficiency", Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.BandwidthEfficiency }, Min: 0.01, Max: 1},
	{Key: "attn_units_per_sm", Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.AttnUnitsPerSM }, Max: 64},
	{Key: "layer_overhead_us", Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.LayerOverheadUs }, Max: 1000},
	{Key: "seq_overhead_us", Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.SeqOverheadUs }, Max: 1000},
	{Key: CostKeyStepOverheadUs, Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.StepOverheadUs }, Max: 100_000},
	{Key: CostKeyMoELayerOverheadUs, Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.MoELayerOverheadUs }, Max: 1000},
	{Key: CostKeyPrefillMoELayerUs, Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.PrefillMoELayerOverheadUs }, Max: 10_000},
	{Key: CostKeyOverlap, Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.Overlap }, Max: 16, Note: " (0: full overlap; else at least 1)", FitMin: 1, FitMax: 16},
	{Key: CostKeyFP4Efficiency, Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.FP4Efficiency }, Max: 1, Note: " (0: fp4 at compute_efficiency, as every precision)"},
	{Key: CostKeyKVReadBits, Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.KVReadBits }, Max: 32, Note: " (0: the KV cache's own size)"},
	{Key: CostKeyLaunchUsPerLayer, Kind: CostRoofline, roof: func(r *RooflineParams) *float64 { return &r.LaunchUsPerLayer }, Max: 1000, Note: " (a step outside CUDA graphs; 0: none)"},
	{Key: CostKeyStepNoise, cost: func(c *CostConfig) *float64 { return &c.StepNoise }, Max: maxStepNoise, Note: " (a coefficient of variation; 0 = none)", OmitZero: true},
}

// costFile is the table kind's one key, a string.
const costFile = "file"

// CostKeysOf lists the keys a cost kind owns, in costKeys' order.
func CostKeysOf(kind string) []CostKey {
	var out []CostKey
	for _, k := range costKeys {
		if k.Kind == kind {
			out = append(out, k)
		}
	}
	return out
}

// LookupCostKey returns the entry of a key under cost: ("decode_step_ms").
func LookupCostKey(key string) (CostKey, bool) {
	for _, k := range costKeys {
		if k.Key == key {
			return k, true
		}
	}
	return CostKey{}, false
}

// Value locates k's number in c.
func (k CostKey) Value(c *CostConfig) *float64 {
	if k.roof != nil {
		return k.roof(&c.Roofline)
	}
	return k.cost(c)
}

// FitRange is the range a fit searches.
func (k CostKey) FitRange() (lo, hi float64) {
	if k.FitMin == 0 && k.FitMax == 0 {
		return k.Min, k.Max
	}
	return k.FitMin, k.FitMax
}

// check reports v outside k's range, naming the key under prefix ("cost.").
func (k CostKey) check(prefix string, v float64) error {
	if (v > k.Min || (!k.MinOpen && v == k.Min)) && v <= k.Max {
		return nil
	}
	open := "["
	if k.MinOpen {
		open = "("
	}
	bound := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	return keyErrorf(prefix+k.Key, "must be in %s%s, %s]%s, got %g", open, bound(k.Min), bound(k.Max), k.Note, v)
}
