package report

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/metrics"
)

// The page's template, script and style, and the chart library vendored from the npm
// registry (web/refresh-assets.sh). Everything is inlined into report.html, which therefore
// works offline and fetches nothing when opened.
//
//go:embed assets/report.html.tmpl assets/report.js assets/report.css assets/uPlot.iife.min.js assets/uPlot.min.css assets/uPlot.VERSION
var assets embed.FS

var pageTemplate = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"lower": strings.ToLower,
}).ParseFS(assets, "assets/report.html.tmpl"))

// WriteHTML writes report.html: one self-contained page with the run's charts and tables.
//
// summaryJSON is summary.json as written (schema llmbench/summary/v2); the page reads it
// loosely, so missing or extra fields only hide or add detail. charts holds the per-request
// charts' data (CDFs, request anatomy, throughput and in-flight requests over time) from the
// Collector that aggregated the run; nil leaves those charts out. Nothing is written to w
// unless the whole page was built.
//
// Optional server-side metrics are drawn over time when summary.json carries them, either as
// levels[i].server.series or as a top-level server_series, each a table of columns
// ({"t_s": [...], "running": [...], ...}) or a list of rows ([{"t_s": 0.5, "running": 3}, ...]),
// t_s in seconds since the run's start.
func WriteHTML(w io.Writer, summaryJSON []byte, charts *Charts) error {
	return writeHTML(w, summaryJSON, charts)
}

func writeHTML(w io.Writer, summaryJSON []byte, recs *Charts) error {
	sum, err := parseSummary(summaryJSON)
	if err != nil {
		return fmt.Errorf("report.html: summary.json: %w", err)
	}
	redactSecrets(sum)
	view := buildView(sum)

	payload := struct {
		Summary map[string]any `json:"summary"`
		Records *Charts        `json:"records"`
	}{sum, recs}
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

// escapeScriptJSON makes JSON safe inside <script type="application/json">: the element ends
// at the first "</", so no "<" may appear raw. encoding/json already writes <, >, & as
// \u003c etc.; this is the belt to that pair of braces, and keeps "<!--" out too.
func escapeScriptJSON(b []byte) string {
	s := strings.ReplaceAll(string(b), "</", `<\/`)
	return strings.ReplaceAll(s, "<!--", `\u003c!--`)
}

func parseSummary(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // keep numbers as written: seeds and counts must not round through float64
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	// Not dec.More(): it says false for a stray ']' or '}', which is trailing data too.
	if len(bytes.TrimSpace(b[dec.InputOffset():])) > 0 {
		return nil, errors.New("trailing data after the JSON object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON object, got %s", jsonKind(v))
	}
	if lv, ok := m["levels"]; ok && lv != nil {
		if _, ok := lv.([]any); !ok {
			return nil, fmt.Errorf(`"levels" must be a list, got %s`, jsonKind(lv))
		}
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// secretKey matches field names whose values are credentials. summary.json is written
// without them (issue 7), so this is defence in depth for hand-made or older summaries: the
// page must never show a key even if the file it is given holds one.
var secretKey = regexp.MustCompile(`(?i)^(authorization|proxy[-_]?authorization|cookie|set[-_]?cookie|token|bearer|password|passwd|secret|x[-_]api[-_]key|api[-_]?key|(access|auth|refresh|session)[-_]?token|client[-_]?secret|.*[-_](api[-_]?key|secret|password|access[-_]token|auth[-_]token|bearer[-_]token))$`)

const redacted = "[redacted]"

func redactSecrets(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKey.MatchString(k) {
				if s, ok := e.(string); ok && (s == "" || s == redacted) {
					continue
				}
				if e != nil {
					x[k] = redacted
				}
				continue
			}
			redactSecrets(e)
		}
	case []any:
		for _, e := range x {
			redactSecrets(e)
		}
	}
}

// view is what the template renders on the server side: the parts of the page that must read
// well without script (title, ladder, percentile tables, configuration).
type view struct {
	Title        string
	Version      string
	UPlotVersion string
	Subtitle     []kv
	Cards        []card
	Levels       []levelRow
	HasSLO       bool
	HasGoodput   bool
	Metrics      []metricTable
	CDFs         []cdfFigure
	Config       []kv
	CSS          template.CSS
	UPlotCSS     template.CSS
	UPlotJS      template.JS
	JS           template.JS
	Data         template.JS
}

type kv struct{ K, V string }

// cdfFigure is one CDF chart: the registry's metric (JSON key), its label and axis.
type cdfFigure struct{ Key, Label, Axis string }

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
	Verdict                        cell
	FailingTerms                   string // the failing terms' names, shown beside a failed verdict
	VerdictSet                     bool
	VerdictPass                    bool
}

