package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dlclark/regexp2"
)

// hfFile is the part of a HuggingFace tokenizer.json this package reads. Fields it cannot
// honour exactly are checked and rejected, never ignored.
type hfFile struct {
	AddedTokens []hfAddedToken  `json:"added_tokens"`
	Normalizer  json.RawMessage `json:"normalizer"`
	PreTok      json.RawMessage `json:"pre_tokenizer"`
	Decoder     json.RawMessage `json:"decoder"`
	Model       struct {
		Type                    string          `json:"type"`
		Dropout                 *float64        `json:"dropout"`
		UnkToken                *string         `json:"unk_token"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
		ByteFallback            bool            `json:"byte_fallback"`
		FuseUnk                 bool            `json:"fuse_unk"`
		IgnoreMerges            bool            `json:"ignore_merges"`
		Vocab                   json.RawMessage `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
	} `json:"model"`
}

type hfAddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type hfComponent struct {
	Type           string          `json:"type"`
	Pattern        json.RawMessage `json:"pattern"`
	Behavior       string          `json:"behavior"`
	Invert         bool            `json:"invert"`
	AddPrefixSpace bool            `json:"add_prefix_space"`
	UseRegex       *bool           `json:"use_regex"`
	Replacement    string          `json:"replacement"`
	PrependScheme  string          `json:"prepend_scheme"`
	Split          *bool           `json:"split"`
	Prepend        string          `json:"prepend"`
	Content        string          `json:"content"`
	Start          int             `json:"start"`
	Stop           int             `json:"stop"`
	Pretokenizers  []hfComponent   `json:"pretokenizers"`
	Normalizers    []hfComponent   `json:"normalizers"`
	Decoders       []hfComponent   `json:"decoders"`
}

// gpt2Pattern is what a ByteLevel pre-tokenizer with use_regex applies.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// loadHFFile reads a tokenizer.json (or tokenizer.json.gz, or a directory holding one).
func loadHFFile(path string) (*bpe, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
		}
	}
	t, err := parseHF(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	t.name = path
	return t, nil
}

