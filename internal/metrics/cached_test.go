package metrics

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/record"
)

// A level's cached tokens, worked out by hand: what the server said per request of its
// prompt cache over the completed measured requests, a request it said nothing of counting
// 0 (vLLM and SGLang leave 0 out); failures and warm-ups left out; no figure at all when
// the server said nothing for any request.
func TestCachedTokensHandComputed(t *testing.T) {
	said := func(r record.Record, cached, prompt int) record.Record {
		r.CachedPromptTokens, r.HasCachedPromptTokens, r.ServerPromptTokens = int32(cached), true, prompt
		return r
	}
	// A: usage said 1,024 of 1,040 cached. B: usage said 0 of 1,040 (OpenAI's explicit 0).
	a := said(rec(0, 0, 100*ms, 2, ev{50 * ms, 1}, ev{90 * ms, 1}), 1024, 1040)
	b := said(rec(0, 10*ms, 110*ms, 2, ev{60 * ms, 1}, ev{100 * ms, 1}), 0, 1040)
	// C: llama.cpp: cache_n 900 with prompt_n 100 evaluated: a prompt of 1,000.
	c := said(rec(0, 20*ms, 120*ms, 2, ev{70 * ms, 1}, ev{110 * ms, 1}), 900, 0)
	c.Server = &record.ServerTimings{PromptTokens: 100}
	// D: vLLM with nothing cached says nothing: 0 of its 1,040 by usage.
	d := rec(0, 30*ms, 130*ms, 2, ev{80 * ms, 1}, ev{120 * ms, 1})
	d.ServerPromptTokens = 1040
	// E: no usage, nothing said: 0 of the 960 tokens the client intended.
	e := rec(0, 40*ms, 140*ms, 2, ev{90 * ms, 1}, ev{130 * ms, 1})
	e.InputTokens = 960
	// Left out: a failure and a warm-up, both with cached tokens.
	f := said(rec(0, 50*ms, 150*ms, 1, ev{100 * ms, 1}), 500, 1040)
	f.Error = &record.Error{Kind: record.KindDisconnect}
	w := said(rec(0, 0, 100*ms, 2, ev{50 * ms, 1}, ev{90 * ms, 1}), 1000, 1040)
	w.Warmup = true

	lv := Aggregate([]record.Record{a, b, c, d, e, f, w}, Config{})
	ct := lv.CachedTokens
	if ct == nil {
		t.Fatal("no cached tokens")
	}
	if ct.Requests != 3 || ct.Total != 1924 {
		t.Errorf("requests %d, total %d; want 3 (A, B, C), 1924", ct.Requests, ct.Total)
	}
	near(t, "mean", ct.Mean, 1924.0/5)
	near(t, "hit rate", ct.HitRate, 1924.0/(1040+1040+1000+1040+960))
	j, _ := json.Marshal(lv)
	if want := `"cached_tokens":{"requests":3,"total":1924,"mean":384.8,"hit_rate":`; !strings.Contains(string(j), want) {
		t.Errorf("summary JSON lacks %s:\n%s", want, j)
	}

	none := Aggregate([]record.Record{d, e, f}, Config{})
	if none.CachedTokens != nil {
		t.Errorf("a server that said nothing: %+v, want null", none.CachedTokens)
	}
	if j, _ := json.Marshal(none); !strings.Contains(string(j), `"cached_tokens":null`) {
		t.Errorf("summary JSON: want cached_tokens null:\n%s", j)
	}
}
