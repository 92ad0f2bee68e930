package plan

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
)

// WriteHTML writes plan.html: one self-contained page (inline SVG and style, no script)
// with the Pareto front of output throughput per GPU against tokens/s per user of the
// candidates meeting the SLOs, the chosen plan marked and each point's configuration in
// its tooltip (an SVG <title>), and the table of every candidate. Nothing is written to w
// unless the whole page was built.
func WriteHTML(w io.Writer, pl *Plan) error {
	v := view{Plan: pl, Chart: chart(pl)}
	for _, c := range pl.Candidates {
		if len(c.SLO) > len(v.Terms) {
			v.Terms = v.Terms[:0]
			for _, t := range c.SLO {
				v.Terms = append(v.Terms, t.Term)
			}
		}
	}
	for i, c := range pl.Candidates {
		r := row{N: i + 1, C: c, Best: pl.Best != nil && *pl.Best == i, SLO: c.SLO}
		for len(r.SLO) < len(v.Terms) { // not simulated at the traffic: empty cells
			r.SLO = append(r.SLO, Term{})
		}
		v.Rows = append(v.Rows, r)
	}
	v.Best = pl.BestCandidate()
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		return fmt.Errorf("plan.html: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

type view struct {
	Plan  *Plan
	Chart svgChart
	Rows  []row
	Terms []string
	Best  *Candidate
}

type row struct {
	N    int
	C    Candidate
	Best bool
	SLO  []Term // one per column of terms
}

// svgChart is the scatter's geometry, computed here so that the page needs no script.
type svgChart struct {
	W, H                       int
	Left, Right, Top, Bottom   float64 // the plot area
	XTicks, YTicks             []tick
	Points                     []point
	Front                      string // the Pareto front's polyline points
	Empty                      bool
	XLabel, YLabel, FrontLabel string
}

type tick struct {
	At    float64
	Label string
}

type point struct {
	X, Y        float64
	Title       string
	Front, Best bool
}

func chart(pl *Plan) svgChart {
	c := svgChart{W: 760, H: 440, Left: 70, Right: 740, Top: 20, Bottom: 380,
		XLabel: "tokens/s per user (1,000 / mean TPOT ms)", YLabel: "output tokens/s per GPU"}
	var xs, ys []float64
	for _, cd := range pl.Candidates {
		if cd.MeetsSLO && cd.TokensPerSPerUser != nil && cd.OutputThroughputPerGPU != nil {
			xs, ys = append(xs, *cd.TokensPerSPerUser), append(ys, *cd.OutputThroughputPerGPU)
		}
	}
	if len(xs) == 0 {
		c.Empty = true
		return c
	}
	xmax, ymax := niceMax(maxOf(xs)), niceMax(maxOf(ys))
	sx := func(v float64) float64 { return c.Left + v/xmax*(c.Right-c.Left) }
	sy := func(v float64) float64 { return c.Bottom - v/ymax*(c.Bottom-c.Top) }
	for k := 0; k <= 5; k++ {
		x, y := xmax*float64(k)/5, ymax*float64(k)/5
		c.XTicks = append(c.XTicks, tick{At: sx(x), Label: fmtTick(x)})
		c.YTicks = append(c.YTicks, tick{At: sy(y), Label: fmtTick(y)})
	}
	onFront := map[int]bool{}
	var front []string
	for _, i := range pl.Pareto() {
		onFront[i] = true
		cd := pl.Candidates[i]
		front = append(front, fmt.Sprintf("%.1f,%.1f", sx(*cd.TokensPerSPerUser), sy(*cd.OutputThroughputPerGPU)))
	}
	c.Front = strings.Join(front, " ")
	for i, cd := range pl.Candidates {
		if !cd.MeetsSLO || cd.TokensPerSPerUser == nil || cd.OutputThroughputPerGPU == nil {
			continue
		}
		best := pl.Best != nil && *pl.Best == i
		title := fmt.Sprintf("#%d %s\n%d GPUs, %s USD/hour, %s USD per million output tokens, headroom %s req/s\n%.0f output tokens/s per GPU, %.1f tokens/s per user",
			i+1, cd.Describe(), cd.GPUs, fmtOpt(cd.USDPerHour, "%.2f"), fmtOpt(cd.CostPerMillionOutputTokens, "%.3f"), fmtOpt(cd.HeadroomRate, "%.3g"),
			*cd.OutputThroughputPerGPU, *cd.TokensPerSPerUser)
		for _, t := range cd.SLO {
			title += "\n" + t.Term + ": " + t.String()
		}
		if best {
			title = "chosen plan: " + title
		}
		c.Points = append(c.Points, point{X: sx(*cd.TokensPerSPerUser), Y: sy(*cd.OutputThroughputPerGPU), Title: title, Front: onFront[i], Best: best})
	}
	// The chosen point is drawn last, on top of the others.
	for i, p := range c.Points {
		if p.Best {
			c.Points = append(append(c.Points[:i:i], c.Points[i+1:]...), p)
			break
		}
	}
	return c
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = math.Max(m, x)
	}
	return m
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten, for the axis' end.
func niceMax(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*e {
			return m * e
		}
	}
	return 10 * e
}

func fmtTick(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

var page = template.Must(template.New("plan.html").Funcs(template.FuncMap{
	"opt": fmtOpt,
	"pct": func(v *float64) string {
		if v == nil {
			return ""
		}
		return fmt.Sprintf("%+.0f%%", 100**v)
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>llmbench plan: {{.Plan.Model}} at {{printf "%.3g" .Plan.Rate}} req/s</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d232a; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.sub { color: #5a6470; margin: 0 0 16px; }
.best { background: #eef6ee; border: 1px solid #9ac79a; padding: 10px 14px; border-radius: 6px; display: inline-block; }
svg text { font: 12px system-ui, sans-serif; fill: #3a434d; }
.grid { stroke: #e3e7eb; } .axis { stroke: #8a949e; }
.pt { fill: #7fa7d6; stroke: #2f5d91; } .pt.front { fill: #f0a53a; stroke: #a35f00; }
.pt.chosen { fill: #2e8b57; stroke: #0f3d22; stroke-width: 2; }
.front-line { fill: none; stroke: #f0a53a; stroke-width: 1.5; stroke-dasharray: 4 3; }
circle:hover { stroke-width: 3; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e3e7eb; text-align: right; white-space: nowrap; }
th { background: #f4f6f8; position: sticky; top: 0; } td.l, th.l { text-align: left; }
tr.miss td { color: #8a949e; } tr.chosen td { background: #eef6ee; font-weight: 600; }
td.why { white-space: normal; text-align: left; max-width: 520px; }
.legend span { margin-right: 16px; } .legend i { display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 4px; vertical-align: -1px; }
</style>
</head>
<body>
<h1>Plan: {{.Plan.Model}} at {{printf "%.3g" .Plan.Rate}} req/s</h1>
<p class="sub">SLOs {{.Plan.SLO}} · profile {{.Plan.Profile}} · {{.Plan.Evaluated}} of {{.Plan.Configurations}} candidates planned{{if .Plan.Interrupted}} (interrupted){{end}} · fleets of up to {{.Plan.MaxReplicas}} replicas · llmbench {{.Plan.Version}}</p>
{{with .Best}}<p class="best">Chosen: <b>{{.Describe}}</b> — {{.GPUs}} {{if eq .GPUs 1}}GPU{{else}}GPUs{{end}}, {{opt .USDPerHour "%.2f"}} USD/hour, {{opt .CostPerMillionOutputTokens "%.3f"}} USD per million output tokens, meets the SLOs up to {{opt .HeadroomRate "%.3g"}} req/s.{{if $.Plan.BestProfile}} Its profile: <code>{{$.Plan.BestProfile}}</code>.{{end}}</p>
{{else}}<p class="best">No candidate meets the SLOs at this traffic: the table says why.</p>{{end}}
<h2>Throughput per GPU against tokens/s per user</h2>
{{with .Chart}}{{if .Empty}}<p>No candidate meets the SLOs, so there is nothing to draw.</p>{{else}}
<p class="legend"><span><i style="background:#7fa7d6"></i>meets the SLOs</span><span><i style="background:#f0a53a"></i>Pareto front</span><span><i style="background:#2e8b57"></i>chosen plan</span> (hover a point for its configuration)</p>
<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="Pareto front">
{{range .XTicks}}<line class="grid" x1="{{.At}}" x2="{{.At}}" y1="{{$.Chart.Top}}" y2="{{$.Chart.Bottom}}"/><text x="{{.At}}" y="{{$.Chart.Bottom | printf "%.0f"}}" dy="16" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .YTicks}}<line class="grid" x1="{{$.Chart.Left}}" x2="{{$.Chart.Right}}" y1="{{.At}}" y2="{{.At}}"/><text x="{{$.Chart.Left}}" y="{{.At}}" dx="-6" dy="4" text-anchor="end">{{.Label}}</text>
{{end}}<line class="axis" x1="{{.Left}}" x2="{{.Right}}" y1="{{.Bottom}}" y2="{{.Bottom}}"/><line class="axis" x1="{{.Left}}" x2="{{.Left}}" y1="{{.Top}}" y2="{{.Bottom}}"/>
<text x="{{.Right}}" y="{{.Bottom}}" dy="34" text-anchor="end">{{.XLabel}}</text>
<text transform="translate(16 {{.Top}}) rotate(-90)" text-anchor="end">{{.YLabel}}</text>
{{if .Front}}<polyline class="front-line" points="{{.Front}}"/>{{end}}
{{range .Points}}<circle class="pt{{if .Front}} front{{end}}{{if .Best}} chosen{{end}}" cx="{{printf "%.1f" .X}}" cy="{{printf "%.1f" .Y}}" r="{{if .Best}}8{{else}}5{{end}}"><title>{{.Title}}</title></circle>
{{end}}</svg>{{end}}{{end}}
<h2>Every candidate</h2>
<table>
<tr><th>#</th><th class="l">deployment</th><th>GPUs</th><th class="l">dtype</th><th>seqs</th><th>batched</th><th class="l">prefill</th><th class="l">router</th><th>USD/hour</th><th>USD/M out</th><th>headroom req/s</th><th>tok/s per GPU</th><th>tok/s per user</th>{{range .Terms}}<th>{{.}}</th><th>margin</th>{{end}}<th class="l">why not</th></tr>
{{range .Rows}}<tr class="{{if .Best}}chosen{{else if not .C.MeetsSLO}}miss{{end}}"><td>{{.N}}</td><td class="l">{{if .C.Replicas}}{{.C.Replicas}} × {{end}}{{.C.GPU}} tp {{.C.TP}}</td><td>{{.C.GPUs}}</td><td class="l">{{.C.Dtype}}</td><td>{{.C.MaxNumSeqs}}</td><td>{{.C.MaxBatchedTokens}}</td><td class="l">{{.C.Prefill}}</td><td class="l">{{.C.Router}}</td><td>{{opt .C.USDPerHour "%.2f"}}</td><td>{{opt .C.CostPerMillionOutputTokens "%.3f"}}</td><td>{{opt .C.HeadroomRate "%.3g"}}</td><td>{{opt .C.OutputThroughputPerGPU "%.0f"}}</td><td>{{opt .C.TokensPerSPerUser "%.1f"}}</td>{{range .SLO}}<td>{{opt .Value "%.4g"}}</td><td>{{pct .Margin}}</td>{{end}}<td class="why">{{.C.Reason}}</td></tr>
{{end}}</table>
</body>
</html>
`))
