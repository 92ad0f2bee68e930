package fielderr

import "testing"

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
