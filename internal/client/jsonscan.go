package client

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jscan walks one JSON document in place, validating it completely while extracting only
// the few fields a stream chunk needs. It never allocates: keys and strings come back as
// sub-slices of the input in their escaped form (unescape with appendUnescaped). This is
// the hot path of the client (one chunk per token per stream), where encoding/json's
// reflection and per-field allocations would cost more than the rest of the read path.
type jscan struct {
	b   []byte
	i   int
	err error
}

// maxJSONDepth matches encoding/json's limit, so both accept the same documents.
const maxJSONDepth = 10000

func (s *jscan) reset(b []byte) { s.b, s.i, s.err = b, 0, nil }

func (s *jscan) fail(what string) bool {
	if s.err == nil {
		if s.i >= len(s.b) {
			s.err = fmt.Errorf("unexpected end of JSON, %s", what)
		} else {
			s.err = fmt.Errorf("invalid JSON at offset %d: %s", s.i, what)
		}
	}
	return false
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *jscan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end checks that nothing but whitespace follows the document.
func (s *jscan) end() bool {
	if s.err != nil {
		return false
	}
	s.ws()
	if s.i != len(s.b) {
		return s.fail("data after the JSON value")
	}
	return true
}

// close checks that nothing but whitespace follows the value and returns the scan's error.
func (s *jscan) close() error {
	if !s.end() {
		return s.err
	}
	return nil
}

// null consumes a null literal if one is next.
func (s *jscan) null() bool {
	if s.err == nil && s.peek() == 'n' {
		return s.lit("null")
	}
	return false
}

func (s *jscan) lit(l string) bool {
	if len(s.b)-s.i < len(l) || string(s.b[s.i:s.i+len(l)]) != l {
		return s.fail("bad literal")
	}
	s.i += len(l)
	return true
}

// obj consumes '{' and reports true. Any other value (null, or a type a server put where
// we expected an object) is skipped, still validated, and obj reports false: a valid
// document with an unexpected schema is not a malformed event.
func (s *jscan) obj() bool {
	if s.err != nil {
		return false
	}
	if s.peek() == '{' {
		s.i++
		return true
	}
	s.skip()
	return false
}

// member returns the next key of the current object, positioned at its value, or false
// after consuming the closing '}'. first must start true for each object.
func (s *jscan) member(first *bool) ([]byte, bool) {
	if s.err != nil {
		return nil, false
	}
	c := s.peek()
	if c == '}' {
		s.i++
		return nil, false
	}
	if !*first {
		if c != ',' {
			return nil, s.fail("expected ',' or '}'")
		}
		s.i++
		c = s.peek()
	}
	*first = false
	if c != '"' {
		return nil, s.fail("expected a string key")
	}
	k, ok := s.str()
	if !ok {
		return nil, false
	}
	if s.peek() != ':' {
		return nil, s.fail("expected ':'")
	}
	s.i++
	return k, true
}

// arr consumes '[' and reports true; any other value is skipped (see obj).
func (s *jscan) arr() bool {
	if s.err != nil {
		return false
	}
	if s.peek() == '[' {
		s.i++
		return true
	}
	s.skip()
	return false
}

// elem reports whether another array element follows, positioned at it; false after
// consuming the closing ']'.
func (s *jscan) elem(first *bool) bool {
	if s.err != nil {
		return false
	}
	c := s.peek()
	if c == ']' {
		s.i++
		return false
	}
	if !*first {
		if c != ',' {
			return s.fail("expected ',' or ']'")
		}
		s.i++
		s.ws()
	}
	*first = false
	return true
}

// str consumes a string and returns its raw (still escaped) contents.
func (s *jscan) str() ([]byte, bool) {
	if s.err != nil {
		return nil, false
	}
	if s.peek() != '"' {
		return nil, s.fail("expected a string")
	}
	s.i++
	start := s.i
	for s.i < len(s.b) {
		// Fast path over ordinary bytes; locals keep the loop in registers.
		b, i := s.b, s.i
		for i < len(b) && !strSpecial[b[i]] {
			i++
		}
		s.i = i
		if i == len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			return raw, true
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, s.fail("unterminated escape")
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) || !isHex4(s.b[s.i+2:s.i+6]) {
					s.i++
					return nil, s.fail(`bad \u escape`)
				}
				s.i += 6
			default:
				s.i++
				return nil, s.fail("bad escape")
			}
		case c < 0x20:
			return nil, s.fail("control character in string")
		default:
			s.i++
		}
	}
	return nil, s.fail("unterminated string")
}

