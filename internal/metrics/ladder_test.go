package metrics

import (
	"math"
	"strings"
	"testing"
)

func ladder(loads []int, tput []float64, pass []bool) ([]Level, []Load) {
	lv := make([]Level, len(loads))
	ld := make([]Load, len(loads))
	for i := range loads {
		ld[i] = Load{Concurrency: loads[i]}
		lv[i].OutputThroughput = tput[i]
		if pass != nil {
			lv[i].SLO = &Verdict{Pass: pass[i]}
		}
	}
	return lv, ld
}

func TestSweetSpotKnownCurves(t *testing.T) {
	c := func(xs []int, f func(float64) float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = f(float64(x))
		}
		return out
	}
	geo := []int{1, 2, 4, 8, 16, 32, 64}
	for _, tc := range []struct {
		name  string
		loads []int
		tput  []float64
		want  int // concurrency of the sweet spot; 0 = none
	}{
		{"saturates at 20", geo, c(geo, func(x float64) float64 { return math.Min(x, 20) }), 16},
		{"saturates at 20, coarse ladder", []int{1, 4, 16, 64}, []float64{1, 4, 16, 20}, 16},
		{"saturating exponential", geo, c(geo, func(x float64) float64 { return 1000 * (1 - math.Exp(-x/8)) }), 16},
		{"linear: no knee", geo, c(geo, func(x float64) float64 { return 30 * x }), 0},
		{"collapse after a peak", []int{1, 4, 16, 64, 128}, []float64{1, 4, 16, 20, 12}, 16},
		{"peak at the second level", []int{1, 2, 4, 8}, []float64{10, 20, 15, 12}, 2},
		{"flat", []int{1, 2, 4}, []float64{5, 5, 5}, 0},
		{"one level", []int{4}, []float64{100}, 0},
		{"unsorted input", []int{64, 1, 16, 4}, []float64{20, 1, 16, 4}, 16},
	} {
		lv, ld := ladder(tc.loads, tc.tput, nil)
		p := SweetSpot(lv, ld)
		switch {
		case tc.want == 0 && p != nil:
			t.Errorf("%s: sweet spot %+v, want none", tc.name, p)
		case tc.want != 0 && (p == nil || p.Concurrency != tc.want || ld[p.Index].Concurrency != tc.want):
			t.Errorf("%s: sweet spot %+v, want concurrency %d", tc.name, p, tc.want)
		case p != nil && p.Reason == "":
			t.Errorf("%s: no reason", tc.name)
		}
	}
}

func TestSweetSpotCappedBySLOLimit(t *testing.T) {
	loads := []int{1, 2, 4, 8, 16, 32, 64}
	tput := []float64{1, 2, 4, 8, 16, 20, 20}
	// The verdict fails from 8 on: the knee (16) is capped at the limit (4).
	lv, ld := ladder(loads, tput, []bool{true, true, true, false, false, false, false})
	lim := SLOLimit(lv, ld)
	if lim == nil || lim.Concurrency != 4 || lim.Index != 2 {
		t.Fatalf("slo limit %+v", lim)
	}
	sp := SweetSpot(lv, ld)
	if sp == nil || sp.Concurrency != 4 || !strings.Contains(sp.Reason, "SLO limit") {
		t.Errorf("sweet spot %+v, want the SLO limit", sp)
	}
	// The limit above the knee leaves the knee alone.
	lv, ld = ladder(loads, tput, []bool{true, true, true, true, true, true, false})
	if sp := SweetSpot(lv, ld); sp == nil || sp.Concurrency != 16 {
		t.Errorf("sweet spot %+v, want the knee 16", sp)
	}
	if lim := SLOLimit(lv, ld); lim == nil || lim.Concurrency != 32 {
		t.Errorf("slo limit %+v, want 32", lim)
	}
	// No level passes: neither a limit nor a sweet spot; AnyPassed says judged, not passed.
	lv, ld = ladder(loads, tput, make([]bool, len(loads)))
	if SLOLimit(lv, ld) != nil || SweetSpot(lv, ld) != nil {
		t.Error("want nil picks when no level passes")
	}
	if passed, judged := AnyPassed(lv); passed || !judged {
		t.Errorf("AnyPassed = %v, %v", passed, judged)
	}
	// No knee (linear) but a limit: the limit is the sweet spot.
	lv, ld = ladder([]int{1, 2, 4, 8}, []float64{1, 2, 4, 8}, []bool{true, true, true, false})
	if sp := SweetSpot(lv, ld); sp == nil || sp.Concurrency != 4 {
		t.Errorf("linear with limit: %+v", sp)
	}
	// Highest passing load wins even if not the last passing index (search probes out of order).
	lv, ld = ladder([]int{1, 2, 4, 8, 6, 7}, []float64{1, 2, 4, 5, 5, 5}, []bool{true, true, true, false, true, false})
	if lim := SLOLimit(lv, ld); lim == nil || lim.Concurrency != 6 || lim.Index != 4 {
		t.Errorf("out-of-order ladder limit %+v", lim)
	}
	if passed, judged := AnyPassed(lv); !passed || !judged {
		t.Errorf("AnyPassed = %v, %v", passed, judged)
	}
	if _, judged := AnyPassed([]Level{{}}); judged {
		t.Error("no verdicts: judged")
	}
}

func TestSweetSpotRate(t *testing.T) {
	lv := []Level{{OutputThroughput: 100}, {OutputThroughput: 200}, {OutputThroughput: 390}, {OutputThroughput: 410}, {OutputThroughput: 415}}
	ld := []Load{{Rate: 1}, {Rate: 2}, {Rate: 4}, {Rate: 8}, {Rate: 16}}
	p := SweetSpot(lv, ld)
	if p == nil || p.Rate != 4 || p.Concurrency != 0 {
		t.Errorf("rate ladder: %+v, want rate 4", p)
	}
}

// A pooled ladder (embeddings: inputs/s, rerank: documents/s, no output tokens) finds its
// knee on the inputs (documents) it served, and says so.
func TestSweetSpotPooled(t *testing.T) {
	loads := []int{1, 2, 4, 8, 16, 32, 64}
	for _, docs := range []bool{false, true} {
		lv, ld := ladder(loads, make([]float64, len(loads)), nil)
		for i, c := range loads {
			v := 8 * math.Min(float64(c), 20)
			if docs {
				lv[i].DocumentsPerS = &v
			} else {
				lv[i].InputsPerS = &v
			}
		}
		fig := LadderThroughput(lv)
		want := map[bool]string{false: "inputs/s", true: "docs/s"}[docs]
		if fig.Unit != want {
			t.Errorf("docs %v: the ladder's throughput is %s, want %s", docs, fig.Unit, want)
		}
		p := SweetSpot(lv, ld)
		if p == nil || p.Concurrency != 16 || !strings.Contains(p.Reason, fig.Name) {
			t.Errorf("docs %v: sweet spot %+v, want concurrency 16 on the %s", docs, p, fig.Name)
		}
	}
	lv, _ := ladder(loads, []float64{1, 2, 3, 4, 5, 6, 7}, nil)
	if LadderThroughput(lv).Unit != "tok/s" {
		t.Error("a generation ladder's throughput is not tok/s")
	}
}
