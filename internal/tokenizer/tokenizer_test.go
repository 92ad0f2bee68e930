package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

var qwenFixture = tokenizerFile("qwen3")

type fixtureCase struct {
	Set  string `json:"set"`
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

func loadFixtureCases(t testing.TB) []fixtureCase {
	t.Helper()
	f, err := os.Open("testdata/qwen3_reference.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Cases []fixtureCase `json:"cases"`
	}
	if err := json.NewDecoder(zr).Decode(&fx); err != nil {
		t.Fatal(err)
	}
	return fx.Cases
}

// TestQwen3Fixture proves exactness on a fresh clone: the committed Qwen3 tokenizer.json
// (Apache-2.0) against HuggingFace's ids for basic, edge, corpus and pathological texts.
func TestQwen3Fixture(t *testing.T) {
	tok, err := Load(qwenFixture)
	if err != nil {
		t.Fatal(err)
	}
	cases := loadFixtureCases(t)
	sets := map[string]int{}
	for i, c := range cases {
		sets[c.Set]++
		got := tok.Encode(c.Text)
		if !slices.Equal(got, c.IDs) {
			t.Errorf("case %d (%s) %.60q:\n got %v\nwant %v", i, c.Set, c.Text, head(got), head(c.IDs))
			continue
		}
		// Decoding gives back the (NFC-normalized) text.
		if dec := tok.Decode(got); c.Set != "edge" && dec != c.Text && !strings.ContainsRune(c.Text, 0xFFFD) {
			if enc := tok.Encode(dec); !slices.Equal(enc, got) {
				t.Errorf("case %d: decode/encode round trip changed the ids", i)
			}
		}
	}
	for _, s := range []string{"texts", "edge", "corpus", "patho"} {
		if sets[s] == 0 {
			t.Errorf("fixture has no %q cases", s)
		}
	}
}

// TestSpecialTokens pins the reference behaviour: HuggingFace files recognise added tokens
// in the input (add_special_tokens=false only stops BOS/EOS being added), while the OpenAI
// encodings follow tiktoken's encode_ordinary and treat them as text.
func TestSpecialTokens(t *testing.T) {
	qwen, err := Load(qwenFixture)
	if err != nil {
		t.Fatal(err)
	}
	if got := qwen.Encode("x<|endoftext|>y"); !slices.Equal(got, []int{87, 151643, 88}) {
		t.Errorf("qwen3: got %v", got)
	}
	if got := qwen.Decode([]int{151644}); got != "<|im_start|>" {
		t.Errorf("qwen3 decode special: got %q", got)
	}
	o200k, err := Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	got := o200k.Encode("x<|endoftext|>y")
	if slices.Contains(got, 199999) || len(got) < 4 {
		t.Errorf("o200k_base must encode special-token text as ordinary text, got %v", got)
	}
	if dec := o200k.Decode(got); dec != "x<|endoftext|>y" {
		t.Errorf("o200k_base round trip: %q", dec)
	}
}

// TestMergeHeapMatchesSmall checks the O(n log n) merge against the quadratic one on random
// pieces, in both merge modes.
func TestMergeHeapMatchesSmall(t *testing.T) {
	qwen, err := Load(qwenFixture)
	if err != nil {
		t.Fatal(err)
	}
	o200k, err := Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	alphabet := []string{"a", "b", "ab", "e", "in", "the", "ing", " ", "é", "一", "😀", "0"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tok := range []*bpe{qwen.(*bpe), o200k.(*bpe)} {
		for range 2000 {
			var sb strings.Builder
			for sb.Len() < 1+rng.IntN(smallPiece-4) {
				sb.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			piece := sb.String()
			if len(piece) > smallPiece {
				piece = piece[:smallPiece]
			}
			small := tok.mergeSmall(piece, nil)
			big := tok.mergeHeap(piece, nil)
			if !slices.Equal(small, big) {
				t.Fatalf("%s %q: small %v heap %v", tok.name, piece, small, big)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, spec := range []string{"o200k_base", "cl100k_base", qwenFixture, tokenizerFile("llama2")} {
		tok, err := Load(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"", "hello world", "  lead\n\n\ttabs  ", "naïve café 東京 😀", strings.Repeat("xyz", 5000)} {
			if got := tok.Decode(tok.Encode(s)); got != s {
				t.Errorf("%s: round trip of %.30q gave %.30q", spec, s, got)
			}
		}
	}
}

func TestLoadCachesAndRejects(t *testing.T) {
	a, err := Load(qwenFixture)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load("./" + qwenFixture)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("loading the same file twice should share one tokenizer")
	}
	for _, spec := range []string{"", "server", "testdata/does-not-exist.json"} {
		if _, err := Load(spec); err == nil {
			t.Errorf("Load(%q) should fail", spec)
		}
	}
}

// TestUnsupportedFiles: files that cannot be encoded exactly are refused with a reason.
func TestUnsupportedFiles(t *testing.T) {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	vocab["ab"] = 256
	vocabJSON, _ := json.Marshal(vocab)
	byteLevelSplit := `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+|\\S+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]}`
	file := func(model, normalizer, pre string) string {
		return `{"added_tokens":[],"normalizer":` + normalizer + `,"pre_tokenizer":` + pre + `,"decoder":{"type":"ByteLevel"},"model":` + model + `}`
	}
	bpeModel := `{"type":"BPE","vocab":` + string(vocabJSON) + `,"merges":["a b"]}`
	tests := []struct {
		name, json, want string
	}{
		{"ok", file(bpeModel, "null", byteLevelSplit), ""},
		{"sentencepiece without byte tokens", file(`{"type":"BPE","byte_fallback":true,"vocab":{},"merges":[]}`, "null",
			`{"type":"Metaspace","replacement":"▁","prepend_scheme":"first"}`), `decoder "ByteLevel" is not supported in a SentencePiece-style file`},
		{"sentencepiece regex split", file(`{"type":"BPE","byte_fallback":true,"vocab":{},"merges":[]}`, "null",
			`{"type":"Split","pattern":{"Regex":" "},"behavior":"Isolated","invert":false}`), "only a literal string"},
		{"wordpiece", file(`{"type":"WordPiece","vocab":{}}`, "null", byteLevelSplit), "WordPiece"},
		{"unigram", file(`{"type":"Unigram","vocab":[]}`, "null", byteLevelSplit), "Unigram"},
		{"normalizer", file(bpeModel, `{"type":"Lowercase"}`, byteLevelSplit), "Lowercase"},
		{"nfkc", file(bpeModel, `{"type":"Sequence","normalizers":[{"type":"NFKC"}]}`, byteLevelSplit), "NFKC"},
		{"prefix space", file(bpeModel, "null", `{"type":"ByteLevel","add_prefix_space":true}`), "add_prefix_space"},
		{"whitespace pre", file(bpeModel, "null", `{"type":"Whitespace"}`), "Whitespace"},
		{"not json", `{"model": [`, "not a tokenizer.json"},
		{"missing byte", file(`{"type":"BPE","vocab":{"a":0},"merges":[]}`, "null", byteLevelSplit), "no token for byte"},
		{"bad merge", file(`{"type":"BPE","vocab":`+string(vocabJSON)+`,"merges":["a"]}`, "null", byteLevelSplit), "merges[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := parseHF([]byte(tt.json))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := tok.Encode("ab ab"); !slices.Equal(got, []int{256, ' ', 256}) {
					t.Errorf("got %v", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok, err := Load(qwenFixture)
	if err != nil {
		t.Fatal(err)
	}
	cases := loadFixtureCases(t)[:60]
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range cases {
				c := cases[(i+g*7)%len(cases)]
				if got := tok.Encode(c.Text); !slices.Equal(got, c.IDs) {
					t.Errorf("concurrent encode of case %d differs", i)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Benchmarks: go test -bench . -run '^$' ./internal/tokenizer/
func BenchmarkEncode(b *testing.B) {
	texts := readRef[[]string](b, "corpus")
	words := readRef[[]string](b, "patho")
	joined := strings.Join(texts, "\n")
	for _, spec := range []string{"o200k_base", tokenizerFile("llama3"), tokenizerFile("qwen3")} {
		tok, err := Load(spec)
		if err != nil {
			b.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(spec))
		if !strings.Contains(spec, "/") {
			name = spec
		}
		b.Run(name+"/corpus", func(b *testing.B) {
			b.SetBytes(int64(len(joined)))
			for b.Loop() {
				tok.Encode(joined)
			}
		})
		for i, w := range words {
			b.Run(name+"/patho"+string(rune('0'+i)), func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					tok.Encode(w)
				}
			})
		}
	}
}

// BenchmarkTiktokenGoPatho is the baseline the merge loop replaces: tiktoken-go's own
// quadratic byte-pair merge on the 20k-character words (o200k_base).
func BenchmarkTiktokenGoPatho(b *testing.B) {
	words := readRef[[]string](b, "patho")
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		b.Fatal(err)
	}
	for i, w := range words {
		b.Run("patho"+string(rune('0'+i)), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				enc.EncodeOrdinary(w)
			}
		})
	}
}
