package calibrate

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/sim"
)

// TestFitSaysHowFarItHasGot: a fit tells its stages and counts each profile it simulates,
// so that a terminal's line shows a long fit moving.
func TestFitSaysHowFarItHasGot(t *testing.T) {
	truth, _ := sim.LoadProfile("textbook")
	truth.Engine.MaxNumSeqs = 4
	var loads []probeLoad
	for _, c := range []int{1, 2, 4, 8} {
		loads = append(loads, probeLoad{name: "decode", c: c, n: 2 * c, lengths: [][2]int{{32, 32}}})
	}
	pts := measure(t, truth, loads)
	var said []string
	tried, counted := 0, true
	_, err := Fit(context.Background(), pts, Source{URL: "test"}, Options{Seed: 1,
		Progress: func(s string) { said = append(said, s) },
		Tried: func(n int) {
			counted = counted && n == tried+1
			tried = n
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !counted || tried < 100 {
		t.Errorf("Tried counted to %d (each call one more: %v); a fit simulates hundreds of profiles", tried, counted)
	}
	if !slices.ContainsFunc(said, func(s string) bool { return strings.HasPrefix(s, "fitting all 4 probe points") }) {
		t.Errorf("the fit on every point was not said: %q", said)
	}
}
