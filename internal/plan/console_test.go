package plan

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/console"
)

// TestTableFitsTheConsole: four SLO terms with their margins would take 120 columns; the
// table then shows the values and one column of the tightest margin, within 100, and
// --wide keeps every margin.
func TestTableFitsTheConsole(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	term := func(name string, v, bound float64) Term {
		return Term{Term: name, Value: f(v), Unit: "ms", Bound: bound, Margin: f(1 - v/bound), Pass: true}
	}
	c := Candidate{GPU: "l40s", TP: 1, Replicas: 1, GPUs: 1, Fits: true, MeetsSLO: true, Dtype: "bf16",
		USDPerHour: f(1.91), CostPerMillionOutputTokens: f(0.822), HeadroomRate: f(10.1),
		SLO: []Term{term("ttft:p99<=2s", 140.6, 2000), term("tpot:p99<=60ms", 36.85, 60), term("e2el:p99<=20s", 4753, 20000), term("itl:p99<=200ms", 81.92, 200)}}
	pl := &Plan{Rate: 5, SLO: "ttft:p99<=2s,tpot:p99<=60ms,e2el:p99<=20s,itl:p99<=200ms", Evaluated: 1, Configurations: 1, Candidates: []Candidate{c}}
	var b bytes.Buffer
	WriteTable(&b, pl, 0, false)
	if w := console.Widest(b.String()); w > Width {
		t.Errorf("%d columns:\n%s", w, b.String())
	}
	if !strings.Contains(b.String(), "tpot p99") || !strings.Contains(b.String(), "+39%") || strings.Contains(b.String(), "(+39%)") {
		t.Errorf("want the values and the tightest margin (tpot's +39%%) alone:\n%s", b.String())
	}
	b.Reset()
	WriteTable(&b, pl, 0, true)
	if !strings.Contains(b.String(), "36.85 ms (+39%)") || !strings.Contains(b.String(), "140.6 ms (+93%)") {
		t.Errorf("--wide: want every term's margin:\n%s", b.String())
	}
}
