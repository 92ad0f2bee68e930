package server

import (
	"hash/fnv"
	"unicode/utf8"
)

// words are the generated tokens' text. Each is a common English word with a leading space,
// which is exactly one token in cl100k_base, o200k_base, Llama 3 and Qwen 3 (checked in
// tests), so a client that counts the streamed text with a tokenizer gets the same count the
// server reports. None needs JSON escaping. 64 of them so a mask picks one.
var words = [64]string{
	" the", " of", " and", " to", " in", " a", " is", " that",
	" for", " it", " as", " was", " with", " be", " by", " on",
	" not", " he", " this", " are", " or", " his", " from", " at",
	" which", " but", " have", " an", " had", " they", " you", " were",
	" their", " one", " all", " we", " can", " her", " has", " there",
	" been", " if", " more", " when", " will", " would", " who", " so",
	" no", " time", " people", " new", " year", " good", " day", " work",
	" world", " make", " life", " part", " first", " like", " over", " just",
}

// appendWords appends the text of tokens [from, from+n) of a sequence whose word stream starts
// at base. The stride is odd, so every word appears once per 64 tokens, in a scrambled order.
func appendWords(b []byte, base uint64, from, n int) []byte {
	for i := from; i < from+n; i++ {
		b = append(b, words[(base+uint64(i)*37)&63]...)
	}
	return b
}

// EstimateTokens is the default prompt token count when no tokenizer is configured: a cheap,
// deterministic approximation of byte-level BPE (GPT-4 style) pre-tokenization. Each word
// with its leading space is one token, or one per further 8 letters for long words; digit
// runs are one token per 3 digits; punctuation runs one per 2 characters; a newline run or
// 4 spaces one; every non-ASCII rune one. On English text it lands within about 10% of
// cl100k_base, and it is exact on text made of common words (the client's synthetic prompts
// and the server's own output).
func EstimateTokens(s string) int {
	n := 0
	forEachPiece(s, func(_ string, tokens int) { n += tokens })
	return n
}

// forEachPiece calls f for each pre-token piece of s with its estimated token count.
func forEachPiece(s string, f func(piece string, tokens int)) {
	i := 0
	for i < len(s) {
		start := i
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			f(s[start:i], 1)
		case isLetter(c) || (c == ' ' && i+1 < len(s) && isLetter(s[i+1])):
			if c == ' ' {
				i++
			}
			l := 0
			for i < len(s) && isLetter(s[i]) {
				i++
				l++
			}
			f(s[start:i], 1+(l-1)/8)
		case isDigit(c):
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			f(s[start:i], (i-start+2)/3)
		case c == '\n' || c == '\r':
			for i < len(s) && (s[i] == '\n' || s[i] == '\r') {
				i++
			}
			f(s[start:i], 1)
		case (c == ' ' || c == '\t') && !(c == ' ' && i+1 < len(s) && isPunct(s[i+1])):
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			// The last space of a run belongs to the word or punctuation after it.
			if i < len(s) && i-1 > start && s[i-1] == ' ' && (isLetter(s[i]) || isPunct(s[i])) {
				i--
			}
			f(s[start:i], (i-start+3)/4)
		default:
			// A punctuation run, with an optional leading space as in ` ?[^\s\p{L}\p{N}]+`.
			if c == ' ' {
				i++
			}
			for i < len(s) && isPunct(s[i]) {
				i++
			}
			if i == start { // control characters
				i++
			}
			f(s[start:i], (i-start+1)/2)
		}
	}
}

func isLetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isPunct(c byte) bool {
	return c > ' ' && c < utf8.RuneSelf && !isLetter(c) && !isDigit(c)
}

// prefixHashes returns chained hashes of the prompt's full KV blocks of blockSize estimated
// tokens, at most maxBlocks of them, so identical prompt prefixes (shared system prompts,
// prefix groups) hash identically and the engine's prefix cache can match them. Block
// boundaries follow the estimator's pieces, so they are approximate when a tokenizer hook
// counts differently; the count of blocks is capped by the hook's count.
func prefixHashes(parts []string, blockSize, maxBlocks int) []uint64 {
	if blockSize <= 0 || maxBlocks <= 0 {
		return nil
	}
	var out []uint64
	h := fnv.New64a()
	var prev [8]byte
	inBlock := 0
	for _, p := range parts {
		done := false
		forEachPiece(p, func(piece string, tokens int) {
			if done {
				return
			}
			h.Write([]byte(piece))
			inBlock += tokens
			if inBlock >= blockSize {
				sum := h.Sum64()
				out = append(out, sum)
				if len(out) == maxBlocks {
					done = true
					return
				}
				// Chain: the next block's hash covers everything before it.
				h.Reset()
				for i := range prev {
					prev[i] = byte(sum >> (8 * i))
				}
				h.Write(prev[:])
				inBlock = 0
			}
		})
		if done {
			break
		}
		h.Write([]byte{0}) // message boundary
	}
	return out
}
