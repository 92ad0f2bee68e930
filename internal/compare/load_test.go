package compare

import (
	"errors"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
)

// NewConfig reports the first problem only, keyed by its field, and reads a threshold as a
// fraction or a percentage.
func TestNewConfig(t *testing.T) {
	cfg, err := NewConfig("a", "b", 0.05, "5%")
	if err != nil || cfg.Threshold == nil || *cfg.Threshold != 0.05 || cfg.A != "a" || cfg.B != "b" {
		t.Fatalf("5%%: %+v %v", cfg, err)
	}
	for _, c := range []struct {
		alpha     float64
		threshold string
		field     string
	}{{2, "", "Alpha"}, {2, "abc", "Alpha"}, {0.05, "abc", "Threshold"}, {0.05, "-5%", "Threshold"}} {
		_, err := NewConfig("a", "b", c.alpha, c.threshold)
		var field *fielderr.Error
		if !errors.As(err, &field) || field.Field != c.field || len(fielderr.Split(err)) != 1 {
			t.Errorf("alpha %v threshold %q: %v, want one %s error", c.alpha, c.threshold, err, c.field)
		}
	}
}
