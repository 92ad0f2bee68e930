package tokenizer

import "fmt"

// GPT-2's byte-level alphabet: every byte maps to a printable rune, so vocabularies can be
// stored as JSON strings. Printable Latin-1 bytes map to themselves, the rest to U+0100 on.
var byteToRune, runeToByte = byteLevelTables()

func byteLevelTables() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	keep := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !keep(b) {
			r = rune(256 + n)
			n++
		}
		b2r[b] = r
		r2b[r] = byte(b)
	}
	return b2r, r2b
}

// byteLevelDecode maps a byte-level vocabulary string back to the raw bytes it stands for.
func byteLevelDecode(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := runeToByte[r]
		if !ok {
			return nil, fmt.Errorf("rune %U is outside the byte-level alphabet", r)
		}
		out = append(out, b)
	}
	return out, nil
}
