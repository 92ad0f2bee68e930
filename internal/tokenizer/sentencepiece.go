package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// SentencePiece-style tokenizer.json files (Llama 2, Mistral, Gemma) are char-level BPE:
// a normalizer or a Metaspace pre-tokenizer turns spaces into "▁", merges start from
// characters, and a character outside the vocabulary falls back to <0xNN> byte tokens.

// normStep is one HuggingFace normalizer.
type normStep struct {
	kind string // "NFC", "Prepend", "Replace"
	a, b string // Prepend: a; Replace: a -> b
}

func (t *bpe) normalize(s string) string {
	for _, n := range t.norms {
		switch n.kind {
		case "NFC":
			s = norm.NFC.String(s)
		case "Prepend":
			if s != "" {
				s = n.a + s
			}
		case "Replace":
			s = strings.ReplaceAll(s, n.a, n.b)
		}
	}
	return s
}

// spConfig is what a SentencePiece-style file adds to the BPE engine.
type spConfig struct {
	pre []preStep // applied in order; none: a segment is one piece

	// crossBefore holds the characters X such that some token contains X followed by
	// "▁" (X itself not "▁"). No merge can join X to a following "▁" of any other
	// character, so a piece is cut there into words merged separately: exact, and fast
	// for files without a pre-tokenizer, whose pieces are whole texts.
	crossBefore map[rune]bool

	byteFallback bool
	byteTokens   [256]int // <0xNN> ids
	unkID        int      // -1 when there is none
	fuseUnk      bool

	// Decoding: each token's text with rep replaced by " " (when rep is set; removed from
	// the first token with metaStrip), byte tokens as their bytes (when decodeBytes), then
	// stripLead leading spaces removed.
	rep         string
	metaStrip   bool
	decodeBytes bool
	stripLead   int
}

// preStep is a Metaspace or a literal Split pre-tokenizer.
type preStep struct {
	metaspace bool
	rep       string // Metaspace replacement
	prepend   string // Metaspace prepend_scheme: always, first, never
	split     bool   // Metaspace split (on rep, merged with next)

	delim    string // Split's literal pattern
	behavior string // Split behavior
}

// encodeSP pre-tokenizes normalized text and appends each piece's ids.
func (t *bpe) encodeSP(text string, first bool, out []int) []int {
	if !utf8.ValidString(text) {
		text = string([]rune(text)) // as Rust's &str: invalid bytes become U+FFFD
	}
	pieces := []string{text}
	for _, p := range t.sp.pre {
		var next []string
		for i, s := range pieces {
			if p.metaspace {
				s = strings.ReplaceAll(s, " ", p.rep)
				if (p.prepend == "always" || p.prepend == "first" && first && i == 0) && !strings.HasPrefix(s, p.rep) {
					s = p.rep + s
				}
				if !p.split {
					next = append(next, s)
					continue
				}
				next = splitLiteral(s, p.rep, "MergedWithNext", next)
				continue
			}
			next = splitLiteral(s, p.delim, p.behavior, next)
		}
		pieces = next
	}
	for _, p := range pieces {
		start := 0
		for i := 1; i < len(p); {
			j := strings.Index(p[i:], wordMark)
			if j < 0 {
				break
			}
			m := i + j
			if r, _ := utf8.DecodeLastRuneInString(p[:m]); r != '▁' && !t.sp.crossBefore[r] {
				out = t.encodePiece(p[start:m], out)
				start = m
			}
			i = m + len(wordMark)
		}
		out = t.encodePiece(p[start:], out)
	}
	return out
}

// wordMark is SentencePiece's word boundary, "▁" (U+2581).
const wordMark = "\u2581"

