package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// sharedDir holds the real tokenizer files and reference ids (../shared from the repo root).
const sharedDir = "../../../shared/tokenizers"

func readJSON[T any](t testing.TB, path string) T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func needShared(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sharedDir, "reference")); err != nil {
		t.Skip("shared tokenizer data not present:", err)
	}
}

// TestReferenceIDs checks every reference id file: HuggingFace's Rust tokenizers for the
// tokenizer.json files, tiktoken's encode_ordinary for the OpenAI encodings.
func TestReferenceIDs(t *testing.T) {
	needShared(t)
	ref := filepath.Join(sharedDir, "reference")
	sets := map[string]string{"ref": "texts", "refc": "corpus", "refe": "edge", "refp": "patho"}
	type job struct{ spec, texts, ids string }
	var jobs []job
	for _, model := range []string{"llama3", "qwen3", "gpt4o"} {
		for prefix, texts := range sets {
			jobs = append(jobs, job{filepath.Join(sharedDir, model, "tokenizer.json"), texts, prefix + "_" + model})
		}
	}
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		jobs = append(jobs, job{enc, "texts", "tt_" + enc}, job{enc, "corpus", "ttc_" + enc})
	}
	for _, j := range jobs {
		idsPath := filepath.Join(ref, j.ids+".json")
		if _, err := os.Stat(idsPath); err != nil {
			continue // not every model has every set (gpt4o has no patho ids)
		}
		t.Run(j.ids, func(t *testing.T) {
			t.Parallel()
			tok, err := Load(j.spec)
			if err != nil {
				t.Fatal(err)
			}
			texts := readJSON[[]string](t, filepath.Join(ref, j.texts+".json"))
			want := readJSON[[][]int](t, idsPath)
			if len(texts) != len(want) {
				t.Fatalf("%d texts but %d id lists", len(texts), len(want))
			}
			bad := 0
			for i, text := range texts {
				got := tok.Encode(text)
				if !slices.Equal(got, want[i]) {
					bad++
					if bad <= 3 {
						t.Errorf("text %d %.60q:\n got %v\nwant %v", i, text, head(got), head(want[i]))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d texts differ", bad, len(texts))
			}
		})
	}
}

func head(ids []int) []int {
	if len(ids) > 40 {
		return ids[:40]
	}
	return ids
}