type metricTable struct {
	Key, Title string
	Primary    bool
	Columns    []string
	Rows       []metricRow
}

type metricRow struct {
	Name  string
	Cells []cell
}

// metricTitles are the tables of per-level statistics, in page order: the registry's
// primary metrics, then the others, then those kept on the level itself rather than under
// its "metrics" (level).
var metricTitles = func() []struct {
	key, title string
	level      bool
} {
	type t = struct {
		key, title string
		level      bool
	}
	var out []t
	for _, pass := range []int{0, 1, 2} {
		for _, m := range metrics.Registry {
			if (pass == 0 && m.Primary && !m.OnLevel) || (pass == 1 && !m.Primary && !m.OnLevel) || (pass == 2 && m.OnLevel) {
				out = append(out, t{m.JSON, m.Description, m.OnLevel})
			}
		}
	}
	return out
}()

func buildView(sum map[string]any) *view {
	v := &view{
		CSS:      template.CSS(mustAsset("assets/report.css")),
		UPlotCSS: template.CSS(mustAsset("assets/uPlot.min.css")),
		UPlotJS:  template.JS(mustAsset("assets/uPlot.iife.min.js")),
		JS:       template.JS(mustAsset("assets/report.js")),
	}
	v.UPlotVersion = strings.TrimSpace(mustAsset("assets/uPlot.VERSION"))
	v.Version = str(sum["llmbench_version"])
	target, _ := sum["target"].(map[string]any)
	model, url := str(target["model"]), str(target["url"])
	v.Title = "llmbench report"
	if model != "" {
		v.Title += " — " + model
	}
	for _, f := range []kv{{"model", model}, {"target", url}, {"api", str(target["api"])}, {"started", str(sum["started_at"])}, {"end", str(sum["end_reason"])}} {
		if f.V != "" {
			v.Subtitle = append(v.Subtitle, f)
		}
	}

	levels, _ := sum["levels"].([]any)
	sweet := pickIndex(sum["sweet_spot"])
	limit := pickIndex(sum["slo_limit"])
	totalDone, totalFailed := 0.0, 0.0
	for i, l := range levels {
		lm, _ := l.(map[string]any)
		row := levelRow{Index: i, Name: levelName(lm, i), Load: loadText(lm), SweetSpot: i == sweet, SLOLimit: i == limit}
		completed, failed := num(lm["completed"]), num(lm["failed"])
		totalDone += zeroNaN(completed)
		totalFailed += zeroNaN(failed)
		row.Completed = cell{Text: fmtCount(completed)}
		row.Failed = cell{Text: fmtCount(failed), Flag: failed > 0, Title: errorKinds(lm["errors"])}
		if c := num(lm["canceled"]); c > 0 {
			row.Failed.Title = strings.TrimPrefix(row.Failed.Title+"; ", "; ") + fmtCount(c) + " canceled by the end of the run (not failures)"
		}
		row.Partial, _ = lm["partial"].(bool)
		row.ReqS = fmtNum(num(lm["request_throughput"]))
		row.OutTokS = fmtNum(num(lm["output_throughput"]))
		mets, _ := lm["metrics"].(map[string]any)
		pc := func(key, p string) cell {
			m, _ := metrics.Lookup(key)
			return percentileCell(mets, m.JSON, p)
		}
		row.TTFT50, row.TTFT99 = pc(metrics.KeyTTFT, "p50"), pc(metrics.KeyTTFT, "p99")
		row.TPOT50, row.TPOT99 = pc(metrics.KeyTPOT, "p50"), pc(metrics.KeyTPOT, "p99")
		row.ITL99 = pc(metrics.KeyITL, "p99")
		row.E2EL50, row.E2EL99 = pc(metrics.KeyE2EL, "p50"), pc(metrics.KeyE2EL, "p99")
		if g, ok := lm["goodput"]; ok && g != nil {
			v.HasGoodput = true
			row.Goodput = cell{Text: fmtNum(num(g))}
			if gf := num(lm["good_fraction"]); !math.IsNaN(gf) {
				row.Goodput.Title = strconv.FormatFloat(gf*100, 'f', 1, 64) + "% of requests met every per-request SLO"
			}
		}
		if slo, ok := lm["slo"].(map[string]any); ok {
			v.HasSLO = true
			row.VerdictSet = true
			pass, _ := slo["pass"].(bool)
			row.VerdictPass = pass
			row.Verdict, row.FailingTerms = verdictCell(slo, pass)
		}
		v.Levels = append(v.Levels, row)
	}

	v.Cards = append(v.Cards, card{Label: "Levels", Value: strconv.Itoa(len(levels)), Detail: fmtCount(totalDone) + " requests completed"})
	failTone := ""
	if totalFailed > 0 {
		failTone = "bad"
	}
	v.Cards = append(v.Cards, card{Label: "Failed requests", Value: fmtCount(totalFailed), Tone: failTone, Detail: "counted, never dropped"})
	v.Cards = append(v.Cards, pickCard("Sweet spot", sum["sweet_spot"], levels, "accent", "no knee found"))
	if _, ok := sum["slo_limit"]; ok || v.HasSLO {
		v.Cards = append(v.Cards, pickCard("SLO limit", sum["slo_limit"], levels, "good", "no level meets the SLOs"))
	}

	for _, mt := range metricTitles {
		t := metricTable{Key: mt.key, Title: mt.title, Primary: len(v.Metrics) < 4}
		var ps []string
		statsOf := func(lm map[string]any) map[string]any {
			if mt.level {
				return lm
			}
			mets, _ := lm["metrics"].(map[string]any)
			return mets
		}
		for _, l := range levels {
			lm, _ := l.(map[string]any)
			st, _ := statsOf(lm)[mt.key].(map[string]any)
			ps = append(ps, percentileKeys(st)...)
		}
		ps = uniqPercentiles(ps)
		t.Columns = append([]string{"count", "mean", "std", "min"}, ps...)
		t.Columns = append(t.Columns, "max")
		found := false
		for i, l := range levels {
			lm, _ := l.(map[string]any)
			mets := statsOf(lm)
			st, ok := mets[mt.key].(map[string]any)
			if !ok {
				continue
			}
			found = true
			r := metricRow{Name: levelName(lm, i)}
			for _, c := range t.Columns {
				switch {
				case c == "count":
					r.Cells = append(r.Cells, cell{Text: fmtCount(num(st[c]))})
				case strings.HasPrefix(c, "p"):
					r.Cells = append(r.Cells, acrossRunsCell(lm, mt.key, c, percentileCell(mets, mt.key, c)))
				default:
					r.Cells = append(r.Cells, cell{Text: fmtNum(num(st[c]))})
				}
			}
			t.Rows = append(t.Rows, r)
		}
		if found {
			v.Metrics = append(v.Metrics, t)
		}
	}

	for _, m := range cdfMetrics {
		v.CDFs = append(v.CDFs, cdfFigure{m.JSON, m.Short, m.CDFAxis})
	}
	v.Config = configRows(sum)
	return v
}

