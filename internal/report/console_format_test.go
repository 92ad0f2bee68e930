package report

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/metrics"
)

// A figure that rounds to zero prints without a sign, and an interval says how it was had.
func TestConsoleFigures(t *testing.T) {
	for v, want := range map[float64]string{-0.001: "0.00", -0.0: "0.00", 0.004: "0.00", -0.005001: "-0.01", -12.5: "-12.50", 3: "3.00"} {
		if got := consoleFloat(v); got != want {
			t.Errorf("consoleFloat(%g) = %q, want %q", v, got, want)
		}
	}
	for m, want := range map[string]string{
		metrics.MethodBatchMeans:       "(95% CI 1.00-2.00)",
		metrics.MethodBatchMeansSteady: "(95% CI 1.00-2.00 after the first wave)",
		metrics.MethodOrderStatistics:  "(95% CI 1.00-2.00 if independent)",
	} {
		if got := ciNote(1, 2, m); got != want {
			t.Errorf("ciNote(%s) = %q, want %q", m, got, want)
		}
	}
}

// Wrap keeps every line within the width, counting runes; a level block's note too long
// for its line goes under the value column.
func TestWrapWidth(t *testing.T) {
	text := "the server could not keep up with this rate — its backlog kept growing — so the level stopped early"
	for _, first := range []int{0, 41, 50} {
		for i, l := range strings.Split(console.Wrap(text, first, 41, 60), "\n") {
			n := utf8.RuneCountInString(l)
			if i == 0 {
				n += first
			}
			if n > 60 {
				t.Errorf("first %d: line %d is %d columns: %q", first, i, n, l)
			}
		}
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	b := &consoleBlock{w: w}
	b.line("Level stopped:", "oversaturated", "<-- the server could not keep up with this rate (its backlog kept growing)")
	w.Flush()
	for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if utf8.RuneCountInString(l) > console.Width {
			t.Errorf("%d columns: %q", utf8.RuneCountInString(l), l)
		}
	}
	if !strings.HasPrefix(buf.String(), "Level stopped:                           oversaturated\n"+strings.Repeat(" ", 41)+"<-- the server") {
		t.Errorf("the note does not go under the value column:\n%s", buf.String())
	}
}
