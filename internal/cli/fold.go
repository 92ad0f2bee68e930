package cli

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/llmbench/llmbench/internal/report"
)

// foldNotes writes to w, folding each "note: " and "warning: " line longer than
// report.ConsoleWidth at spaces, its continuation lines indented under the text, so that
// a command's notes fit a terminal. A write that is not whole lines (a progress line
// redrawn with \r) passes as it is.
type foldNotes struct{ w io.Writer }

func (f foldNotes) Write(p []byte) (int, error) {
	if len(p) == 0 || p[len(p)-1] != '\n' || bytes.ContainsAny(p, "\r\x1b") {
		return f.w.Write(p)
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
	if _, err := io.WriteString(f.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// foldNote folds one line if it is a long note or warning.
func foldNote(line string) string {
	if utf8.RuneCountInString(line) <= report.ConsoleWidth {
		return line
	}
	for _, prefix := range []string{"note: ", "warning: "} {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return prefix + report.Wrap(rest, len(prefix), len(prefix), report.ConsoleWidth)
		}
	}
	return line
}
