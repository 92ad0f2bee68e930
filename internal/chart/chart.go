// Package chart draws the scatter, line and timeline charts of llmbench's HTML pages
// (report.html, plan.html, calibration.html) as inline SVG, so that every page reads the same way: numbered
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
	// YFraction draws y as a fraction, 0 to 100%, whatever the points span.
	YFraction bool
	// XTicks, when set, are the x axis' ticks in place of numbers: categories such as load
	// levels drawn at X 0, 1, 2...
	XTicks []Tick
	// XRange and YRange, when Hi > Lo, are the axes' ranges exactly, in place of ranges fitted
	// to the data: a timeline's rows 0 to n, say.
	XRange, YRange Range
	// YDown draws y growing downwards: rows counted from the top.
	YDown   bool
	Series  []Series
	Markers []Marker
	Guides  []Guide
	Bands   []Band
	Spans   []Span
	// PlotLeft, when set, is the least room left of the plot, so that charts stacked on one
	// time axis line up whatever their y ticks' widths.
	PlotLeft float64
	// Pointer writes the plot's box and the axes' ranges into the SVG's data-plot,
	// data-x and data-y attributes, for a page's script to map the pointer to data.
	Pointer bool
}

// Range is an axis' range.
type Range struct{ Lo, Hi float64 }

func (r Range) set() bool { return r.Hi > r.Lo }

// Band shades the plot between X0 and X1 beneath the grid, as a level's span on a time
// axis; its label goes at its top where it overlaps nothing.
type Band struct {
	X0, X1      float64
	Label       string
	Fill, Color string // the shade and the label's colour
}

// Span is a rectangle in data coordinates, as a request's phase on a timeline. Spans of
// one colour and fading are drawn as one path, so thousands stay small; each is at least
// 0.75 pixels wide, so that short phases still show.
type Span struct {
	X0, X1, Y0, Y1 float64
	Color          string
	Faded          bool // drawn at a third of its opacity
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

// The room above the plot and below it (the x ticks and the axis title).
const plotTop, plotBottom = 14, 48

// PlotHeight is the height in pixels of the plot of a chart height pixels tall: a
// timeline's room for rows.
func PlotHeight(height int) int { return height - plotTop - plotBottom }

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
	for _, sp := range c.Spans {
		if c.spanOK(sp) {
			return false
		}
	}
	return true
}

func (c *Chart) spanOK(sp Span) bool {
	return ok(sp.X0, c.XLog) && ok(sp.X1, c.XLog) && ok(sp.Y0, c.YLog) && ok(sp.Y1, c.YLog) && sp.X1 >= sp.X0
}

// SVG draws the chart; a chart without points is a short note instead.
func (c *Chart) SVG() template.HTML {
	if c.Empty() {
		return `<p class="nodata">Nothing to draw.</p>`
	}
	f := c.layout()
	var b strings.Builder
	b.WriteString(legend(c.Series))
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="%s" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" style="max-width:100%%;height:auto;display:block" role="img" aria-label="%s" font-family="system-ui, sans-serif" font-size="%.0f"%s>`,
		html.EscapeString(c.Name), f.w, f.h, f.w, f.h, html.EscapeString(c.Title), fontSize, f.pointer())
	f.bands(&b)
	f.axes(&b)
	f.spans(&b)
	f.lines(&b)
	// Points before labels, so that labels avoid every point, not only those drawn before them.
	points := f.points(&b)
	f.labels(&b, points, f.lineBoxes())
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// frame is a chart laid out: its size, plot area and axes.
type frame struct {
	c      *Chart
	w, h   float64
	plot   box
	xa, ya axis
	id     string // of the clip path
}

func (f *frame) sx(v float64) float64 { return f.plot.x0 + f.xa.frac(v)*(f.plot.x1-f.plot.x0) }
func (f *frame) sy(v float64) float64 {
	if f.c.YDown {
		return f.plot.y0 + f.ya.frac(v)*(f.plot.y1-f.plot.y0)
	}
	return f.plot.y1 - f.ya.frac(v)*(f.plot.y1-f.plot.y0)
}

