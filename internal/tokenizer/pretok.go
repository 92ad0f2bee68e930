package tokenizer

import (
	"strings"
	"unicode"
)

// Hand-written matchers for the three pre-tokenizer patterns in use (cl100k/Llama 3,
// Qwen 2/3, o200k/GPT-4o). regexp2 is a backtracking interpreter and spends ~90% of the
// encoding time; these give the same pieces (checked against regexp2 on the reference
// corpus and on random text) an order of magnitude faster. Any other pattern runs on regexp2.
//
// Each function returns the end of the match at i, following the regex's semantics:
// alternatives in order, greedy quantifiers with backtracking. The alternatives together
// match any character, so pieces are contiguous and a match always exists.

const (
	clPattern   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var o200kPattern = strings.Join([]string{
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
	`\p{N}{1,3}`,
	` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
	`\s*[\r\n]+`,
	`\s+(?!\S)`,
	`\s+`,
}, "|")

// fastMatcher returns the hand-written matcher for pattern, or nil.
func fastMatcher(pattern string) func([]rune, int) int {
	switch pattern {
	case clPattern:
		return func(r []rune, i int) int { return matchCL(r, i, 3) }
	case qwenPattern:
		return func(r []rune, i int) int { return matchCL(r, i, 1) }
	case o200kPattern:
		return matchO200k
	}
	return nil
}

func isL(r rune) bool {
	if r < 0x80 {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

func isN(r rune) bool {
	if r < 0x80 {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isS(r rune) bool {
	if r < 0x80 {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// isP is [^\s\p{L}\p{N}]; isQ is [^\r\n\p{L}\p{N}].
func isP(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }
func isQ(r rune) bool { return !isCRLF(r) && !isL(r) && !isN(r) }

// isUpperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]; isLowerish is [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isUpperish(r rune) bool {
	if r < 0x80 {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

func isLowerish(r rune) bool {
	if r < 0x80 {
		return 'a' <= r && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

func runWhile(r []rune, i int, f func(rune) bool) int {
	for i < len(r) && f(r[i]) {
		i++
	}
	return i
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i; 0 when it does not match.
func contraction(r []rune, i int) int {
	if i+1 >= len(r) || r[i] != '\'' {
		return 0
	}
	switch unicode.ToLower(r[i+1]) {
	case 's', 't', 'm', 'd':
		return i + 2
	}
	if i+2 < len(r) {
		a, b := unicode.ToLower(r[i+1]), unicode.ToLower(r[i+2])
		if a == 'r' && b == 'e' || a == 'v' && b == 'e' || a == 'l' && b == 'l' {
			return i + 3
		}
	}
	return 0
}

// matchSpaces covers the three whitespace alternatives: \s*[\r\n]+ | \s+(?!\S) | \s+.
func matchSpaces(r []rune, i int) int {
	k := runWhile(r, i, isS)
	for p := k - 1; p >= i; p-- {
		if isCRLF(r[p]) {
			return p + 1 // \s* backtracks to the last line break of the run
		}
	}
	if k == len(r) || k-1 == i {
		return k // at the end of text, or a single space before a non-space: \s+
	}
	return k - 1 // leave the last space to prefix the next word
}

// matchPunct is ` ?[^\s\p{L}\p{N}]+` followed by trailer characters; 0 when no match.
func matchPunct(r []rune, i int, slash bool) int {
	j := i
	if r[i] == ' ' && i+1 < len(r) && isP(r[i+1]) {
		j++
	}
	if !isP(r[j]) {
		return 0
	}
	j = runWhile(r, j, isP)
	return runWhile(r, j, func(c rune) bool { return isCRLF(c) || slash && c == '/' })
}

func matchCL(r []rune, i, numMax int) int {
	if e := contraction(r, i); e > 0 {
		return e
	}
	c := r[i]
	if isL(c) {
		return runWhile(r, i, isL)
	}
	if isQ(c) && i+1 < len(r) && isL(r[i+1]) {
		return runWhile(r, i+1, isL)
	}
	if isN(c) {
		e := i
		for e < len(r) && e-i < numMax && isN(r[e]) {
			e++
		}
		return e
	}
	if e := matchPunct(r, i, false); e > 0 {
		return e
	}
	return matchSpaces(r, i)
}

func matchO200k(r []rune, i int) int {
	withSuffix := func(e int) int {
		if c := contraction(r, e); c > 0 {
			return c
		}
		return e
	}
	// Alternative 1: prefix? upperish* lowerish+ contraction?
	a1 := func(s int) int {
		u := runWhile(r, s, isUpperish)
		for p := u; p >= s; p-- { // upperish* gives back until lowerish+ can match
			if p < len(r) && isLowerish(r[p]) {
				return withSuffix(runWhile(r, p, isLowerish))
			}
		}
		return 0
	}
	// Alternative 2: prefix? upperish+ lowerish* contraction?
	a2 := func(s int) int {
		if s >= len(r) || !isUpperish(r[s]) {
			return 0
		}
		return withSuffix(runWhile(r, runWhile(r, s, isUpperish), isLowerish))
	}
	q := isQ(r[i])
	for _, alt := range []func(int) int{a1, a2} {
		if q {
			if e := alt(i + 1); e > 0 {
				return e
			}
		}
		if e := alt(i); e > 0 {
			return e
		}
	}
	if isN(r[i]) {
		e := i
		for e < len(r) && e-i < 3 && isN(r[e]) {
			e++
		}
		return e
	}
	if e := matchPunct(r, i, true); e > 0 {
		return e
	}
	return matchSpaces(r, i)
}
