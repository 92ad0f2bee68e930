package workload

import (
	_ "embed"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"unicode"

	"github.com/llmbench/llmbench/internal/tokenizer"
)

//go:embed words.txt
var wordList string

// synth writes prompts of an exact token count. Text is made of pieces that are each one
// token under the tokenizer in running text: " word", " Word" (sentence starts) and "."
// (sentence ends). Every piece but "." begins with a space and letters, and "." only
// follows a word, so byte-level BPE's pre-tokenizers and SentencePiece's "▁" word
// boundaries split the text exactly at piece boundaries and a prompt of n pieces is n
// tokens. A text's first piece is written as the tokenizer needs: " Word" for byte-level
// BPE, "Word" for SentencePiece-style tokenizers that add the "▁" themselves (Llama 2,
// Mistral), whose " Word" at the start of a text would cost an extra token. Every prompt
// is still re-encoded and repaired if a tokenizer disagrees, so the count is checked,
// never assumed.
type synth struct {
	tok    tokenizer.Tokenizer
	lower  []string // " word"
	upper  []string // " Word"
	period string   // "." when it is one token after a word; "" otherwise
	// bare: a text starts with "Word", not " Word" (see start).
	bare bool
	// identPieces is how many leading pieces spell a request's 64-bit identity.
	identPieces int
}

// anchor precedes the pieces whose tokens are counted in running text (count).
const anchor = "The"

