package server

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Bucket bounds are vLLM's (vllm/v1/metrics/loggers.py), so dashboards built for vLLM read
// the simulator unchanged.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
		50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// serverMetrics is the per-server registry: several servers in one process (tests, the
// in-process default target) must not share or collide in the global registry.
type serverMetrics struct {
	reg      *prometheus.Registry
	ttft     prometheus.Histogram
	itl      prometheus.Histogram
	e2e      prometheus.Histogram
	success  *prometheus.CounterVec // by finished_reason
	faults   *[numFaultKinds]atomic.Uint64
	statsFns func() engineSnapshot
	// replicaFns, set for a deployment of several replicas, has each replica's snapshot:
	// the engine metrics are then one series per replica, labelled engine="I" as vLLM labels
	// its data-parallel engines, which scrapers sum (or average, for KV usage).
	replicaFns func() []engineSnapshot
}

// engineSnapshot is what the engine collector exports, read once per scrape.
type engineSnapshot struct {
	running, waiting                float64
	kvUsage                         float64
	preemptions, prompt, generation float64
	prefixHits, prefixQueries       float64

	// Speculative decoding's drafts, drafted tokens and accepted ones.
	specDrafts, specDraftTokens, specAccepted float64
}

func newServerMetrics(model string, stats func() engineSnapshot, replicas func() []engineSnapshot, faults *[numFaultKinds]atomic.Uint64) *serverMetrics {
	labels := prometheus.Labels{"model_name": model}
	m := &serverMetrics{
		reg: prometheus.NewRegistry(),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vllm:time_to_first_token_seconds", Help: "Histogram of time to first token in seconds.",
			ConstLabels: labels, Buckets: ttftBuckets,
		}),
		itl: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vllm:inter_token_latency_seconds", Help: "Histogram of inter-token latency in seconds.",
			ConstLabels: labels, Buckets: itlBuckets,
		}),
		e2e: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vllm:e2e_request_latency_seconds", Help: "Histogram of end to end request latency in seconds.",
			ConstLabels: labels, Buckets: e2eBuckets,
		}),
		success: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm:request_success_total", Help: "Count of successfully processed requests.",
			ConstLabels: labels,
		}, []string{"finished_reason"}),
		faults:     faults,
		statsFns:   stats,
		replicaFns: replicas,
	}
	m.reg.MustRegister(m.ttft, m.itl, m.e2e, m.success, &engineCollector{m: m, labels: labels})
	return m
}

// engineCollector reads the engine's stats once per scrape and exports them under vLLM's
// names, plus the injected-fault counters.
type engineCollector struct {
	m      *serverMetrics
	labels prometheus.Labels
}

var (
	descOnce = map[string]string{
		"vllm:num_requests_running":       "Number of requests in model execution batches.",
		"vllm:num_requests_waiting":       "Number of requests waiting to be processed.",
		"vllm:kv_cache_usage_perc":        "KV-cache usage. 1 means 100 percent usage.",
		"vllm:num_preemptions_total":      "Cumulative number of preemptions from the engine.",
		"vllm:prompt_tokens_total":        "Number of prefill tokens processed.",
		"vllm:generation_tokens_total":    "Number of generation tokens processed.",
		"vllm:prefix_cache_queries_total": "Prefix cache queries, in terms of number of queried tokens.",
		"vllm:prefix_cache_hits_total":    "Prefix cache hits, in terms of number of cached tokens.",

		"vllm:spec_decode_num_drafts_total":          "Number of spec decoding drafts.",
		"vllm:spec_decode_num_draft_tokens_total":    "Number of draft tokens.",
		"vllm:spec_decode_num_accepted_tokens_total": "Number of accepted tokens.",
	}
	engineMetricOrder = []string{
		"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
		"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
		"vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total",
	}
)

func (c *engineCollector) desc(name string) *prometheus.Desc {
	var vars []string
	if c.m.replicaFns != nil {
		vars = []string{"engine"}
	}
	return prometheus.NewDesc(name, descOnce[name], vars, c.labels)
}

func (c *engineCollector) faultDesc() *prometheus.Desc {
	return prometheus.NewDesc("llmbench_faults_injected_total", "Faults injected by the simulator, by kind.", []string{"kind"}, nil)
}

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, n := range engineMetricOrder {
		ch <- c.desc(n)
	}
	ch <- c.faultDesc()
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	if c.m.replicaFns == nil {
		c.collectEngine(ch, c.m.statsFns())
	} else {
		for i, s := range c.m.replicaFns() {
			c.collectEngine(ch, s, strconv.Itoa(i))
		}
	}
	fd := c.faultDesc()
	for _, k := range FaultKinds() {
		ch <- prometheus.MustNewConstMetric(fd, prometheus.CounterValue, float64(c.m.faults[k].Load()), k.String())
	}
}

// collectEngine exports one engine's snapshot, with the engine label's value when there
// are several.
func (c *engineCollector) collectEngine(ch chan<- prometheus.Metric, s engineSnapshot, engine ...string) {
	vals := []float64{s.running, s.waiting, s.kvUsage, s.preemptions, s.prompt, s.generation, s.prefixQueries, s.prefixHits,
		s.specDrafts, s.specDraftTokens, s.specAccepted}
	for i, n := range engineMetricOrder {
		t := prometheus.CounterValue
		if i < 3 {
			t = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(c.desc(n), t, vals[i], engine...)
	}
}
