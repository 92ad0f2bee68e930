// Package tokenizer counts and produces tokens exactly as the model's tokenizer does:
// OpenAI encodings built in and HuggingFace tokenizer.json byte-level BPE files.
package tokenizer

// Tokenizer encodes text to token ids and back. Implementations are safe for concurrent use.
type Tokenizer interface {
	Name() string
	Encode(text string) []int
	Decode(ids []int) string
}
