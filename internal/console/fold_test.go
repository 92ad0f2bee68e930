package console

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// Notes, warnings and errors longer than 100 columns fold under their text; other lines,
// and writes that are not whole lines (a progress line), pass as they are.
func TestFoldNotes(t *testing.T) {
	var b bytes.Buffer
	f := FoldNotes{&b}
	long := "note: " + strings.Repeat("wordy words ", 20)
	f.Write([]byte(long + "\nllmbench: " + strings.Repeat("x ", 60) + "\n" + strings.Repeat("y ", 60) + "\n"))
	f.Write([]byte("\r" + strings.Repeat("p", 120)))
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(lines[1], "      word") {
		t.Errorf("continuation not indented under the note: %q", lines[1])
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 100 && !strings.HasPrefix(l, "y ") && !strings.HasPrefix(l, "\r") {
			t.Errorf("%d columns: %q", n, l)
		}
	}
	unfolded := strings.ReplaceAll(b.String(), "\n"+strings.Repeat(" ", len("llmbench: ")), " ")
	if !strings.Contains(unfolded, "llmbench: "+strings.TrimSpace(strings.Repeat("x ", 60))+"\n") {
		t.Errorf("the error does not unfold to its one line:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "\n"+strings.Repeat("y ", 60)+"\n") || !strings.HasSuffix(b.String(), "\r"+strings.Repeat("p", 120)) {
		t.Errorf("other lines changed:\n%s", b.String())
	}
}

// Plain words stay bare; anything a shell would read otherwise, the empty word and a quote
// itself included, is single-quoted.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"--rate": "--rate", "a/b.yaml": "a/b.yaml", "": "''",
		"ttft:p99<=2s": "'ttft:p99<=2s'", "a b": "'a b'", "it's": `'it'\''s'`} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
