package report

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
)

// The page's template, script and style. Everything is inlined into report.html, which
// therefore works offline and fetches nothing when opened; its charts are SVG drawn here
// (internal/chart), as plan.html's and calibration.html's are.
//
//go:embed assets/report.html.tmpl assets/report.js assets/report.css
var assets embed.FS

var pageTemplate = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"lower": strings.ToLower,
}).ParseFS(assets, "assets/report.html.tmpl"))

// WriteHTML writes report.html: one self-contained page with the run's charts and tables.
//
// Every figure on the page comes from sum, the typed summary the console and summary.csv
// print, through the metric registry. charts holds the per-request charts' data (CDFs,
// request anatomy, throughput and in-flight requests over time) from the Collector that
// aggregated the run; nil leaves those charts out. The page's script reads the levels, the
// ladder's picks and charts as JSON embedded in the page; the configuration it does not
// read is rendered on the server side only. Nothing is written to w unless the whole page
// was built.
//
// Server-side metrics scraped during a level (levels[i].server.series) are drawn over time.
func WriteHTML(w io.Writer, sum *Summary, charts *Charts) error {
	if sum == nil {
		return errors.New("report.html: no summary")
	}
	view, err := buildView(sum, charts)
	if err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	payload := pageData{Records: charts}
	payload.Summary.Levels, payload.Summary.SweetSpot, payload.Summary.SLOLimit = sum.Levels, sum.SweetSpot, sum.SLOLimit
	data, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("report.html: encoding chart data: %w", err)
	}
	view.Data = template.JS(escapeScriptJSON(data))

	var page bytes.Buffer
	if err := pageTemplate.Execute(&page, view); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	_, err = w.Write(page.Bytes())
	return err
}

// pageData is the JSON embedded in the page for its script (assets/report.js): the summary's
// levels and picks as summary.json writes them, and the per-request charts.
type pageData struct {
	Summary struct {
		Levels    []Level       `json:"levels"`
		SweetSpot *metrics.Pick `json:"sweet_spot"`
		SLOLimit  *metrics.Pick `json:"slo_limit"`
	} `json:"summary"`
	Records *Charts `json:"records"`
}

// escapeScriptJSON makes JSON safe inside <script type="application/json">: the element ends
// at the first "</", so no "<" may appear raw. encoding/json already writes <, >, & as
// \u003c etc.; this is the belt to that pair of braces, and keeps "<!--" out too.
func escapeScriptJSON(b []byte) string {
	s := strings.ReplaceAll(string(b), "</", `<\/`)
	return strings.ReplaceAll(s, "<!--", `\u003c!--`)
}

// secretKey matches field names whose values are credentials. summary.json is written
// without them (issue 7), so this is defence in depth for hand-made or older summaries and
// free-form fields (load.extra_body): the page must never show a key even if the summary
// it is given holds one.
var secretKey = regexp.MustCompile(`(?i)^(authorization|proxy[-_]?authorization|cookie|set[-_]?cookie|token|bearer|password|passwd|secret|x[-_]api[-_]key|api[-_]?key|(access|auth|refresh|session)[-_]?token|client[-_]?secret|.*[-_](api[-_]?key|secret|password|access[-_]token|auth[-_]token|bearer[-_]token))$`)

const redacted = "[redacted]"

// view is what the template renders on the server side: the parts of the page that must read
// well without script (title, ladder, percentile tables, configuration).
type view struct {
	Title    string
	Version  string
	Subtitle []kv
	Cards    []card
	// Caveats are what the console says a reader must know before trusting the figures
	// (Caveats), each with its level's name.
	Caveats    []string
	Levels     []levelRow
	HasSLO     bool
	HasGoodput bool
	// The run's price and each level's cost at it (summary.json price, levels[i].cost);
	// HasGoodCost when some level has a cost per good token.
	HasCost, HasGoodCost bool
	Price                string
	Costs                []costRow
	Unstreamed           bool // some level had no streams: no TTFT, TPOT or ITL
	Failures             []failureRow
	Metrics              []metricTable
	CDFs                 []cdfFigure
	// The throughput-vs-latency charts, drawn on the server (tradeoff.go).
	TradeoffTTFT, TradeoffTPOT template.HTML
	// The request anatomy of each level with a sample, and the charts over time
	// (timecharts.go); AnatomyShown is the level the page opens on (the sweet spot, else
	// the last).
	Anatomy       []anatomyView
	AnatomyShown  int
	AnatomyNote   string // why there is no anatomy
	OverTime      template.HTML
	OverTimeWidth string // the buckets' width in seconds
	Server        template.HTML
	GPU           template.HTML // GPU power and utilisation over time (levels[i].gpu.series)
	// An agentic run's tasks (htmltasks.go): a row per level and TTFT against the context.
	Tasks      []taskRow
	TasksChart template.HTML
	// Parts are balanced levels' endpoints and staged levels' stages, a row each.
	Parts  []partRow
	Config []kv
	CSS    template.CSS
	JS     template.JS
	Data   template.JS
}