// parseHF builds a byte-level BPE tokenizer from tokenizer.json contents. Anything that
// would make its ids differ from HuggingFace's is an error.
func parseHF(data []byte) (*bpe, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	var problems []error
	bad := func(format string, a ...any) { problems = append(problems, fmt.Errorf(format, a...)) }

	m := &f.Model
	if m.Type != "BPE" {
		bad("model type %q is not supported (only BPE is)", m.Type)
		return nil, errors.Join(problems...)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		bad("BPE dropout %v is not supported", *m.Dropout)
	}
	if s := m.ContinuingSubwordPrefix; s != nil && *s != "" {
		bad("continuing_subword_prefix %q is not supported", *s)
	}
	if s := m.EndOfWordSuffix; s != nil && *s != "" {
		bad("end_of_word_suffix %q is not supported", *s)
	}

	t := &bpe{wholeWord: m.IgnoreMerges, keepGaps: true}
	norms, err := parseNormalizer(f.Normalizer)
	if err != nil {
		problems = append(problems, err)
	}
	t.norms = norms
	byteLevel := hasByteLevel(f.PreTok)
	if byteLevel {
		if m.ByteFallback {
			bad("byte_fallback with a ByteLevel pre-tokenizer is not supported")
		}
		if err := t.parsePreTokenizer(f.PreTok); err != nil {
			problems = append(problems, err)
		}
		if err := checkDecoder(f.Decoder); err != nil {
			problems = append(problems, err)
		}
	} else if err := t.parseSP(&f); err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}

	var vocab map[string]int
	if err := json.Unmarshal(m.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("model.vocab: %w", err)
	}
	t.vocab = make(map[string]int, len(vocab))
	maxID := 0
	for s, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("model.vocab %q: negative id %d", s, id)
		}
		maxID = max(maxID, id)
		if !byteLevel {
			t.vocab[s] = id
			continue
		}
		b, err := byteLevelDecode(s)
		if err != nil {
			return nil, fmt.Errorf("model.vocab %q: %w (not a byte-level vocabulary)", s, err)
		}
		t.vocab[string(b)] = id
	}
	if byteLevel {
		for b := 0; b < 256; b++ {
			id, ok := t.vocab[string([]byte{byte(b)})]
			if !ok {
				return nil, fmt.Errorf("model.vocab has no token for byte 0x%02x (not a byte-level vocabulary)", b)
			}
			t.byteIDs[b] = id
		}
	} else if err := t.sp.vocabTokens(vocab, m.UnkToken); err != nil {
		return nil, err
	}

	pairs, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	t.merges = make(map[uint64]merge, len(pairs))
	for i, p := range pairs {
		a, okA := vocab[p[0]]
		b, okB := vocab[p[1]]
		c, okC := vocab[p[0]+p[1]]
		if !okA || !okB || !okC {
			return nil, fmt.Errorf("model.merges[%d] %q %q: token not in vocab", i, p[0], p[1])
		}
		k := pairKey(a, b)
		if _, dup := t.merges[k]; !dup { // the first (highest-priority) occurrence wins
			t.merges[k] = merge{rank: int32(i), id: int32(c)}
		}
	}

	for _, at := range f.AddedTokens {
		maxID = max(maxID, at.ID)
	}
	t.decoder = make([][]byte, maxID+1)
	for s, id := range t.vocab {
		t.decoder[id] = []byte(s)
	}
	for _, at := range f.AddedTokens {
		if at.LStrip || at.RStrip || at.SingleWord {
			return nil, fmt.Errorf("added token %q uses lstrip/rstrip/single_word, which is not supported", at.Content)
		}
		if at.Content == "" {
			return nil, fmt.Errorf("added token %d has empty content", at.ID)
		}
		t.specials = append(t.specials, special{content: at.Content, id: at.ID, normalized: at.Normalized && len(t.norms) > 0})
		t.decoder[at.ID] = []byte(at.Content)
	}
	t.indexSpecials()
	return t, nil
}

func (t *bpe) indexSpecials() {
	for i, sp := range t.specials {
		t.specialsByFirst[sp.content[0]] = append(t.specialsByFirst[sp.content[0]], i)
	}
	for _, idx := range &t.specialsByFirst {
		sort.SliceStable(idx, func(a, b int) bool {
			return len(t.specials[idx[a]].content) > len(t.specials[idx[b]].content)
		})
	}
}

