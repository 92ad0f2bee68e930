package plan

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/llmbench/llmbench/internal/chart"
)

// WriteHTML writes plan.html: one self-contained page (inline SVG and style, no script)
// with the Pareto front of output throughput per GPU against tokens/s per user of the
// candidates meeting the SLOs, the chosen plan marked and each point's configuration in
// its tooltip (an SVG <title>), and the table of every candidate. Nothing is written to w
// unless the whole page was built.
func WriteHTML(w io.Writer, pl *Plan) error {
	v := view{Plan: pl, Unit: pl.unit(), Confidence: confidenceLine(pl)}
	if pc := paretoChart(pl); !pc.Empty() {
		v.Chart = pc.SVG()
	}
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
	Chart template.HTML // "" when no candidate meets the SLOs
	Rows  []row
	Terms []string
	Best  *Candidate
	Unit  string // the rate's: req/s, or tasks/s
	// Confidence says what the fleets were judged on (the console's line).
	Confidence string
}

type row struct {
	N    int
	C    Candidate
	Best bool
	SLO  []Term // one per column of terms
}

// paretoChart is the scatter of the candidates meeting the SLOs: the Pareto front joined
// by a dashed line, the chosen plan labelled, each point's configuration in its tooltip.
func paretoChart(pl *Plan) chart.Chart {
	c := chart.Chart{Name: "pareto", Title: "Pareto front", Width: 860, Height: 420,
		XLabel: "tokens/s per user (1,000 / mean TPOT ms)", YLabel: "output tokens/s per GPU"}
	meets := chart.Series{Name: "meets the SLOs", Color: "#7fa7d6", Radius: 5}
	front := chart.Series{Name: "Pareto front", Color: "#f0a53a", Radius: 5}
	line := chart.Series{Color: "#f0a53a", Line: true, Dash: true, NoPoints: true}
	chosen := chart.Series{Name: "chosen plan", Color: "#2e8b57", Radius: 8}
	onFront := map[int]bool{}
	for _, i := range pl.Pareto() {
		onFront[i] = true
		cd := pl.Candidates[i]
		line.Points = append(line.Points, chart.Point{X: *cd.TokensPerSPerUser, Y: *cd.OutputThroughputPerGPU})
	}
	for i, cd := range pl.Candidates {
		if !cd.MeetsSLO || cd.TokensPerSPerUser == nil || cd.OutputThroughputPerGPU == nil {
			continue
		}
		best := pl.Best != nil && *pl.Best == i
		title := fmt.Sprintf("#%d %s\n%d GPUs, %s USD/hour, %s USD per million output tokens, headroom %s %s\n%.0f output tokens/s per GPU, %.1f tokens/s per user",
			i+1, cd.Describe(), cd.GPUs, fmtOpt(cd.USDPerHour, "%.2f"), fmtOpt(cd.CostPerMillionOutputTokens, "%.3f"), fmtOpt(cd.HeadroomRate, "%.3g"), pl.unit(),
			*cd.OutputThroughputPerGPU, *cd.TokensPerSPerUser)
		if cd.PowerKW != nil {
			title += fmt.Sprintf("\n%s kW estimated, %s output tokens/s per kW", fmtOpt(cd.PowerKW, "%.3g"), fmtOpt(cd.OutputTokensPerSPerKW, "%.0f"))
		}
		for _, t := range cd.SLO {
			title += "\n" + t.Term + ": " + t.String()
		}
		p := chart.Point{X: *cd.TokensPerSPerUser, Y: *cd.OutputThroughputPerGPU, Title: title}
		switch {
		case best:
			p.Title, p.Label = "chosen plan: "+title, "chosen"
			chosen.Points = append(chosen.Points, p)
		case onFront[i]:
			front.Points = append(front.Points, p)
		default:
			meets.Points = append(meets.Points, p)
		}
	}
	// The chosen point is drawn last, on top of the others.
	c.Series = []chart.Series{line, meets, front, chosen}
	return c
}

