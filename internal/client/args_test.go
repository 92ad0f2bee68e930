package client

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseHeaders: good headers kept, trimmed; each bad one refused, a long one cut short.
func TestParseHeaders(t *testing.T) {
	h, err := ParseHeaders([]string{"X-A: 1", " X-B :2 ", "nocolon", "Authorization Bearer secret-token"})
	if h.Get("X-A") != "1" || h.Get("X-B") != "2" {
		t.Errorf("headers %v: want X-A 1, X-B 2", h)
	}
	want := "\"nocolon\" must be Name: value\n\"Author…\" must be Name: value"
	if err == nil || err.Error() != want {
		t.Errorf("err %v: want %q", err, want)
	}
}

// TestParseExtraBody: an object, nothing, and what is not an object.
func TestParseExtraBody(t *testing.T) {
	if m, err := ParseExtraBody(`{"a":1}`); err != nil || m["a"] != 1.0 {
		t.Errorf("object: %v, %v", m, err)
	}
	if m, err := ParseExtraBody(" "); err != nil || m != nil {
		t.Errorf("empty: %v, %v", m, err)
	}
	for _, s := range []string{"[1]", "{bad", "null"} {
		if _, err := ParseExtraBody(s); err == nil || !strings.HasPrefix(err.Error(), "not a JSON object: ") {
			t.Errorf("%s: %v: want not a JSON object", s, err)
		}
	}
}

// TestAPIKey: the key given wins over $OPENAI_API_KEY, a file's is trimmed, and both given,
// a file that does not read and an empty one are refused.
func TestAPIKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "env")
	dir := t.TempDir()
	file, empty := filepath.Join(dir, "key"), filepath.Join(dir, "empty")
	if err := os.WriteFile(file, []byte(" k2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, file, want string }{{"k", "", "k"}, {"", file, "k2"}, {"", "", "env"}} {
		if got, err := APIKey(c.key, c.file); err != nil || got != c.want {
			t.Errorf("APIKey(%q, %q) = %q, %v; want %q", c.key, c.file, got, err, c.want)
		}
	}
	if _, err := APIKey("k", file); !errors.Is(err, ErrKeyAndFile) {
		t.Errorf("key and file: %v, want ErrKeyAndFile", err)
	}
	if _, err := APIKey("", filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := APIKey("", empty); err == nil || err.Error() != empty+" is empty" {
		t.Errorf("empty file: %v, want %q", err, empty+" is empty")
	}
}
