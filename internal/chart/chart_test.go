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

// Spans of one colour are one path; an exact, downward y axis puts row 0 at the top; a band's
// label stays within its band; Pointer writes the plot's box for a page's script.
func TestSpansBandsExactRanges(t *testing.T) {
	c := Chart{Name: "rows", Width: 600, Height: 300, YDown: true, YRange: Range{Hi: 40}, XRange: Range{Lo: 2, Hi: 13}, Pointer: true,
		Bands: []Band{{X0: 2, X1: 7, Label: "c=1", Fill: "#eee", Color: "#123"}, {X0: 7, X1: 7.05, Label: "c=4", Fill: "#ddd", Color: "#456"}}}
	for k := range 40 {
		c.Spans = append(c.Spans, Span{X0: 2 + float64(k)/4, X1: 3 + float64(k)/4, Y0: float64(k), Y1: float64(k + 1), Color: "#4e79a7"},
			Span{X0: 3 + float64(k)/4, X1: 3 + float64(k)/4, Y0: float64(k), Y1: float64(k + 1), Color: "#f28e2b", Faded: k < 2})
	}
	out := string(c.SVG())
	if n := strings.Count(out, `fill="#4e79a7"`); n != 1 {
		t.Errorf("%d paths of one colour, want 1", n)
	}
	if !strings.Contains(out, `fill="#f28e2b" fill-opacity="0.35"`) {
		t.Error("faded spans are not drawn faded")
	}
	// A zero-length span still shows: 0.75 pixels wide.
	if !strings.Contains(out, "h0.75") {
		t.Error("a zero-length span has no width")
	}
	f := c.layout()
	if f.sy(0) != f.plot.y0 || f.sy(40) != f.plot.y1 {
		t.Errorf("y 0 at %v and 40 at %v, want the plot's top %v and bottom %v", f.sy(0), f.sy(40), f.plot.y0, f.plot.y1)
	}
	if f.xa.lo != 2 || f.xa.hi != 13 || f.xa.ticks[0] < 2 || f.xa.ticks[len(f.xa.ticks)-1] > 13 {
		t.Errorf("x axis %v..%v with ticks %v, want exactly 2..13 with ticks inside", f.xa.lo, f.xa.hi, f.xa.ticks)
	}
	if !strings.Contains(out, ">c=1</text>") || strings.Contains(out, ">c=4</text>") {
		t.Error("a band's label should be drawn where it fits in its band, and not where it does not")
	}
	if !strings.Contains(out, `data-y="0 40"`) || !strings.Contains(out, `data-plot="`) {
		t.Errorf("Pointer: no data-plot and data-y in %.300s", out)
	}
	if (&Chart{Name: "n"}).SVG() != `<p class="nodata">Nothing to draw.</p>` || strings.Contains(string((&Chart{Name: "p", Spans: c.Spans[:1]}).SVG()), "data-plot") {
		t.Error("a chart without Pointer writes data-plot")
	}
}
