package report

import (
	"encoding/json"
	"io"
	"math"
	"strconv"

	"github.com/llmbench/llmbench/internal/metrics"
)

// VLLMResult is one level in the layout of vLLM's `bench serve --save-result` JSON, so
// dashboards built for vLLM read llmbench runs. Two definitions differ from ours, and the
// keys follow vLLM's, not ours: vLLM's "itl" is the gap between stream chunks (our
// chunk_gap), not our per-token ITL; and vLLM's "duration" is the benchmark's wall time (we
// give the level's first-sent-to-last-done window). See docs/metrics.md.
func VLLMResult(l *Level, percentiles []float64) map[string]VLLMValue {
	count := func(n int) VLLMValue { return vllmNumber(float64(n)) }
	out := map[string]VLLMValue{
		"completed":              count(l.Completed),
		"failed":                 count(l.Failed),
		"total_input_tokens":     count(l.TotalInputTokens),
		"total_output_tokens":    count(l.TotalOutputTokens),
		"duration":               vllmNumber(l.DurationS),
		"request_throughput":     vllmNumber(l.RequestThroughput),
		"output_throughput":      vllmNumber(l.OutputThroughput),
		"total_token_throughput": vllmNumber(l.TotalTokenThroughput),
		"max_concurrency":        {}, // null: no cap
		"request_rate":           {str: "inf", isStr: true},
	}
	if l.Concurrency > 0 {
		out["max_concurrency"] = count(l.Concurrency)
	}
	if l.Rate > 0 {
		out["request_rate"] = vllmNumber(l.Rate)
	}
	if l.Goodput != nil {
		out["request_goodput"] = vllmNumber(*l.Goodput)
	}
	out["max_output_tokens_per_s"] = vllmNumber(l.PeakOutputThroughput)
	out["max_concurrent_requests"] = count(l.PeakConcurrency)
	for _, d := range metrics.Registry {
		if d.VLLM == "" {
			continue
		}
		s := l.Metrics.Stat(d.Key)
		out["mean_"+d.VLLM+"_ms"] = vllmNumber(s.Mean)
		out["std_"+d.VLLM+"_ms"] = vllmNumber(s.Std)
		med, ok := s.Get(50)
		if !ok {
			med.Value = math.NaN()
		}
		out["median_"+d.VLLM+"_ms"] = vllmNumber(med.Value)
		for _, p := range percentiles {
			v, ok := s.Get(p)
			if !ok {
				continue
			}
			out["p"+vllmPercentile(p)+"_"+d.VLLM+"_ms"] = vllmNumber(v.Value)
		}
	}
	return out
}

// VLLMValue is one value of a vLLM result: a number, a string, or (the zero value) null.
type VLLMValue struct {
	num          float64
	str          string
	isNum, isStr bool
}

// vllmNumber is f, or null when f is not finite (no samples), which JSON cannot carry.
func vllmNumber(f float64) VLLMValue {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return VLLMValue{}
	}
	return VLLMValue{num: f, isNum: true}
}

// MarshalJSON writes the number, string or null.
func (v VLLMValue) MarshalJSON() ([]byte, error) {
	switch {
	case v.isNum:
		return json.Marshal(v.num)
	case v.isStr:
		return json.Marshal(v.str)
	}
	return []byte("null"), nil
}

// vllmPercentile formats p as vLLM does: integers without a decimal point.
func vllmPercentile(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// WriteVLLM writes vllm.json: one vLLM result object for a single level, or a list of them,
// one per level, for a ladder.
func WriteVLLM(w io.Writer, s *Summary) error {
	var v any
	if len(s.Levels) == 1 {
		v = VLLMResult(&s.Levels[0], s.Percentiles)
	} else {
		list := make([]map[string]VLLMValue, len(s.Levels))
		for i := range s.Levels {
			list[i] = VLLMResult(&s.Levels[i], s.Percentiles)
		}
		v = list
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
