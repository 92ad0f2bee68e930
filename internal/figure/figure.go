// Package figure names the latency figures a calibration fits and judges a profile on —
// a metric of internal/metrics' registry at a percentile — and holds one value for each:
// a point's measured and predicted figures, the errors of a fit and a profile's record of
// them (internal/sim) are all Values. It is a leaf, so that the simulator, which imports
// no metrics, can name the figures too.
package figure

import (
	"math"
	"strconv"
)

// Figure is one latency figure: a registry metric at a percentile.
type Figure struct {
	Metric string  // the registry's key (metrics.KeyTTFT: "ttft")
	Pct    float64 // percentile, 0–100
}

// Name is the figure's name in files: "ttft_p50".
func (f Figure) Name() string {
	return f.Metric + "_p" + strconv.FormatFloat(f.Pct, 'g', -1, 64)
}

// Key is one of the figures, an index into Values.
type Key int

// The figures, in the order files list them.
const (
	TTFTP50 Key = iota
	TTFTP99
	TPOTP50
	TPOTP99
	ITLP50
	ITLP99
	// N is the number of figures.
	N = iota
)

// The metrics are the registry's keys (a test checks them against it).
var figures = [N]Figure{
	TTFTP50: {"ttft", 50}, TTFTP99: {"ttft", 99},
	TPOTP50: {"tpot", 50}, TPOTP99: {"tpot", 99},
	ITLP50: {"itl", 50}, ITLP99: {"itl", 99},
}

// Figure is the figure k names.
func (k Key) Figure() Figure { return figures[k] }

// Name is k's figure's name in files: "ttft_p50".
func (k Key) Name() string { return figures[k].Name() }

// All are every figure, in file order: those a point is measured and predicted on.
var All = []Key{TTFTP50, TTFTP99, TPOTP50, TPOTP99, ITLP50, ITLP99}

// Judged are the figures a fit's error is stated on (ITL's are fitted, not judged): the
// errors' other figures stay unmeasured.
var Judged = []Key{TTFTP50, TTFTP99, TPOTP50, TPOTP99}

// Metrics are the registry metrics of All, each once, in order.
func Metrics() []string {
	var out []string
	for _, k := range All {
		if m := k.Figure().Metric; len(out) == 0 || out[len(out)-1] != m {
			out = append(out, m)
		}
	}
	return out
}

// Values are a value for each figure (ms, or percent for errors); NaN where not measured.
type Values [N]float64

// Unmeasured are Values nobody measured.
func Unmeasured() Values {
	var v Values
	for k := range v {
		v[k] = math.NaN()
	}
	return v
}

// Measured says whether any figure of v was measured.
func (v Values) Measured() bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return true
		}
	}
	return false
}
