package server

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

var loadBPE = sync.OnceFunc(func() { tiktoken.SetBpeLoader(loader.NewOfflineLoader()) })

func encoding(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	loadBPE()
	e, err := tiktoken.GetEncoding(name)
	if err != nil {
		t.Fatalf("loading %s: %v", name, err)
	}
	return e
}

// Each generated word is one token, and a run of them is one token per word, so a client
// counting the streamed text gets usage.completion_tokens.
func TestWordsAreSingleTokensOpenAI(t *testing.T) {
	text := string(appendWords(nil, 12345, 0, 500))
	for _, name := range []string{"cl100k_base", "o200k_base"} {
		e := encoding(t, name)
		for _, w := range words {
			if n := len(e.EncodeOrdinary(w)); n != 1 {
				t.Errorf("%s: %q is %d tokens", name, w, n)
			}
		}
		if n := len(e.EncodeOrdinary(text)); n != 500 {
			t.Errorf("%s: 500 generated words encode to %d tokens", name, n)
		}
	}
	if n := EstimateTokens(text); n != 500 {
		t.Errorf("EstimateTokens of 500 generated words = %d", n)
	}
}

// Llama 3 and Qwen 3 (byte-level BPE, "Ġ" for a leading space) have every word in their
// vocabularies as one entry.
func TestWordsAreSingleTokensHF(t *testing.T) {
	for _, name := range []string{"llama3", "qwen3"} {
		// The tokenizer package's committed copies.
		path := filepath.Join("..", "..", "tokenizer", "testdata", name, "tokenizer.json.gz")
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var tj struct {
			Model struct {
				Vocab map[string]int `json:"vocab"`
			} `json:"model"`
		}
		if err := json.NewDecoder(zr).Decode(&tj); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, w := range words {
			if _, ok := tj.Model.Vocab["Ġ"+w[1:]]; !ok {
				t.Errorf("%s: %q is not one token", name, w)
			}
		}
	}
}

func TestEstimateTokensAgainstCl100k(t *testing.T) {
	e := encoding(t, "cl100k_base")
	texts := map[string]string{
		"prose":     `It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, it was the season of Darkness, it was the spring of hope, it was the winter of despair, we had everything before us, we had nothing before us, we were all going direct to Heaven, we were all going direct the other way.`,
		"technical": `Continuous batching schedules every running sequence's decode step together with admitted prefill work under a per-step token budget; when the KV cache runs out of free blocks, the newest sequence is preempted and recomputed later. In 2024, vLLM 0.6.0 reported 2.7x higher throughput.`,
		"chat":      "Hello! Could you summarise the following text in three bullet points?\n\nThe meeting is at 10:30 on Monday (room 4B).",
	}
	for name, s := range texts {
		want := len(e.EncodeOrdinary(s))
		got := EstimateTokens(s)
		if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.12 {
			t.Errorf("%s: estimate %d, cl100k %d (%.0f%% off)", name, got, want, 100*rel)
		}
	}
	exact := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"The quick brown fox jumps over the lazy dog", 9},
		{" the and of", 3},
		{"12345", 2},
		{"a, b.", 4},
		{"\n\n", 1},
		{"héllo", 3}, // h, é, llo
	}
	for _, x := range exact {
		if got := EstimateTokens(x.s); got != x.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", x.s, got, x.want)
		}
	}
}

func TestTokenHook(t *testing.T) {
	g := &fakeGen{}
	_, ts := newTestServer(t, g, Options{CountTokens: func(s string) int { return len(s) }})
	resp := post(t, ts, "/v1/chat/completions", `{"messages":[{"role":"system","content":"abc"},{"role":"user","content":"defgh"}],"max_tokens":1}`)
	c := decodeChunk(t, string(readAll(t, resp.Body)))
	resp.Body.Close()
	if c.Usage.PromptTokens != 8 || g.requests()[0].PromptTokens != 8 {
		t.Fatalf("prompt tokens %d, want 8 from the hook", c.Usage.PromptTokens)
	}
	if strings.Contains(c.ID, " ") {
		t.Fatal(c.ID)
	}
}