func mustAsset(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: cannot be missing
	}
	return string(b)
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// num reads a JSON number; NaN when absent, null or not a number.
func num(v any) float64 {
	if n, ok := v.(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			return f
		}
	}
	return math.NaN()
}

func zeroNaN(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return f
}

func fmtCount(f float64) string {
	if math.IsNaN(f) {
		return "—"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
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

func levelName(lm map[string]any, i int) string {
	if n := str(lm["name"]); n != "" {
		return n
	}
	if l := loadText(lm); l != "" {
		return l
	}
	return "level " + strconv.Itoa(i)
}

func loadText(lm map[string]any) string {
	if c := num(lm["concurrency"]); !math.IsNaN(c) && c > 0 {
		return "concurrency " + fmtCount(c)
	}
	if r := num(lm["rate"]); !math.IsNaN(r) && r > 0 {
		return "rate " + strconv.FormatFloat(r, 'f', -1, 64) + " req/s"
	}
	return ""
}

func pickIndex(v any) int {
	m, ok := v.(map[string]any)
	if !ok {
		return -1
	}
	if i := num(m["index"]); !math.IsNaN(i) {
		return int(i)
	}
	return -1
}

func pickCard(label string, v any, levels []any, tone, none string) card {
	i := pickIndex(v)
	if i < 0 {
		return card{Label: label, Value: "none", Detail: none}
	}
	m := v.(map[string]any)
	name := "level " + strconv.Itoa(i)
	if i < len(levels) {
		lm, _ := levels[i].(map[string]any)
		name = levelName(lm, i)
	} else if lt := loadText(m); lt != "" {
		name = lt
	}
	return card{Label: label, Value: name, Detail: str(m["reason"]), Tone: tone}
}

func errorKinds(v any) string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+str(m[k]))
	}
	return strings.Join(parts, ", ")
}

