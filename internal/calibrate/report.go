package calibrate

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/llmbench/llmbench/internal/chart"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/metrics"
)

// Schema names calibration.json's format.
const Schema = "llmbench.calibration/v1"

type jsonReport struct {
	Schema    string      `json:"schema"`
	Version   string      `json:"llmbench_version"`
	Profile   string      `json:"profile"`
	Source    jsonSource  `json:"source"`
	Settings  []Setting   `json:"settings"`
	HeldOut   object      `json:"held_out_error_pct"`
	InSample  object      `json:"in_sample_error_pct"`
	PaceDrift *jsonDrift  `json:"pace_drift"` // null: the ladder ran once
	Trusted   jsonTrust   `json:"trusted_for"`
	Misses    []jsonMiss  `json:"misses"` // points missed by more than 3 × the stated error
	Points    []jsonPoint `json:"points"`
	Predicted string      `json:"predicted"`
}

type jsonDrift struct {
	Concurrency int         `json:"concurrency"`
	FirstTPOT   *float64    `json:"first_pass_tpot_p50_ms"`
	AgainTPOT   *float64    `json:"second_pass_tpot_p50_ms"`
	Pct         *float64    `json:"pct"`
	TwoSpeeds   *jsonSpeeds `json:"two_speeds"` // null: the level's requests ran at one
	Pairs       []jsonPair  `json:"pairs"`      // every concurrency both passes ran
	WidestPct   *float64    `json:"widest_pct"` // the pair that moved most, signed
}

type jsonPair struct {
	Concurrency int      `json:"concurrency"`
	FirstTPOT   *float64 `json:"first_pass_tpot_p50_ms"`
	AgainTPOT   *float64 `json:"second_pass_tpot_p50_ms"`
	Pct         *float64 `json:"pct"`
}

type jsonSpeeds struct {
	FastMs       *float64 `json:"fast_ms"`
	SlowMs       *float64 `json:"slow_ms"`
	FastRequests int      `json:"fast_requests"`
	SlowRequests int      `json:"slow_requests"`
}

type jsonTrust struct {
	ThresholdPct float64         `json:"threshold_pct"`
	Judged       string          `json:"judged"`
	Trusted      []jsonTrustLoad `json:"trusted"`
	NotTrusted   []jsonTrustLoad `json:"not_trusted"`
	// NotProbed is the closed loops between the prefill sweep and the decode ladder: prompts
	// over prompt_tokens at more than concurrency in flight; null where the probe had none.
	NotProbed *jsonCorner `json:"not_probed"`
}

type jsonCorner struct {
	PromptTokens int `json:"prompt_tokens"`
	Concurrency  int `json:"concurrency"`
}

type jsonTrustLoad struct {
	Load         string      `json:"load"`
	Concurrency  *[2]int     `json:"concurrency,omitempty"`
	Rate         *[2]float64 `json:"rate_per_s,omitempty"`
	PromptTokens [2]int      `json:"prompt_tokens"`
	ErrorPct     *float64    `json:"error_pct"`
	Points       []string    `json:"points"`
	Summary      string      `json:"summary"`
}

func jsonTrusts(ts []Trust) []jsonTrustLoad {
	out := []jsonTrustLoad{}
	for _, t := range ts {
		j := jsonTrustLoad{Load: t.Load, PromptTokens: t.PromptTokens, ErrorPct: opt(t.ErrorPct), Points: t.Points, Summary: t.String()}
		switch t.Load {
		case "closed":
			j.Concurrency = &t.Concurrency
		case "open":
			j.Rate = &t.Rate
		}
		out = append(out, j)
	}
	return out
}

type jsonMiss struct {
	Point     string   `json:"point"`
	Figure    string   `json:"figure"`
	Measured  *float64 `json:"measured_ms"`
	Predicted *float64 `json:"predicted_ms"`
	ErrorPct  *float64 `json:"error_pct"`
	StatedPct *float64 `json:"stated_error_pct"`
	InStated  bool     `json:"in_stated_error"` // held out: the stated error includes it
}

type jsonSource struct {
	URL   string   `json:"url"`
	API   string   `json:"api"`
	Model string   `json:"model"`
	Dirs  []string `json:"dirs"`
}

// object is a JSON object whose members keep their order (a figure set's are the
// figures'); nil is null.
type object []member

