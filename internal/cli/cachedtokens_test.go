package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `llmbench run` against `llmbench serve` with prefix caching and a shared-prefix workload:
// every record carries the server's cached_tokens (0 for a prefix's first sendings), most
// the prefix's full blocks; the level's cached_tokens and prefix_cache_hits are those
// records' figures and the console prints the hit rate. Against serve without prefix
// caching, which says nothing of a cache, no record has cached_tokens and the level's
// figures are null, not 0.
func TestCachedTokensRunAgainstServe(t *testing.T) {
	dir := t.TempDir()
	const cost = "cost: {kind: linear, prefill_ms_per_token: 0.005, decode_step_ms: 1}\n"
	for _, c := range []struct {
		name, profile string
		caching       bool
	}{
		{"prefix caching", cost + "engine: {prefix_caching: true, block_size: 16}\n", true},
		{"no prefix cache", cost, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
			if err := os.WriteFile(p, []byte(c.profile), 0o644); err != nil {
				t.Fatal(err)
			}
			url, stop := startServe(t, "--sim", p)
			defer stop()
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			const requests = 24
			code, stdout, stderr := mainCapture("run", "--url", url, "--concurrency", "2", "--requests", "24",
				"--prefix-tokens", "256", "--prefix-groups", "1", "--input-tokens", "320", "--output-tokens", "4",
				"--no-progress", "--output-dir", out)
			if code != 0 {
				t.Fatalf("run exit %d:\n%s\n%s", code, stdout, stderr)
			}

			// The records as a script reads them: the JSON name cached_tokens.
			f, err := os.Open(filepath.Join(out, "records.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var measured, said, hits int
			var total, prompt int64
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var r struct {
					Warmup       bool            `json:"warmup"`
					Error        json.RawMessage `json:"error"`
					InputTokens  int             `json:"input_tokens"`
					ServerPrompt int             `json:"server_prompt_tokens"`
					Cached       *int            `json:"cached_tokens"`
				}
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatal(err)
				}
				if r.Warmup || string(r.Error) != "null" {
					continue
				}
				measured++
				prompt += int64(r.ServerPrompt)
				if r.Cached == nil {
					continue
				}
				said++
				total += int64(*r.Cached)
				if *r.Cached < 0 || *r.Cached%16 != 0 || *r.Cached >= r.ServerPrompt {
					t.Errorf("cached_tokens %d of a %d-token prompt: want whole 16-token blocks of it", *r.Cached, r.ServerPrompt)
				}
				if *r.Cached >= 240 { // the 256-token prefix's full blocks, less the chat template's few
					hits++
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if measured != requests {
				t.Fatalf("%d measured requests completed, want %d", measured, requests)
			}
			sum, _ := readMerged(t, out)
			l := sum.Levels[0]
			if !c.caching {
				if said != 0 || l.CachedTokens != nil || l.PrefixCacheHits != nil {
					t.Errorf("a server without a prefix cache: %d records said cached_tokens; level %+v, prefix_cache_hits %v; want none, null, null",
						said, l.CachedTokens, l.PrefixCacheHits)
				}
				if strings.Contains(stdout, "Prompt cache hit rate") {
					t.Errorf("console prints a hit rate the server never said:\n%s", stdout)
				}
				return
			}
			// The first sendings of the prefix (one per slot) find it uncached; every later one
			// finds its blocks.
			if said != requests || hits < requests-2 {
				t.Errorf("%d of %d records said cached_tokens, %d of them the shared prefix; want all, at least %d", said, requests, hits, requests-2)
			}
			ct := l.CachedTokens
			if ct == nil || ct.Requests != requests || ct.Total != total {
				t.Fatalf("level cached_tokens %+v, want %d requests, total %d (the records')", ct, requests, total)
			}
			if want := float64(total) / float64(prompt); ct.HitRate != want || ct.HitRate < 0.5 {
				t.Errorf("hit rate %v, want the records' %v (over 0.5: 256 of 320 tokens shared)", ct.HitRate, want)
			}
			if l.PrefixCacheHits == nil {
				t.Error("prefix_cache_hits null")
			}
			if !strings.Contains(stdout, "Prompt cache hit rate (server's count):") {
				t.Errorf("console lacks the hit rate:\n%s", stdout)
			}
			t.Logf("hit rate %.3f, %.1f cached tokens per request, %d of %d requests with the prefix's blocks", ct.HitRate, ct.Mean, hits, requests)
		})
	}
}