// percentileCell shows a percentile with its 95% CI as a tooltip, flagged when the sample was
// too small to bound it (ci95 side null), as docs/design.md §2 asks.
func percentileCell(mets map[string]any, metric, p string) cell {
	st, _ := mets[metric].(map[string]any)
	c := cell{Text: fmtNum(num(st[p]))}
	ci, ok := st["ci95"].(map[string]any)
	if !ok || math.IsNaN(num(st[p])) {
		return c
	}
	pair, ok := ci[p].([]any)
	if !ok || len(pair) != 2 {
		return c
	}
	lo, hi := num(pair[0]), num(pair[1])
	if math.IsNaN(lo) || math.IsNaN(hi) {
		c.Flag = true
		c.Title = "95% CI unbounded: too few samples for " + strings.ToUpper(p[:1]) + p[1:]
		return c
	}
	c.Title = "95% CI " + fmtNum(lo) + " – " + fmtNum(hi) + " ms"
	if m, _ := st["ci_method"].(map[string]any); m[p] == "batch_means" {
		c.Title += " (batch means: holds for correlated requests)"
	} else if m[p] == "order_statistics" {
		c.Title += " (order statistics: assumes independent requests)"
	}
	return c
}

// acrossRunsCell shows a repeated level's percentile as the mean of its runs ± the
// half-width of their t-distribution 95% interval (levels[i].across_runs); c otherwise.
func acrossRunsCell(lm map[string]any, metric, p string, c cell) cell {
	ar, _ := lm["across_runs"].(map[string]any)
	by, _ := ar[metric].(map[string]any)
	iv, _ := by[p].(map[string]any)
	pair, _ := iv["ci95"].([]any)
	if len(pair) != 2 || math.IsNaN(num(iv["mean"])) || math.IsNaN(num(pair[0])) {
		return c
	}
	half := (num(pair[1]) - num(pair[0])) / 2
	return cell{Text: fmtNum(num(iv["mean"])) + " ± " + fmtNum(half),
		Title: "mean of " + fmtCount(num(iv["n"])) + " runs ± the half-width of its t-distribution 95% interval; every run pooled: " + c.Text + " ms"}
}