// newSynth selects the word pieces that are single tokens under tok and checks that their
// concatenations encode piece by piece.
func newSynth(tok tokenizer.Tokenizer) (*synth, error) {
	var words []string
	seen := map[string]bool{}
	for _, line := range strings.Split(wordList, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, w := range strings.Fields(line) {
			if !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	s := &synth{tok: tok}
	lower := make([]string, len(words))
	upper := make([]string, len(words))
	for i, w := range words {
		lower[i] = " " + w
		upper[i] = " " + string(unicode.ToUpper(rune(w[0]))) + w[1:]
	}
	base := len(tok.Encode(anchor))
	s.lower = singleTokens(tok, base, lower)
	s.upper = singleTokens(tok, base, upper)
	if len(s.lower) < 64 || len(s.upper) < 16 {
		if e, ok := tok.(interface{ Err() error }); ok && e.Err() != nil {
			return nil, fmt.Errorf("workload: tokenizer %s: %w", tok.Name(), e.Err())
		}
		return nil, fmt.Errorf("workload: tokenizer %s has too few single-token English words (%d lower-case, %d capitalised) to synthesise prompts", tok.Name(), len(s.lower), len(s.upper))
	}
	if len(tok.Encode(anchor+s.lower[0]+"."))-base == 2 {
		s.period = "."
	}
	// How a text starts: the form more of a sample of words is one token in.
	spaced, bare := 0, 0
	for _, w := range s.upper[:16] {
		if len(tok.Encode(w)) == 1 {
			spaced++
		}
		if len(tok.Encode(w[1:])) == 1 {
			bare++
		}
	}
	s.bare = bare > spaced
	// Pieces needed for a 64-bit identity: one capitalised word, then lower-case ones.
	rem := 64 - math.Log2(float64(len(s.upper)))
	s.identPieces = 1 + int(math.Ceil(rem/math.Log2(float64(len(s.lower)))))

	// The concatenation check: a long text mixing every kind of piece boundary must
	// encode to exactly one token per piece.
	var b strings.Builder
	const probe = 3000
	s.write(&b, probe, 12345, true, rand.New(rand.NewPCG(1, 2)), nil)
	if got := len(tok.Encode(s.start(b.String()))); got != probe {
		return nil, fmt.Errorf("workload: tokenizer %s does not split synthetic text at word boundaries (%d pieces encode to %d tokens); exact prompts cannot be built", tok.Name(), probe, got)
	}
	return s, nil
}

// start returns text (written by write) as the start of a prompt or message.
func (s *synth) start(text string) string {
	if s.bare {
		return strings.TrimPrefix(text, " ")
	}
	return text
}

// sep joins texts that each begin a message into one prompt without changing their token
// counts: " " when they start bare ("Word"), nothing when they start with " Word" (or
// there is no text: s is nil in lengths-only mode).
func (s *synth) sep() string {
	if s != nil && s.bare {
		return " "
	}
	return ""
}

// singleTokens keeps the pieces that encode to one token in running text, after anchor
// (which encodes to base tokens). Pieces are checked in batches (a batch of k pieces that
// adds k tokens has only single-token pieces, as no piece encodes to zero tokens and the
// tokenizer splits between them), so a tokenizer behind HTTP needs few calls.
func singleTokens(tok tokenizer.Tokenizer, base int, pieces []string) []string {
	if len(pieces) == 0 {
		return nil
	}
	if len(tok.Encode(anchor+strings.Join(pieces, "")))-base == len(pieces) {
		return pieces
	}
	if len(pieces) == 1 {
		return nil
	}
	mid := len(pieces) / 2
	return append(singleTokens(tok, base, pieces[:mid]), singleTokens(tok, base, pieces[mid:])...)
}

// write appends exactly n pieces: sentences of 6-18 words. With hasIdent, the first pieces
// spell ident in a mixed radix, so prompts of distinct identities differ from their first
// token on (no prefix cache can serve them) and are distinct whenever n >= identPieces.
// cuts, when not nil, receives the byte length of b after each piece.
func (s *synth) write(b *strings.Builder, n int, ident uint64, hasIdent bool, r *rand.Rand, cuts *[]int) {
	left := 0 // words left in the current sentence
	for k := 0; k < n; k++ {
		switch {
		case left == 0 && k > 0 && s.period != "" && !strings.HasSuffix(b.String(), s.period):
			b.WriteString(s.period)
			left = -1
		case left <= 0:
			left = 6 + r.IntN(13)
			w := r.IntN(len(s.upper))
			if hasIdent && k == 0 {
				left = max(left, s.identPieces+1) // no "." among the identity pieces
				w = int(ident % uint64(len(s.upper)))
				ident /= uint64(len(s.upper))
			}
			b.WriteString(s.upper[w])
			left--
		default:
			w := r.IntN(len(s.lower))
			if hasIdent && k < s.identPieces {
				w = int(ident % uint64(len(s.lower)))
				ident /= uint64(len(s.lower))
			}
			b.WriteString(s.lower[w])
			left--
		}
		if cuts != nil {
			*cuts = append(*cuts, b.Len())
		}
	}
}

// exact returns text with exactly n tokens: it re-encodes the candidate and, if the
// tokenizer merged across a boundary, trims or extends it with fresh pieces.
func (s *synth) exact(text string, n int, r *rand.Rand) (string, int) {
	return s.exactBy(text, n, r, func(t string) int { return len(s.tok.Encode(t)) })
}

// exactBy is exact under another count: count(text) is what must come out at n (the chat
// template's formatting of text, tokenized, for one). Pieces are dropped or added by the
// difference, so a count that adds a fixed number of tokens to text's settles at once.
func (s *synth) exactBy(text string, n int, r *rand.Rand, count func(string) int) (string, int) {
	got := count(text)
	for try := 0; got != n && try < 64; try++ {
		if got > n {
			// Drop the last got-n pieces (everything from the last spaces), keeping one.
			cut := len(text)
			for k := 0; k < got-n; k++ {
				c := strings.LastIndexByte(text[:cut], ' ')
				if c <= 0 {
					break
				}
				cut = c
			}
			if cut == len(text) {
				break
			}
			text = text[:cut]
		} else {
			var b strings.Builder
			b.WriteString(text)
			s.write(&b, n-got, 0, false, r, nil)
			text = b.String()
		}
		got = count(text)
	}
	return text, got
}

// prefixCache holds the shared prefixes, built on first use.
type prefixCache struct {
	mu    sync.Mutex
	texts map[int]string
}

func (c *prefixCache) get(g int, build func() string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.texts[g]; ok {
		return t
	}
	if c.texts == nil {
		c.texts = map[int]string{}
	}
	t := build()
	c.texts[g] = t
	return t
}
