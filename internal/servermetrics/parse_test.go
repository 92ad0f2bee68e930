package servermetrics

import (
	"math"
	"strings"
	"testing"
)

// Fixtures are trimmed expositions with each server's real names, types and labels.

// vLLM v1 with data parallelism: two engines report their own gauges and counters.
const vllmV1 = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 12.0
vllm:num_requests_running{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
vllm:num_requests_waiting{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.3
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 4.0
vllm:num_preemptions_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1000.0
vllm:prefix_cache_queries_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 600.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 250.0
vllm:prefix_cache_hits_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 150.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1000.0
vllm:prompt_tokens_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 600.0
# HELP vllm:prompt_tokens_created Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.7e+09
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 5000.0
vllm:generation_tokens_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 4000.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 5.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 5.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.9
# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 1234.0
`

// vLLM v0: the older KV-cache name, a hit-rate gauge instead of hit/query counters.
const vllmV0 = `# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 7.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 0.0
# HELP vllm:num_requests_swapped Number of requests swapped to CPU.
# TYPE vllm:num_requests_swapped gauge
vllm:num_requests_swapped{model_name="m"} 0.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.25
# HELP vllm:gpu_prefix_cache_hit_rate GPU prefix cache block hit rate.
# TYPE vllm:gpu_prefix_cache_hit_rate gauge
vllm:gpu_prefix_cache_hit_rate{model_name="m"} 0.125
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m"} 2.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} 300.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="m"} 900.0
`

const sglang = `# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.128902e+06
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.557572e+06
# HELP sglang:cached_tokens_total Number of cached prompt tokens.
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{cache_source="device",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0e+06
sglang:cached_tokens_total{cache_source="host",model_name="meta-llama/Llama-3.1-8B-Instruct"} 32902.0
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 28.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 5.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.28
# HELP sglang:cache_hit_rate The prefix cache hit rate.
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.007507552643049313
# HELP sglang:num_retracted_reqs The number of retracted requests.
# TYPE sglang:num_retracted_reqs gauge
sglang:num_retracted_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
# HELP sglang:num_retracted_requests_total Total number of retracted requests.
# TYPE sglang:num_retracted_requests_total counter
sglang:num_retracted_requests_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 48.0
`

// TGI (metrics-exporter-prometheus): token counts are histograms, no KV-cache figures.
const tgi = `# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 8
# TYPE tgi_queue_size gauge
tgi_queue_size 5
# TYPE tgi_batch_current_max_tokens gauge
tgi_batch_current_max_tokens 2048
# TYPE tgi_request_count counter
tgi_request_count 253
# TYPE tgi_request_input_length histogram
tgi_request_input_length_bucket{le="128"} 200
tgi_request_input_length_bucket{le="+Inf"} 250
tgi_request_input_length_sum 32000
tgi_request_input_length_count 250
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="256"} 250
tgi_request_generated_tokens_bucket{le="+Inf"} 250
tgi_request_generated_tokens_sum 64000
tgi_request_generated_tokens_count 250
`

const llamacpp = `# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1200
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 3400
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.0625
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 1
`

const goRuntimeOnly = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 8
`

var nan = math.NaN()

func TestParseFamilies(t *testing.T) {
	for _, tc := range []struct {
		name, body, family string
		want               Values
	}{
		{"vllm v1, two engines", vllmV1, FamilyVLLM, Values{
			Running: 22, Waiting: 4, KVCacheUsage: 0.4, HitRate: nan,
			Preemptions: 5, PromptTokens: 1600, GenerationTokens: 9000, PrefixHits: 400, PrefixQueries: 1600,
		}},
		{"vllm v0", vllmV0, FamilyVLLM, Values{
			Running: 7, Waiting: 0, KVCacheUsage: 0.25, HitRate: 0.125,
			Preemptions: 2, PromptTokens: 300, GenerationTokens: 900, PrefixHits: nan, PrefixQueries: nan,
		}},
		{"sglang", sglang, FamilySGLang, Values{
			Running: 28, Waiting: 5, KVCacheUsage: 0.28, HitRate: 0.007507552643049313,
			Preemptions: 48, PromptTokens: 8.128902e6, GenerationTokens: 7.557572e6,
			PrefixHits: 2.032902e6, PrefixQueries: 8.128902e6,
		}},
		{"tgi", tgi, FamilyTGI, Values{
			Running: 8, Waiting: 5, KVCacheUsage: nan, HitRate: nan,
			Preemptions: nan, PromptTokens: 32000, GenerationTokens: 64000, PrefixHits: nan, PrefixQueries: nan,
		}},
		{"tgi untyped", strings.NewReplacer("# TYPE tgi_request_input_length histogram\n", "",
			"# TYPE tgi_request_generated_tokens histogram\n", "",
			`tgi_request_input_length_bucket{le="128"} 200`+"\n", "",
			`tgi_request_input_length_bucket{le="+Inf"} 250`+"\n", "",
			`tgi_request_generated_tokens_bucket{le="256"} 250`+"\n", "",
			`tgi_request_generated_tokens_bucket{le="+Inf"} 250`+"\n", "").Replace(tgi), FamilyTGI, Values{
			Running: 8, Waiting: 5, KVCacheUsage: nan, HitRate: nan,
			Preemptions: nan, PromptTokens: 32000, GenerationTokens: 64000, PrefixHits: nan, PrefixQueries: nan,
		}},
		{"llama.cpp", llamacpp, FamilyLlamaCpp, Values{
			Running: 2, Waiting: 1, KVCacheUsage: 0.0625, HitRate: nan,
			Preemptions: nan, PromptTokens: 1200, GenerationTokens: 3400, PrefixHits: nan, PrefixQueries: nan,
		}},
		{"go runtime only", goRuntimeOnly, FamilyUnknown, nanValues()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fam, got, err := Parse(strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if fam != tc.family {
				t.Errorf("family = %q, want %q", fam, tc.family)
			}
			checkValues(t, got, tc.want)
		})
	}
}

func checkValues(t *testing.T, got, want Values) {
	t.Helper()
	fields := []struct {
		name     string
		got, wnt float64
	}{
		{"Running", got.Running, want.Running},
		{"Waiting", got.Waiting, want.Waiting},
		{"KVCacheUsage", got.KVCacheUsage, want.KVCacheUsage},
		{"HitRate", got.HitRate, want.HitRate},
		{"Preemptions", got.Preemptions, want.Preemptions},
		{"PromptTokens", got.PromptTokens, want.PromptTokens},
		{"GenerationTokens", got.GenerationTokens, want.GenerationTokens},
		{"PrefixHits", got.PrefixHits, want.PrefixHits},
		{"PrefixQueries", got.PrefixQueries, want.PrefixQueries},
	}
	for _, f := range fields {
		if math.IsNaN(f.wnt) != math.IsNaN(f.got) || (!math.IsNaN(f.wnt) && math.Abs(f.got-f.wnt) > 1e-9*max(1, math.Abs(f.wnt))) {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.wnt)
		}
	}
}

// The text parser drops families declared without samples (a labelled metric nothing has
// touched yet), so such a figure reads as not exported rather than as a made-up 0.
func TestParseDeclaredWithoutSamples(t *testing.T) {
	body := `# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
# HELP vllm:kv_cache_usage_perc KV-cache usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:num_requests_running{model_name="m"} 1
`
	fam, v, err := Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if fam != FamilyVLLM || !math.IsNaN(v.Preemptions) || !math.IsNaN(v.KVCacheUsage) || v.Running != 1 {
		t.Errorf("got family %q, preemptions %v, kv %v, running %v; want vllm, NaN, NaN, 1", fam, v.Preemptions, v.KVCacheUsage, v.Running)
	}
}

func TestParseRejectsNonPrometheus(t *testing.T) {
	for name, body := range map[string]string{
		"html":           "<!doctype html><html><body>Not Found</body></html>\n",
		"json":           `{"detail":"Not Found"}` + "\n",
		"bad value":      "vllm:num_requests_running{model_name=\"m\"} many\n",
		"duplicate TYPE": "# TYPE a gauge\n# TYPE a counter\na 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := Parse(strings.NewReader(body)); err == nil || !strings.Contains(err.Error(), "parsing Prometheus text") {
				t.Errorf("err = %v, want a Prometheus text parse error", err)
			}
		})
	}
}