// splitLiteral appends the pieces of s split at each occurrence of delim, as HuggingFace's
// Split with a string pattern and the given behavior does.
func splitLiteral(s, delim, behavior string, out []string) []string {
	start := 0 // start of the current piece
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], delim)
		if j < 0 {
			break
		}
		m, e := i+j, i+j+len(delim)
		if behavior == "MergedWithPrevious" {
			out = append(out, s[start:e])
			start = e
		} else {
			if m > start {
				out = append(out, s[start:m])
			}
			switch behavior {
			case "MergedWithNext":
				start = m
			case "Isolated":
				out = append(out, s[m:e])
				start = e
			case "Removed":
				start = e
			}
		}
		i = e
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// decodeSP is the decoder chain Replace("▁", " "), ByteFallback, Fuse, Strip, or a
// Metaspace decoder (which drops the first token's "▁"s). Byte tokens that do not form
// valid UTF-8 become one U+FFFD each, as HuggingFace's ByteFallback decoder makes them.
func (t *bpe) decodeSP(ids []int) string {
	var b strings.Builder
	var pending []byte // consecutive byte tokens
	nbytes := 0
	flush := func() {
		if utf8.Valid(pending) {
			b.Write(pending)
		} else {
			b.WriteString(strings.Repeat("\uFFFD", nbytes))
		}
		pending, nbytes = pending[:0], 0
	}
	first := true
	for _, id := range ids {
		if id < 0 || id >= len(t.decoder) || t.decoder[id] == nil {
			continue
		}
		tok := string(t.decoder[id])
		if bt := t.byteToken(tok, id); bt >= 0 {
			pending = append(pending, byte(bt))
			nbytes++
			first = false
			continue
		}
		if nbytes > 0 {
			flush()
		}
		switch {
		case t.sp.rep == "":
		case first && t.sp.metaStrip:
			tok = strings.ReplaceAll(tok, t.sp.rep, "")
		default:
			tok = strings.ReplaceAll(tok, t.sp.rep, " ")
		}
		b.WriteString(tok)
		first = false
	}
	if nbytes > 0 {
		flush()
	}
	s := b.String()
	for i := 0; i < t.sp.stripLead && strings.HasPrefix(s, " "); i++ {
		s = s[1:]
	}
	return s
}

// byteToken returns the byte the <0xNN> token tok (id) stands for when the decoder turns
// byte tokens into bytes, else -1.
func (t *bpe) byteToken(tok string, id int) int {
	if !t.sp.decodeBytes || len(tok) != 6 || tok[:3] != "<0x" || tok[5] != '>' {
		return -1
	}
	v, err := strconv.ParseUint(tok[3:5], 16, 8)
	if err != nil || t.sp.byteTokens[v] != id {
		return -1
	}
	return int(v)
}

// parseSP configures t for a SentencePiece-style file: everything but the vocabulary,
// merges and added tokens, which parseHF reads as for byte-level files.
func (t *bpe) parseSP(f *hfFile) error {
	sp := &spConfig{unkID: -1, fuseUnk: f.Model.FuseUnk, byteFallback: f.Model.ByteFallback}
	t.sp = sp
	var problems []error
	if err := sp.parsePre(f.PreTok); err != nil {
		problems = append(problems, err)
	}
	if err := sp.parseDecoder(f.Decoder); err != nil {
		problems = append(problems, err)
	}
	return errors.Join(problems...)
}

