// Package tokenizer counts and produces tokens exactly as the model's tokenizer does:
// OpenAI encodings built in and HuggingFace tokenizer.json byte-level BPE files.
package tokenizer

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

// Tokenizer encodes text to token ids and back. Implementations are safe for concurrent use.
type Tokenizer interface {
	Name() string
	Encode(text string) []int
	Decode(ids []int) string
}

// Load returns the tokenizer named by spec: "o200k_base", "cl100k_base", or the path of a
// HuggingFace tokenizer.json (or of a directory holding one, or a .json.gz). Loaded
// tokenizers are cached, so loading the same spec twice is cheap and shares one instance.
// "server" needs the target's URL: use NewServer.
func Load(spec string) (Tokenizer, error) {
	switch spec {
	case "":
		return nil, errors.New("tokenizer: empty spec (want o200k_base, cl100k_base, server, or a tokenizer.json path)")
	case "server":
		return nil, errors.New("tokenizer: \"server\" tokenizes on the target (/tokenize); it needs the target URL (NewServer)")
	}
	key := spec
	if _, builtin := openAIPatterns[spec]; !builtin {
		abs, err := filepath.Abs(spec)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		key = abs
	}
	cacheMu.Lock()
	e, ok := cache[key]
	if !ok {
		e = &cacheEntry{}
		cache[key] = e
	}
	cacheMu.Unlock()
	e.once.Do(func() {
		if _, builtin := openAIPatterns[spec]; builtin {
			e.tok, e.err = loadOpenAI(spec)
		} else {
			e.tok, e.err = loadHFFile(spec)
		}
	})
	if e.err != nil {
		// Forget failures so a corrected file can be loaded later in the same process.
		cacheMu.Lock()
		if cache[key] == e {
			delete(cache, key)
		}
		cacheMu.Unlock()
		return nil, e.err
	}
	return e.tok, nil
}

type cacheEntry struct {
	once sync.Once
	tok  *bpe
	err  error
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*cacheEntry{}
)
