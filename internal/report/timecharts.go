package report

import (
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/chart"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// The request anatomy and the charts over time, drawn on the server (internal/chart) like
// the page's other charts.

// Phase colours of the request anatomy, named in its note (report.css's .sw swatches).
const (
	colQueue   = "#b8bfcc"
	colSetup   = "#76b7b2"
	colHeaders = "#edc948"
	colPrefill = "#f28e2b"
	colDecode  = "#4e79a7"
	colTail    = "#9fc4e6"
	colFailed  = "#c62f2f"
)

// timeLeft is the room left of the plot of each chart over time, so that their time axes
// line up: y ticks of up to six characters ("12,500", "100%") and the axis title.
const timeLeft = 72

// timeWidth is the width of the page's full-width charts (its 1,240px column less the
// figure's padding); narrower windows scale them down.
const timeWidth = 1160

// anatomyView is one level's request timeline: the chart, and the sample's indices of the
// requests drawn top to bottom (the page's script names the one under the pointer).
type anatomyView struct {
	Level      int
	Name, Info string
	Chart      template.HTML
	Rows       string // comma-separated indices into the level's sample
}

// anatomyViews are the request timelines of the levels that have a sample.
func anatomyViews(ch *Charts, levels []Level) []anatomyView {
	if ch == nil {
		return nil
	}
	var out []anatomyView
	for _, ld := range ch.Levels {
		if len(ld.Sample) == 0 {
			continue
		}
		out = append(out, anatomyChart(ld, levels))
	}
	return out
}

// anatomyChart draws level ld's sampled requests as rows of phases, in the order sent. Where
// the sample has more requests than the plot has pixel rows, a uniform subset of one per
// row is drawn, so that every row is a whole request rather than a blend.
func anatomyChart(ld *levelData, levels []Level) anatomyView {
	n := len(ld.Sample)
	name := "level " + strconv.Itoa(ld.Level)
	if ld.Level >= 0 && ld.Level < len(levels) {
		name = levelName(levels, ld.Level)
	}
	height := max(260, min(520, n*3+80))
	rows := min(n, chart.PlotHeight(height))
	c := chart.Chart{Name: "anatomy-" + strconv.Itoa(ld.Level), Title: "Per-request timeline: " + name, Width: timeWidth, Height: height,
		XLabel: "time since run start (s)", YLabel: "requests (by send time)", YDown: true, YRange: chart.Range{Hi: float64(n)}, Pointer: true}
	lo, hi := math.Inf(1), math.Inf(-1)
	idx := make([]string, 0, rows)
	gap := 0.0
	if rows <= chart.PlotHeight(height)/4 { // rows of 4px or more: a gap between them
		gap = 0.15
	}
	per := float64(n) / float64(rows) // the y axis counts the sample's requests
	for k := range rows {
		i := k * n / rows
		idx = append(idx, strconv.Itoa(i))
		r := metrics.SampledRequest(ld.Sample[i])
		for _, sp := range requestSpans(&r) {
			sp.Y0, sp.Y1, sp.Faded = (float64(k)+gap)*per, (float64(k+1)-gap)*per, r.Warmup
			c.Spans = append(c.Spans, sp)
			lo, hi = math.Min(lo, sp.X0), math.Max(hi, sp.X1)
		}
	}
	if hi > lo {
		c.XRange = chart.Range{Lo: lo, Hi: hi}
	}
	info := strconv.Itoa(n) + " requests"
	if n < ld.Requests {
		info = "a uniform sample of " + strconv.Itoa(n) + " of " + strconv.Itoa(ld.Requests) + " requests"
	}
	if rows < n {
		info += ", " + strconv.Itoa(rows) + " of them drawn (one per pixel row)"
	}
	info += " · " + strconv.Itoa(ld.OK) + " ok, " + strconv.Itoa(ld.Failed) + " failed"
	if ld.Requests > ld.Measured {
		info += ", " + strconv.Itoa(ld.Requests-ld.Measured) + " warm-up/cool-down"
	}
	return anatomyView{Level: ld.Level, Name: name, Info: info, Chart: c.SVG(), Rows: strings.Join(idx, ",")}
}

// requestSpans are one request's phases on the time axis (s): waiting for its slot, the
// connection's setup, writing and awaiting headers, to the first token, decode, and the
// stream's close; a failed request is one span from its send.
func requestSpans(r *metrics.SampledRequest) []chart.Span {
	var out []chart.Span
	seg := func(a, b time.Duration, col string) {
		if b >= a {
			out = append(out, chart.Span{X0: a.Seconds(), X1: b.Seconds(), Color: col})
		}
	}
	setup, after := phaseSums(r.Phases)
	seg(r.Scheduled, r.Sent-setup, colQueue)
	if setup > 0 {
		seg(r.Sent-setup, r.Sent, colSetup)
	}
	if r.ErrKind != "" {
		seg(r.Sent, r.Done, colFailed)
		return out
	}
	from := r.Sent
	if after > 0 {
		from = r.Sent + after
		end := r.Done
		if r.HasTokens {
			end = r.First
		}
		seg(r.Sent, min(from, end), colHeaders)
	}
	if !r.HasTokens {
		seg(min(from, r.Done), r.Done, colPrefill)
		return out
	}
	seg(min(from, r.First), r.First, colPrefill)
	seg(r.First, r.Last, colDecode)
	seg(r.Last, r.Done, colTail)
	return out
}

// phaseSums are a request's measured HTTP phases: setup (DNS, connect, TLS: before the
// send) and after (write and headers: from the send to the response headers).
func phaseSums(p *record.Phases) (setup, after time.Duration) {
	if p == nil {
		return 0, 0
	}
	has := func(s record.PhaseSet, d time.Duration) time.Duration {
		if p.Has&s == 0 {
			return 0
		}
		return d
	}
	setup = has(record.PhaseDNS, p.DNS) + has(record.PhaseConnect, p.Connect) + has(record.PhaseTLS, p.TLS)
	after = has(record.PhaseWrite, p.Write) + has(record.PhaseHeaders, p.Headers)
	return setup, after
}

// levelBands shade each level's span of the run on a time chart, named by its load.
func levelBands(ch *Charts, levels []Level) []chart.Band {
	if ch == nil {
		return nil
	}
	n := max(len(levels), len(ch.Levels))
	var out []chart.Band
	for k, ld := range ch.Levels {
		if !finite(ld.Start) || !finite(ld.End) || ld.End <= ld.Start {
			continue
		}
		fill := "rgba(78,121,167,0.07)"
		if k%2 == 1 {
			fill = "rgba(123,63,196,0.05)"
		}
		label := "level " + strconv.Itoa(ld.Level)
		if ld.Level >= 0 && ld.Level < len(levels) {
			label = shortLevelName(levels, ld.Level)
		}
		out = append(out, chart.Band{X0: ld.Start, X1: ld.End, Label: label, Fill: fill, Color: levelColor(ld.Level, n)})
	}
	return out
}

// runSpan is the time axis of the charts over time, so that they line up: from the run's
// start to the end of its last bucket, level, server or GPU sample.
func runSpan(ch *Charts, levels []Level) chart.Range {
	hi := 0.0
	if ch != nil {
		if ot := ch.OverTime; ot != nil {
			hi = float64(len(ot.Tokens)) * ot.WidthS
		}
		for _, ld := range ch.Levels {
			if finite(ld.End) {
				hi = math.Max(hi, ld.End)
			}
		}
	}
	for i := range levels {
		if sv := levels[i].Server; sv != nil {
			for _, t := range sv.Series.TS {
				if finite(t) {
					hi = math.Max(hi, t)
				}
			}
		}
		if g := levels[i].GPU; g != nil {
			for _, c := range g.Series {
				for _, t := range c.TS {
					if finite(t) {
						hi = math.Max(hi, t)
					}
				}
			}
		}
	}
	return chart.Range{Hi: hi}
}

// overTimeCharts are the run's output throughput, and its in-flight and failed requests,
// in the collector's buckets: two charts on one time axis, each with its own y axis.
func overTimeCharts(ch *Charts, levels []Level) (template.HTML, string) {
	if ch == nil {
		return `<div class="nodata">Per-request data (records.jsonl) was not given.</div>`, ""
	}
	ot := ch.OverTime
	if ot == nil || len(ot.Tokens) == 0 {
		return `<div class="nodata">records.jsonl holds no requests.</div>`, ""
	}
	w := ot.WidthS
	width := strconv.FormatFloat(w, 'f', -1, 64)
	at := func(i int) float64 { return (float64(i) + 0.5) * w }
	line := func(name, col string, vs []float64) chart.Series {
		s := chart.Series{Name: name, Color: col, Line: true, NoPoints: true}
		for i, v := range vs {
			if finite(v) {
				s.Points = append(s.Points, chart.Point{X: at(i), Y: v})
			}
		}
		return s
	}
	bands, span := levelBands(ch, levels), runSpan(ch, levels)
	tok := chart.Chart{Name: "overtime-tokens", Title: "Output tokens per second over time", Width: timeWidth, Height: 260,
		XLabel: "time since run start (s)", YLabel: "output tokens/s", Bands: bands, XRange: span, PlotLeft: timeLeft,
		Series: []chart.Series{line("output tokens/s ("+width+" s buckets)", colDecode, ot.Tokens)}}
	req := chart.Chart{Name: "overtime-requests", Title: "In-flight and failed requests over time", Width: timeWidth, Height: 220,
		XLabel: "time since run start (s)", YLabel: "requests", Bands: bands, XRange: span, PlotLeft: timeLeft,
		Series: []chart.Series{line("in-flight requests (time-averaged)", colPrefill, ot.InFlight)}}
	for _, v := range ot.FailedPerS {
		if v > 0 {
			req.Series = append(req.Series, line("failed requests/s", colFailed, ot.FailedPerS))
			break
		}
	}
	return tok.SVG() + req.SVG(), width
}

// serverCharts are the server's own metrics over the run (levels[i].server.series): its
// running and waiting requests, and its KV cache usage; "" when no level has a series.
func serverCharts(ch *Charts, levels []Level) template.HTML {
	running := chart.Series{Name: "running", Color: "#59a14f", Line: true, NoPoints: true}
	waiting := chart.Series{Name: "waiting", Color: "#e15759", Line: true, NoPoints: true}
	kv := chart.Series{Name: "KV cache usage", Color: "#4e79a7", Line: true, NoPoints: true}
	for i := range levels {
		sv := levels[i].Server
		if sv == nil {
			continue
		}
		s := &sv.Series
		for j, t := range s.TS {
			for _, c := range []struct {
				col []float64
				s   *chart.Series
			}{{s.Running, &running}, {s.Waiting, &waiting}, {s.KVCacheUsage, &kv}} {
				if j < len(c.col) && finite(t) && finite(c.col[j]) {
					c.s.Points = append(c.s.Points, chart.Point{X: t, Y: c.col[j]})
				}
			}
		}
	}
	bands, span := levelBands(ch, levels), runSpan(ch, levels)
	var out template.HTML
	if len(running.Points)+len(waiting.Points) > 0 {
		c := chart.Chart{Name: "server-requests", Title: "The server's running and waiting requests", Width: timeWidth, Height: 240,
			XLabel: "time since run start (s)", YLabel: "requests", Bands: bands, XRange: span, PlotLeft: timeLeft}
		for _, s := range []chart.Series{running, waiting} {
			if len(s.Points) > 0 {
				c.Series = append(c.Series, s)
			}
		}
		out += c.SVG()
	}
	if len(kv.Points) > 0 {
		c := chart.Chart{Name: "server-kv", Title: "The server's KV cache usage", Width: timeWidth, Height: 200,
			XLabel: "time since run start (s)", YLabel: "KV cache usage", YFraction: true, Bands: bands, XRange: span, PlotLeft: timeLeft, Series: []chart.Series{kv}}
		out += c.SVG()
	}
	return out
}

// timeCharts fills in the request anatomy and the charts over time.
func (v *view) timeCharts(s *Summary, ch *Charts) {
	v.Anatomy = anatomyViews(ch, s.Levels)
	switch {
	case ch == nil:
		v.AnatomyNote = "Per-request data (records.jsonl) was not given."
	case len(v.Anatomy) == 0:
		v.AnatomyNote = "records.jsonl holds no requests."
	}
	v.AnatomyShown = -1
	if len(v.Anatomy) > 0 {
		v.AnatomyShown = v.Anatomy[len(v.Anatomy)-1].Level
	}
	for _, a := range v.Anatomy {
		if a.Level == pickIndex(s.SweetSpot) {
			v.AnatomyShown = a.Level
		}
	}
	v.OverTime, v.OverTimeWidth = overTimeCharts(ch, s.Levels)
	v.Server = serverCharts(ch, s.Levels)
	v.GPU = gpuCharts(ch, s.Levels)
}

// gpuCharts are the GPU exporters' readings over the run (levels[i].gpu.series): each
// exporter's GPUs' power together, and their mean utilisation, a line per exporter; "" when
// no level has a series.
func gpuCharts(ch *Charts, levels []Level) template.HTML {
	colors := []string{"#f28e2b", "#76b7b2", "#b07aa1", "#9c755f", "#edc948"}
	var urls []string
	power, util := map[string]*chart.Series{}, map[string]*chart.Series{}
	for i := range levels {
		g := levels[i].GPU
		if g == nil {
			continue
		}
		for _, c := range g.Series {
			if _, ok := power[c.URL]; !ok {
				col := colors[len(urls)%len(colors)]
				urls = append(urls, c.URL)
				power[c.URL] = &chart.Series{Name: "power (W), " + RedactURL(c.URL), Color: col, Line: true, NoPoints: true}
				util[c.URL] = &chart.Series{Name: "GPU utilisation (%), " + RedactURL(c.URL), Color: col, Line: true, NoPoints: true}
			}
			for j, t := range c.TS {
				if j < len(c.PowerW) && finite(t) && finite(c.PowerW[j]) {
					power[c.URL].Points = append(power[c.URL].Points, chart.Point{X: t, Y: c.PowerW[j]})
				}
				if j < len(c.Utilization) && finite(t) && finite(c.Utilization[j]) {
					util[c.URL].Points = append(util[c.URL].Points, chart.Point{X: t, Y: c.Utilization[j]})
				}
			}
		}
	}
	bands, span := levelBands(ch, levels), runSpan(ch, levels)
	var out template.HTML
	for _, k := range []struct {
		name, title, y string
		by             map[string]*chart.Series
	}{
		{"gpu-power", "GPU power (each exporter's GPUs together)", "W", power},
		{"gpu-util", "GPU utilisation (mean of each exporter's GPUs)", "%", util},
	} {
		c := chart.Chart{Name: k.name, Title: k.title, Width: timeWidth, Height: 220,
			XLabel: "time since run start (s)", YLabel: k.y, Bands: bands, XRange: span, PlotLeft: timeLeft}
		for _, u := range urls {
			if s := k.by[u]; len(s.Points) > 0 {
				c.Series = append(c.Series, *s)
			}
		}
		if len(c.Series) > 0 {
			out += c.SVG()
		}
	}
	return out
}