// pointer is the SVG's data-plot, data-x and data-y attributes, with Pointer.
func (f *frame) pointer() string {
	if !f.c.Pointer {
		return ""
	}
	p := f.plot
	return fmt.Sprintf(` data-plot="%.1f %.1f %.1f %.1f" data-x="%g %g" data-y="%g %g"`, p.x0, p.y0, p.x1, p.y1, f.xa.lo, f.xa.hi, f.ya.lo, f.ya.hi)
}

// drawn says whether point p can be drawn on the chart's axes.
func (f *frame) drawn(p Point) bool { return ok(p.X, f.c.XLog) && ok(p.Y, f.c.YLog) }

// layout fits the axes to the points and markers and sizes the margins to the tick labels.
func (c *Chart) layout() *frame {
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
	for _, sp := range c.Spans {
		if c.spanOK(sp) {
			xs, ys = append(xs, sp.X0, sp.X1), append(ys, sp.Y0, sp.Y1)
		}
	}
	for _, bd := range c.Bands {
		if ok(bd.X0, c.XLog) && ok(bd.X1, c.XLog) {
			xs = append(xs, bd.X0, bd.X1)
		}
	}
	f := &frame{c: c, w: float64(c.Width), h: float64(c.Height), id: "chart-" + idUnsafe.ReplaceAllString(c.Name, "-")}
	if f.w == 0 {
		f.w = 600
	}
	if f.h == 0 {
		f.h = 340
	}
	f.xa, f.ya = fit(xs, c.XLog), fit(ys, c.YLog)
	if c.SameRange {
		f.xa = fit(append(append([]float64{}, xs...), ys...), c.XLog || c.YLog)
		f.ya = f.xa
	}
	if len(c.XTicks) > 0 {
		f.xa = categories(c.XTicks)
	}
	if c.YFraction {
		f.ya = linear(0, 1, 0.2)
		f.ya.percent = true
	}
	// An exact range gets a tick about every 110 pixels across and every 50 down, before thinning.
	if c.XRange.set() && !c.XLog {
		f.xa = exactStep(c.XRange.Lo, c.XRange.Hi, niceStep((c.XRange.Hi-c.XRange.Lo)/math.Max(4, (f.w-100)/110)))
	}
	if c.YRange.set() && !c.YLog {
		f.ya = exactStep(c.YRange.Lo, c.YRange.Hi, niceStep((c.YRange.Hi-c.YRange.Lo)/math.Max(4, float64(PlotHeight(int(f.h)))/50)))
	}
	// The left margin holds the widest y tick label and the rotated axis title.
	ylw := 0.0
	for _, t := range f.ya.ticks {
		ylw = math.Max(ylw, textWidth(f.ya.format(t), fontSize))
	}
	f.plot = box{x0: math.Max(c.PlotLeft, 22+ylw+8), y0: plotTop, x1: f.w - 16, y1: f.h - plotBottom}
	// Thin the ticks until their labels have room (log ticks are not evenly spaced).
	for len(f.xa.ticks) > 2 && f.xa.crowded(f.plot.x1-f.plot.x0, func(s string) float64 { return textWidth(s, fontSize) + 10 }) {
		f.xa = f.xa.coarser()
	}
	for len(f.ya.ticks) > 2 && f.ya.crowded(f.plot.y1-f.plot.y0, func(string) float64 { return fontSize + 6 }) {
		f.ya = f.ya.coarser()
	}
	return f
}

// axes draws the grid, the numbered ticks and the axis titles.
func (f *frame) axes(b *strings.Builder) {
	p := f.plot
	fmt.Fprintf(b, `<clipPath id="%s-clip"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>`, f.id, p.x0, p.y0, p.x1-p.x0, p.y1-p.y0)
	for _, t := range f.xa.ticks {
		x := f.sx(t)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e8ebf0"/><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#8a93a3"/>`, x, x, p.y0, p.y1, x, x, p.y1, p.y1+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#4a5361">%s</text>`, x, p.y1+18, html.EscapeString(f.xa.format(t)))
	}
	for _, t := range f.ya.ticks {
		y := f.sy(t)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e8ebf0"/><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#8a93a3"/>`, p.x0, p.x1, y, y, p.x0-4, p.x0, y, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#4a5361">%s</text>`, p.x0-7, y+4, html.EscapeString(f.ya.format(t)))
	}
	fmt.Fprintf(b, `<path d="M%.1f %.1fV%.1fH%.1f" fill="none" stroke="#8a93a3"/>`, p.x0, p.y0, p.y1, p.x1)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="%.0f" fill="#1d2330">%s</text>`, (p.x0+p.x1)/2, f.h-8, labelSize, html.EscapeString(f.c.XLabel))
	fmt.Fprintf(b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle" font-size="%.0f" fill="#1d2330">%s</text>`, (p.y0+p.y1)/2, labelSize, html.EscapeString(f.c.YLabel))
}