type member struct {
	key string
	v   any
}

func (o object) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

type jsonPoint struct {
	Name         string `json:"name"`
	Dir          string `json:"dir"`
	Level        int    `json:"level"`
	Phase        string `json:"phase,omitempty"`
	Concurrency  int    `json:"concurrency,omitempty"`
	Open         bool   `json:"open_loop,omitempty"`
	Requests     int    `json:"requests"`
	PromptTokens [2]int `json:"prompt_tokens"`
	OutputTokens [2]int `json:"output_tokens"`
	HeldOut      bool   `json:"held_out"`
	Measured     object `json:"measured"`
	Predicted    object `json:"predicted"`
	Validation   object `json:"held_out_prediction"` // null: not held out
	ErrorPct     object `json:"error_pct"`
}

func opt(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	r := math.Round(v*1000) / 1000
	return &r
}

// jsonFigs are a point's figures, ms: "ttft_p50_ms", ...
func jsonFigs(f figure.Values) object {
	o := make(object, 0, len(figure.All))
	for _, k := range figure.All {
		o = append(o, member{k.Name() + "_ms", opt(f[k])})
	}
	return o
}

// jsonErrs are errors over points: each judged figure's, percent ("ttft_p50", ...), and
// how many points.
func jsonErrs(e Errors) object {
	o := make(object, 0, len(figure.Judged)+2)
	for _, k := range figure.Judged {
		o = append(o, member{k.Name(), opt(e.Pct[k])})
	}
	return append(o, member{"points", e.Points})
}

func pct(pred, meas float64) float64 {
	if math.IsNaN(pred) || math.IsNaN(meas) || meas <= 0 {
		return nan
	}
	return (pred - meas) / meas * 100
}

// errFigs are each figure's relative error of p against m, percent.
func errFigs(p, m figure.Values) figure.Values {
	var e figure.Values
	for _, k := range figure.All {
		e[k] = pct(p[k], m[k])
	}
	return e
}

