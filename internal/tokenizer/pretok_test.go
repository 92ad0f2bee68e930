package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/dlclark/regexp2"

	"github.com/llmbench/llmbench/internal/testtier"
)

// regexpPieces splits text with regexp2 (the reference for the hand-written matchers).
func regexpPieces(re *regexp2.Regexp, runes []rune) [][2]int {
	var out [][2]int
	m, _ := re.FindRunesMatch(runes)
	for m != nil {
		out = append(out, [2]int{m.Index, m.Index + m.Length})
		m, _ = re.FindNextMatch(m)
	}
	return out
}

func fastPieces(f func([]rune, int) int, runes []rune) [][2]int {
	var out [][2]int
	for i := 0; i < len(runes); {
		e := f(runes, i)
		if e <= i {
			return append(out, [2]int{i, e}) // a bug: the matchers always advance
		}
		out = append(out, [2]int{i, e})
		i = e
	}
	return out
}

var knownPatterns = map[string]string{"cl100k": clPattern, "qwen": qwenPattern, "o200k": o200kPattern}

func checkPieces(t *testing.T, name string, re *regexp2.Regexp, f func([]rune, int) int, text string) bool {
	t.Helper()
	runes := []rune(text)
	want, got := regexpPieces(re, runes), fastPieces(f, runes)
	if !slices.Equal(got, want) {
		show := func(p [][2]int) []string {
			var s []string
			for _, x := range p[:min(len(p), 12)] {
				s = append(s, string(runes[x[0]:min(x[1], len(runes))]))
			}
			return s
		}
		t.Errorf("%s: %q\n fast   %q\n regexp %q", name, text[:min(len(text), 80)], show(got), show(want))
		return false
	}
	return true
}

// TestFastPretokenizerMatchesRegexp compares the hand-written matchers with regexp2 on
// random text over an alphabet of every character class the patterns distinguish.
func TestFastPretokenizerMatchesRegexp(t *testing.T) {
	alphabet := []rune{'a', 'z', 'A', 'Q', 'é', 'É', 'ǅ' /* Lt */, 'ʰ' /* Lm */, '中', 'ا', /* Lo */
		'\u0301', '\u0903' /* M */, '0', '9', '٣', 'Ⅻ', '½' /* N */, ' ', ' ', ' ', '\t', '\n', '\r', '\v', '\f',
		'\u0085', '\u00a0', '\u2028', '\u3000', '\'', '\'', 's', 'S', 't', 'r', 'e', 'v', 'm', 'l', 'L', 'd', 'ſ',
		'.', ',', '!', '/', '-', '_', '😀', '\u001c', '\u200d', '\ufeff'}
	rng := rand.New(rand.NewPCG(3, 4))
	for name, pat := range knownPatterns {
		re := regexp2.MustCompile(pat, regexp2.None)
		f := fastMatcher(pat)
		if f == nil {
			t.Fatalf("%s: no fast matcher", name)
		}
		bad := 0
		for range 4000 {
			n := 1 + rng.IntN(24)
			rs := make([]rune, n)
			for i := range rs {
				rs[i] = alphabet[rng.IntN(len(alphabet))]
			}
			if !checkPieces(t, name, re, f, string(rs)) {
				if bad++; bad > 5 {
					t.FailNow()
				}
			}
		}
	}
}

// TestFastPretokenizerAllRunes checks the contraction's case folding after every cased
// rune, and every character class in context for the first 12k runes plus a stride beyond.
func TestFastPretokenizerAllRunes(t *testing.T) {
	testtier.Long(t, "sweeps every rune through regexp2")
	var folds, classes strings.Builder
	for r := rune(1); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		c := string(r)
		if unicode.ToLower(r) != r || unicode.ToUpper(r) != r || unicode.SimpleFold(r) != r {
			folds.WriteString("'" + c + "e" + c)
		}
		if r < 0x3000 || r%97 == 0 {
			classes.WriteString(" a" + c + "b " + c + "1" + c + c + "  " + c + "\n" + c + "A" + c + "\x01")
		}
	}
	for name, pat := range knownPatterns {
		re := regexp2.MustCompile(pat, regexp2.None)
		checkPieces(t, name+"/folds", re, fastMatcher(pat), folds.String())
		checkPieces(t, name+"/classes", re, fastMatcher(pat), classes.String())
	}
}

// TestFastPretokenizerCorpus compares on the reference texts.
func TestFastPretokenizerCorpus(t *testing.T) {
	var texts []string
	for _, f := range []string{"texts", "corpus", "edge", "patho"} {
		texts = append(texts, readRef[[]string](t, f)...)
	}
	for name, pat := range knownPatterns {
		re := regexp2.MustCompile(pat, regexp2.None)
		for _, text := range texts {
			if !checkPieces(t, name, re, fastMatcher(pat), text) {
				break
			}
		}
	}
}

// TestFastMatcherSelected: the shipped files use the hand-written matchers.
func TestFastMatcherSelected(t *testing.T) {
	specs := []string{"o200k_base", "cl100k_base"}
	for _, m := range models {
		specs = append(specs, tokenizerFile(m))
	}
	for _, spec := range specs {
		tok, err := Load(spec)
		if err != nil {
			t.Fatal(err)
		}
		if tok.(*bpe).fast == nil {
			t.Errorf("%s: pattern %q has no fast matcher", spec, tok.(*bpe).pat)
		}
	}
}
