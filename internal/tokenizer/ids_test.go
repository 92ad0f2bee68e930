package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

// EncodeJSONLines writes one array a line and names the first line that is not a JSON string.
func TestEncodeJSONLines(t *testing.T) {
	tok, err := Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := EncodeJSONLines(&out, strings.NewReader("\"\"\n\"Hello\"\n"), tok); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	WriteIDs(&want, nil)
	WriteIDs(&want, tok.Encode("Hello"))
	if out.String() != want.String() || !strings.HasPrefix(out.String(), "[]\n[") {
		t.Errorf("got %q, want %q", out.String(), want.String())
	}
	err = EncodeJSONLines(&out, strings.NewReader("\"a\"\nx\n"), tok)
	var line *LineError
	if !errors.As(err, &line) || line.Line != 2 {
		t.Errorf("got %v, want line 2's error", err)
	}
}

// EncodeText takes all its input, newlines included, as one text: one array.
func TestEncodeText(t *testing.T) {
	tok, err := Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	var out, want strings.Builder
	if err := EncodeText(&out, strings.NewReader("Hello\nworld\n"), tok); err != nil {
		t.Fatal(err)
	}
	WriteIDs(&want, tok.Encode("Hello\nworld\n"))
	if out.String() != want.String() {
		t.Errorf("%q, want %q", out.String(), want.String())
	}
}
