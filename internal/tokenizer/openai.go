package tokenizer

import (
	"fmt"

	"github.com/dlclark/regexp2"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// The OpenAI encodings' pre-tokenizer patterns, as in tiktoken.
var openAIPatterns = map[string]string{
	"o200k_base":  o200kPattern,
	"cl100k_base": clPattern,
}

// The special tokens' ids, used only to decode them: Encode follows tiktoken's
// encode_ordinary, so special-token text in a prompt is ordinary text.
var openAISpecials = map[string]map[string]int{
	"o200k_base":  {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
	"cl100k_base": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
}

// loadOpenAI builds an OpenAI encoding from the ranks embedded in tiktoken-go-loader
// (nothing is downloaded).
func loadOpenAI(name string) (*bpe, error) {
	ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe(name + ".tiktoken")
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", name, err)
	}
	re, err := regexp2.Compile(openAIPatterns[name], regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", name, err)
	}
	t := &bpe{name: name, vocab: ranks, wholeWord: true, pat: re, fast: fastMatcher(openAIPatterns[name])}
	maxID := 0
	for _, id := range ranks {
		maxID = max(maxID, id)
	}
	for _, id := range openAISpecials[name] {
		maxID = max(maxID, id)
	}
	t.decoder = make([][]byte, maxID+1)
	for s, id := range ranks {
		t.decoder[id] = []byte(s)
	}
	for s, id := range openAISpecials[name] {
		t.decoder[id] = []byte(s)
	}
	for b := 0; b < 256; b++ {
		if _, ok := ranks[string([]byte{byte(b)})]; !ok {
			return nil, fmt.Errorf("tokenizer %s: no token for byte 0x%02x", name, b)
		}
	}
	return t, nil
}