func verdictCell(slo map[string]any, pass bool) (cell, string) {
	c := cell{Text: "pass"}
	if !pass {
		c = cell{Text: "fail", Flag: true}
	}
	terms, _ := slo["terms"].([]any)
	var failing, all, names []string
	for _, t := range terms {
		tm, _ := t.(map[string]any)
		name := str(tm["term"])
		if name == "" {
			continue
		}
		desc := name
		if v := num(tm["value"]); !math.IsNaN(v) {
			desc += " (was " + fmtNum(v) + ")"
		}
		all = append(all, desc)
		if ok, _ := tm["pass"].(bool); !ok {
			failing = append(failing, desc)
			// "tpot:p99<=30ms" -> "tpot:p99": the bound is in the tooltip.
			name, _, _ = strings.Cut(name, "<")
			name, _, _ = strings.Cut(name, ">")
			names = append(names, name)
		}
	}
	if len(failing) > 0 {
		c.Title = "failing: " + strings.Join(failing, "; ")
	} else if len(all) > 0 {
		c.Title = strings.Join(all, "; ")
	}
	if pass {
		names = nil
	}
	return c, strings.Join(names, ", ")
}

var percentileKey = regexp.MustCompile(`^p[0-9]+(\.[0-9]+)?$`)

func percentileKeys(st map[string]any) []string {
	var out []string
	for k := range st {
		if percentileKey.MatchString(k) {
			out = append(out, k)
		}
	}
	return out
}

func uniqPercentiles(ps []string) []string {
	slices.SortFunc(ps, func(a, b string) int {
		x, _ := strconv.ParseFloat(a[1:], 64)
		y, _ := strconv.ParseFloat(b[1:], 64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return slices.Compact(ps)
}

// configRows flattens the run's configuration: the known fields first, then whatever else
// the summary carries at top level (so newer fields still show), minus the per-level results.
func configRows(sum map[string]any) []kv {
	var rows []kv
	skip := map[string]bool{"levels": true, "sweet_spot": true, "slo_limit": true, "server_series": true}
	order := []string{"llmbench_version", "schema", "started_at", "run_start_unix", "end_reason", "seed", "target", "workload", "load", "slo", "slos", "percentiles"}
	done := map[string]bool{}
	for _, k := range order {
		if v, ok := sum[k]; ok {
			rows = flatten(rows, k, v)
			done[k] = true
		}
	}
	rest := make([]string, 0, len(sum))
	for k := range sum {
		if !done[k] && !skip[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		rows = flatten(rows, k, sum[k])
	}
	return rows
}

func flatten(rows []kv, prefix string, v any) []kv {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) == 0 {
			return append(rows, kv{prefix, "{}"})
		}
		for _, k := range keys {
			rows = flatten(rows, prefix+"."+k, x[k])
		}
		return rows
	case string:
		if x == "" {
			return append(rows, kv{prefix, "—"})
		}
		return append(rows, kv{prefix, x})
	case []any:
		scalar := true
		parts := make([]string, 0, len(x))
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				scalar = false
			}
			parts = append(parts, str(e))
		}
		if scalar {
			return append(rows, kv{prefix, strings.Join(parts, ", ")})
		}
		if flat := flatObjects(x); flat != "" {
			return append(rows, kv{prefix, flat})
		}
		for i, e := range x {
			rows = flatten(rows, prefix+"["+strconv.Itoa(i)+"]", e)
		}
		return rows
	case nil:
		return append(rows, kv{prefix, "null"})
	}
	return append(rows, kv{prefix, str(v)})
}

// flatObjects renders a list of flat objects (a ladder's levels) on one line,
// "concurrency=1 requests=200; concurrency=4 requests=200"; "" when an element is not flat.
func flatObjects(list []any) string {
	parts := make([]string, 0, len(list))
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return ""
		}
		keys := make([]string, 0, len(m))
		for k, v := range m {
			switch v.(type) {
			case map[string]any, []any:
				return ""
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fields := make([]string, 0, len(keys))
		for _, k := range keys {
			fields = append(fields, k+"="+str(m[k]))
		}
		parts = append(parts, strings.Join(fields, " "))
	}
	return strings.Join(parts, "; ")
}
