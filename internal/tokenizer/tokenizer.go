// Package tokenizer counts and produces tokens exactly as the model's tokenizer does:
// OpenAI encodings built in, and HuggingFace tokenizer.json files (byte-level BPE, and
// SentencePiece-style BPE with byte fallback) by path or by model id from the local cache.
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

// Load returns the tokenizer named by spec, as users name them:
//   - an encoding: "o200k_base" or "cl100k_base";
//   - a path: a value naming an existing file (a HuggingFace tokenizer.json, or a
//     .json.gz) or folder (its tokenizer.json);
//   - otherwise a HuggingFace model id ("org/name") found in the local HuggingFace cache
//     (HubDir): its snapshot's tokenizer.json. Nothing is downloaded.
//
// An unknown spec gets an error listing what is valid and where it looked. Loaded
// tokenizers are cached, so loading the same file twice is cheap and shares one instance.
// "server" needs the target's URL: use NewServer.
func Load(spec string) (Tokenizer, error) {
	switch spec {
	case "":
		return nil, errors.New("tokenizer: empty spec (want o200k_base, cl100k_base, server, a tokenizer.json path or a HuggingFace model id)")
	case "server":
		return nil, errors.New("tokenizer: \"server\" tokenizes on the target (/tokenize); it needs the target URL (NewServer)")
	}
	key := spec
	if _, builtin := openAIPatterns[spec]; !builtin {
		path, err := Resolve(spec)
		if err != nil {
			return nil, err
		}
		if key, err = filepath.Abs(path); err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
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
			e.tok, e.err = loadHFFile(key)
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