// WriteJSON writes calibration.json: the fit's settings and where each came from, and
// every probe point measured against predicted.
func (r *Result) WriteJSON(w io.Writer, version, profilePath string) error {
	out := jsonReport{Schema: Schema, Version: version, Profile: profilePath,
		Source:  jsonSource{URL: r.Source.URL, API: r.Source.API, Model: r.Source.Model, Dirs: r.Source.Dirs},
		HeldOut: jsonErrs(r.HeldOut), InSample: jsonErrs(r.InSample),
		Predicted: "each point's requests replayed through the fitted profile on simulate's virtual clock (step noise on); " +
			"held_out_prediction is the fit made without the held-out points"}
	out.Settings = r.Settings
	// The held-out error broken down by the kind of load (absent in-sample).
	out.HeldOut = append(out.HeldOut, member{"by_load", object{{"closed", jsonErrs(r.ByLoad.Closed)}, {"open", jsonErrs(r.ByLoad.Open)}}})
	if d := r.PaceDrift; d.Measured() {
		out.PaceDrift = &jsonDrift{Concurrency: d.Concurrency, FirstTPOT: opt(d.First), AgainTPOT: opt(d.Again), Pct: opt(d.Pct())}
		out.PaceDrift.Pairs = []jsonPair{}
		for _, p := range d.Pairs {
			out.PaceDrift.Pairs = append(out.PaceDrift.Pairs, jsonPair{Concurrency: p.Concurrency, FirstTPOT: opt(p.First), AgainTPOT: opt(p.Again), Pct: opt(p.Pct())})
		}
		if w, ok := d.Widest(); ok {
			out.PaceDrift.WidestPct = opt(w.Pct())
		}
		if v := d.Speeds; v.Found() {
			out.PaceDrift.TwoSpeeds = &jsonSpeeds{FastMs: opt(v.Fast), SlowMs: opt(v.Slow), FastRequests: v.NFast, SlowRequests: v.NSlow}
		}
	}
	trusted, untrusted := r.trust()
	out.Trusted = jsonTrust{ThresholdPct: trustPct, Judged: "a point's largest error of TTFT and TPOT P50, held-out points by the fit made without them",
		Trusted: jsonTrusts(trusted), NotTrusted: jsonTrusts(untrusted)}
	if p, c := r.unprobedCorner(); p > 0 {
		out.Trusted.NotProbed = &jsonCorner{PromptTokens: p, Concurrency: c}
	}
	out.Misses = []jsonMiss{}
	for _, m := range r.misses() {
		out.Misses = append(out.Misses, jsonMiss{Point: m.Point, Figure: m.Figure.Name(), Measured: opt(m.Measured), Predicted: opt(m.Predicted),
			ErrorPct: opt(m.ErrPct), StatedPct: opt(m.StatedPct), InStated: m.HeldOut})
	}
	for _, p := range r.Points {
		jp := jsonPoint{Name: p.Name, Dir: p.Dir, Level: p.Level, Phase: string(p.Phase), Concurrency: p.Concurrency, Open: p.Open,
			Requests: len(p.Requests), HeldOut: p.HeldOut, Measured: jsonFigs(p.Measured), Predicted: jsonFigs(p.Predicted),
			PromptTokens: rangeOf([]Point{p.Point}, func(q Request) int { return q.Prompt }),
			OutputTokens: rangeOf([]Point{p.Point}, func(q Request) int { return q.Output })}
		jp.ErrorPct = jsonFigs(errFigs(p.Predicted, p.Measured))
		if p.HeldOut {
			jp.Validation = jsonFigs(p.Validation)
		}
		out.Points = append(out.Points, jp)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func fmtMs(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtPct(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", v)
}

// Console prints the fit: each point measured against predicted, the settings and where
// each came from, and the held-out error.
func (r *Result) Console(w io.Writer) {
	fmt.Fprintf(w, "\nCalibration of %s (model %s): %d probe points\n\n", r.Source.URL, r.Source.Model, len(r.Points))
	// The name column is as wide as the names, to nameWidth: the table stays within a
	// terminal, a longer name (a run folder's path) keeping its end.
	width := len("point")
	names := make([]string, len(r.Points))
	for i, p := range r.Points {
		names[i] = p.Name
		if p.HeldOut {
			names[i] += " *"
		}
		if n := utf8.RuneCountInString(names[i]); n > nameWidth {
			rs := []rune(names[i])
			names[i] = "…" + string(rs[n-nameWidth+1:])
		}
		width = max(width, utf8.RuneCountInString(names[i]))
	}
	fmt.Fprintf(w, "%-*s %6s %9s  %17s %7s  %17s %7s\n", width, "point", "conc", "prompt", "TTFT P50 meas/pred", "error", "TPOT P50 meas/pred", "error")
	for i, p := range r.Points {
		name := names[i]
		pr := rangeOf([]Point{p.Point}, func(q Request) int { return q.Prompt })
		prompt := fmt.Sprint(pr[0])
		if pr[1] != pr[0] {
			prompt = fmt.Sprintf("%d–%d", pr[0], pr[1])
		}
		conc := fmt.Sprint(p.Concurrency)
		if p.Open {
			conc = "open"
		}
		pred := p.Predicted
		if p.HeldOut {
			pred = p.Validation
		}
		fmt.Fprintf(w, "%-*s %6s %9s  %8s/%-8s %7s  %8s/%-8s %7s\n", width, name, conc, prompt,
			fmtMs(p.Measured[figure.TTFTP50]), fmtMs(pred[figure.TTFTP50]), fmtPct(pct(pred[figure.TTFTP50], p.Measured[figure.TTFTP50])),
			fmtMs(p.Measured[figure.TPOTP50]), fmtMs(pred[figure.TPOTP50]), fmtPct(pct(pred[figure.TPOTP50], p.Measured[figure.TPOTP50])))
	}
	fmt.Fprintf(w, "(* held out: predicted by the fit made without it)\n\nFitted settings:\n%s", describe(r.Settings))
	e := r.HeldOut
	if e.Points == 0 {
		fmt.Fprintln(w, "\nHeld-out error: not measured (too few probe points of a kind to leave one out)")
	} else {
		points := fmt.Sprintf("%d points", e.Points)
		if e.Points == 1 {
			points = "1 point"
		}
		fmt.Fprintln(w, "\n"+wrapLine(fmt.Sprintf("Held-out error (fitted without %s, judged on them; largest): %s", points, judged(e.Pct, "; "))))
		for _, k := range []struct {
			name string
			e    Errors
		}{{"closed loops", r.ByLoad.Closed}, {"open loops", r.ByLoad.Open}} {
			if k.e.Points == 0 {
				fmt.Fprintf(w, "  of %s: none held out\n", k.name)
				continue
			}
			fmt.Fprintln(w, "  "+console.Wrap(fmt.Sprintf("of %s (%d): %s", k.name, k.e.Points, judged(k.e.Pct, "; ")), 2, 4, console.Width))
		}
	}
	fmt.Fprintln(w, wrapLine("In-sample error (the profile written, every point; largest): "+judged(r.InSample.Pct, "; ")))
	if ms := r.misses(); len(ms) > 0 {
		fmt.Fprintf(w, "Missed by more than %d × the stated error:\n", missFactor)
		for _, m := range ms {
			fmt.Fprintln(w, "  "+console.Wrap(m.String(), 2, 4, console.Width))
		}
	}
	fmt.Fprintln(w, wrapLine(fmt.Sprintf("Verdict (a load is trusted where its points' TTFT and TPOT P50 are within %d%%; held-out points by the fit made without them):", trustPct)))
	for _, l := range r.verdict() {
		fmt.Fprintln(w, "  "+console.Wrap(l, 2, 4, console.Width))
	}
	fmt.Fprintln(w, wrapLine(r.PaceDrift.String()))
}

// nameWidth is the widest a point's name is printed: 100 columns less the figures'.
const nameWidth = console.Width - 71

// wrapLine folds a line of the fit's summary within the console's width, its follow-on
// lines indented.
func wrapLine(s string) string { return console.Wrap(s, 0, 2, console.Width) }

// label is a figure as the console and the report name it: the registry's short name
// and the percentile, "TTFT P50".
func label(k figure.Key) string {
	f := k.Figure()
	m, ok := metrics.Lookup(f.Metric)
	if !ok {
		panic("calibrate: no metric " + f.Metric)
	}
	return fmt.Sprintf("%s P%g", m.Short, f.Pct)
}

// judged is errors e of the judged figures in words, a metric's percentiles together and
// the metrics apart by sep: "TTFT P50 3.4%, P99 50.9%; TPOT P50 68.9%, P99 88.2%".
func judged(e figure.Values, sep string) string {
	var b strings.Builder
	for i, k := range figure.Judged {
		switch {
		case i == 0:
			b.WriteString(label(k))
		case k.Figure().Metric != figure.Judged[i-1].Figure().Metric:
			b.WriteString(sep + label(k))
		default:
			fmt.Fprintf(&b, ", P%g", k.Figure().Pct)
		}
		b.WriteString(" " + fmtAbs(e[k]))
	}
	return b.String()
}

func fmtAbs(v float64) string {
	if math.IsNaN(v) {
		return "not measured"
	}
	return fmt.Sprintf("%.1f%%", v)
}

// WriteHTML writes calibration.html: measured against predicted per probe point, as
// charts and a table, self-contained like report.html.
func (r *Result) WriteHTML(w io.Writer, title string) error {
	type row struct {
		Name, Phase, Conc, Prompt string
		HeldOut                   bool
		Cells                     []string
	}
	var rows []row
	var ttft, tpot [][2]float64 // measured, predicted
	for _, p := range r.Points {
		pred := p.Predicted
		if p.HeldOut {
			pred = p.Validation
		}
		pr := rangeOf([]Point{p.Point}, func(q Request) int { return q.Prompt })
		conc := fmt.Sprint(p.Concurrency)
		if p.Open {
			conc = "open loop"
		}
		m := p.Measured
		rw := row{Name: p.Name, Phase: string(p.Phase), Conc: conc, Prompt: fmt.Sprintf("%d–%d", pr[0], pr[1]), HeldOut: p.HeldOut}
		for _, k := range figure.Judged {
			rw.Cells = append(rw.Cells, fmtMs(m[k]), fmtMs(pred[k]), fmtPct(pct(pred[k], m[k])))
		}
		rows = append(rows, rw)
		if !math.IsNaN(m[figure.TTFTP50]) && !math.IsNaN(pred[figure.TTFTP50]) {
			ttft = append(ttft, [2]float64{m[figure.TTFTP50], pred[figure.TTFTP50]})
		}
		if !math.IsNaN(m[figure.TPOTP50]) && !math.IsNaN(pred[figure.TPOTP50]) {
			tpot = append(tpot, [2]float64{m[figure.TPOTP50], pred[figure.TPOTP50]})
		}
	}
	return htmlPage.Execute(w, map[string]any{
		"Title": title, "Source": r.Source, "Rows": rows, "Settings": r.Settings,
		"TTFT": scatter("TTFT P50 (ms)", ttft), "TPOT": scatter("TPOT P50 (ms)", tpot),
		"HeldOut": r.HeldOut, "HeldOutPct": judged(r.HeldOut.Pct, ";\n"), "Columns": columns, "Drift": r.PaceDrift.String(),
		"TrustPct": trustPct, "Verdict": r.verdict(), "Misses": r.misses(), "MissFactor": missFactor,
	})
}

// columns are the judged figures' labels, the table's columns (each measured, predicted
// and residual).
var columns = func() []string {
	var c []string
	for _, k := range figure.Judged {
		c = append(c, label(k))
	}
	return c
}()

// scatter draws measured (x) against predicted (y) on log axes with the diagonal and
// ±5% lines.
func scatter(label string, pts [][2]float64) template.HTML {
	if len(pts) == 0 {
		return "<p>No points.</p>"
	}
	s := chart.Series{Color: "#2a6fdb", Radius: 3.5}
	for _, p := range pts {
		s.Points = append(s.Points, chart.Point{X: p[0], Y: p[1],
			Title: fmt.Sprintf("measured %.2f ms, predicted %.2f ms (%s)", p[0], p[1], fmtPct(pct(p[1], p[0])))})
	}
	c := chart.Chart{Name: label, Title: label + ": measured against predicted", Width: 440, Height: 400,
		XLabel: "measured " + label, YLabel: "predicted " + label, XLog: true, YLog: true, SameRange: true,
		Series: []chart.Series{s}, Guides: []chart.Guide{{K: 1}, {K: 1.05, Dash: true}, {K: 0.95, Dash: true}}}
	return c.SVG()
}

var htmlPage = template.Must(template.New("calibration").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:1em 0;font-size:12px;font-variant-numeric:tabular-nums}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4;vertical-align:bottom}td:first-child,th:first-child{text-align:left}tr.held td{background:#fff8e0}td:first-child{white-space:nowrap}
.charts{display:flex;gap:2em;flex-wrap:wrap}
</style></head><body>
<h1>{{.Title}}</h1>
<p>Server {{.Source.URL}}, model {{.Source.Model}}. Each probe point's requests were replayed through the fitted profile on
simulate's virtual clock; held-out points (shaded) are predicted by the fit made without them.</p>
<p><b>Held-out error</b> (largest over {{.HeldOut.Points}} points): {{.HeldOutPct}}.</p>
<p>{{.Drift}}.</p>
<h2>Verdict</h2>
<p>A load is trusted where its probe points' TTFT and TPOT P50 are within {{.TrustPct}}% (held-out points by the fit made without them):</p>
<ul>{{range .Verdict}}<li>{{.}}</li>{{end}}</ul>
{{if .Misses}}<p><b>Missed by more than {{.MissFactor}} × the stated error:</b></p>
<ul>{{range .Misses}}<li>{{.}}</li>{{end}}</ul>{{end}}
<div class="charts"><div><h2>TTFT P50</h2>{{.TTFT}}</div><div><h2>TPOT P50</h2>{{.TPOT}}</div></div>
<h2>Probe points</h2>
<div class="scroll"><table><tr><th>point</th><th>phase</th><th>concurrency</th><th>prompt tokens</th>
{{range .Columns}}<th>{{.}} measured</th><th>predicted</th><th>residual</th>{{end}}</tr>
{{range .Rows}}<tr{{if .HeldOut}} class="held"{{end}}><td>{{.Name}}{{if .HeldOut}} (held out){{end}}</td><td>{{.Phase}}</td><td>{{.Conc}}</td><td>{{.Prompt}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
<h2>Fitted settings</h2>
<div class="scroll"><table><tr><th>profile key</th><th>value</th><th>from</th></tr>
{{range .Settings}}<tr><td>{{.Key}}</td><td>{{.Value}}</td><td style="text-align:left">{{.How}}</td></tr>
{{end}}</table></div>
</body></html>
`))
