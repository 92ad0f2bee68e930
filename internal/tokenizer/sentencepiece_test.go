package tokenizer

import (
	"encoding/json"
	"slices"
	"testing"
)

// spModels are the SentencePiece-style files checked against HuggingFace's ids: Llama 2's
// tokenizer.json as committed (normalizer Prepend + Replace, no pre-tokenizer, decoder
// Replace/ByteFallback/Fuse/Strip) and two variants of it made here the way the reference
// ids were made (testdata/reference/README.md): a Metaspace pre-tokenizer and decoder
// with prepend_scheme "first" and split false (Mistral v0.3 and newer conversions), and
// one with "always" and split true.
var spModels = map[string]func(map[string]any){
	"llama2": nil,
	"llama2ms": func(f map[string]any) {
		ms := map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false}
		f["normalizer"], f["pre_tokenizer"], f["decoder"] = nil, ms, ms
	},
	"llama2mss": func(f map[string]any) {
		ms := map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}
		f["normalizer"], f["pre_tokenizer"], f["decoder"] = nil, ms, ms
	},
}

func loadSPModel(t *testing.T, name string) *bpe {
	t.Helper()
	if spModels[name] == nil {
		tok, err := Load(tokenizerFile("llama2"))
		if err != nil {
			t.Fatal(err)
		}
		return tok.(*bpe)
	}
	f := readJSON[map[string]any](t, tokenizerFile("llama2"))
	spModels[name](f)
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := parseHF(data)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestSentencePieceReferenceIDs: every text set, and the SentencePiece edge cases
// (edge_sp: spaces, newlines, tabs, emoji, CJK, byte fallback, digits, special tokens),
// encode to HuggingFace's ids and decode to HuggingFace's text.
func TestSentencePieceReferenceIDs(t *testing.T) {
	sets := map[string]string{"ref": "texts", "refc": "corpus", "refe": "edge", "refp": "patho", "refs": "edge_sp"}
	for name := range spModels {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok := loadSPModel(t, name)
			total := 0
			for prefix, set := range sets {
				texts := readRef[[]string](t, set)
				want := readRef[[][]int](t, prefix+"_"+name)
				if len(texts) != len(want) {
					t.Fatalf("%s: %d texts but %d id lists", set, len(texts), len(want))
				}
				bad := 0
				for i, text := range texts {
					if got := tok.Encode(text); !slices.Equal(got, want[i]) {
						if bad++; bad <= 3 {
							t.Errorf("%s text %d %.60q:\n got %v\nwant %v", set, i, text, head(got), head(want[i]))
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d of %d texts differ", set, bad, len(texts))
				}
				total += len(texts)
			}
			ids := readRef[[][]int](t, "refs_"+name)
			texts := readRef[[]string](t, "refsd_"+name)
			for i := range ids {
				if got := tok.Decode(ids[i]); got != texts[i] {
					t.Errorf("decode %v: got %q, want %q", head(ids[i]), got, texts[i])
				}
			}
			t.Logf("%s: %d texts exact", name, total)
		})
	}
}

// TestSentencePieceWordCuts: a piece is cut into words before "▁" only where no token
// spans the cut ("a▁b" here), and unknown characters fuse into one <unk> (fuse_unk).
func TestSentencePieceWordCuts(t *testing.T) {
	file := `{"added_tokens":[],"normalizer":{"type":"Replace","pattern":{"String":" "},"content":"▁"},"pre_tokenizer":null,
		"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"Fuse"}]},
		"model":{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":false,
		"vocab":{"<unk>":0,"a":1,"b":2,"c":3,"▁":4,"a▁":5,"a▁b":6,"▁b":7},"merges":["a ▁","a▁ b","▁ b"]}}`
	tok, err := parseHF([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string][]int{
		"a b":        {6},    // no cut after "a": the token "a▁b" spans it
		"c b":        {3, 7}, // cut after "c"
		"zz\u00e9b":  {0, 2}, // three unknown characters, one <unk>
		"a bc bza b": {6, 3, 7, 0, 6},
	} {
		if got := tok.Encode(text); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
	}
	if got := tok.Decode([]int{6, 3, 7}); got != "a bc b" {
		t.Errorf("Decode = %q", got)
	}
}

func TestSplitLiteral(t *testing.T) {
	for behavior, want := range map[string][]string{
		"MergedWithPrevious": {"a-", "-", "b-"},
		"MergedWithNext":     {"a", "-", "-b", "-"},
		"Isolated":           {"a", "-", "-", "b", "-"},
		"Removed":            {"a", "b"},
	} {
		if got := splitLiteral("a--b-", "-", behavior, nil); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", behavior, got, want)
		}
	}
}
