package fielderr

import (
	"errors"
	"slices"
	"testing"
)

// A field's key drops every index, of nested elements too, and keeps several fields'
// names as they are.
func TestKey(t *testing.T) {
	for field, want := range map[string]string{"Levels[2].Rate": "Levels[].Rate", "A[10].B[0].C": "A[].B[].C",
		"Balance,More": "Balance,More", "Judge.Metrics.SLOs[1],API": "Judge.Metrics.SLOs[],API"} {
		if got := (&Error{Field: field}).Key(); got != want {
			t.Errorf("%s: key %s, want %s", field, got, want)
		}
	}
}

// TestFields: each problem's field in order, and a problem of no field named so that no
// list of fields matches it.
func TestFields(t *testing.T) {
	err := errors.Join(New("A", "bad"), errors.New("plain"), New("B,C", "worse"))
	if got, want := Fields(err), []string{"A", "not a field's: plain", "B,C"}; !slices.Equal(got, want) {
		t.Errorf("Fields = %q, want %q", got, want)
	}
	if got := Fields(nil); got != nil {
		t.Errorf("Fields(nil) = %q, want none", got)
	}
}
