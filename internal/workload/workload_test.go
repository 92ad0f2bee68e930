package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/tokenizer"
)

func loadTok(t testing.TB, spec string) tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func mustNew(t testing.TB, cfg Config, tok tokenizer.Tokenizer) Source {
	t.Helper()
	src, err := New(cfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateReportsEverything(t *testing.T) {
	err := Config{Dataset: "bogus:x", PrefixTokens: -1, PrefixGroups: -2, TraceSpeed: -1,
		OutputTokens: Dist{Kind: "uniform", A: 5, B: 1}, Turns: -1}.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{`unknown kind "bogus"`, "prefix tokens: -1", "prefix groups: -2", "trace speed", "output tokens", "turns"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{OutputTokens: Fixed(1)}, "input tokens: required"},
		{Config{InputTokens: Fixed(1)}, "output tokens: required"},
		{Config{InputTokens: Fixed(100), OutputTokens: Fixed(1), PrefixTokens: 100}, "leaves no room"},
		{Config{InputTokens: Dist{Kind: "uniform", A: 50, B: 500}, OutputTokens: Fixed(1), PrefixTokens: 50}, "leaves no room"},
		{Config{InputTokens: Fixed(10), OutputTokens: Fixed(1), PrefixGroups: 4}, "PrefixGroups,PrefixTokens: 4 groups need prefix tokens > 0"},
		{Config{Dataset: "jsonl:"}, "missing path"},
		{Config{InputTokens: Fixed(10), OutputTokens: Fixed(1), Turns: 3, PrefixTokens: 4}, "do not combine"},
		{Config{InputTokens: Fixed(10), OutputTokens: Fixed(1), ThinkTime: time.Second}, "needs turns > 1"},
		{Config{Dataset: "jsonl:" + os.Args[0], Turns: 2}, "random dataset only"},
		{Config{Dataset: "sharegpt:/does/not/exist.json"}, "no such file"},
		{Config{Dataset: "jsonl:" + os.Args[0], PrefixTokens: 5}, "not to jsonl"},
	}
	for _, c := range cases {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
	ok := []Config{
		{InputTokens: Fixed(10), OutputTokens: Fixed(1), PrefixGroups: 1},
		{InputTokens: Dist{Kind: "normal", A: 100, B: 90}, OutputTokens: Fixed(1), PrefixTokens: 99, PrefixGroups: 3},
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestRandomExact: every synthetic prompt has exactly InputTokens tokens when re-encoded,
// under each tokenizer, for lengths from 1 up.
func TestRandomExact(t *testing.T) {
	for _, spec := range []string{"o200k_base", "cl100k_base", qwenPath, llama2Path} {
		tok := loadTok(t, spec)
		src := mustNew(t, Config{InputTokens: Dist{Kind: "uniform", A: 1, B: 700}, OutputTokens: Fixed(16), Seed: 7}, tok)
		for i := range 150 {
			r := src.Request(0, i)
			if got := len(tok.Encode(r.Prompt)); got != r.InputTokens {
				t.Fatalf("%s request %d: %d tokens, InputTokens says %d: %.80q", spec, i, got, r.InputTokens, r.Prompt)
			}
			if r.OutputTokens != 16 || r.HasArrival || r.PrefixTokens != 0 {
				t.Fatalf("request %d: %+v", i, r)
			}
		}
	}
}

// TestRandomDistinctAndDeterministic: prompts differ from the first token on (so no prefix
// cache can serve one from another), across levels too, and are a pure function of
// (seed, level, i).
func TestRandomDistinctAndDeterministic(t *testing.T) {
	tok := loadTok(t, "o200k_base")
	cfg := Config{InputTokens: Fixed(64), OutputTokens: Dist{Kind: "uniform", A: 1, B: 100}, Seed: 3}
	a, b := mustNew(t, cfg, tok), mustNew(t, cfg, tok)
	firsts := map[int]int{}
	prompts := map[string]bool{}
	for level := range 2 {
		for i := range 300 {
			r := a.Request(level, i)
			if prompts[r.Prompt] {
				t.Fatalf("level %d request %d repeats a prompt", level, i)
			}
			prompts[r.Prompt] = true
			firsts[tok.Encode(r.Prompt)[0]]++
			// Same config, other instance, reverse order: same request.
			if r2 := b.Request(level, i); r2.Prompt != r.Prompt || r2.OutputTokens != r.OutputTokens {
				t.Fatalf("request (%d,%d) not deterministic", level, i)
			}
		}
	}
	// The first token spreads over many words: the largest group sharing it is small.
	most := 0
	for _, n := range firsts {
		most = max(most, n)
	}
	if len(firsts) < 100 || most > 12 {
		t.Errorf("first tokens: %d distinct, largest group %d of 600", len(firsts), most)
	}
	other := mustNew(t, Config{InputTokens: Fixed(64), OutputTokens: Fixed(1), Seed: 4}, tok)
	if other.Request(0, 0).Prompt == a.Request(0, 0).Prompt {
		t.Error("another seed should give other prompts")
	}
	// Prompts look like text: capitalised sentences of words ending in periods.
	p := a.Request(0, 1).Prompt
	if !strings.Contains(p, ". ") || strings.ToLower(p) == p {
		t.Errorf("prompt does not look like sentences: %q", p)
	}
}

func TestLengthsOnly(t *testing.T) {
	cfg := Config{InputTokens: Dist{Kind: "uniform", A: 10, B: 20}, OutputTokens: Fixed(5), Seed: 1, PrefixTokens: 9, PrefixGroups: 2}
	lo := mustNew(t, Config{LengthsOnly: true, InputTokens: cfg.InputTokens, OutputTokens: cfg.OutputTokens, Seed: 1, PrefixTokens: 9, PrefixGroups: 2}, nil)
	full := mustNew(t, cfg, loadTok(t, "o200k_base"))
	for i := range 50 {
		a, b := lo.Request(1, i), full.Request(1, i)
		if a.Prompt != "" || a.Messages != nil {
			t.Fatal("lengths-only request has text")
		}
		// Same lengths and prefix groups as the full source: the simulator predicts the run.
		if a.InputTokens != b.InputTokens || a.OutputTokens != b.OutputTokens || a.PrefixGroup != b.PrefixGroup || a.PrefixTokens != 9 {
			t.Fatalf("request %d: lengths-only %+v, full %+v", i, a, b)
		}
	}
	if lo.Len() != 0 {
		t.Error("random source is unbounded")
	}
}

// TestPrefixGroups: each prompt starts with its group's prefix, which is exactly P tokens,
// and the prompt's first P token ids are the prefix's ids.
func TestPrefixGroups(t *testing.T) {
	for _, spec := range []string{"o200k_base", qwenPath, llama2Path} {
		tok := loadTok(t, spec)
		const P, G = 100, 3
		src := mustNew(t, Config{InputTokens: Dist{Kind: "normal", A: 130, B: 40}, OutputTokens: Fixed(8), PrefixTokens: P, PrefixGroups: G, Seed: 11}, tok)
		prefixIDs := map[int][]int{}
		after := map[int][]int{}
		for i := range 60 {
			r := src.Request(0, i)
			ids := tok.Encode(r.Prompt)
			if len(ids) != r.InputTokens || r.InputTokens <= P {
				t.Fatalf("%s request %d: %d tokens, InputTokens %d", spec, i, len(ids), r.InputTokens)
			}
			if r.PrefixTokens != P || r.PrefixGroup != i%G {
				t.Fatalf("request %d: prefix %d group %d", i, r.PrefixTokens, r.PrefixGroup)
			}
			if want, ok := prefixIDs[r.PrefixGroup]; ok {
				if !slices.Equal(ids[:P], want) {
					t.Fatalf("request %d does not share group %d's first %d tokens", i, r.PrefixGroup, P)
				}
			} else {
				prefixIDs[r.PrefixGroup] = ids[:P]
				// The shared part is itself exactly P tokens.
				if n := len(tok.Encode(tok.Decode(ids[:P]))); n != P {
					t.Fatalf("group %d prefix re-encodes to %d tokens", r.PrefixGroup, n)
				}
			}
			after[r.PrefixGroup] = append(after[r.PrefixGroup], ids[P])
		}
		// Right after the prefix, prompts differ (each one's own part starts with its identity).
		for g, toks := range after {
			distinct := map[int]bool{}
			for _, id := range toks {
				distinct[id] = true
			}
			if len(distinct) < len(toks)*8/10 {
				t.Errorf("group %d: only %d distinct tokens after the prefix in %d prompts", g, len(distinct), len(toks))
			}
		}
		if len(prefixIDs) != G {
			t.Fatalf("%d groups seen", len(prefixIDs))
		}
		if slices.Equal(prefixIDs[0][:8], prefixIDs[1][:8]) {
			t.Error("groups 0 and 1 share their first tokens")
		}
		// Levels share the prefixes (a system prompt is the same all run).
		if a, b := src.Request(0, 0).Prompt, src.Request(5, 0).Prompt; a[:200] != b[:200] {
			t.Error("prefix differs between levels")
		}
	}
}

func TestJSONL(t *testing.T) {
	tok := loadTok(t, "o200k_base")
	path := writeFile(t, "d.jsonl", `{"prompt": "Hello there, how are you?", "output_tokens": 12}

{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}
{"prompt": "Third", "input_tokens": 999}
`)
	src := mustNew(t, Config{Dataset: "jsonl:" + path, OutputTokens: Fixed(33), Seed: 1}, tok)
	if src.Len() != 3 {
		t.Fatalf("Len %d", src.Len())
	}
	seen := map[string]Request{}
	for i := range 3 {
		r := src.Request(0, i)
		key := r.Prompt
		seen[key] = r
	}
	r, ok := seen["Hello there, how are you?"]
	if !ok || r.OutputTokens != 12 || r.InputTokens != len(tok.Encode(r.Prompt)) || r.Messages != nil {
		t.Errorf("prompt row: %+v", r)
	}
	r = seen["Be brief.\nHi"]
	if len(r.Messages) != 2 || r.Messages[1].Content != "Hi" || r.OutputTokens != 33 {
		t.Errorf("messages row: %+v", r)
	}
	// input_tokens in a file is a hint; the run's tokenizer decides.
	if r := seen["Third"]; r.InputTokens != 1 {
		t.Errorf("input tokens %d, want the tokenizer's count 1", r.InputTokens)
	}
	// More requests than rows: every pass is a permutation of the rows.
	count := map[string]int{}
	for i := range 9 {
		count[src.Request(0, i).Prompt]++
	}
	for p, n := range count {
		if n != 3 {
			t.Errorf("%q sampled %d times in 3 passes", p, n)
		}
	}
	// In lengths-only mode a given input_tokens is used without tokenizing.
	lo := mustNew(t, Config{Dataset: "jsonl:" + path, OutputTokens: Fixed(33), LengthsOnly: true}, tok)
	found := false
	for i := range 3 {
		if r := lo.Request(0, i); r.InputTokens == 999 && r.Prompt == "" {
			found = true
		}
	}
	if !found {
		t.Error("lengths-only jsonl should use input_tokens")
	}
}

func TestMalformedInputs(t *testing.T) {
	tok := loadTok(t, "o200k_base")
	cases := []struct {
		kind, name, content, want string
	}{
		{"jsonl", "d.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": 5}\n", "d.jsonl:2"},
		{"jsonl", "d.jsonl", "{\"prompt\": \"ok\"}\n\n{\"text\": \"x\"}\n", `d.jsonl:3: no "prompt" or "messages"`},
		{"jsonl", "d.jsonl", `{"prompt": "", "output_tokens": 2}`, `empty "prompt"`},
		{"jsonl", "d.jsonl", `{"prompt": "a", "output_tokens": 0}`, "output_tokens 0"},
		{"jsonl", "d.jsonl", `{"prompt": "a"} {"prompt": "b"}`, "trailing data"},
		{"jsonl", "d.jsonl", "{\"prompt\": \"a\", \"arrival_s\": 1}\n{\"prompt\": \"b\"}\n", "d.jsonl:2: arrival_s on some rows but not others"},
		{"jsonl", "d.jsonl", `{"messages": [{"content": "x"}]}`, "no role"},
		{"jsonl", "d.jsonl", "{\"prompt\": \"ok\"}\n{\"messages\": [{\"role\": \"user\", \"content\": \"\"}]}\n", `d.jsonl:2: every "messages" entry has an empty "content"`},
		{"jsonl", "d.jsonl", "\n\n", "no usable rows"},
		{"sharegpt", "s.json", "[\n{\"conversations\": []},\n{\"conversations\": \"oops\"}\n]", "s.json:3"},
		{"sharegpt", "s.json", `[{"conversations": [{"from": "human", "value": "hi"}]}]`, "no usable rows"},
		{"sharegpt", "s.json", "", "empty file"},
		{"sharegpt", "s.jsonl", "{\"conversations\": []}]\n", "s.jsonl:1: not a ShareGPT entry: trailing data"},
		{"sharegpt", "s.json", "[{\"conversations\": []}]\n]", "s.json:2: trailing data after the JSON array"},
		{"jsonl", "d.jsonl", "{\"prompt\": \"a\"}}\n", "d.jsonl:1: not a JSON object: trailing data"},
		// In the dataset's words, not Go's ("Go struct field jsonlRow.output_tokens of type int").
		{"jsonl", "d.jsonl", `{"prompt": "a", "output_tokens": "x"}`, "d.jsonl:1: field output_tokens: a string where a number belongs"},
		{"jsonl", "d.jsonl", `{"messages": "hi"}`, "d.jsonl:1: field messages: a string where a list belongs"},
		{"jsonl", "d.jsonl", `{"prompt": "a", x}`, "d.jsonl:1: not a JSON object: not valid JSON at byte"},
		{"mooncake", "m.jsonl", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n{\"timestamp\": 10, \"input_length\": 5}\n", "m.jsonl:2: missing output_length"},
		{"mooncake", "m.jsonl", `{"timestamp": -1, "input_length": 5, "output_length": 2}`, "timestamp -1"},
		{"mooncake", "m.jsonl", `{"timestamp": 0, "input_length": -5, "output_length": 2}`, "m.jsonl:1: input_length -5 must be in 0..10000000"},
		{"azure", "a.csv", "TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.6805900,5\n", "lacks generatedtokens"},
		{"azure", "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,5,3\nyesterday,5,3\n", "a.csv:3: TIMESTAMP \"yesterday\""},
		{"azure", "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,5,3\n2023-11-16 18:15:47,five,3\n", "a.csv:3: ContextTokens \"five\""},
		{"azure", "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,\"5,3\n", "a.csv:2"},
	}
	for _, c := range cases {
		path := writeFile(t, c.name, c.content)
		_, err := New(Config{Dataset: c.kind + ":" + path, OutputTokens: Fixed(4)}, tok)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want %q", c.kind, c.content, err, c.want)
		}
	}
}

func TestShareGPT(t *testing.T) {
	tok := loadTok(t, "o200k_base")
	entries := `[
  {"id": "a", "conversations": [{"from": "human", "value": "What is the capital of France?"}, {"from": "gpt", "value": "Paris is the capital of France."}, {"from": "human", "value": "And Spain?"}]},
  {"id": "b", "conversations": [{"from": "system", "value": "You help."}, {"from": "human", "value": "Say hi"}, {"from": "gpt", "value": "Hi!"}]},
  {"id": "c", "conversations": [{"from": "human", "value": "No answer here"}]},
  {"id": "d", "conversations": [{"from": "gpt", "value": "I speak first"}]},
  {"id": "e", "conversations": []},
  {"id": "f", "conversations": [{"from": "human", "value": "  "}, {"from": "gpt", "value": "x"}]},
  {"id": "g", "conversations": [{"from": "human", "value": "one"}, {"from": "human", "value": "two"}]}
]`
	for _, form := range []string{"array", "jsonl"} {
		content := entries
		if form == "jsonl" {
			var lines []string
			for _, l := range strings.Split(entries, "\n") {
				l = strings.TrimSuffix(strings.TrimSpace(l), ",")
				if strings.HasPrefix(l, "{") {
					lines = append(lines, l)
				}
			}
			content = strings.Join(lines, "\n")
		}
		src := mustNew(t, Config{Dataset: "sharegpt:" + writeFile(t, "sg.json", content), OutputTokens: Fixed(100), Seed: 2}, tok)
		if src.Len() != 2 {
			t.Fatalf("%s: Len %d", form, src.Len())
		}
		info := Describe(src)
		want := map[string]int{"no_reply": 2, "no_human_turn": 1, "no_conversation": 1, "empty_prompt": 1}
		for k, v := range want {
			if info.Skipped[k] != v {
				t.Errorf("%s: skipped %v, want %v", form, info.Skipped, want)
				break
			}
		}
		got := map[string]Request{}
		for i := range 2 {
			r := src.Request(0, i)
			got[r.Prompt] = r
		}
		r := got["What is the capital of France?"]
		if r.OutputTokens != len(tok.Encode("Paris is the capital of France.")) || r.InputTokens != len(tok.Encode(r.Prompt)) {
			t.Errorf("%s: %+v", form, r)
		}
		if r := got["Say hi"]; r.OutputTokens != len(tok.Encode("Hi!")) {
			t.Errorf("%s: %+v", form, r)
		}
	}
}

func TestMooncake(t *testing.T) {
	for _, spec := range []string{"o200k_base", llama2Path} {
		t.Run(spec, func(t *testing.T) { testMooncake(t, spec) })
	}
}

func testMooncake(t *testing.T, spec string) {
	tok := loadTok(t, spec)
	// Rows out of order in the file; block size 16 tokens for a small test.
	path := writeFile(t, "m.jsonl", `{"timestamp": 1500, "input_length": 40, "output_length": 7, "hash_ids": [1, 2, 5]}
{"timestamp": 1000, "input_length": 35, "output_length": 3, "hash_ids": [1, 2, 3]}
{"timestamp": 1000, "input_length": 20, "output_length": 0, "hash_ids": [1, 4]}
{"timestamp": 4000, "input_length": 60, "output_length": 9, "hash_ids": [7]}
`)
	cfg := Config{Dataset: "mooncake:" + path, BlockTokens: 16, TraceSpeed: 2, Seed: 5}
	src := mustNew(t, cfg, tok)
	info := Describe(src)
	if !info.Trace || info.Rows != 4 || info.Clamped != 1 || info.Span != 1500*time.Millisecond {
		t.Fatalf("info %+v", info)
	}
	var reqs []Request
	var ids [][]int
	for i := range 4 {
		r := src.Request(0, i)
		reqs = append(reqs, r)
		ids = append(ids, tok.Encode(r.Prompt))
		if len(ids[i]) != r.InputTokens {
			t.Fatalf("request %d: %d tokens, want %d", i, len(ids[i]), r.InputTokens)
		}
	}
	// Sorted by timestamp, file order kept for ties; offsets from the first, halved.
	wantArr := []time.Duration{0, 0, 250 * time.Millisecond, 1500 * time.Millisecond}
	wantIn := []int{35, 20, 40, 60}
	for i, r := range reqs {
		if !r.HasArrival || r.Arrival != wantArr[i] || r.InputTokens != wantIn[i] {
			t.Errorf("request %d: arrival %v in %d, want %v %d", i, r.Arrival, r.InputTokens, wantArr[i], wantIn[i])
		}
	}
	if reqs[1].OutputTokens != 1 {
		t.Errorf("output 0 should be clamped to 1, got %d", reqs[1].OutputTokens)
	}
	// Equal hash ids, equal blocks: rows 0 and 2 share [1, 2] = 32 tokens, row 1 shares [1].
	common := func(a, b []int) int {
		n := 0
		for n < min(len(a), len(b)) && a[n] == b[n] {
			n++
		}
		return n
	}
	if c := common(ids[0], ids[2]); c < 32 || c >= 48 {
		t.Errorf("rows with hash ids [1 2 3] and [1 2 5] share %d tokens, want 32 (+ chance)", c)
	}
	if c := common(ids[0], ids[1]); c < 16 || c >= 32 {
		t.Errorf("rows with hash ids [1 2 3] and [1 4] share %d tokens, want 16", c)
	}
	if c := common(ids[0], ids[3]); c > 2 {
		t.Errorf("rows with different first blocks share %d tokens", c)
	}
	if !slices.Equal(reqs[0].PrefixHashes[:2], reqs[2].PrefixHashes[:2]) || reqs[0].PrefixHashes[2] == reqs[2].PrefixHashes[2] || reqs[0].BlockTokens != 16 {
		t.Errorf("prefix hashes %v %v", reqs[0].PrefixHashes, reqs[2].PrefixHashes)
	}
	// The trace cycles: the next pass is shifted by the period and keeps the order.
	r4 := src.Request(0, 4)
	if r4.Arrival != info.Period || info.Period != 2000*time.Millisecond || r4.InputTokens != 35 {
		t.Errorf("second pass: %+v (period %v)", r4, info.Period)
	}
	// Lengths only: no tokenizer needed, same lengths and arrivals.
	cfg.LengthsOnly = true
	lo := mustNew(t, cfg, nil)
	if r := lo.Request(0, 2); r.Prompt != "" || r.InputTokens != 40 || r.Arrival != 250*time.Millisecond {
		t.Errorf("lengths-only %+v", r)
	}
}

func TestAzure(t *testing.T) {
	tok := loadTok(t, "o200k_base")
	path := writeFile(t, "a.csv", "\ufeffTIMESTAMP,ContextTokens,GeneratedTokens\n"+
		"2023-11-16 18:15:46.6805900,374,44\n"+
		"2023-11-16 18:15:50.9951690,396,109\n"+
		"2023-11-16 18:15:47.0000000,0,10\n")
	src := mustNew(t, Config{Dataset: "azure:" + path, Seed: 1, PrefixTokens: 50, PrefixGroups: 2}, tok)
	want := []struct {
		arr     time.Duration
		in, out int
	}{{0, 374, 44}, {319410000, 51, 10}, {4314579000, 396, 109}}
	for i, w := range want {
		r := src.Request(0, i)
		if !r.HasArrival || r.Arrival != w.arr || r.InputTokens != w.in || r.OutputTokens != w.out {
			t.Errorf("row %d: arrival %v in %d out %d, want %+v", i, r.Arrival, r.InputTokens, r.OutputTokens, w)
		}
		if n := len(tok.Encode(r.Prompt)); n != r.InputTokens {
			t.Errorf("row %d: prompt has %d tokens, want %d", i, n, r.InputTokens)
		}
	}
	if info := Describe(src); info.Clamped != 1 {
		t.Errorf("clamped %d", info.Clamped)
	}
	// Seconds are accepted too, and columns may come in any order.
	p2 := writeFile(t, "b.csv", "GeneratedTokens,TIMESTAMP,ContextTokens\n5,10.5,7\n6,12,8\n")
	r := mustNew(t, Config{Dataset: "azure:" + p2, TraceSpeed: 3}, tok).Request(0, 1)
	if r.Arrival != 500*time.Millisecond || r.InputTokens != 8 || r.OutputTokens != 6 {
		t.Errorf("seconds form: %+v", r)
	}
}

// TestWriteJSONLRoundTrip: `dataset` output fed back with jsonl: gives the same requests.
func TestWriteJSONLRoundTrip(t *testing.T) {
	tok := loadTok(t, "o200k_base")
	mc := writeFile(t, "m.jsonl", `{"timestamp": 0, "input_length": 30, "output_length": 5, "hash_ids": [1]}
{"timestamp": 250, "input_length": 12, "output_length": 6, "hash_ids": [1]}
`)
	for _, cfg := range []Config{
		{InputTokens: Dist{Kind: "uniform", A: 5, B: 60}, OutputTokens: Fixed(9), PrefixTokens: 4, PrefixGroups: 2, Seed: 1},
		{Dataset: "mooncake:" + mc, Seed: 1},
	} {
		src := mustNew(t, cfg, tok)
		var buf bytes.Buffer
		var orig []Request
		for i := range 6 {
			r := src.Request(0, i)
			orig = append(orig, r)
			if err := WriteJSONL(&buf, r); err != nil {
				t.Fatal(err)
			}
		}
		if strings.Contains(buf.String(), `\u003c`) {
			t.Error("HTML escaping in output")
		}
		back := mustNew(t, Config{Dataset: "jsonl:" + writeFile(t, "out.jsonl", buf.String()), OutputTokens: Fixed(1)}, tok)
		if back.Len() != 6 {
			t.Fatalf("read back %d rows", back.Len())
		}
		for i := range 6 {
			var r Request
			if Describe(back).Trace {
				r = back.Request(0, i) // a trace replays in order
			} else {
				// Shuffled: find the same prompt.
				for j := range 6 {
					if c := back.Request(0, j); c.Prompt == orig[i].Prompt {
						r = c
					}
				}
			}
			o := orig[i]
			if r.Prompt != o.Prompt || r.InputTokens != o.InputTokens || r.OutputTokens != o.OutputTokens || r.HasArrival != o.HasArrival || r.Arrival != o.Arrival ||
				r.PrefixTokens != o.PrefixTokens || r.PrefixGroup != o.PrefixGroup {
				t.Errorf("request %d: wrote %+v, read %+v", i, o, r)
			}
		}
	}
	if err := WriteJSONL(&bytes.Buffer{}, Request{InputTokens: 3}); err == nil {
		t.Error("a request without text cannot be written")
	}
}

// TestFasterIsTraceSpeed: a loaded trace replayed Faster by a factor arrives as the same
// trace loaded at that --trace-speed, every pass of it, and says so in its Info.
func TestFasterIsTraceSpeed(t *testing.T) {
	path := writeFile(t, "m.jsonl", `{"timestamp": 1000, "input_length": 35, "output_length": 3, "hash_ids": [1]}
{"timestamp": 1700, "input_length": 20, "output_length": 2, "hash_ids": [2]}
{"timestamp": 4100, "input_length": 60, "output_length": 9, "hash_ids": [3]}
`)
	cfg := Config{Dataset: "mooncake:" + path, LengthsOnly: true, Seed: 5}
	once := mustNew(t, cfg, nil)
	cfg.TraceSpeed = 3
	sped := mustNew(t, cfg, nil)
	fast := Faster(once, 3)
	for i := range 7 { // two passes and a bit
		a, b := fast.Request(0, i), sped.Request(0, i)
		if d := a.Arrival - b.Arrival; d < -time.Microsecond || d > time.Microsecond || a.InputTokens != b.InputTokens {
			t.Errorf("request %d: Faster arrives %v (%d tokens), --trace-speed 3 %v (%d)", i, a.Arrival, a.InputTokens, b.Arrival, b.InputTokens)
		}
	}
	if fi, si := Describe(fast), Describe(sped); fi.Span != si.Span || fi.Rows != si.Rows {
		t.Errorf("Info %+v, --trace-speed 3 %+v", fi, si)
	}
	if Faster(once, 1) != once {
		t.Error("Faster by 1 is not the source itself")
	}
}
