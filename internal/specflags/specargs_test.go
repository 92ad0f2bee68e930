package specflags

import (
	"slices"
	"testing"
)

// TestSpecArgsWritesLargeIntegers: an int flag of a million is written as digits, which the
// flag parses (strconv's shortest float form, 1e+06, it does not).
func TestSpecArgsWritesLargeIntegers(t *testing.T) {
	if got := Num(1_000_000); !slices.Equal(got, []string{"1000000"}) {
		t.Errorf("Num(1000000) = %q, want [1000000]", got)
	}
	if got := Num(2.5e6); !slices.Equal(got, []string{"2.5e+06"}) {
		t.Errorf("Num(2.5e6) = %q, want [2.5e+06] (a float flag parses it)", got)
	}
}