type kv struct{ K, V string }

// failureRow is one kind of failure of a level (levels[i].error_details).
type failureRow struct{ Level, Kind, Status, Count, Message, Hint string }

// cdfFigure is one CDF chart: the registry's metric (JSON key), its label and axis, drawn
// on a linear and on a logarithmic latency axis (the page's checkbox shows one).
type cdfFigure struct {
	Key, Label, Axis string
	Linear, Log      template.HTML
}

type card struct {
	Label, Value, Detail string
	Tone                 string // "", "good", "bad", "accent"
}

type cell struct {
	Text  string
	Title string // tooltip: confidence interval, error kinds, failing terms
	Flag  bool   // unreliable percentile, failures present, failed verdict
}

type levelRow struct {
	Index                          int
	Name, Load                     string
	SweetSpot, SLOLimit, Partial   bool
	Completed, Failed              cell
	ReqS, OutTokS                  string
	TTFT50, TTFT99, TPOT50, TPOT99 cell
	ITL99, E2EL50, E2EL99          cell
	Goodput                        cell
	CostOut, CostGood              string // USD per 1M output and good output tokens
	Verdict                        cell
	FailingTerms                   string // the failing terms' names, shown beside a failed verdict
	VerdictSet                     bool
	VerdictPass                    bool
}

// partRow is one endpoint's or stage's share of a level (levels[i].endpoints[], stages[]).
type partRow struct {
	Level, Part                    string
	Completed                      int
	Failed                         cell
	ReqS, OutTokS                  string
	TTFT50, TTFT99, TPOT50, E2EL99 cell
	Steady, SteadyWhy              string
	Verdict                        cell
	VerdictSet, VerdictPass        bool
}

// partRows are level i's endpoints and stages as rows of the page's table.
func partRows(s *Summary, i int) []partRow {
	l := &s.Levels[i]
	row := func(part string, lv *metrics.Level) partRow {
		pc := func(key string, p float64) cell {
			st, _ := lv.Stats(key)
			return percentileCell(st, p)
		}
		r := partRow{Level: levelName(s.Levels, i), Part: part, Completed: lv.Completed,
			Failed: cell{Text: strconv.Itoa(lv.Failed), Flag: lv.Failed > 0, Title: errorKinds(lv.Errors)},
			ReqS:   fmtNum(lv.RequestThroughput), OutTokS: fmtNum(lv.OutputThroughput),
			TTFT50: pc(metrics.KeyTTFT, 50), TTFT99: pc(metrics.KeyTTFT, 99), TPOT50: pc(metrics.KeyTPOT, 50), E2EL99: pc(metrics.KeyE2EL, 99), Steady: "—"}
		if ss := lv.SteadyState; ss != nil {
			r.Steady, r.SteadyWhy = "no", ss.Reason
			if ss.Reached {
				r.Steady = "yes"
			}
		}
		if lv.SLO != nil {
			r.VerdictSet, r.VerdictPass = true, lv.SLO.Pass
			r.Verdict, _ = verdictCell(lv.SLO)
		}
		return r
	}
	var out []partRow
	for k := range l.Endpoints {
		e := &l.Endpoints[k]
		out = append(out, row(fmt.Sprintf("endpoint %d: %s", e.Endpoint, e.URL), &e.Level))
	}
	for k := range l.Stages {
		st := &l.Stages[k]
		r := row(fmt.Sprintf("stage %d: %s, %gs-%gs", st.Stage, st.Load(), st.StartS, st.EndS), &st.Level)
		if st.From != st.To {
			r.Steady = "ramp"
		}
		out = append(out, r)
	}
	return out
}