var page = template.Must(template.New("plan.html").Funcs(template.FuncMap{
	"opt": fmtOpt,
	// A term's header may wrap after its metric and before its bound, so that the
	// table fits the window.
	"wrapTerm": func(t string) template.HTML {
		e := template.HTMLEscapeString(t)
		e = strings.Replace(e, ":", ":<wbr>", 1)
		for _, op := range []string{"&lt;", "&gt;"} {
			if i := strings.Index(e, op); i >= 0 {
				return template.HTML(e[:i] + "<wbr>" + e[i:])
			}
		}
		return template.HTML(e)
	},
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
<title>llmbench plan: {{.Plan.Model}} at {{printf "%.3g" .Plan.Rate}} {{.Unit}}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d232a; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.sub { color: #5a6470; margin: 0 0 16px; }
.best { background: #eef6ee; border: 1px solid #9ac79a; padding: 10px 14px; border-radius: 6px; display: inline-block; }
.fig { max-width: 900px; } circle:hover { stroke-width: 3; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 12px; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e3e7eb; text-align: right; white-space: nowrap; }
th { background: #f4f6f8; white-space: normal; vertical-align: bottom; } td.l, th.l { text-align: left; }
tr.miss td { color: #8a949e; } tr.chosen td { background: #eef6ee; font-weight: 600; }
td.why { white-space: normal; text-align: left; min-width: 12em; max-width: 420px; }
</style>
</head>
<body>
<h1>Plan: {{.Plan.Model}} at {{printf "%.3g" .Plan.Rate}} {{.Unit}}</h1>
<p class="sub">SLOs {{.Plan.SLO}} · profile {{.Plan.Profile}} · {{.Plan.Evaluated}} of {{.Plan.Configurations}} candidates planned{{if .Plan.Interrupted}} (interrupted){{end}} · fleets of up to {{.Plan.MaxReplicas}} replicas · llmbench {{.Plan.Version}}</p>
{{with .Best}}<p class="best">Chosen: <b>{{.Describe}}</b> — {{.GPUs}} {{if eq .GPUs 1}}GPU{{else}}GPUs{{end}}, {{opt .USDPerHour "%.2f"}} USD/hour, {{opt .CostPerMillionOutputTokens "%.3f"}} USD per million output tokens, meets the SLOs up to {{opt .HeadroomRate "%.3g"}} {{$.Unit}}.{{if .PowerKW}} Its GPUs draw an estimated {{opt .PowerKW "%.3g"}} kW at this traffic ({{opt .OutputTokensPerSPerKW "%.0f"}} output tokens/s per kW at the facility){{if .EnergyUSDPerHour}}, {{opt .EnergyUSDPerHour "%.2f"}} USD/hour of electricity{{end}}.{{end}}{{if $.Plan.BestProfile}} Its profile: <code>{{$.Plan.BestProfile}}</code>.{{end}}</p>
{{else}}<p class="best">No candidate meets the SLOs at this traffic: the table says why.</p>{{end}}
{{with .Confidence}}<p class="sub">{{.}}</p>{{end}}
<h2>Throughput per GPU against tokens/s per user</h2>
{{if .Chart}}<p class="sub">Hover a point for its configuration.</p>
<div class="fig">{{.Chart}}</div>{{else}}<p>No candidate meets the SLOs, so there is nothing to draw.</p>{{end}}
<h2>Every candidate</h2>
<div class="scroll"><table>
<thead><tr><th>#</th><th class="l">deployment</th><th>GPUs</th><th class="l">dtype</th><th>seqs</th><th>batched</th><th class="l">prefill</th><th class="l">router</th><th>USD/hour</th><th>USD/M out</th><th>kW (est.)</th><th>tok/s per kW</th><th>headroom {{.Unit}}</th><th>tok/s per GPU</th><th>tok/s per user</th>{{range .Terms}}<th>{{wrapTerm .}}</th><th>margin</th>{{end}}<th class="l">why not</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="{{if .Best}}chosen{{else if not .C.MeetsSLO}}miss{{end}}"><td>{{.N}}</td><td class="l">{{if .C.Replicas}}{{.C.Replicas}} × {{end}}{{.C.GPU}} tp {{.C.TP}}</td><td>{{.C.GPUs}}</td><td class="l">{{.C.Dtype}}</td><td>{{.C.MaxNumSeqs}}</td><td>{{.C.MaxBatchedTokens}}</td><td class="l">{{.C.Prefill}}</td><td class="l">{{.C.Router}}</td><td>{{opt .C.USDPerHour "%.2f"}}</td><td>{{opt .C.CostPerMillionOutputTokens "%.3f"}}</td><td>{{opt .C.PowerKW "%.3g"}}</td><td>{{opt .C.OutputTokensPerSPerKW "%.0f"}}</td><td>{{opt .C.HeadroomRate "%.3g"}}</td><td>{{opt .C.OutputThroughputPerGPU "%.0f"}}</td><td>{{opt .C.TokensPerSPerUser "%.1f"}}</td>{{range .SLO}}<td>{{opt .Value "%.4g"}}</td><td>{{pct .Margin}}</td>{{end}}<td class="why">{{.C.Reason}}</td></tr>
{{end}}</tbody></table></div>
</body>
</html>
`))