func (sp *spConfig) parsePre(raw json.RawMessage) error {
	steps, err := componentSteps(raw, "pre_tokenizer")
	if err != nil {
		return err
	}
	for i, s := range steps {
		switch s.Type {
		case "Metaspace":
			p := preStep{metaspace: true, rep: s.Replacement, prepend: s.PrependScheme, split: true}
			if s.Split != nil {
				p.split = *s.Split
			}
			if p.prepend == "" { // files older than prepend_scheme
				p.prepend = "never"
				if s.AddPrefixSpace {
					p.prepend = "always"
				}
			}
			if p.rep == "" || (p.prepend != "always" && p.prepend != "first" && p.prepend != "never") {
				return fmt.Errorf("pre_tokenizer: Metaspace replacement %q prepend_scheme %q is not supported", s.Replacement, s.PrependScheme)
			}
			if i > 0 && p.prepend == "first" {
				return errors.New("pre_tokenizer: Metaspace prepend_scheme first after another step is not supported")
			}
			sp.pre = append(sp.pre, p)
		case "Split":
			delim, ok := literalPattern(s.Pattern)
			if !ok {
				return fmt.Errorf("pre_tokenizer: Split pattern %s is not supported in a SentencePiece-style file (only a literal string)", s.Pattern)
			}
			switch s.Behavior {
			case "MergedWithPrevious", "MergedWithNext", "Isolated", "Removed":
			default:
				return fmt.Errorf("pre_tokenizer: Split behavior %q is not supported", s.Behavior)
			}
			if s.Invert {
				return errors.New("pre_tokenizer: Split with invert is not supported")
			}
			sp.pre = append(sp.pre, preStep{delim: delim, behavior: s.Behavior})
		default:
			return fmt.Errorf("pre_tokenizer %q is not supported in a SentencePiece-style file (only Metaspace and Split on a string)", s.Type)
		}
	}
	return nil
}

func (sp *spConfig) parseDecoder(raw json.RawMessage) error {
	steps, err := componentSteps(raw, "decoder")
	if err != nil {
		return err
	}
	fused := false
	for i, d := range steps {
		switch d.Type {
		case "Replace":
			from, ok := literalPattern(d.Pattern)
			if !ok || d.Content != " " || sp.rep != "" || i != 0 {
				return fmt.Errorf("decoder: Replace %s -> %q is not supported (only a first Replace of a string by a space)", d.Pattern, d.Content)
			}
			sp.rep = from
		case "ByteFallback":
			sp.decodeBytes = true
		case "Fuse":
			fused = true
		case "Strip":
			if d.Content != " " || d.Stop != 0 || !fused || i != len(steps)-1 {
				return fmt.Errorf("decoder: Strip %q start %d stop %d is not supported (only leading spaces, last, after Fuse)", d.Content, d.Start, d.Stop)
			}
			sp.stripLead = d.Start
		case "Metaspace":
			if len(steps) != 1 {
				return errors.New("decoder: Metaspace within a Sequence is not supported")
			}
			sp.rep = d.Replacement
			scheme := d.PrependScheme
			if scheme == "" && d.AddPrefixSpace {
				scheme = "always"
			}
			sp.metaStrip = scheme == "always" || scheme == "first"
		default:
			return fmt.Errorf("decoder %q is not supported in a SentencePiece-style file", d.Type)
		}
	}
	return nil
}

// vocabTokens finds the byte-fallback and unknown tokens. Every character must encode:
// with byte_fallback all 256 <0xNN> tokens are needed, otherwise an unknown token.
func (sp *spConfig) vocabTokens(vocab map[string]int, unk *string) error {
	sp.crossBefore = map[rune]bool{}
	for tok := range vocab {
		for i := 1; i < len(tok); {
			j := strings.Index(tok[i:], wordMark)
			if j < 0 {
				break
			}
			if r, _ := utf8.DecodeLastRuneInString(tok[:i+j]); r != '▁' {
				sp.crossBefore[r] = true
			}
			i += j + len(wordMark)
		}
	}
	if unk != nil {
		id, ok := vocab[*unk]
		if !ok {
			return fmt.Errorf("model.unk_token %q is not in the vocabulary", *unk)
		}
		sp.unkID = id
	}
	if sp.byteFallback {
		for b := 0; b < 256; b++ {
			id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]
			if !ok {
				return fmt.Errorf("model.vocab has no byte-fallback token <0x%02X>", b)
			}
			sp.byteTokens[b] = id
		}
		return nil
	}
	if sp.unkID < 0 {
		return errors.New("model has neither byte_fallback nor an unk_token: characters outside the vocabulary cannot be encoded")
	}
	return nil
}
