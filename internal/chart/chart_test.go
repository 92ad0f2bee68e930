package chart

import (
	"strings"
	"testing"
)

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		v, step float64
		want    string
	}{
		{10000, 2000, "10,000"}, {12500, 2500, "12,500"}, {0.25, 0.05, "0.25"}, {1.5e6, 5e5, "1.5M"},
		{-1200, 200, "-1,200"}, {0, 1, "0"}, {30, 10, "30"}, {2.5, 0.5, "2.5"}, {3e9, 1e9, "3G"},
	} {
		if got := Number(c.v, c.step); got != c.want {
			t.Errorf("Number(%v, %v) = %q, want %q", c.v, c.step, got, c.want)
		}
	}
}

func TestFit(t *testing.T) {
	// Data far from 0 keeps its own range; data near 0 starts at 0.
	if a := fit([]float64{2000, 2600, 3000}, false); a.lo < 1500 || a.lo > 2000 || a.hi < 3000 || a.hi > 3500 {
		t.Errorf("2000..3000: axis %v..%v", a.lo, a.hi)
	}
	if a := fit([]float64{50, 3000}, false); a.lo != 0 {
		t.Errorf("50..3000 starts at %v, not 0", a.lo)
	}
	for _, a := range []axis{fit([]float64{3, 4}, false), fit([]float64{0.1, 900}, true)} {
		if len(a.ticks) < 2 {
			t.Errorf("axis %+v has %d ticks", a, len(a.ticks))
		}
		for _, v := range a.ticks {
			if s := a.format(v); strings.ContainsAny(s, "e+") {
				t.Errorf("tick %v reads %q", v, s)
			}
		}
	}
}

func TestSVGLabelsDoNotOverlap(t *testing.T) {
	c := Chart{Name: "t", XLabel: "x", YLabel: "y", Markers: []Marker{{X: 2900, Label: "sweet spot", Color: "#7b3fc4"}, {X: 2950, Label: "SLO limit", Color: "#1a7f4b"}}}
	s := Series{Name: "P99", Color: "#e15759", Line: true}
	for i, x := range []float64{2000, 2500, 2800, 2900, 2950, 2960} {
		s.Points = append(s.Points, Point{X: x, Y: float64(10 + i*i), Label: "c=" + string(rune('1'+i)), Title: "level"})
	}
	c.Series = []Series{s}
	out := string(c.SVG())
	for _, want := range []string{"sweet spot", "SLO limit", "<title>level</title>", "x</text>"} {
		if !strings.Contains(out, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	if strings.Contains(out, "e+") {
		t.Errorf("exponent in %s", out)
	}
	if (&Chart{Name: "e"}).SVG() == "" {
		t.Error("an empty chart draws nothing at all")
	}
}

// Named ticks stand for categories; where they do not fit, every other one keeps its name.
func TestCategoryTicks(t *testing.T) {
	c := Chart{Name: "levels", Width: 300}
	s := Series{Color: "#4e79a7", Line: true}
	for i := 0; i < 12; i++ {
		s.Points = append(s.Points, Point{X: float64(i), Y: float64(i * i)})
		c.XTicks = append(c.XTicks, Tick{At: float64(i), Label: "concurrency " + string(rune('a'+i))})
	}
	c.Series = []Series{s}
	out := string(c.SVG())
	if !strings.Contains(out, ">concurrency a<") || strings.Contains(out, ">concurrency b<") {
		t.Errorf("a 300px chart of 12 long category names should keep the first and drop the second:\n%s", out)
	}
}
