package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The real tokenizer files are testdata/MODEL/tokenizer.json.gz; testdata/reference holds
// the texts and the reference implementations' ids (testdata/reference/README.md).
const refDir = "testdata/reference"

// models are the tokenizer.json files committed under testdata.
var models = []string{"llama3", "qwen3", "gpt4o"}

// tokenizerFile is the committed tokenizer.json of model (gzipped; Load reads it as is).
func tokenizerFile(model string) string {
	return filepath.Join("testdata", model, "tokenizer.json.gz")
}

// refFile is the path of reference file name (without extension): name.json, or
// name.json.gz for the large ones; "" when there is neither.
func refFile(name string) string {
	for _, p := range []string{name + ".json", name + ".json.gz"} {
		p = filepath.Join(refDir, p)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// readRef decodes reference file name (see refFile).
func readRef[T any](t testing.TB, name string) T {
	t.Helper()
	p := refFile(name)
	if p == "" {
		t.Fatalf("%s/%s.json(.gz) is missing", refDir, name)
	}
	return readJSON[T](t, p)
}

// readJSON decodes a JSON file, gunzipping it first if its name ends in .gz.
func readJSON[T any](t testing.TB, path string) T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err == nil && strings.HasSuffix(path, ".gz") {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(data)); err == nil {
			data, err = io.ReadAll(zr)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// TestReferenceIDs checks every reference id file: HuggingFace's Rust tokenizers for the
// tokenizer.json files, tiktoken's encode_ordinary for the OpenAI encodings.
func TestReferenceIDs(t *testing.T) {
	sets := map[string]string{"ref": "texts", "refc": "corpus", "refe": "edge", "refp": "patho"}
	type job struct{ spec, texts, ids string }
	var jobs []job
	for _, model := range models {
		for prefix, texts := range sets {
			jobs = append(jobs, job{tokenizerFile(model), texts, prefix + "_" + model})
		}
	}
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		jobs = append(jobs, job{enc, "texts", "tt_" + enc}, job{enc, "corpus", "ttc_" + enc})
	}
	for _, j := range jobs {
		if j.ids == "refp_gpt4o" {
			continue // the one set without reference ids
		}
		t.Run(j.ids, func(t *testing.T) {
			t.Parallel()
			tok, err := Load(j.spec)
			if err != nil {
				t.Fatal(err)
			}
			texts := readRef[[]string](t, j.texts)
			want := readRef[[][]int](t, j.ids)
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
