package bench

import (
	"testing"

	"github.com/llmbench/llmbench/internal/search"
)

// TestDefaultSearchMax: each axis has its bound; no search has none.
func TestDefaultSearchMax(t *testing.T) {
	if DefaultSearchMax(search.Concurrency) != 1024 || DefaultSearchMax(search.Rate) != 1000 || DefaultSearchMax("") != 0 {
		t.Errorf("bounds %g, %g, %g: want 1024, 1000, 0", DefaultSearchMax(search.Concurrency), DefaultSearchMax(search.Rate), DefaultSearchMax(""))
	}
}
