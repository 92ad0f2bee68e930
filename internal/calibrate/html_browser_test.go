package calibrate

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/llmbench/llmbench/internal/browsertest"
)

// calibration.html reads well: numbered axes, no text over text, tables within the window.
func TestCalibrationHTMLInChromium(t *testing.T) {
	r := &Result{Source: Source{URL: "http://localhost:8000", Model: "m"}, HeldOut: Errors{4.2, 7.5, 2.1, 3.3, 2}, PaceDrift: Drift{}}
	for i, c := range []int{1, 2, 4, 8, 16, 32, 64} {
		m := Figures{TTFTP50: 20 * math.Pow(1.5, float64(i)), TTFTP99: 40 * math.Pow(1.6, float64(i)), TPOTP50: 8 + float64(c)/4, TPOTP99: 12 + float64(c)/3}
		p := Figures{TTFTP50: m.TTFTP50 * 1.03, TTFTP99: m.TTFTP99 * 0.96, TPOTP50: m.TPOTP50 * 0.98, TPOTP99: m.TPOTP99 * 1.04}
		f := Fitted{Point: Point{Name: fmt.Sprintf("decode-c%d", c), Phase: "decode", Concurrency: c, Measured: m,
			Requests: []Request{{Prompt: 512, Output: 128}, {Prompt: 2048, Output: 128}}}, Predicted: p, Validation: unmeasured()}
		if i == 3 {
			f.HeldOut, f.Validation = true, p
		}
		r.Points = append(r.Points, f)
	}
	var b bytes.Buffer
	if err := r.WriteHTML(&b, "calibration of m"); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckPage(t, "calibration.html", b.Bytes(), 12)
}