// costRow is one level's cost in USD (levels[i].cost).
type costRow struct {
	Name                                             string
	PerHour, PerMOut, PerMTokens, Per1kReq, PerMGood string
}

type metricTable struct {
	Key, Title string
	Primary    bool
	Chart      template.HTML // its percentiles by level (svgcharts.go)
	Columns    []string
	Rows       []metricRow
}

type metricRow struct {
	Name  string
	Cells []cell
}

// tableMetrics are the metrics with a table of per-level statistics, in page order: the
// registry's primary metrics, then the others, then those kept on the level itself rather
// than under its "metrics" (OnLevel).
var tableMetrics = func() []*metrics.Metric {
	var out []*metrics.Metric
	for _, pass := range []int{0, 1, 2} {
		for _, m := range metrics.Registry {
			if (pass == 0 && m.Primary && !m.OnLevel) || (pass == 1 && !m.Primary && !m.OnLevel) || (pass == 2 && m.OnLevel) {
				out = append(out, m)
			}
		}
	}
	return out
}()

func buildView(s *Summary, charts *Charts) (*view, error) {
	v := &view{
		CSS: template.CSS(mustAsset("assets/report.css")),
		JS:  template.JS(mustAsset("assets/report.js")),
	}
	v.Version = s.Version
	v.Title = "llmbench report"
	if s.Target.Model != "" {
		v.Title += " — " + s.Target.Model
	}
	for _, f := range []kv{{"model", s.Target.Model}, {"target", s.Target.URL}, {"api", s.Target.API}, {"started", s.StartedAt.Format(time.RFC3339Nano)}, {"end", string(s.EndReason)}} {
		if f.V != "" {
			v.Subtitle = append(v.Subtitle, f)
		}
	}

	sweet, limit := pickIndex(s.SweetSpot), pickIndex(s.SLOLimit)
	totalDone, totalFailed := 0, 0
	for i := range s.Levels {
		l := &s.Levels[i]
		row := levelRow{Index: i, Name: levelName(s.Levels, i), Load: loadText(l.Concurrency, l.Rate), SweetSpot: i == sweet, SLOLimit: i == limit}
		totalDone += l.Completed
		totalFailed += l.Failed
		row.Completed = cell{Text: strconv.Itoa(l.Completed)}
		row.Failed = cell{Text: strconv.Itoa(l.Failed), Flag: l.Failed > 0, Title: errorKinds(l.Errors)}
		for _, d := range l.ErrorDetails {
			fr := failureRow{Level: levelName(s.Levels, i), Kind: d.Kind, Count: strconv.Itoa(d.Count), Message: d.FirstMessage, Hint: d.Hint}
			if d.Status != 0 {
				fr.Status = strconv.Itoa(d.Status)
			}
			if d.RetryAfterS > 0 {
				fr.Hint = strings.TrimPrefix(fr.Hint+fmt.Sprintf("; Retry-After %gs", d.RetryAfterS), "; ")
			}
			v.Failures = append(v.Failures, fr)
		}
		if l.Canceled > 0 {
			row.Failed.Title = strings.TrimPrefix(row.Failed.Title+"; ", "; ") + strconv.Itoa(l.Canceled) + " canceled by the end of the run (not failures)"
		}
		row.Partial = l.Partial
		if l.Unstreamed {
			v.Unstreamed = true
		}
		row.ReqS = fmtNum(l.RequestThroughput)
		row.OutTokS = fmtNum(l.OutputThroughput)
		pc := func(key string, p float64) cell {
			st, _ := l.Stats(key)
			return percentileCell(st, p)
		}
		row.TTFT50, row.TTFT99 = pc(metrics.KeyTTFT, 50), pc(metrics.KeyTTFT, 99)
		row.TPOT50, row.TPOT99 = pc(metrics.KeyTPOT, 50), pc(metrics.KeyTPOT, 99)
		row.ITL99 = pc(metrics.KeyITL, 99)
		row.E2EL50, row.E2EL99 = pc(metrics.KeyE2EL, 50), pc(metrics.KeyE2EL, 99)
		if l.Goodput != nil {
			v.HasGoodput = true
			row.Goodput = cell{Text: fmtNum(*l.Goodput)}
			if gf := l.GoodFraction; gf != nil && !math.IsNaN(*gf) {
				row.Goodput.Title = strconv.FormatFloat(*gf*100, 'f', 1, 64) + "% of requests met every per-request SLO"
			}
		}
		if c := l.Cost; c != nil {
			v.HasCost = true
			v.HasGoodCost = v.HasGoodCost || c.PerMillionGoodOutputTokens != nil
			row.CostOut, row.CostGood = usdText(c.PerMillionOutputTokens), usdText(c.PerMillionGoodOutputTokens)
			v.Costs = append(v.Costs, costRow{Name: row.Name, PerHour: fmtNum(c.USDPerHour), PerMOut: row.CostOut,
				PerMTokens: usdText(c.PerMillionTokens), Per1kReq: usdText(c.Per1kRequests), PerMGood: row.CostGood})
		}
		if l.SLO != nil {
			v.HasSLO = true
			row.VerdictSet = true
			row.VerdictPass = l.SLO.Pass
			row.Verdict, row.FailingTerms = verdictCell(l.SLO)
		}
		v.Levels = append(v.Levels, row)
		v.Parts = append(v.Parts, partRows(s, i)...)
	}

	if p := s.Price; p != nil {
		v.Price = priceText(p)
	}
	for _, c := range Caveats(s) {
		v.Caveats = append(v.Caveats, caveatLine(s, c))
	}
	v.Cards = append(v.Cards, card{Label: "Levels", Value: strconv.Itoa(len(s.Levels)), Detail: strconv.Itoa(totalDone) + " requests completed"})
	failTone := ""
	if totalFailed > 0 {
		failTone = "bad"
	}
	v.Cards = append(v.Cards, card{Label: "Failed requests", Value: strconv.Itoa(totalFailed), Tone: failTone, Detail: "counted, never dropped"})
	noSpot := "no knee found"
	if len(s.Levels) > 1 {
		noSpot = strings.TrimLeft(strings.TrimPrefix(NoSweetSpotReason(s), "none"), " :") // why, as the console says it
	}
	v.Cards = append(v.Cards, pickCard("Sweet spot", s.SweetSpot, s.Levels, "accent", noSpot))
	// Only with SLO verdict terms: without them no level can be the limit, and saying that
	// none meets the SLOs would be wrong.
	if _, judged := s.SLOPassed(); judged {
		v.Cards = append(v.Cards, pickCard("SLO limit", s.SLOLimit, s.Levels, "good", "no level meets the SLOs"))
		if e := s.SLOLimitEstimate; e != nil {
			c := card{Label: "SLO limit estimate", Value: "open", Detail: LimitEstimateText(e, s.Levels)}
			if e.Value != nil {
				c.Value = strconv.FormatFloat(*e.Value, 'g', 3, 64)
			}
			v.Cards = append(v.Cards, c)
		}
	}

	for _, m := range tableMetrics {
		if t, ok := metricTableOf(m, s.Levels); ok {
			t.Primary = len(v.Metrics) < 4
			v.Metrics = append(v.Metrics, t)
		}
	}
	v.TradeoffTTFT = tradeoffChart(s, "tradeoff-ttft", metrics.KeyTTFT, "TTFT")
	v.TradeoffTPOT = tradeoffChart(s, "tradeoff-tpot", metrics.KeyTPOT, "TPOT")
	v.Tasks, v.TasksChart = taskView(s)
	for _, m := range cdfMetrics {
		v.CDFs = append(v.CDFs, cdfFigure{Key: m.JSON, Label: m.Short, Axis: m.CDFAxis,
			Linear: cdfChart(m, charts, s.Levels, false), Log: cdfChart(m, charts, s.Levels, true)})
	}
	v.timeCharts(s, charts)
	var err error
	if v.Config, err = configRows(s); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return v, nil
}

