package workload

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// byteTok is a stand-in tokenizer for fuzzing: one token per byte, so any non-empty text
// has at least one token (as with real tokenizers), without loading a vocabulary.
type byteTok struct{}

func (byteTok) Name() string { return "bytes" }
func (byteTok) Encode(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}
func (byteTok) Decode(ids []int) string {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b)
}

// FuzzParseDist: ParseDist never panics; what it accepts validates, prints back to itself,
// and samples lengths >= 1 within its bounds. Seed corpus: testdata/fuzz/FuzzParseDist.
//
//	go test ./internal/workload -run '^$' -fuzz '^FuzzParseDist$' -fuzztime 30s
func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"512", "1", "0", "-3", "uniform:1:10", "uniform:128:1024", "uniform:5:4",
		"uniform:1.5:3", "normal:300:50", "normal:1:0", "normal:5:-1", "normal:NaN:1", "uniform:1",
		"gamma:1:2", " 64 ", "1e3", "uniform:1e3:2e3", "normal:1e300:1e300", "uniform:1:1e18", "normal:1:1e300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDist(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: empty error", s)
			}
			if !d.IsZero() {
				t.Fatalf("%q: error %v with a non-zero Dist %+v", s, err, d)
			}
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("%q parsed to %+v, which does not validate: %v", s, d, err)
		}
		back, err := ParseDist(d.String())
		if err != nil || back != d {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, d, d.String(), back, err)
		}
		var u Dist
		if err := u.UnmarshalText([]byte(d.String())); err != nil || u != d {
			t.Fatalf("UnmarshalText(%q) = %+v, %v", d.String(), u, err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 16 {
			v := d.Sample(r)
			if v < 1 || v < d.Min() || v > MaxTokens {
				t.Fatalf("%q: sample %d below 1 or Min %d, or above MaxTokens", s, v, d.Min())
			}
			if d.Kind == DistUniform && (float64(v) < d.A || float64(v) > d.B) {
				t.Fatalf("%q: sample %d outside [%v, %v]", s, v, d.A, d.B)
			}
			if d.Kind == DistFixed && float64(v) != d.A {
				t.Fatalf("%q: fixed sample %d", s, v)
			}
		}
	})
}

// Dataset kinds in the order FuzzDatasets' kind byte selects them.
var fuzzKinds = []string{DatasetJSONL, DatasetShareGPT, DatasetMooncake, DatasetAzure}

// FuzzDatasets feeds arbitrary files to the four dataset/trace loaders through New: they
// never panic; a rejected file's error names the file (and so the line, for row errors);
// an accepted one yields requests with lengths >= 1, and a trace's arrivals start at 0 and
// never go backwards. A jsonl dataset also round-trips through WriteJSONL, and a ShareGPT
// file accounts for every entry (used or skipped by reason). Seed corpus:
// testdata/fuzz/FuzzDatasets.
//
//	go test ./internal/workload -run '^$' -fuzz '^FuzzDatasets$' -fuzztime 30s
func FuzzDatasets(f *testing.F) {
	seeds := []struct {
		kind int
		data string
	}{
		{0, "{\"prompt\": \"hello there\", \"output_tokens\": 4}\n{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"input_tokens\": 2}\n"},
		{0, "{\"prompt\": \"a\", \"arrival_s\": 1.5, \"prefix_tokens\": 1, \"prefix_group\": 2}\n{\"prompt\": \"b\", \"arrival_s\": 0.25}\n"},
		{0, "{\"prompt\": \"a\"} {\"prompt\": \"b\"}\n"},
		{0, "{\"messages\": [{\"content\": \"x\"}]}"},
		{1, "[{\"id\": \"1\", \"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}, {\"from\": \"gpt\", \"value\": \"hello\"}]}, {\"conversations\": []}]"},
		{1, "{\"conversations\": [{\"from\": \"user\", \"value\": \"q\"}, {\"from\": \"assistant\", \"value\": \"a\"}]}\n{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}]}\n"},
		{1, "\ufeff[\n{\"conversations\": \"oops\"}\n]"},
		{2, "{\"timestamp\": 1500, \"input_length\": 40, \"output_length\": 7, \"hash_ids\": [1, 2, 5]}\n{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 3, \"hash_ids\": []}\n"},
		{2, "{\"timestamp\": 10, \"input_length\": 5}\n"},
		{3, "\ufeffTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n"},
		{3, "GeneratedTokens,TIMESTAMP,ContextTokens\n5,10.5,7\n6,12,0\n"},
		{3, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,\"5,3\n"},
	}
	for _, s := range seeds {
		f.Add(uint8(s.kind), []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, kindSel uint8, data []byte) {
		kind := fuzzKinds[int(kindSel)%len(fuzzKinds)]
		dir := t.TempDir()
		path := filepath.Join(dir, "data")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := Config{Dataset: kind + ":" + path, OutputTokens: Fixed(3), Seed: 1}
		var tok byteTok
		var src Source
		var err error
		if kind == DatasetJSONL || kind == DatasetShareGPT {
			src, err = New(cfg, tok)
		} else {
			// Traces bring lengths only; prompt synthesis needs a real vocabulary.
			cfg.LengthsOnly = true
			src, err = New(cfg, nil)
		}
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("%s: error does not name the file: %v", kind, err)
			}
			return
		}
		n := src.Len()
		info := Describe(src)
		if n < 1 || info.Rows != n {
			t.Fatalf("%s: accepted with Len %d, Info.Rows %d", kind, n, info.Rows)
		}
		reqs := make([]Request, n)
		for i := range n {
			r := src.Request(0, i)
			if r.InputTokens < 1 || r.OutputTokens < 1 {
				t.Fatalf("%s: request %d has input %d, output %d tokens; want >= 1", kind, i, r.InputTokens, r.OutputTokens)
			}
			if r.HasArrival != info.Trace {
				t.Fatalf("%s: request %d HasArrival %v in a source with Trace %v", kind, i, r.HasArrival, info.Trace)
			}
			if r.HasArrival && (r.Arrival < 0 || (i > 0 && r.Arrival < reqs[i-1].Arrival)) {
				t.Fatalf("%s: request %d arrives at %v, after %v: arrivals must be >= 0 and in order", kind, i, r.Arrival, reqs[max(i-1, 0)].Arrival)
			}
			reqs[i] = r
		}
		if info.Trace && kind != DatasetJSONL && reqs[0].Arrival != 0 {
			t.Fatalf("%s: a replayed trace starts at %v, want 0", kind, reqs[0].Arrival)
		}
		switch kind {
		case DatasetJSONL:
			checkJSONLRoundTrip(t, reqs, dir, tok)
		case DatasetShareGPT:
			entries, ok := shareGPTEntries(data)
			skipped := 0
			for _, v := range info.Skipped {
				skipped += v
			}
			if ok && n+skipped != entries {
				t.Fatalf("sharegpt: %d entries, %d used + %d skipped (%v)", entries, n, skipped, info.Skipped)
			}
			if !ok {
				t.Fatalf("sharegpt: accepted a file that is neither a JSON array nor JSON lines: %q", data)
			}
		}
	})
}