// lines draws the guides, the markers' lines and the series' lines, clipped to the plot.
func (f *frame) lines(b *strings.Builder) {
	fmt.Fprintf(b, `<g clip-path="url(#%s-clip)">`, f.id)
	for _, g := range f.c.Guides {
		// Sampled, so that y = K·x is right on any pair of scales.
		var pts []string
		for i := 0; i <= 40; i++ {
			x := f.xa.at(float64(i) / 40)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.sx(x), f.sy(g.K*x)))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="#b0b6c2"%s/>`, strings.Join(pts, " "), dash(g.Dash, "3 3"))
	}
	for _, m := range f.c.Markers {
		if ok(m.X, f.c.XLog) {
			fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="4 3"/>`, f.sx(m.X), f.sx(m.X), f.plot.y0, f.plot.y1, m.Color)
		}
	}
	for _, s := range f.c.Series {
		if !s.Line {
			continue
		}
		var pts []string
		for _, p := range s.Points {
			if f.drawn(p) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.sx(p.X), f.sy(p.Y)))
			}
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, strings.Join(pts, " "), s.Color, dash(s.Dash, "6 4"))
	}
	b.WriteString(`</g>`)
}

// bands shades the bands' spans of x beneath everything else.
func (f *frame) bands(b *strings.Builder) {
	for _, bd := range f.c.Bands {
		if !ok(bd.X0, f.c.XLog) || !ok(bd.X1, f.c.XLog) {
			continue
		}
		x0, x1 := math.Max(f.plot.x0, f.sx(bd.X0)), math.Min(f.plot.x1, f.sx(bd.X1))
		if x1 > x0 {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x0, f.plot.y0, x1-x0, f.plot.y1-f.plot.y0, bd.Fill)
		}
	}
}

// spans draws the spans, one path per colour and fading, in the order each first appears.
func (f *frame) spans(b *strings.Builder) {
	if len(f.c.Spans) == 0 {
		return
	}
	type key struct {
		color string
		faded bool
	}
	var order []key
	paths := map[key]*strings.Builder{}
	for _, sp := range f.c.Spans {
		if !f.c.spanOK(sp) {
			continue
		}
		k := key{sp.Color, sp.Faded}
		p := paths[k]
		if p == nil {
			p = &strings.Builder{}
			paths[k] = p
			order = append(order, k)
		}
		x0, x1 := f.sx(sp.X0), f.sx(sp.X1)
		y0, y1 := f.sy(sp.Y0), f.sy(sp.Y1)
		fmt.Fprintf(p, "M%.1f %.1fh%.2fv%.2fh%.2fz", x0, math.Min(y0, y1), math.Max(x1-x0, 0.75), math.Abs(y1-y0), -math.Max(x1-x0, 0.75))
	}
	fmt.Fprintf(b, `<g clip-path="url(#%s-clip)">`, f.id)
	for _, k := range order {
		op := ""
		if k.faded {
			op = ` fill-opacity="0.35"`
		}
		fmt.Fprintf(b, `<path d="%s" fill="%s"%s/>`, paths[k].String(), k.color, op)
	}
	b.WriteString(`</g>`)
}

func dash(on bool, pattern string) string {
	if !on {
		return ""
	}
	return ` stroke-dasharray="` + pattern + `"`
}

// points draws the series' points with their tooltips and returns their boxes.
func (f *frame) points(b *strings.Builder) []box {
	var boxes []box
	for i := range f.c.Series {
		s := &f.c.Series[i]
		if s.NoPoints {
			continue
		}
		for _, p := range s.Points {
			if !f.drawn(p) {
				continue
			}
			x, y, r := f.sx(p.X), f.sy(p.Y), radius(s, p)
			col := s.Color
			if p.Color != "" {
				col = p.Color
			}
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" stroke="#fff" stroke-width="1">`, x, y, r, col)
			if p.Title != "" {
				fmt.Fprintf(b, `<title>%s</title>`, html.EscapeString(p.Title))
			}
			b.WriteString(`</circle>`)
			boxes = append(boxes, box{x - r, y - r, x + r, y + r})
		}
	}
	return boxes
}