// metricTableOf is metric m's table: a row per level that has statistics of it, a column
// per percentile any level has; false when no level has any.
func metricTableOf(m *metrics.Metric, levels []Level) (metricTable, bool) {
	t := metricTable{Key: m.JSON, Title: m.Description}
	var ps []float64
	for i := range levels {
		if st, ok := levels[i].Stats(m.Key); ok {
			for _, p := range st.Percentiles {
				ps = append(ps, p.P)
			}
		}
	}
	slices.Sort(ps)
	ps = slices.Compact(ps)
	t.Columns = []string{"count", "mean", "std", "min"}
	for _, p := range ps {
		t.Columns = append(t.Columns, metrics.Key(p))
	}
	t.Columns = append(t.Columns, "max")
	for i := range levels {
		st, ok := levels[i].Stats(m.Key)
		if !ok {
			continue
		}
		r := metricRow{Name: levelName(levels, i), Cells: []cell{{Text: strconv.Itoa(st.Count)}, {Text: fmtNum(st.Mean)}, {Text: fmtNum(st.Std)}, {Text: fmtNum(st.Min)}}}
		for _, p := range ps {
			r.Cells = append(r.Cells, acrossRunsCell(levels[i].AcrossRuns, m.Key, metrics.Key(p), percentileCell(st, p)))
		}
		r.Cells = append(r.Cells, cell{Text: fmtNum(st.Max)})
		t.Rows = append(t.Rows, r)
	}
	t.Chart = percentileChart(m, levels, ps)
	return t, len(t.Rows) > 0
}