// checkJSONLRoundTrip writes a jsonl dataset's requests with WriteJSONL and reads them
// back: the same requests, in the same order for a trace (a dataset is shuffled, so it is
// compared as a set of prompts).
func checkJSONLRoundTrip(t *testing.T, reqs []Request, dir string, tok byteTok) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, reqs...); err != nil {
		t.Fatalf("WriteJSONL of an accepted dataset: %v", err)
	}
	path := filepath.Join(dir, "back.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := New(Config{Dataset: DatasetJSONL + ":" + path, OutputTokens: Fixed(3), Seed: 1}, tok)
	if err != nil {
		t.Fatalf("WriteJSONL output is not a valid dataset: %v\n%s", err, buf.String())
	}
	if back.Len() != len(reqs) {
		t.Fatalf("%d requests written, %d read back", len(reqs), back.Len())
	}
	key := func(r Request) string {
		group := 0 // a group means nothing without prefix tokens, and is not written then
		if r.PrefixTokens > 0 {
			group = r.PrefixGroup
		}
		if len(r.Messages) == 0 {
			r.Messages = nil
		}
		b, _ := json.Marshal([]any{r.Prompt, r.Messages, r.InputTokens, r.OutputTokens,
			r.HasArrival, r.Arrival, r.PrefixTokens, group})
		return string(b)
	}
	var a, b []string
	for i := range reqs {
		a = append(a, key(reqs[i]))
		b = append(b, key(back.Request(0, i)))
	}
	if !Describe(back).Trace {
		slices.Sort(a)
		slices.Sort(b)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("round trip changed a request:\nwrote %s\nread  %s", a[i], b[i])
		}
	}
}

// shareGPTEntries counts the entries of a ShareGPT file independently of the loader: the
// elements of a JSON array, or the non-blank lines of JSON lines. ok is false when the file
// is neither.
func shareGPTEntries(data []byte) (n int, ok bool) {
	trim := bytes.TrimLeft(data, " \t\r\n\xef\xbb\xbf")
	if len(trim) > 0 && trim[0] == '[' {
		var arr []json.RawMessage
		if err := json.Unmarshal(trim, &arr); err != nil {
			return 0, false
		}
		return len(arr), true
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return 0, false
		}
		n++
	}
	return n, true
}

// FuzzParseTools: a tools file either is refused with a message naming the file, or gives
// definitions a server would take (ValidateTools holds) whose parameters are a JSON object;
// never a panic.
func FuzzParseTools(f *testing.F) {
	f.Add([]byte(`[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`))
	f.Add([]byte(`[{"type":"function","name":"flat","description":"d","parameters":null}]`))
	f.Add([]byte(`[{"name":"a"},{"name":"a"}]`))
	f.Add([]byte(`[{"function":{"name":"x","parameters":{"type":["object"]}}}]`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tools, err := ParseTools("f.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(tools) == 0 {
			t.Fatal("no error and no tools")
		}
		if err := ValidateTools(tools, ""); err != nil {
			t.Fatalf("parsed tools that do not validate: %v", err)
		}
		for _, tl := range tools {
			var m map[string]any
			if tl.Parameters != nil && json.Unmarshal(tl.Parameters, &m) != nil {
				t.Fatalf("%s: parameters %s are not a JSON object", tl.Name, tl.Parameters)
			}
		}
	})
}
