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
func VLLMResult(l *Level, percentiles []float64) map[string]any {
	out := map[string]any{
		"completed":              l.Completed,
		"failed":                 l.Failed,
		"total_input_tokens":     l.TotalInputTokens,
		"total_output_tokens":    l.TotalOutputTokens,
		"duration":               l.DurationS,
		"request_throughput":     l.RequestThroughput,
		"output_throughput":      l.OutputThroughput,
		"total_token_throughput": l.TotalTokenThroughput,
		"max_concurrency":        nil,
		"request_rate":           "inf",
	}
	if l.Concurrency > 0 {
		out["max_concurrency"] = l.Concurrency
	}
	if l.Rate > 0 {
		out["request_rate"] = l.Rate
	}
	if l.Goodput != nil {
		out["request_goodput"] = *l.Goodput
	}
	out["max_output_tokens_per_s"] = l.PeakOutputThroughput
	out["max_concurrent_requests"] = l.PeakConcurrency
	for _, d := range metrics.Registry {
		st, ok := l.Metrics.Get(d.Key)
		if d.VLLM == "" || !ok {
			continue // absent: no stream to time (--stream=false, embeddings, rerank)
		}
		m := struct {
			vllm string
			s    metrics.Stats
		}{d.VLLM, *st}
		out["mean_"+m.vllm+"_ms"] = finite(m.s.Mean)
		out["std_"+m.vllm+"_ms"] = finite(m.s.Std)
		med, ok := m.s.Get(50)
		if !ok {
			med.Value = math.NaN()
		}
		out["median_"+m.vllm+"_ms"] = finite(med.Value)
		for _, p := range percentiles {
			v, ok := m.s.Get(p)
			if !ok {
				continue
			}
			out["p"+vllmPercentile(p)+"_"+m.vllm+"_ms"] = finite(v.Value)
		}
	}
	return out
}

// vllmPercentile formats p as vLLM does: integers without a decimal point.
func vllmPercentile(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// finite maps NaN (no samples) to null, which JSON can carry.
func finite(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

// WriteVLLM writes vllm.json: one vLLM result object for a single level, or a list of them,
// one per level, for a ladder.
func WriteVLLM(w io.Writer, s *Summary) error {
	var v any
	if len(s.Levels) == 1 {
		v = VLLMResult(&s.Levels[0], s.Percentiles)
	} else {
		list := make([]map[string]any, len(s.Levels))
		for i := range s.Levels {
			list[i] = VLLMResult(&s.Levels[i], s.Percentiles)
		}
		v = list
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