func mustAsset(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: cannot be missing
	}
	return string(b)
}

// fmtNum prints about four significant figures, never in exponent form.
func fmtNum(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "—"
	case f == 0:
		return "0"
	}
	a := math.Abs(f)
	digits := 0
	switch {
	case a >= 1000:
		digits = 0
	case a >= 100:
		digits = 1
	case a >= 10:
		digits = 2
	case a >= 1:
		digits = 3
	default:
		digits = min(6, 3-int(math.Floor(math.Log10(a))))
	}
	return strconv.FormatFloat(f, 'f', digits, 64)
}

// levelName is levels[i]'s name, else its load, else "level i".
func levelName(levels []Level, i int) string {
	l := &levels[i]
	if l.Name != "" {
		return l.Name
	}
	if lt := loadText(l.Concurrency, l.Rate); lt != "" {
		return lt
	}
	return "level " + strconv.Itoa(i)
}

func loadText(concurrency int, rate float64) string {
	if concurrency > 0 {
		return "concurrency " + strconv.Itoa(concurrency)
	}
	if rate > 0 {
		return "rate " + strconv.FormatFloat(rate, 'f', -1, 64) + " req/s"
	}
	return ""
}

func pickIndex(p *metrics.Pick) int {
	if p == nil || p.Index < 0 {
		return -1
	}
	return p.Index
}

func pickCard(label string, p *metrics.Pick, levels []Level, tone, none string) card {
	i := pickIndex(p)
	if i < 0 {
		return card{Label: label, Value: "none", Detail: none}
	}
	name := "level " + strconv.Itoa(i)
	if i < len(levels) {
		name = levelName(levels, i)
	} else if lt := loadText(p.Concurrency, p.Rate); lt != "" {
		name = lt
	}
	detail := p.Reason
	if c := p.Cost; c != nil && c.PerMillionOutputTokens != nil {
		detail += " · " + fmtNum(*c.PerMillionOutputTokens) + " USD per 1M output tokens"
		if c.PerMillionGoodOutputTokens != nil {
			detail += ", " + fmtNum(*c.PerMillionGoodOutputTokens) + " per 1M good ones"
		}
	}
	return card{Label: label, Value: name, Detail: detail, Tone: tone}
}

// usdText is a cost in USD, "—" where there is none (nothing of its unit was produced).
func usdText(v *float64) string {
	if v == nil {
		return fmtNum(math.NaN())
	}
	return fmtNum(*v)
}

