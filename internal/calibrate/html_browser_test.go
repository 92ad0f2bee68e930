package calibrate

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/llmbench/llmbench/internal/browsertest"
	"github.com/llmbench/llmbench/internal/figure"
)

// calibration.html reads well: numbered axes, no text over text, tables within the window.
func TestCalibrationHTMLInChromium(t *testing.T) {
	r := &Result{Source: Source{URL: "http://localhost:8000", Model: "m"}, HeldOut: Errors{Pct: figure.Values{figure.TTFTP50: 4.2, figure.TTFTP99: 7.5, figure.TPOTP50: 2.1, figure.TPOTP99: 3.3, figure.ITLP50: nan, figure.ITLP99: nan}, Points: 2}, PaceDrift: Drift{}}
	for i, c := range []int{1, 2, 4, 8, 16, 32, 64} {
		var m, p figure.Values
		m[figure.TTFTP50], m[figure.TTFTP99] = 20*math.Pow(1.5, float64(i)), 40*math.Pow(1.6, float64(i))
		m[figure.TPOTP50], m[figure.TPOTP99] = 8+float64(c)/4, 12+float64(c)/3
		p[figure.TTFTP50], p[figure.TTFTP99] = m[figure.TTFTP50]*1.03, m[figure.TTFTP99]*0.96
		p[figure.TPOTP50], p[figure.TPOTP99] = m[figure.TPOTP50]*0.98, m[figure.TPOTP99]*1.04
		f := Fitted{Point: Point{Name: fmt.Sprintf("decode-c%d", c), Phase: "decode", Concurrency: c, Measured: m,
			Requests: []Request{{Prompt: 512, Output: 128}, {Prompt: 2048, Output: 128}}}, Predicted: p, Validation: figure.Unmeasured()}
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
