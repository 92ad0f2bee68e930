// Package servermetrics scrapes an inference server's Prometheus endpoint while a load level
// runs and maps vLLM's, SGLang's, TGI's and llama.cpp's metric names to one vocabulary:
// running and waiting requests, KV-cache usage, preemptions, prefix-cache hits and the
// server's own prompt and generation token counts.
package servermetrics

import (
	"fmt"
	"io"
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Server families, as written to summary.json.
const (
	FamilyVLLM     = "vllm"
	FamilySGLang   = "sglang"
	FamilyTGI      = "tgi"
	FamilyLlamaCpp = "llamacpp"
	FamilyUnknown  = "unknown"
)

// Values is one scrape in the common vocabulary. NaN marks a figure the server does not
// export. Gauges are read as they are; counters are cumulative since the server started
// and only their increase over a level means anything (see Summarize).
type Values struct {
	Running      float64 // requests in the running batch
	Waiting      float64 // requests queued, not yet scheduled
	KVCacheUsage float64 // fraction 0..1 of the KV-cache blocks (tokens) in use
	HitRate      float64 // the server's own prefix-cache hit-rate gauge (SGLang, old vLLM)

	Preemptions      float64 // counter: requests preempted (vLLM) or retracted (SGLang)
	PromptTokens     float64 // counter: prompt tokens the server processed
	GenerationTokens float64 // counter: tokens the server generated
	PrefixHits       float64 // counter: prompt tokens served from the prefix cache
	PrefixQueries    float64 // counter: prompt tokens looked up in the prefix cache
}

func nanValues() Values {
	n := math.NaN()
	return Values{n, n, n, n, n, n, n, n, n}
}

// agg says how several label sets of one metric combine: counts add up (several engines or
// data-parallel ranks each report their own), fractions average.
type agg int

const (
	sum agg = iota
	mean
)

// source is one figure of the vocabulary in one family: the first of names present wins
// (newer spellings first, then the ones older releases used).
type source struct {
	names []string
	agg   agg
}

func src(a agg, names ...string) source { return source{names: names, agg: a} }

type family struct {
	name, prefix                       string
	running, waiting, kvUsage, hitRate source
	preemptions, prompt, generation    source
	prefixHits, prefixQueries          source
}

// families maps each server's names to the vocabulary. Counters are listed under the
// sample name (…_total) because that is the family name in the text format; histogram
// families (TGI's token counts) are read as their _sum, which only grows.
var families = []family{
	{
		name: FamilyVLLM, prefix: "vllm:",
		running:       src(sum, "vllm:num_requests_running"),
		waiting:       src(sum, "vllm:num_requests_waiting"),
		kvUsage:       src(mean, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
		hitRate:       src(mean, "vllm:gpu_prefix_cache_hit_rate"),
		preemptions:   src(sum, "vllm:num_preemptions_total"),
		prompt:        src(sum, "vllm:prompt_tokens_total"),
		generation:    src(sum, "vllm:generation_tokens_total"),
		prefixHits:    src(sum, "vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
		prefixQueries: src(sum, "vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
	},
	{
		// SGLang counts every prompt token in prompt_tokens_total and the cached part in
		// cached_tokens_total (by cache_source), so those two are the hit/query pair.
		name: FamilySGLang, prefix: "sglang:",
		running:       src(sum, "sglang:num_running_reqs"),
		waiting:       src(sum, "sglang:num_queue_reqs"),
		kvUsage:       src(mean, "sglang:token_usage"),
		hitRate:       src(mean, "sglang:cache_hit_rate"),
		preemptions:   src(sum, "sglang:num_retracted_requests_total"),
		prompt:        src(sum, "sglang:prompt_tokens_total"),
		generation:    src(sum, "sglang:generation_tokens_total"),
		prefixHits:    src(sum, "sglang:cached_tokens_total"),
		prefixQueries: src(sum, "sglang:prompt_tokens_total"),
	},
	{
		// TGI exports no KV-cache, preemption or prefix-cache figures; its token counts are
		// per-request histograms, observed when a request ends.
		name: FamilyTGI, prefix: "tgi_",
		running:    src(sum, "tgi_batch_current_size"),
		waiting:    src(sum, "tgi_queue_size"),
		prompt:     src(sum, "tgi_request_input_length", "tgi_request_input_length_sum"),
		generation: src(sum, "tgi_request_generated_tokens", "tgi_request_generated_tokens_sum"),
	},
	{
		name: FamilyLlamaCpp, prefix: "llamacpp:",
		running:    src(sum, "llamacpp:requests_processing"),
		waiting:    src(sum, "llamacpp:requests_deferred"),
		kvUsage:    src(mean, "llamacpp:kv_cache_usage_ratio"),
		prompt:     src(sum, "llamacpp:prompt_tokens_total"),
		generation: src(sum, "llamacpp:tokens_predicted_total"),
	},
}

// Parse reads one Prometheus text exposition (format 0.0.4) and maps it to the common
// vocabulary. The family is the one whose prefix most metric names carry; FamilyUnknown
// (all values NaN) when none does.
func Parse(r io.Reader) (string, Values, error) {
	mfs, err := ParseText(r)
	if err != nil {
		return "", nanValues(), err
	}
	fam, v := mapFamilies(mfs)
	return fam, v, nil
}

// ParseText reads one Prometheus text exposition (format 0.0.4) into its metric families.
func ParseText(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing Prometheus text: %w", err)
	}
	return mfs, nil
}

func mapFamilies(mfs map[string]*dto.MetricFamily) (string, Values) {
	best, bestN := -1, 0
	for i, f := range families {
		n := 0
		for name := range mfs {
			if strings.HasPrefix(name, f.prefix) {
				n++
			}
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	if best < 0 {
		return FamilyUnknown, nanValues()
	}
	f := &families[best]
	return f.name, Values{
		Running:          read(mfs, f.running),
		Waiting:          read(mfs, f.waiting),
		KVCacheUsage:     read(mfs, f.kvUsage),
		HitRate:          read(mfs, f.hitRate),
		Preemptions:      read(mfs, f.preemptions),
		PromptTokens:     read(mfs, f.prompt),
		GenerationTokens: read(mfs, f.generation),
		PrefixHits:       read(mfs, f.prefixHits),
		PrefixQueries:    read(mfs, f.prefixQueries),
	}
}

// read combines every label set of the first present name (NaN samples skipped): counts
// add up, fractions average; no usable sample means no value.
func read(mfs map[string]*dto.MetricFamily, s source) float64 {
	for _, name := range s.names {
		mf, ok := mfs[name]
		if !ok {
			continue
		}
		total, n := 0.0, 0
		for _, m := range mf.GetMetric() {
			v := MetricValue(mf.GetType(), m)
			if math.IsNaN(v) {
				continue
			}
			total += v
			n++
		}
		switch {
		case n == 0:
			return math.NaN()
		case s.agg == sum:
			return total
		default:
			return total / float64(n)
		}
	}
	return math.NaN()
}

// MetricValue is a sample's value: a counter's, gauge's or untyped value as it is, a
// histogram's or summary's sum.
func MetricValue(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue()
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return m.GetHistogram().GetSampleSum()
	case dto.MetricType_SUMMARY:
		return m.GetSummary().GetSampleSum()
	}
	return math.NaN()
}