// priceText says what the endpoint cost and where the price came from.
func priceText(p *metrics.Price) string {
	var t string
	switch {
	case p.GPU != nil:
		t = strconv.Itoa(p.GPU.GPUs) + " GPU"
		if p.GPU.GPUs != 1 {
			t += "s"
		}
		t += " at " + fmtNum(p.GPU.USDPerGPUHour) + " USD per GPU-hour"
	case p.Tokens != nil:
		t = fmtNum(p.Tokens.USDPerMillionInput) + " / " + fmtNum(p.Tokens.USDPerMillionOutput) + " USD per million input / output tokens"
	}
	if p.Source != "" {
		t += " (" + p.Source + ")"
	}
	return t
}

// errorKinds is "kind: n, ..." in kind order.
func errorKinds(errs map[string]int) string {
	parts := make([]string, 0, len(errs))
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		parts = append(parts, k+": "+strconv.Itoa(errs[k]))
	}
	return strings.Join(parts, ", ")
}

// percentileCell shows percentile p of st with its 95% CI as a tooltip, flagged when the
// sample was too small to bound it (an unbounded CI side), as docs/design.md §2 asks; "—"
// when st is nil, lacks p or had no samples.
func percentileCell(st *metrics.Stats, p float64) cell {
	if st == nil {
		return cell{Text: fmtNum(math.NaN())}
	}
	pc, ok := st.Get(p)
	if !ok || math.IsNaN(pc.Value) {
		return cell{Text: fmtNum(math.NaN())}
	}
	c := cell{Text: fmtNum(pc.Value)}
	if !pc.Reliable() {
		c.Flag = true
		c.Title = "95% CI unbounded: too few samples for P" + metrics.Key(p)[1:]
		return c
	}
	c.Title = "95% CI " + fmtNum(pc.Lo) + " – " + fmtNum(pc.Hi) + " ms"
	switch pc.Method {
	case metrics.MethodBatchMeans:
		c.Title += " (batch means: holds for correlated requests)"
	case metrics.MethodOrderStatistics:
		c.Title += " (order statistics: assumes independent requests)"
	}
	return c
}

// acrossRunsCell shows a repeated level's percentile as the mean of its runs ± the
// half-width of their t-distribution 95% interval (levels[i].across_runs); c otherwise.
func acrossRunsCell(ar *metrics.AcrossRuns, metric, stat string, c cell) cell {
	iv, ok := ar.Get(metric, stat)
	if !ok || math.IsNaN(iv.Mean) || math.IsNaN(iv.Lo) || math.IsNaN(iv.Hi) {
		return c
	}
	half := (iv.Hi - iv.Lo) / 2
	return cell{Text: fmtNum(iv.Mean) + " ± " + fmtNum(half),
		Title: "mean of " + strconv.Itoa(iv.N) + " runs ± the half-width of its t-distribution 95% interval; every run pooled: " + c.Text + " ms"}
}

// verdictCell is a level's SLO verdict with its terms as a tooltip, and the names of the
// failing terms shown beside a failed verdict.
func verdictCell(slo *metrics.Verdict) (cell, string) {
	c := cell{Text: "pass"}
	if !slo.Pass {
		c = cell{Text: slo.Result(), Flag: true}
	}
	var failing, all, names []string
	for _, t := range slo.Terms {
		if t.Term == "" {
			continue
		}
		desc := t.Term
		if t.Value != nil && !math.IsNaN(*t.Value) {
			desc += " (was " + fmtNum(*t.Value) + ")"
		}
		all = append(all, desc)
		if !t.Pass {
			failing = append(failing, desc)
			// "tpot:p99<=30ms" -> "tpot:p99": the bound is in the tooltip.
			name, _, _ := strings.Cut(t.Term, "<")
			name, _, _ = strings.Cut(name, ">")
			names = append(names, name)
		}
	}
	if len(failing) > 0 {
		c.Title = "failing: " + strings.Join(failing, "; ")
	} else if len(all) > 0 {
		c.Title = strings.Join(all, "; ")
	}
	if slo.Reason != "" { // oversaturated, undecided: what the terms alone do not say
		c.Title = strings.TrimSuffix(slo.Reason+"; "+c.Title, "; ")
	}
	if slo.Pass {
		names = nil
	}
	return c, strings.Join(names, ", ")
}
