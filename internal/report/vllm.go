package report

import (
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// VLLMResult is one level in the layout of vLLM's `bench serve --save-result` JSON, so
// dashboards built for vLLM read llmbench runs. Two definitions differ from ours, and the
// keys follow vLLM's, not ours: vLLM's "itl" is the gap between stream chunks (our
// chunk_gap), not our per-token ITL; and vLLM's "duration" is the benchmark's wall time (we
// give the level's first-sent-to-last-done window). See docs/metrics.md.
//
// With reqs (the level's requests, VLLMRequests) it carries the per-request arrays vLLM's
// --save-result writes: ttfts, itls (seconds), input_lens, output_lens, errors and
// generated_texts (the text with --save-text; empty strings without it).
func VLLMResult(s *Summary, l *Level, reqs *VLLMRequests) map[string]VLLMValue {
	count := func(n int) VLLMValue { return vllmNumber(float64(n)) }
	text := func(v string) VLLMValue { return VLLMValue{str: v, isStr: true} }
	out := map[string]VLLMValue{
		"date":                   text(s.StartedAt.UTC().Format("20060102-150405")),
		"backend":                text(vllmBackend(s.Target.API)),
		"model_id":               text(s.Target.Model),
		"tokenizer_id":           text(s.Workload.Tokenizer),
		"best_of":                count(1),
		"num_prompts":            count(l.Completed + l.Failed),
		"burstiness":             vllmBurstiness(s.Load.Arrival),
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
	out["request_goodput"] = VLLMValue{}
	if l.Goodput != nil {
		out["request_goodput"] = vllmNumber(*l.Goodput)
	}
	out["request_goodput:"] = out["request_goodput"] // vLLM's own key at e7ef74e, colon and all
	if reqs != nil {
		reqs.into(out)
	}
	out["max_output_tokens_per_s"] = vllmNumber(l.PeakOutputThroughput)
	out["max_concurrent_requests"] = count(l.PeakConcurrency)
	for _, d := range metrics.Registry {
		sp, ok := l.Metrics.Get(d.Key)
		if d.VLLM == "" || !ok {
			continue // absent: no stream to time (--stream=false, embeddings, rerank)
		}
		st := *sp
		out["mean_"+d.VLLM+"_ms"] = vllmNumber(st.Mean)
		out["std_"+d.VLLM+"_ms"] = vllmNumber(st.Std)
		med, ok := st.Get(50)
		if !ok {
			med.Value = math.NaN()
		}
		out["median_"+d.VLLM+"_ms"] = vllmNumber(med.Value)
		for _, p := range s.Percentiles {
			v, ok := st.Get(p)
			if !ok {
				continue
			}
			out["p"+vllmPercentile(p)+"_"+d.VLLM+"_ms"] = vllmNumber(v.Value)
		}
	}
	return out
}

// vllmBackend is vLLM's --backend name for an --api.
func vllmBackend(api string) string {
	switch api {
	case "openai-completions":
		return "openai"
	case "llamacpp":
		return "llama.cpp"
	case "":
		return "openai-chat" // the simulator
	}
	return api
}

// vllmBurstiness is vLLM's burstiness for an arrival process: 1 for Poisson (and the closed
// loop vLLM also labels 1), B for gamma:B, null for constant arrivals (vLLM's limit of
// infinite burstiness, which JSON cannot carry).
func vllmBurstiness(arrival string) VLLMValue {
	switch {
	case arrival == "constant":
		return VLLMValue{}
	case len(arrival) > 6 && arrival[:6] == "gamma:":
		if b, err := strconv.ParseFloat(arrival[6:], 64); err == nil {
			return vllmNumber(b)
		}
	}
	return vllmNumber(1)
}

// VLLMRequests collects a level's measured requests for vLLM's per-request arrays, each
// figure from the metric registry's own derivation (TTFT; the gaps between stream chunks,
// which vLLM calls ITL). It holds every request: only --result-format vllm asks for it.
type VLLMRequests struct {
	reqs     []vllmRequest
	streamed bool // some request streamed: without, ttfts and itls mean nothing and are left out
}

type vllmRequest struct {
	index   int
	ttft    float64   // s; 0 for a failed request, as vLLM writes it
	itls    []float64 // s
	in, out int
	err     string
	text    string // generated text, with --save-text
}

// Add takes one of the level's records (warm-up ones are left out, as from every figure).
func (v *VLLMRequests) Add(r *record.Record) {
	if r.Warmup || (r.Error != nil && r.Error.Kind == record.KindCanceled) {
		return
	}
	q := vllmRequest{index: r.Index, in: r.InputTokens, itls: []float64{}}
	v.streamed = v.streamed || !r.Unstreamed
	if r.Error != nil {
		q.err = r.Error.Message
		if q.err == "" {
			q.err = r.Error.Kind
		}
	} else {
		q.out = r.OutputTokens
		if r.Text != nil {
			q.text = *r.Text
		}
		seconds := func(num, den int64) float64 { return float64(num) / float64(den) / 1e6 }
		ttft, _ := metrics.Lookup(metrics.KeyTTFT)
		ttft.Samples(r, func(num, den int64, _ uint64) { q.ttft = seconds(num, den) })
		gap, _ := metrics.Lookup(metrics.KeyChunkGap)
		gap.Samples(r, func(num, den int64, _ uint64) { q.itls = append(q.itls, seconds(num, den)) })
	}
	v.reqs = append(v.reqs, q)
}

// into adds the arrays to a vLLM result, in request order.
func (v *VLLMRequests) into(out map[string]VLLMValue) {
	slices.SortFunc(v.reqs, func(a, b vllmRequest) int { return a.index - b.index })
	n := len(v.reqs)
	ttfts, itls := make([]float64, n), make([][]float64, n)
	ins, outs := make([]int, n), make([]int, n)
	errs, texts := make([]string, n), make([]string, n)
	for i, q := range v.reqs {
		ttfts[i], itls[i], ins[i], outs[i], errs[i], texts[i] = q.ttft, q.itls, q.in, q.out, q.err, q.text
	}
	arrays := map[string]any{"ttfts": ttfts, "itls": itls, "input_lens": ins, "output_lens": outs,
		"errors": errs, "generated_texts": texts}
	if !v.streamed && n > 0 {
		delete(arrays, "ttfts")
		delete(arrays, "itls")
	}
	for k, a := range arrays {
		b, _ := json.Marshal(a) // numbers, strings and lists of them: cannot fail
		out[k] = VLLMValue{raw: b}
	}
}

// VLLMValue is one value of a vLLM result: a number, a string, a list, or (the zero value)
// null.
type VLLMValue struct {
	num          float64
	str          string
	raw          json.RawMessage // a list, encoded
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
	case v.raw != nil:
		return v.raw, nil
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

// VLLMFile is the name of level i's vLLM result: vllm.json for a run of one level,
// vllm-<index>.json for each level of a ladder (one vLLM result per file, as vLLM writes).
func VLLMFile(s *Summary, i int) string {
	if len(s.Levels) == 1 {
		return "vllm.json"
	}
	return "vllm-" + strconv.Itoa(i) + ".json"
}

// WriteVLLM writes level i's vLLM result; reqs (may be nil) are its requests.
func WriteVLLM(w io.Writer, s *Summary, i int, reqs *VLLMRequests) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(VLLMResult(s, &s.Levels[i], reqs))
}
