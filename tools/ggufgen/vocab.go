package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Token types as llama.cpp's llama_token_type enumerates them.
const (
	tokNormal      int32 = 1
	tokControl     int32 = 3
	tokUserDefined int32 = 4
	tokUnused      int32 = 5
)

// Vocab is a GPT-2 style byte-level BPE vocabulary: tokens are byte-level-encoded strings
// (see byteDecoder), as tokenizer.ggml.model "gpt2" expects.
type Vocab struct {
	Tokens []string
	Types  []int32
	Merges []string // "left right", in rank order
	BOS    int
	EOS    int
}

// Llama 3's special tokens, used by the chat template below.
var llama3Specials = []string{
	"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
}

// llama3Template is Llama 3's chat template (tokenizer.chat_template), so the servers format
// chat requests the way they would for a real Llama 3 model.
const llama3Template = "{% set loop_messages = messages %}{% for message in loop_messages %}" +
	"{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}" +
	"{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"

// byteEncoder is GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest
// are shifted to U+0100 and up, so every byte has a visible, non-space rune.
var byteEncoder, byteDecoder = func() ([256]rune, map[rune]byte) {
	var enc [256]rune
	dec := map[rune]byte{}
	n := 0
	for b := 0; b < 256; b++ {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			enc[b] = rune(b)
		} else {
			enc[b] = rune(256 + n)
			n++
		}
		dec[enc[b]] = byte(b)
	}
	return enc, dec
}()

// tokenBytes decodes a byte-level token string to the bytes it stands for; ok is false
// when a rune is outside the byte alphabet (added tokens such as "<|eot_id|>" are stored
// verbatim and are not byte-level encoded).
func tokenBytes(tok string) (b []byte, ok bool) {
	for _, r := range tok {
		c, found := byteDecoder[r]
		if !found {
			return nil, false
		}
		b = append(b, c)
	}
	return b, true
}

// Suppressed reports whether the model must never emit token id: anything but a normal
// token (control tokens, EOS among them: a random model would stop early), tokens that are
// not complete UTF-8 on their own (servers hold back or mangle partial characters), tokens
// with control characters or U+FFFD, whitespace-only tokens (Ollama compares trimmed
// token text to abort repeats, so runs of different blanks would look like a repeat), and
// tokens containing '<': Llama 3's stop strings ("<|eot_id|>", ...) start with it, and a
// server holds back text that could be the start of a stop string, merging that token
// with the next into one stream event (Ollama's runner does).
func (v *Vocab) Suppressed(id int) bool {
	if v.Types[id] != tokNormal {
		return true
	}
	b, ok := tokenBytes(v.Tokens[id])
	if !ok || len(b) == 0 || !utf8.Valid(b) {
		return true
	}
	s := string(b)
	if strings.TrimSpace(s) == "" || strings.ContainsRune(s, '<') {
		return true
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return true
		}
	}
	return false
}

// syntheticVocab makes up a small vocabulary: the 256 byte tokens, merges for " x" and
// every pair of lower-case letters, and Llama 3's special tokens. It keeps the model tiny
// and needs no files.
func syntheticVocab() *Vocab {
	v := &Vocab{}
	add := func(tok string, typ int32) int {
		v.Tokens = append(v.Tokens, tok)
		v.Types = append(v.Types, typ)
		return len(v.Tokens) - 1
	}
	for b := 0; b < 256; b++ {
		add(string(byteEncoder[b]), tokNormal)
	}
	space := string(byteEncoder[' '])
	for c := 'a'; c <= 'z'; c++ {
		v.Merges = append(v.Merges, space+" "+string(c))
		add(space+string(c), tokNormal)
	}
	for a := 'a'; a <= 'z'; a++ {
		for c := 'a'; c <= 'z'; c++ {
			v.Merges = append(v.Merges, string(a)+" "+string(c))
			add(string(a)+string(c), tokNormal)
		}
	}
	for _, s := range llama3Specials {
		add(s, tokControl)
	}
	v.BOS = v.find("<|begin_of_text|>")
	v.EOS = v.find("<|eot_id|>")
	return v
}

func (v *Vocab) find(tok string) int {
	for i, t := range v.Tokens {
		if t == tok {
			return i
		}
	}
	return -1
}

// hfTokenizer is the part of a Hugging Face tokenizer.json we read.
type hfTokenizer struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Model struct {
		Type   string          `json:"type"`
		Vocab  map[string]int  `json:"vocab"`
		Merges json.RawMessage `json:"merges"`
	} `json:"model"`
}

// loadTokenizerJSON reads a byte-level BPE tokenizer.json (Llama 3's, GPT-2's, ...), or a
// gzipped one whose name ends in .gz. Merges may be "a b" strings or ["a", "b"] pairs
// (newer tokenizers library versions).
func loadTokenizerJSON(path string) (*Vocab, error) {
	data, err := os.ReadFile(path)
	if err == nil && strings.HasSuffix(path, ".gz") {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(data)); err == nil {
			data, err = io.ReadAll(zr)
		}
	}
	if err != nil {
		return nil, err
	}
	var hf hfTokenizer
	if err := json.Unmarshal(data, &hf); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if hf.Model.Type != "BPE" {
		return nil, fmt.Errorf("%s: model type %q, want BPE", path, hf.Model.Type)
	}
	n := 0
	for _, id := range hf.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range hf.AddedTokens {
		n = max(n, a.ID+1)
	}
	v := &Vocab{Tokens: make([]string, n), Types: make([]int32, n)}
	for i := range v.Tokens {
		v.Tokens[i] = fmt.Sprintf("[PAD%d]", i)
		v.Types[i] = tokUnused
	}
	for tok, id := range hf.Model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("%s: token %q has negative id %d", path, tok, id)
		}
		v.Tokens[id] = tok
		v.Types[id] = tokNormal
	}
	for _, a := range hf.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("%s: added token %q has negative id %d", path, a.Content, a.ID)
		}
		v.Tokens[a.ID] = a.Content
		v.Types[a.ID] = tokUserDefined
		if a.Special {
			v.Types[a.ID] = tokControl
		}
	}
	var asStrings []string
	if err := json.Unmarshal(hf.Model.Merges, &asStrings); err == nil {
		v.Merges = asStrings
	} else {
		var pairs [][2]string
		if err := json.Unmarshal(hf.Model.Merges, &pairs); err != nil {
			return nil, fmt.Errorf("%s: merges are neither strings nor pairs: %w", path, err)
		}
		for _, p := range pairs {
			v.Merges = append(v.Merges, p[0]+" "+p[1])
		}
	}
	v.BOS = v.find("<|begin_of_text|>")
	v.EOS = v.find("<|eot_id|>")
	if v.EOS < 0 {
		v.EOS = v.find("<|end_of_text|>")
	}
	var errs []error
	if v.BOS < 0 || v.EOS < 0 {
		errs = append(errs, fmt.Errorf("%s: no <|begin_of_text|> / <|eot_id|> tokens; only Llama 3 style vocabularies are supported", path))
	}
	for _, s := range llama3Specials[2:] {
		if v.find(s) < 0 {
			errs = append(errs, fmt.Errorf("%s: chat template token %s missing", path, s))
		}
	}
	if len(v.Merges) == 0 {
		errs = append(errs, fmt.Errorf("%s: no merges", path))
	}
	return v, errors.Join(errs...)
}