// parseMerges accepts both forms: "a b" strings and ["a", "b"] pairs.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok || a == "" || b == "" || strings.Contains(b, " ") {
				return nil, fmt.Errorf("model.merges[%d] %q: want two tokens separated by one space", i, s)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("model.merges: want strings or pairs: %w", err)
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("model.merges[%d]: want a pair, got %d items", i, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

// parseNormalizer accepts none, NFC, Prepend, Replace of a literal string, or a Sequence of
// those.
func parseNormalizer(raw json.RawMessage) ([]normStep, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch c.Type {
	case "NFC":
		return []normStep{{kind: "NFC"}}, nil
	case "Prepend":
		return []normStep{{kind: "Prepend", a: c.Prepend}}, nil
	case "Replace":
		from, ok := literalPattern(c.Pattern)
		if !ok {
			return nil, fmt.Errorf("normalizer: Replace pattern %s is not supported (only a literal string)", c.Pattern)
		}
		return []normStep{{kind: "Replace", a: from, b: c.Content}}, nil
	case "Sequence":
		var steps []normStep
		for _, n := range c.Normalizers {
			b, _ := json.Marshal(n)
			sub, err := parseNormalizer(b)
			if err != nil {
				return nil, err
			}
			steps = append(steps, sub...)
		}
		return steps, nil
	}
	return nil, fmt.Errorf("normalizer %q is not supported (only NFC, Prepend and Replace)", c.Type)
}

// hasByteLevel reports whether the pre-tokenizer has a ByteLevel step (a byte-level BPE
// file); files without one are read as SentencePiece-style.
func hasByteLevel(raw json.RawMessage) bool {
	steps, _ := componentSteps(raw, "pre_tokenizer")
	for _, s := range steps {
		if s.Type == "ByteLevel" {
			return true
		}
	}
	return false
}

// componentSteps parses a pre_tokenizer or decoder: nil when there is none, its steps
// when it is a Sequence, else itself as the one step.
func componentSteps(raw json.RawMessage, what string) ([]hfComponent, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	switch {
	case c.Type != "Sequence":
		return []hfComponent{c}, nil
	case what == "decoder":
		return c.Decoders, nil
	}
	return c.Pretokenizers, nil
}

// literalPattern is the string of a {"String": s} pattern (not a regex); ok is false
// for anything else, or an empty string.
func literalPattern(raw json.RawMessage) (string, bool) {
	var pat struct {
		String *string `json:"String"`
	}
	if json.Unmarshal(raw, &pat) != nil || pat.String == nil || *pat.String == "" {
		return "", false
	}
	return *pat.String, true
}

// parsePreTokenizer accepts Sequence[Split(regex), ByteLevel(no regex, no prefix space)]
// (Llama 3, Qwen 2/3, GPT-4o) and a lone GPT-2 style ByteLevel with use_regex.
func (t *bpe) parsePreTokenizer(raw json.RawMessage) error {
	steps, err := componentSteps(raw, "pre_tokenizer")
	if err != nil {
		return err
	}
	var pattern string
	sawByteLevel := false
	for i, s := range steps {
		switch s.Type {
		case "Split":
			if pattern != "" || sawByteLevel {
				return fmt.Errorf("pre_tokenizer: Split at step %d after another splitting step is not supported", i)
			}
			var p struct {
				Regex  *string `json:"Regex"`
				String *string `json:"String"`
			}
			if err := json.Unmarshal(s.Pattern, &p); err != nil || (p.Regex == nil && p.String == nil) {
				return fmt.Errorf("pre_tokenizer: Split pattern %s is not understood", s.Pattern)
			}
			if p.Regex == nil {
				return errors.New("pre_tokenizer: Split on a literal string is not supported")
			}
			switch {
			case s.Behavior == "Isolated" && !s.Invert:
				t.keepGaps = true
			case s.Behavior == "Removed" && s.Invert:
				t.keepGaps = false
			default:
				return fmt.Errorf("pre_tokenizer: Split behavior %q with invert=%v is not supported", s.Behavior, s.Invert)
			}
			pattern = *p.Regex
		case "ByteLevel":
			if s.AddPrefixSpace {
				return errors.New("pre_tokenizer: ByteLevel add_prefix_space is not supported")
			}
			useRegex := s.UseRegex == nil || *s.UseRegex // HuggingFace's default is true
			if useRegex {
				if pattern != "" {
					return errors.New("pre_tokenizer: ByteLevel use_regex after a Split is not supported")
				}
				pattern, t.keepGaps = gpt2Pattern, false
			}
			sawByteLevel = true
		default:
			return fmt.Errorf("pre_tokenizer %q is not supported", s.Type)
		}
	}
	if !sawByteLevel {
		return errors.New("pre_tokenizer has no ByteLevel step: only byte-level BPE is supported")
	}
	if pattern == "" {
		return errors.New("pre_tokenizer has no Split regex")
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return fmt.Errorf("pre_tokenizer regex: %w", err)
	}
	t.pat, t.fast = re, fastMatcher(pattern)
	return nil
}

// checkDecoder rejects decoders whose output would not be the token bytes concatenated.
func checkDecoder(raw json.RawMessage) error {
	steps, err := componentSteps(raw, "decoder")
	if err != nil {
		return err
	}
	for _, d := range steps {
		if d.Type != "ByteLevel" {
			return fmt.Errorf("decoder %q is not supported (only ByteLevel)", d.Type)
		}
	}
	return nil
}
