// Package console lays text out for a terminal: the width every line of llmbench's console
// output fits, and words wrapped within it.
package console

import (
	"strings"
	"unicode/utf8"
)

// Width is the most columns (runes) a console line takes: every table and line of
// run, simulate, report, plan and compare fits it (--wide shows more where a command has it).
const Width = 100

// Wrap breaks text at spaces into lines of at most width columns (runes), the first
// starting at column first (what precedes it on its line), the others indented by indent
// spaces. A word longer than the line stays whole.
func Wrap(text string, first, indent, width int) string {
	pad := strings.Repeat(" ", indent)
	var b strings.Builder
	line, col, start := "", first, first
	for _, word := range strings.Fields(text) {
		n := utf8.RuneCountInString(word)
		if col > start && col+1+n > width {
			b.WriteString(line + "\n")
			line, col, start = pad, indent, indent
		}
		if col > start {
			line += " "
			col++
		}
		line += word
		col += n
	}
	b.WriteString(line)
	return b.String()
}

// Widest is the most columns any line of text takes.
func Widest(text string) int {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		n = max(n, utf8.RuneCountInString(line))
	}
	return n
}

// Plural is one when n is 1, else many: a count's word in console text.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