// strSpecial marks the bytes that end the fast scan of a string: the quote, the
// backslash and control characters.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// optStr reads a string; any other value (null included) is skipped and reads as nil.
func (s *jscan) optStr() ([]byte, bool) {
	if s.err == nil && s.peek() != '"' {
		s.skip()
		return nil, s.err == nil
	}
	return s.str()
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// num consumes a number per the JSON grammar and returns its text.
func (s *jscan) num() ([]byte, bool) {
	if s.err != nil {
		return nil, false
	}
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && '1' <= s.b[s.i] && s.b[s.i] <= '9':
		s.digits()
	default:
		return nil, s.fail("expected a number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return nil, s.fail("expected digits after '.'")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return nil, s.fail("expected exponent digits")
		}
	}
	return s.b[start:s.i], true
}

func (s *jscan) digits() int {
	n := 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// isNum reports whether a number is next; if not, the value is skipped.
func (s *jscan) isNum() bool {
	if s.err != nil {
		return false
	}
	if c := s.peek(); c == '-' || '0' <= c && c <= '9' {
		return true
	}
	s.skip()
	return false
}

// int reads a number as an int (anything else reads as 0); fractions are truncated,
// since token counts from some servers come as floats.
func (s *jscan) int() int {
	if !s.isNum() {
		return 0
	}
	t, ok := s.num()
	if !ok {
		return 0
	}
	if n, ok := atoi(t); ok {
		return n
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil || f != f || f > 1<<53 || f < -(1<<53) {
		return 0
	}
	return int(f)
}

// atoi parses an optionally signed run of decimal digits without allocating.
func atoi(t []byte) (int, bool) {
	neg := len(t) > 0 && t[0] == '-'
	if neg {
		t = t[1:]
	}
	if len(t) == 0 || len(t) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range t {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// float reads a number (anything else reads as 0).
func (s *jscan) float() float64 {
	if !s.isNum() {
		return 0
	}
	t, ok := s.num()
	if !ok {
		return 0
	}
	f, _ := strconv.ParseFloat(string(t), 64)
	return f
}

// bool reads true; anything else reads as false.
func (s *jscan) bool() bool {
	if s.err == nil && s.peek() == 't' {
		return s.lit("true")
	}
	s.skip()
	return false
}

// skip consumes any value, validating it.
func (s *jscan) skip() { s.skipDepth(0) }

func (s *jscan) skipDepth(depth int) {
	if s.err != nil {
		return
	}
	if depth > maxJSONDepth {
		s.fail("nested too deeply")
		return
	}
	switch c := s.peek(); c {
	case '{':
		s.i++
		first := true
		for {
			if _, ok := s.member(&first); !ok {
				return
			}
			s.skipDepth(depth + 1)
		}
	case '[':
		s.i++
		first := true
		for s.elem(&first) {
			s.skipDepth(depth + 1)
		}
	case '"':
		s.str()
	case 't':
		s.lit("true")
	case 'f':
		s.lit("false")
	case 'n':
		s.lit("null")
	default:
		s.num()
	}
}

// rawValue consumes any value and returns its text.
func (s *jscan) rawValue() []byte {
	s.ws()
	start := s.i
	s.skip()
	if s.err != nil {
		return nil
	}
	return s.b[start:s.i]
}

// appendUnescaped appends the decoded form of a raw string validated by str.
func appendUnescaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := i + 1
			for j < len(raw) && raw[j] != '\\' {
				j++
			}
			dst = append(dst, raw[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(raw) {
			break
		}
		switch raw[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			if i+6 > len(raw) {
				return dst
			}
			r := rune(hex4(raw[i+2 : i+6]))
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' && isHex4(raw[i+2:i+6]) {
					if r2 := utf16.DecodeRune(r, rune(hex4(raw[i+2:i+6]))); r2 != utf8.RuneError {
						r = r2
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, raw[i+1])
		}
		i += 2
	}
	return dst
}

func hex4(b []byte) int {
	v := 0
	for _, c := range b[:4] {
		v <<= 4
		switch {
		case c <= '9':
			v |= int(c - '0')
		case c >= 'a':
			v |= int(c-'a') + 10
		default:
			v |= int(c-'A') + 10
		}
	}
	return v
}