// lineBoxes are the markers' and series' lines as small boxes: soft obstacles, that a
// label avoids where it can.
func (f *frame) lineBoxes() []box {
	var boxes []box
	for _, m := range f.c.Markers {
		if ok(m.X, f.c.XLog) {
			boxes = append(boxes, box{f.sx(m.X) - 1.5, f.plot.y0, f.sx(m.X) + 1.5, f.plot.y1})
		}
	}
	for _, s := range f.c.Series {
		if !s.Line {
			continue
		}
		var px, py float64
		first := true
		for _, p := range s.Points {
			if !f.drawn(p) {
				continue
			}
			x, y := f.sx(p.X), f.sy(p.Y)
			if !first {
				n := math.Ceil(math.Hypot(x-px, y-py) / 3)
				for k := 0.0; k <= n; k++ {
					qx, qy := px+(x-px)*k/n, py+(y-py)*k/n
					boxes = append(boxes, box{qx - 1, qy - 1, qx + 1, qy + 1})
				}
			}
			px, py, first = x, y, false
		}
	}
	return boxes
}

// labels draws the markers' labels along their lines from the top down, then the points'
// labels around them, each where it overlaps no text and no point drawn.
func (f *frame) labels(b *strings.Builder, points, lines []box) {
	var placed []box
	for _, bd := range f.c.Bands {
		if bd.Label == "" || !ok(bd.X0, f.c.XLog) || !ok(bd.X1, f.c.XLog) {
			continue
		}
		x0, x1 := math.Max(f.plot.x0, f.sx(bd.X0)), math.Min(f.plot.x1, f.sx(bd.X1))
		// Within the band's own span, else it would name its neighbour.
		within := box{x0, f.plot.y0, x1, f.plot.y1}
		var cands []cand
		for k := 0; k < 3; k++ {
			cands = append(cands, cand{x0 + 3, f.plot.y0 + 12 + float64(k)*14, "start"})
		}
		if bx, c, found := place(bd.Label, cands, within, placed, points, lines); found {
			placed = append(placed, bx)
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="%s">%s</text>`, c.x, c.y, bd.Color, html.EscapeString(bd.Label))
		}
	}
	for _, m := range f.c.Markers {
		if !ok(m.X, f.c.XLog) || m.Label == "" {
			continue
		}
		x := f.sx(m.X)
		var cands []cand
		for k := 0; k < 8; k++ {
			y := f.plot.y0 + 14 + float64(k)*15
			cands = append(cands, cand{x + 4, y, "start"}, cand{x - 4, y, "end"})
		}
		if bx, c, found := place(m.Label, cands, f.plot, placed, points, lines); found {
			placed = append(placed, bx)
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="%s" font-weight="600">%s</text>`, c.x, c.y, c.anchor, m.Color, html.EscapeString(m.Label))
		}
	}
	for i := range f.c.Series {
		s := &f.c.Series[i]
		for _, p := range s.Points {
			if p.Label == "" || !f.drawn(p) {
				continue
			}
			x, y, r := f.sx(p.X), f.sy(p.Y), radius(s, p)+3
			var cands []cand
			for _, d := range []float64{0, 8, 18} {
				cands = append(cands,
					cand{x, y - r - d - 2, "middle"},               // above
					cand{x, y + r + d + fontSize, "middle"},        // below
					cand{x + r + d, y + 4, "start"},                // right
					cand{x - r - d, y + 4, "end"},                  // left
					cand{x + r + d, y - r - d, "start"},            // above right
					cand{x - r - d, y - r - d, "end"},              // above left
					cand{x + r + d, y + r + d + fontSize, "start"}, // below right
					cand{x - r - d, y + r + d + fontSize, "end"},   // below left
				)
			}
			if bx, c, found := place(p.Label, cands, f.plot, placed, points, lines); found {
				placed = append(placed, bx)
				fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="#4a5361">%s</text>`, c.x, c.y, c.anchor, html.EscapeString(p.Label))
			}
		}
	}
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
