package report

import (
	"testing"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// A request is a prefix-cache hit when more than 10% of its prompt beyond the shared
// prefix came from the server's cache; the shared prefix alone is no hit, and a server
// that says nothing per request counts nothing (prefix_cache_hits null).
func TestPrefixCacheHits(t *testing.T) {
	llama := func(cached, evaluated int) *record.Record {
		return &record.Record{InputTokens: 291, CachedPromptTokens: int32(cached), HasCachedPromptTokens: true,
			Server: &record.ServerTimings{PromptTokens: evaluated}}
	}
	for _, c := range []struct {
		name      string
		r         *record.Record
		fixed     int
		hit, said bool
	}{
		{"the test request's prompt repeated: 290 of 291 cached", llama(290, 1), 0, true, true},
		{"a fresh prompt: 5 template tokens cached", llama(5, 286), 0, false, true},
		{"just over 10%", llama(30, 261), 0, true, true},
		{"the shared prefix only", llama(100, 191), 100, false, true},
		{"beyond the shared prefix", llama(150, 141), 100, true, true},
		{"a server that does not say", &record.Record{InputTokens: 291}, 0, false, false},
	} {
		if hit, said := PrefixCacheHit(c.r, c.fixed); hit != c.hit || said != c.said {
			t.Errorf("%s: hit %v said %v, want %v %v", c.name, hit, said, c.hit, c.said)
		}
	}
	col := NewCollector(metrics.Config{Percentiles: []float64{50, 99}})
	col.Add(&record.Record{Level: 0, InputTokens: 10})
	if h := col.PrefixCacheHits(0); h != nil {
		t.Errorf("no server word: %d hits, want nil", *h)
	}
	for _, r := range []*record.Record{llama(290, 1), llama(5, 286), llama(290, 1)} {
		r.Level = 1
		col.Add(r)
	}
	warm := llama(290, 1)
	warm.Level, warm.Warmup = 1, true
	col.Add(warm)
	if h := col.PrefixCacheHits(1); h == nil || *h != 2 {
		t.Errorf("level 1: %v hits, want 2 (the warm-up is not measured)", h)
	}
}
