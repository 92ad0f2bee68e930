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

// TestMap: f reaches each problem of nested joins, the joins kept as one list; an error that
// is no join, and nil, reach f as they are.
func TestMap(t *testing.T) {
	mark := func(err error) error {
		if err == nil {
			return errors.New("nil")
		}
		return errors.New("<" + err.Error() + ">")
	}
	err := errors.Join(errors.New("a"), errors.Join(errors.New("b"), errors.New("c")))
	if got := Map(err, mark).Error(); got != "<a>\n<b>\n<c>" {
		t.Errorf("Map of a nested join = %q", got)
	}
	if got := Map(New("F", "d"), mark).Error(); got != "<F: d>" {
		t.Errorf("Map of one problem = %q", got)
	}
	if got := Map(nil, mark).Error(); got != "nil" {
		t.Errorf("Map(nil) = %q, want f(nil)", got)
	}
}
