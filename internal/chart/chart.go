// Package chart draws the scatter and line charts of llmbench's HTML pages (report.html,
// plan.html, calibration.html) as inline SVG, so that every page reads the same way: numbered
// and labelled axes fitted to the data, tick values written as people write them (10,000,
// 1.5M, never 1e+04), point labels placed where they overlap nothing, and each point's
// details in its tooltip. The SVG needs no script and no stylesheet.
package chart

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"regexp"
	"strings"
)

// Chart is one chart. Its zero sizes draw 600 × 340.
type Chart struct {
	Name           string // unique on the page: the SVG's data-chart and its clip path's id
	Title          string // the SVG's accessible name
	Width, Height  int
	XLabel, YLabel string
	XLog, YLog     bool // logarithmic axes (positive values only)
	// SameRange gives both axes one range, as measured-against-predicted charts need for
	// their diagonal to be at 45°.
	SameRange bool
	// XTicks, when set, are the x axis' ticks in place of numbers: categories such as load
	// levels drawn at X 0, 1, 2...
	XTicks  []Tick
	Series  []Series
	Markers []Marker
	Guides  []Guide
}

// Tick is a labelled place on an axis.
type Tick struct {
	At    float64
	Label string
}

// Series is a set of points in one colour, joined by a line in their order when Line.
type Series struct {
	Name     string // in the legend; "" keeps it out
	Color    string
	Line     bool
	Dash     bool // a dashed line
	NoPoints bool // the line only
	Radius   float64
	Points   []Point
}

// Point is one datum. Label is drawn beside it where it overlaps no other text (else it is
// left out: Title, the tooltip, still says it).
type Point struct {
	X, Y   float64
	Label  string
	Title  string
	Color  string  // overrides the series'
	Radius float64 // overrides the series'
}

// Marker is a labelled vertical line at X, e.g. a chosen level.
type Marker struct {
	X            float64
	Label, Color string
}

// Guide is the reference line y = K·x across the plot (K 1: the diagonal).
type Guide struct {
	K    float64
	Dash bool
}

const (
	fontSize  = 11.0
	labelSize = 12.0
	// charWidth over-estimates a character's advance in the sans-serif fonts browsers pick
	// (DejaVu Sans is the widest common one), so that estimated boxes hold the drawn text.
	charWidth = 0.66
)

func textWidth(s string, size float64) float64 {
	return float64(len([]rune(s)))*size*charWidth + 2
}

