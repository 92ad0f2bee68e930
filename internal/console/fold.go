package console

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// FoldNotes writes to W, folding each "note: ", "warning: " and error ("llmbench: ") line
// longer than Width at spaces, its continuation lines indented under the text, so that a
// command's notes fit a terminal. A write that is not whole lines (a progress line redrawn
// with \r) passes as it is.
type FoldNotes struct{ W io.Writer }

// Unwrap is the writer folded into, so that a terminal behind the folding is still seen as
// one (the progress line belongs there).
func (f FoldNotes) Unwrap() io.Writer { return f.W }

func (f FoldNotes) Write(p []byte) (int, error) {
	if len(p) == 0 || p[len(p)-1] != '\n' || bytes.ContainsAny(p, "\r\x1b") {
		return f.W.Write(p)
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if line == "" {
			continue
		}
		b.WriteString(foldNote(strings.TrimSuffix(line, "\n")))
		if strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	if _, err := io.WriteString(f.W, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// foldNote folds one line if it is a long note or warning.
func foldNote(line string) string {
	if utf8.RuneCountInString(line) <= Width {
		return line
	}
	for _, prefix := range []string{"note: ", "warning: ", "llmbench: "} {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return prefix + Wrap(rest, len(prefix), len(prefix), Width)
		}
	}
	return line
}

// ShellQuote quotes s for a POSIX shell when it holds anything but plain characters.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,:=+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellFold breaks a shell command (starting at column first) before its flags into lines
// within Width, each but the last ending in " \", the others indented by two more: a
// command to copy that fits a terminal.
func ShellFold(cmd string, first int) string {
	words := strings.Fields(cmd)
	var parts []string // each flag with its value
	for _, w := range words {
		if strings.HasPrefix(w, "-") || len(parts) == 0 {
			parts = append(parts, w)
		} else {
			parts[len(parts)-1] += " " + w
		}
	}
	pad := strings.Repeat(" ", first+2)
	var b strings.Builder
	col := first
	for i, p := range parts {
		n := utf8.RuneCountInString(p)
		if i > 0 && col+1+n+2 > Width {
			b.WriteString(" \\\n" + pad)
			col = len(pad)
		} else if i > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(p)
		col += n
	}
	return b.String()
}
