package load

import (
	"testing"
	"time"
)

// TestParseWarmup: a count, a duration, none, and the two refusals.
func TestParseWarmup(t *testing.T) {
	for _, tc := range []struct {
		in      string
		n       int
		d       time.Duration
		wantErr string
	}{
		{"", 0, 0, ""}, {" 5 ", 5, 0, ""}, {"10s", 0, 10 * time.Second, ""},
		{"-3", 0, 0, "-3 must not be negative"},
		{"10q", 0, 0, `"10q" is neither a request count nor a duration like 10s`},
		{"-1s", 0, 0, `"-1s" is neither a request count nor a duration like 10s`},
	} {
		n, d, err := ParseWarmup(tc.in)
		if got := errString(err); n != tc.n || d != tc.d || got != tc.wantErr {
			t.Errorf("ParseWarmup(%q) = %d, %v, %q; want %d, %v, %q", tc.in, n, d, got, tc.n, tc.d, tc.wantErr)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
