package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

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

// A level whose server said per request what its prompt cache served prints its hit rate
// and cached tokens per request under the token totals; a level whose server said nothing
// prints no such line (not a 0% rate).
func TestConsoleCachedTokens(t *testing.T) {
	level := func(said bool) string {
		var recs []record.Record
		for i := range 4 {
			at := time.Duration(i) * time.Second
			r := record.Record{Sent: at, Scheduled: at, Done: at + 100*time.Millisecond, InputTokens: 1000, ServerPromptTokens: 1000, OutputTokens: 1}
			if said && i > 0 { // the first sending of a shared prefix: nothing cached, said by leaving it out (vLLM)
				r.CachedPromptTokens, r.HasCachedPromptTokens = 960, true
			}
			r.Events.Base = r.Sent
			r.Events.Append(r.Sent+50*time.Millisecond, 1)
			recs = append(recs, r)
		}
		s := &Summary{Levels: []Level{{Level: metrics.Aggregate(recs, metrics.Config{})}}}
		s.Judge()
		var b bytes.Buffer
		if err := ConsoleLevel(&b, s, 0, ConsoleOptions{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	want := "Prompt cache hit rate (server's count):  72.0%      (720.0 tok/request; 3 of 4 requests said)\n"
	if out := level(true); !strings.Contains(out, want) {
		t.Errorf("console lacks %q:\n%s", want, out)
	}
	if out := level(false); strings.Contains(out, "Prompt cache") {
		t.Errorf("a server that said nothing:\n%s", out)
	}
}
