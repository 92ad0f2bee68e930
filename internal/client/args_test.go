package client

import (
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
