package client

import (
	"os"
	"path/filepath"
	"testing"
)

// llama.cpp's timings.cache_n, what it served of the prompt from its cache, becomes the
// record's CachedPromptTokens (0 included: said, and none cached); a stream without it
// (Ollama) says nothing.
func TestCachedPromptTokensFromTimings(t *testing.T) {
	for _, c := range []struct {
		file, api string
		cached    int32
		said      bool
	}{
		{"llama.cpp/chat-n2.sse", APIOpenAIChat, 29, true},
		{"llama.cpp/completions-include_usage.sse", APIOpenAICompletions, 4, true},
		{"llama.cpp/chat-no-usage.sse", APIOpenAIChat, 0, true},
	} {
		f, err := os.Open(filepath.Join("testdata", "streams", c.file))
		if err != nil {
			t.Fatal(err)
		}
		rec := decodeStream(t, c.api, f, nil)
		f.Close()
		if rec.CachedPromptTokens != c.cached || rec.HasCachedPromptTokens != c.said {
			t.Errorf("%s: cached %d (said %v), want %d (%v)", c.file, rec.CachedPromptTokens, rec.HasCachedPromptTokens, c.cached, c.said)
		}
	}
}