type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlap(b box) float64 {
	w := math.Min(a.x1, b.x1) - math.Max(a.x0, b.x0)
	h := math.Min(a.y1, b.y1) - math.Max(a.y0, b.y0)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

func (a box) inside(b box) bool {
	return a.x0 >= b.x0 && a.y0 >= b.y0 && a.x1 <= b.x1 && a.y1 <= b.y1
}

// textBox is the box of text at baseline y anchored at x ("start", "middle" or "end").
func textBox(s string, size, x, y float64, anchor string) box {
	w := textWidth(s, size)
	x0 := x
	switch anchor {
	case "middle":
		x0 = x - w/2
	case "end":
		x0 = x - w
	}
	return box{x0, y - size, x0 + w, y + size*0.3}
}

var idUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Empty says whether the chart has no point to draw.
func (c *Chart) Empty() bool {
	for _, s := range c.Series {
		for _, p := range s.Points {
			if ok(p.X, c.XLog) && ok(p.Y, c.YLog) {
				return false
			}
		}
	}
	return true
}

// SVG draws the chart; a chart without points is a short note instead.
func (c *Chart) SVG() template.HTML {
	var xs, ys []float64
	for _, s := range c.Series {
		for _, p := range s.Points {
			if ok(p.X, c.XLog) && ok(p.Y, c.YLog) {
				xs, ys = append(xs, p.X), append(ys, p.Y)
			}
		}
	}
	for _, m := range c.Markers {
		if ok(m.X, c.XLog) {
			xs = append(xs, m.X)
		}
	}
	if len(ys) == 0 {
		return `<p class="nodata">Nothing to draw.</p>`
	}
	W, H := float64(c.Width), float64(c.Height)
	if W == 0 {
		W = 600
	}
	if H == 0 {
		H = 340
	}
	xa, ya := fit(xs, c.XLog), fit(ys, c.YLog)
	if c.SameRange {
		xa = fit(append(append([]float64{}, xs...), ys...), c.XLog || c.YLog)
		ya = xa
	}
	if len(c.XTicks) > 0 {
		xa = categories(c.XTicks)
	}
	// The left margin holds the widest y tick label and the rotated axis title.
	ylw := 0.0
	for _, t := range ya.ticks {
		ylw = math.Max(ylw, textWidth(ya.format(t), fontSize))
	}
	plot := box{x0: 22 + ylw + 8, y0: 14, x1: W - 16, y1: H - 48}
	// Thin the ticks until their labels have room (log ticks are not evenly spaced).
	for len(xa.ticks) > 2 && xa.crowded(plot.x1-plot.x0, func(s string) float64 { return textWidth(s, fontSize) + 10 }) {
		xa = xa.coarser()
	}
	for len(ya.ticks) > 2 && ya.crowded(plot.y1-plot.y0, func(string) float64 { return fontSize + 6 }) {
		ya = ya.coarser()
	}
	sx := func(v float64) float64 { return plot.x0 + xa.frac(v)*(plot.x1-plot.x0) }
	sy := func(v float64) float64 { return plot.y1 - ya.frac(v)*(plot.y1-plot.y0) }

	var b strings.Builder
	id := "chart-" + idUnsafe.ReplaceAllString(c.Name, "-")
	b.WriteString(legend(c.Series))
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="%s" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" style="max-width:100%%;height:auto;display:block" role="img" aria-label="%s" font-family="system-ui, sans-serif" font-size="%.0f">`,
		html.EscapeString(c.Name), W, H, W, H, html.EscapeString(c.Title), fontSize)
	fmt.Fprintf(&b, `<clipPath id="%s-clip"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>`, id, plot.x0, plot.y0, plot.x1-plot.x0, plot.y1-plot.y0)
	for _, t := range xa.ticks {
		x := sx(t)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e8ebf0"/><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#8a93a3"/>`, x, x, plot.y0, plot.y1, x, x, plot.y1, plot.y1+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#4a5361">%s</text>`, x, plot.y1+18, xa.format(t))
	}
	for _, t := range ya.ticks {
		y := sy(t)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e8ebf0"/><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#8a93a3"/>`, plot.x0, plot.x1, y, y, plot.x0-4, plot.x0, y, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#4a5361">%s</text>`, plot.x0-7, y+4, ya.format(t))
	}
	fmt.Fprintf(&b, `<path d="M%.1f %.1fV%.1fH%.1f" fill="none" stroke="#8a93a3"/>`, plot.x0, plot.y0, plot.y1, plot.x1)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="%.0f" fill="#1d2330">%s</text>`, (plot.x0+plot.x1)/2, H-8, labelSize, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle" font-size="%.0f" fill="#1d2330">%s</text>`, (plot.y0+plot.y1)/2, labelSize, html.EscapeString(c.YLabel))

	fmt.Fprintf(&b, `<g clip-path="url(#%s-clip)">`, id)
	for _, g := range c.Guides {
		// Sampled, so that y = K·x is right on any pair of scales.
		var pts []string
		for i := 0; i <= 40; i++ {
			x := xa.at(float64(i) / 40)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(x), sy(g.K*x)))
		}
		dash := ""
		if g.Dash {
			dash = ` stroke-dasharray="3 3"`
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#b0b6c2"%s/>`, strings.Join(pts, " "), dash)
	}
	for _, m := range c.Markers {
		if ok(m.X, c.XLog) {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="4 3"/>`, sx(m.X), sx(m.X), plot.y0, plot.y1, m.Color)
		}
	}
	for _, s := range c.Series {
		if !s.Line {
			continue
		}
		var pts []string
		for _, p := range s.Points {
			if ok(p.X, c.XLog) && ok(p.Y, c.YLog) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(p.X), sy(p.Y)))
			}
		}
		dash := ""
		if s.Dash {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, strings.Join(pts, " "), s.Color, dash)
	}
	b.WriteString(`</g>`)

	// Points first, so that labels avoid every point, not only those drawn before them.
	var obstacles []box
	type placed struct {
		x, y float64
		text string
		p    Point
		s    *Series
	}
	var todo []placed
	for i := range c.Series {
		s := &c.Series[i]
		for _, p := range s.Points {
			if !ok(p.X, c.XLog) || !ok(p.Y, c.YLog) {
				continue
			}
			x, y := sx(p.X), sy(p.Y)
			r := radius(s, p)
			if !s.NoPoints {
				col := s.Color
				if p.Color != "" {
					col = p.Color
				}
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" stroke="#fff" stroke-width="1">`, x, y, r, col)
				if p.Title != "" {
					fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(p.Title))
				}
				b.WriteString(`</circle>`)
				obstacles = append(obstacles, box{x - r, y - r, x + r, y + r})
			}
			if p.Label != "" {
				todo = append(todo, placed{x: x, y: y, text: p.Label, p: p, s: s})
			}
		}
	}
	// Lines are soft obstacles: a label goes where it crosses none if it can.
	var lines []box
	for _, m := range c.Markers {
		if ok(m.X, c.XLog) {
			lines = append(lines, box{sx(m.X) - 1.5, plot.y0, sx(m.X) + 1.5, plot.y1})
		}
	}
	for _, s := range c.Series {
		if !s.Line {
			continue
		}
		var px, py float64
		first := true
		for _, p := range s.Points {
			if !ok(p.X, c.XLog) || !ok(p.Y, c.YLog) {
				continue
			}
			x, y := sx(p.X), sy(p.Y)
			if !first {
				n := math.Ceil(math.Hypot(x-px, y-py) / 3)
				for k := 0.0; k <= n; k++ {
					qx, qy := px+(x-px)*k/n, py+(y-py)*k/n
					lines = append(lines, box{qx - 1, qy - 1, qx + 1, qy + 1})
				}
			}
			px, py, first = x, y, false
		}
	}
	var labels []box
	// Marker labels along their line, from the top down, on the side with room.
	for _, m := range c.Markers {
		if !ok(m.X, c.XLog) || m.Label == "" {
			continue
		}
		x := sx(m.X)
		var cands []cand
		for k := 0; k < 8; k++ {
			y := plot.y0 + 14 + float64(k)*15
			cands = append(cands, cand{x + 4, y, "start"}, cand{x - 4, y, "end"})
		}
		if bx, c, found := place(m.Label, cands, plot, labels, obstacles, lines); found {
			labels = append(labels, bx)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="%s" font-weight="600">%s</text>`, c.x, c.y, c.anchor, m.Color, html.EscapeString(m.Label))
		}
	}
	for _, t := range todo {
		r := radius(t.s, t.p) + 3
		var cands []cand
		for _, d := range []float64{0, 8, 18} {
			cands = append(cands,
				cand{t.x, t.y - r - d - 2, "middle"},               // above
				cand{t.x, t.y + r + d + fontSize, "middle"},        // below
				cand{t.x + r + d, t.y + 4, "start"},                // right
				cand{t.x - r - d, t.y + 4, "end"},                  // left
				cand{t.x + r + d, t.y - r - d, "start"},            // above right
				cand{t.x - r - d, t.y - r - d, "end"},              // above left
				cand{t.x + r + d, t.y + r + d + fontSize, "start"}, // below right
				cand{t.x - r - d, t.y + r + d + fontSize, "end"},   // below left
			)
		}
		if bx, c, found := place(t.text, cands, plot, labels, obstacles, lines); found {
			labels = append(labels, bx)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="#4a5361">%s</text>`, c.x, c.y, c.anchor, html.EscapeString(t.text))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

type cand struct {
	x, y   float64
	anchor string
}

// place picks the first candidate position whose box is inside the plot and overlaps no
// label, point or line; else the first that overlaps no label or point; false when none
// does (the label is left out, not drawn over another).
func place(text string, cands []cand, plot box, labels, points, lines []box) (box, cand, bool) {
	clear := func(bx box, sets ...[]box) bool {
		for _, set := range sets {
			for _, o := range set {
				if bx.overlap(o) > 0 {
					return false
				}
			}
		}
		return true
	}
	for _, soft := range [][]box{lines, nil} {
		for _, c := range cands {
			bx := textBox(text, fontSize, c.x, c.y, c.anchor)
			if bx.inside(plot) && clear(bx, labels, points, soft) {
				return bx, c, true
			}
		}
	}
	return box{}, cand{}, false
}

func radius(s *Series, p Point) float64 {
	switch {
	case p.Radius > 0:
		return p.Radius
	case s.Radius > 0:
		return s.Radius
	}
	return 4
}

func ok(v float64, log bool) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0)
}

// legend is the series' names and colours, as HTML above the chart.
func legend(series []Series) string {
	var items []string
	for _, s := range series {
		if s.Name == "" {
			continue
		}
		mark := fmt.Sprintf(`<i style="display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px;vertical-align:-1px;background:%s"></i>`, s.Color)
		if s.NoPoints {
			style := "solid"
			if s.Dash {
				style = "dashed"
			}
			mark = fmt.Sprintf(`<i style="display:inline-block;width:16px;margin-right:4px;vertical-align:3px;border-top:2px %s %s"></i>`, style, s.Color)
		}
		items = append(items, `<span style="margin-right:14px;white-space:nowrap">`+mark+html.EscapeString(s.Name)+`</span>`)
	}
	if len(items) == 0 {
		return ""
	}
	return `<div class="chart-legend" style="font-size:12px;color:#4a5361;margin:2px 0 4px">` + strings.Join(items, " ") + `</div>`
}
