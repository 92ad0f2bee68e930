package servermetrics

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// counterSamples puts vals on a counter field at one-second steps (NaN: not exported then).
func counterSamples(vals ...float64) []Sample {
	ss := make([]Sample, len(vals))
	for i, v := range vals {
		ss[i] = Sample{T: time.Duration(i) * time.Second, Values: nanValues()}
		ss[i].GenerationTokens = v
	}
	return ss
}

func TestIncrease(t *testing.T) {
	get := func(v *Values) float64 { return v.GenerationTokens }
	for _, tc := range []struct {
		name  string
		vals  []float64
		inc   float64
		span  float64
		valid bool
	}{
		{"steady", []float64{100, 150, 200, 260}, 160, 3, true},
		// The server restarted between 200 and 30: it counted 30 since, 30+20 after.
		{"reset", []float64{100, 150, 200, 30, 50}, 150, 4, true},
		{"reset to zero", []float64{500, 0, 0, 40}, 40, 3, true},
		{"gaps skipped", []float64{100, nan, 150, nan}, 50, 2, true},
		{"flat", []float64{7, 7, 7}, 0, 2, true},
		{"one reading", []float64{nan, 42, nan}, 0, 0, false},
		{"none", []float64{nan, nan}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inc, span, ok := increase(counterSamples(tc.vals...), get)
			if ok != tc.valid || (ok && (inc != tc.inc || span != tc.span)) {
				t.Errorf("increase = %v over %vs (ok %v), want %v over %vs (ok %v)", inc, span, ok, tc.inc, tc.span, tc.valid)
			}
		})
	}
	// The rate divides by the span between the readings, not the level's length.
	if r := rate(counterSamples(nan, 100, 150, 200, 30, 50), get); r == nil || *r != 150.0/4 {
		t.Errorf("rate = %v, want %v", r, 150.0/4)
	}
}

func TestSummarizeFallbacksAndOmissions(t *testing.T) {
	// SGLang-like: counters for hits and prompt tokens; the gauge is ignored when they exist.
	ss := []Sample{
		{T: 0, Values: Values{Running: 2, Waiting: 0, KVCacheUsage: 0.1, HitRate: 0.9,
			Preemptions: 10, PromptTokens: 1000, GenerationTokens: 50, PrefixHits: 100, PrefixQueries: 1000}},
		{T: 2 * time.Second, Values: Values{Running: 4, Waiting: 3, KVCacheUsage: 0.3, HitRate: 0.9,
			Preemptions: 12, PromptTokens: 3000, GenerationTokens: 450, PrefixHits: 600, PrefixQueries: 3000}},
	}
	sum := Summarize(Series{Family: FamilySGLang, Scrapes: 3, Failed: 1, LastError: "x", Samples: ss})
	checkStat(t, "running", sum.Running, 3, 4)
	checkStat(t, "waiting", sum.Waiting, 1.5, 3)
	checkStat(t, "kv", sum.KVCacheUsage, 0.2, 0.3)
	checkPtr(t, "preemptions", sum.Preemptions, 2)
	checkPtr(t, "hit rate", sum.PrefixCacheHitRate, 0.25)
	checkPtr(t, "prompt/s", sum.PromptTokensPerS, 1000)
	checkPtr(t, "generation/s", sum.GenerationTokensPerS, 200)

	// Old vLLM: no hit/query counters, so the hit-rate gauge's mean stands in.
	for i := range ss {
		ss[i].PrefixHits, ss[i].PrefixQueries = nan, nan
		ss[i].HitRate = 0.5 + 0.2*float64(i)
	}
	checkPtr(t, "gauge hit rate", Summarize(Series{Samples: ss}).PrefixCacheHitRate, 0.6)

	// TGI: no KV-cache, preemption or prefix figures at all.
	for i := range ss {
		ss[i].KVCacheUsage, ss[i].Preemptions, ss[i].HitRate = nan, nan, nan
	}
	sum = Summarize(Series{Family: FamilyTGI, Samples: ss})
	if sum.KVCacheUsage != nil || sum.Preemptions != nil || sum.PrefixCacheHitRate != nil || sum.Series.KVCacheUsage != nil {
		t.Errorf("TGI summary reports figures TGI does not export: %+v", sum)
	}
}

func TestSummaryJSON(t *testing.T) {
	ss := []Sample{
		{T: 1234567 * time.Microsecond, Values: Values{Running: 2, Waiting: 1, KVCacheUsage: 0.123456, HitRate: nan,
			Preemptions: 0, PromptTokens: 100, GenerationTokens: 10, PrefixHits: nan, PrefixQueries: nan}},
		{T: 2234567 * time.Microsecond, Values: Values{Running: 3, Waiting: nan, KVCacheUsage: 0.2, HitRate: nan,
			Preemptions: 1, PromptTokens: 300, GenerationTokens: 60, PrefixHits: nan, PrefixQueries: nan}},
	}
	sum := Summarize(Series{URL: "http://h/metrics", Family: FamilyVLLM, Scrapes: 2, Samples: ss})
	got, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"family":"vllm","url":"http://h/metrics","scrapes":2,"failed_scrapes":0,` +
		`"running":{"mean":2.5,"max":3},"waiting":{"mean":1,"max":1},"kv_cache_usage":{"mean":0.161728,"max":0.2},` +
		`"preemptions":1,"prompt_tokens_per_s":200,"generation_tokens_per_s":50,` +
		`"series":{"t_s":[1.235,2.235],"running":[2,3],"waiting":[1,null],"kv_cache_usage":[0.1235,0.2]}}`
	if string(got) != want {
		t.Errorf("summary JSON\n got %s\nwant %s", got, want)
	}

	// What report.html and a re-run read back: nulls return as NaN.
	var back Summary
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Series.Waiting) != 2 || back.Series.Waiting[0] != 1 || !math.IsNaN(back.Series.Waiting[1]) {
		t.Errorf("waiting column read back as %v", back.Series.Waiting)
	}
	again, _ := json.Marshal(&back)
	if !bytes.Equal(again, got) {
		t.Errorf("round trip changed the JSON:\n%s\n%s", got, again)
	}
}
