package report

import (
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/chart"
	"github.com/llmbench/llmbench/internal/metrics"
)

// tradeoffChart is metric key's P50 and P99 against output throughput, a point per level
// labelled with its load, and the sweet spot and SLO limit marked. It is drawn on the
// server (internal/chart), as plan.html and calibration.html draw theirs, so that its axes
// fit the levels and its labels overlap nothing.
func tradeoffChart(s *Summary, name, key, label string) template.HTML {
	p50 := chart.Series{Name: label + " P50 (ms)", Color: "#4e79a7", Line: true}
	p99 := chart.Series{Name: label + " P99 (ms)", Color: "#e15759", Line: true, Dash: true}
	for i := range s.Levels {
		l := &s.Levels[i]
		st, ok := l.Stats(key)
		if !ok || st == nil || !finite(l.OutputThroughput) {
			continue
		}
		level := levelName(s.Levels, i)
		var top *chart.Point
		for _, sp := range []struct {
			p float64
			s *chart.Series
		}{{50, &p50}, {99, &p99}} {
			pc, ok := st.Get(sp.p)
			if !ok || !finite(pc.Value) {
				continue
			}
			sp.s.Points = append(sp.s.Points, chart.Point{X: l.OutputThroughput, Y: pc.Value,
				Title: level + ": " + fmtNum(l.OutputThroughput) + " output tok/s, " + label + " " + metrics.Key(sp.p) + " " + fmtNum(pc.Value) + " ms"})
			top = &sp.s.Points[len(sp.s.Points)-1]
		}
		if top != nil {
			top.Label = shortLevelName(s.Levels, i)
		}
	}
	c := chart.Chart{Name: name, Title: label + " vs output throughput", Width: 600, Height: 320,
		XLabel: "output throughput (tok/s)", YLabel: label + " (ms)", Series: []chart.Series{p50, p99}}
	for _, m := range []struct {
		p            *metrics.Pick
		label, color string
	}{{s.SweetSpot, "sweet spot", "#7b3fc4"}, {s.SLOLimit, "SLO limit", "#1a7f4b"}} {
		if i := pickIndex(m.p); i >= 0 && i < len(s.Levels) && finite(s.Levels[i].OutputThroughput) {
			c.Markers = append(c.Markers, chart.Marker{X: s.Levels[i].OutputThroughput, Label: m.label, Color: m.color})
		}
	}
	if c.Empty() {
		return template.HTML(`<div class="nodata">No level has ` + template.HTMLEscapeString(label) + ` figures.</div>`)
	}
	return c.SVG()
}

// shortLevelName is a point's label: c=8, 2/s, else the level's name.
func shortLevelName(levels []Level, i int) string {
	l := &levels[i]
	switch {
	case l.Concurrency > 0:
		return "c=" + strconv.Itoa(l.Concurrency)
	case l.Rate > 0:
		return strconv.FormatFloat(l.Rate, 'f', -1, 64) + "/s"
	}
	return levelName(levels, i)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// pctColors are the percentiles' colours.
var pctColors = map[string]string{"p50": "#4e79a7", "p90": "#59a14f", "p95": "#edc948", "p99": "#e15759", "p99.9": "#7b3fc4"}

// percentileChart is metric m's percentiles (ps) across the levels, a line per percentile
// and a level per x tick.
func percentileChart(m *metrics.Metric, levels []Level, ps []float64) template.HTML {
	c := chart.Chart{Name: "percentiles-" + m.JSON, Title: m.Description + ": percentiles by level", Width: 1160, Height: 300,
		XLabel: "load level", YLabel: "latency (ms)"}
	cat := []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}
	for j, p := range ps {
		k := metrics.Key(p)
		col, ok := pctColors[k]
		if !ok {
			col = cat[j%len(cat)]
		}
		s := chart.Series{Name: strings.ToUpper(k), Color: col, Line: true}
		for i := range levels {
			st, ok := levels[i].Stats(m.Key)
			if !ok || st == nil {
				continue
			}
			if pc, ok := st.Get(p); ok && finite(pc.Value) {
				s.Points = append(s.Points, chart.Point{X: float64(i), Y: pc.Value,
					Title: levelName(levels, i) + ": " + strings.ToUpper(k) + " " + fmtNum(pc.Value) + " ms"})
			}
		}
		c.Series = append(c.Series, s)
	}
	for i := range levels {
		c.XTicks = append(c.XTicks, chart.Tick{At: float64(i), Label: shortLevelName(levels, i)})
	}
	if c.Empty() {
		return `<div class="nodata">No percentiles for this metric.</div>`
	}
	return c.SVG()
}

// cdfChart is metric m's distribution per level (ch.Levels[i].CDF at ch.CDFGrid), a line per
// level in the levels' sequential colours, on a linear or a logarithmic latency axis.
func cdfChart(m *metrics.Metric, ch *Charts, levels []Level, logX bool) template.HTML {
	if ch == nil {
		return `<div class="nodata">Per-request data (records.jsonl) was not given.</div>`
	}
	name := "cdf-" + m.JSON
	if logX {
		name += "-log"
	}
	c := chart.Chart{Name: name, Title: m.Short + " distribution", Width: 380, Height: 300, XLabel: m.CDFAxis, YLabel: "fraction of samples",
		XLog: logX, YFraction: true}
	n := max(len(levels), len(ch.Levels))
	for _, ld := range ch.Levels {
		cd := ld.CDF[m.JSON]
		if cd == nil {
			continue
		}
		s := chart.Series{Name: "level " + strconv.Itoa(ld.Level), Color: levelColor(ld.Level, n), Line: true, NoPoints: true}
		if ld.Level >= 0 && ld.Level < len(levels) {
			s.Name = levelName(levels, ld.Level)
		}
		for j, v := range cd.Values {
			if j < len(ch.CDFGrid) && finite(v) {
				s.Points = append(s.Points, chart.Point{X: v, Y: ch.CDFGrid[j]})
			}
		}
		c.Series = append(c.Series, s)
	}
	if c.Empty() {
		return template.HTML(`<div class="nodata">No successful request has ` + template.HTMLEscapeString(m.Short) + ` samples.</div>`)
	}
	return c.SVG()
}

// plasma is a sequential palette cut before its pale yellow, so that heavier load reads
// darker to warmer (the page's script colours the request anatomy the same way).
var plasma = [][3]float64{{13, 8, 135}, {84, 2, 163}, {139, 10, 165}, {185, 50, 137}, {219, 92, 104}, {244, 136, 73}, {254, 188, 43}}

func levelColor(i, n int) string {
	if n <= 1 {
		return "rgb(84,2,163)"
	}
	t := float64(i) / float64(n-1) * 0.92
	x := t * float64(len(plasma)-1)
	k := min(int(x), len(plasma)-2)
	f := x - float64(k)
	a, b := plasma[k], plasma[k+1]
	ch := func(j int) string { return strconv.Itoa(int(math.Round(a[j] + (b[j]-a[j])*f))) }
	return "rgb(" + ch(0) + "," + ch(1) + "," + ch(2) + ")"
}
