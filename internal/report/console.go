package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/metrics"
)

// ConsoleOptions tune the console summary.
type ConsoleOptions struct {
	// Percentiles printed in each latency section besides the mean and median; nil: 90 and
	// 99 when computed (vLLM's lines), falling back to every computed percentile.
	Percentiles []float64
	// Verbose adds the chunk-gap and from-schedule sections.
	Verbose bool
	// Wide prints every column of the ladder table; by default it fits 100 columns (the
	// rest are in each level's block, summary.csv and report.html).
	Wide bool
}

// Console writes the summary the way vLLM's benchmark prints it, one block per level, then —
// for more than one level — a ladder table marking the sweet spot and the SLO limit.
func Console(w io.Writer, s *Summary, opts ConsoleOptions) error {
	bw := bufio.NewWriter(w)
	for i := range s.Levels {
		if i > 0 {
			bw.WriteString("\n")
		}
		consoleLevel(bw, s, i, opts)
	}
	if len(s.Levels) > 1 {
		bw.WriteString("\n")
		consoleLadder(bw, s, opts)
	}
	return bw.Flush()
}

// ConsoleLevel writes level i's block alone: the CLI prints each level as it ends.
func ConsoleLevel(w io.Writer, s *Summary, i int, opts ConsoleOptions) error {
	bw := bufio.NewWriter(w)
	consoleLevel(bw, s, i, opts)
	return bw.Flush()
}

// ConsoleLadder writes the ladder table alone (one row per level, sweet spot and SLO limit
// marked), after the levels' blocks were printed one by one.
func ConsoleLadder(w io.Writer, s *Summary, opts ConsoleOptions) error {
	bw := bufio.NewWriter(w)
	consoleLadder(bw, s, opts)
	return bw.Flush()
}

const consoleWidth = 50

// consoleRule centres title in a rule of c, like Python's '{:c^50}'.format(title) (the
// extra character of odd padding goes right).
func consoleRule(title string, c byte) string {
	pad := consoleWidth - utf8.RuneCountInString(title)
	if pad < 0 {
		return title
	}
	l := pad / 2
	return strings.Repeat(string(c), l) + title + strings.Repeat(string(c), pad-l)
}

type consoleBlock struct {
	w    *bufio.Writer
	note bool // a low-sample flag was printed
}

// line prints vLLM's "{:<40} {:<10}" row, trailing blanks trimmed.
func (b *consoleBlock) line(label, value string, extra ...string) {
	s := fmt.Sprintf("%-40s %-10s", label, value)
	if len(extra) > 0 && extra[0] != "" {
		if utf8.RuneCountInString(s)+1+utf8.RuneCountInString(extra[0]) > console.Width {
			// too long for one line: the note goes under the value column, wrapped
			b.w.WriteString(strings.TrimRight(s, " ") + "\n" + wrapIndented(extra[0], 41, console.Width) + "\n")
			return
		}
		s += " " + extra[0]
	}
	b.w.WriteString(strings.TrimRight(s, " ") + "\n")
}

func consoleFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return noNegativeZero(strconv.FormatFloat(v, 'f', 2, 64))
}

// noNegativeZero drops the sign of a figure that rounds to zero ("-0.00" is "0.00").
func noNegativeZero(s string) string {
	if strings.HasPrefix(s, "-") && strings.Trim(s[1:], "0.") == "" {
		return s[1:]
	}
	return s
}

func consoleLevel(w *bufio.Writer, s *Summary, i int, opts ConsoleOptions) {
	l := &s.Levels[i]
	b := &consoleBlock{w: w}
	w.WriteString(consoleRule(" Serving Benchmark Result ", '=') + "\n")
	name := l.Name
	if name == "" {
		name = l.Load().String()
	}
	if l.Partial {
		name += " (partial: the run ended during this level)"
	}
	b.line("Level:", name)
	if l.Concurrency > 0 {
		b.line("Maximum request concurrency:", strconv.Itoa(l.Concurrency))
	}
	if l.Rate > 0 {
		b.line("Request rate configured (RPS):", consoleFloat(l.Rate))
	}
	switch l.EndReason {
	case EndOversaturated:
		b.line("Level stopped:", "oversaturated", "<-- the server could not keep up with this rate (its backlog kept growing)")
	case EndMaxErrorRate:
		b.line("Level stopped:", "max_error_rate", "<-- too many of its last requests failed (--max-error-rate)")
	case EndUnreachable:
		b.line("Level stopped:", "unreachable", "<-- its first requests all failed to connect: is the server up at --url?")
	}
	if n := len(l.Runs); n > 0 {
		b.line("Runs (--repeat):", strconv.Itoa(n), "(the figures below pool every run's requests)")
	}
	b.line("Successful requests:", strconv.Itoa(l.Completed))
	if l.Failed > 0 {
		total := l.Completed + l.Failed
		b.line("Failed requests:", strconv.Itoa(l.Failed),
			fmt.Sprintf("<-- FAILURES: %.1f%% of requests", 100*float64(l.Failed)/float64(total)))
		if len(l.ErrorDetails) > 0 {
			for _, d := range l.ErrorDetails {
				b.line("  "+errorName(d)+":", strconv.Itoa(d.Count), errorNote(d))
			}
		} else { // a summary written before error details
			kinds := make([]string, 0, len(l.Errors))
			for k := range l.Errors {
				kinds = append(kinds, k)
			}
			slices.Sort(kinds)
			for _, k := range kinds {
				b.line("  "+k+":", strconv.Itoa(l.Errors[k]))
			}
		}
	} else {
		b.line("Failed requests:", "0")
	}
	if l.Canceled > 0 {
		b.line("Canceled requests (run ended):", strconv.Itoa(l.Canceled))
	}
	if l.Retried > 0 || l.TTFTUpperBound > 0 {
		b.line("Retried / TTFT upper-bound requests:", fmt.Sprintf("%d / %d", l.Retried, l.TTFTUpperBound),
			"(re-sent on a new connection / first token coalesced with a later one)")
	}
	b.line("Benchmark duration (s):", consoleFloat(l.DurationS))
	b.line("Total input tokens:", strconv.Itoa(l.TotalInputTokens))
	b.line("Total generated tokens:", strconv.Itoa(l.TotalOutputTokens))
	if l.ToolCalls > 0 {
		b.line("Tool calls (requests / tokens):", fmt.Sprintf("%d / %d", l.ToolCalls, l.TotalToolCallTokens),
			"(answers that called a tool / their tool-call tokens, of the generated tokens)")
	}
	if p := l.PromptTokens; p != nil && math.Abs(p.ServerMean-p.IntendedMean) > 0.5 {
		note := "<-- the server counts prompts differently"
		if p.ImagesMean > 0 {
			note = fmt.Sprintf("<-- the server's count includes %.1f images per request", p.ImagesMean)
		}
		b.line("Mean input tokens (client/server):", fmt.Sprintf("%.1f / %.1f", p.IntendedMean, p.ServerMean), note)
		if p.ImagesMean == 0 {
			// What to do about it: the client's tokenizer is not the model's, or the chat
			// template added tokens the client did not count (a few per message).
			if t := s.Workload.ChatTemplate; t != "" {
				b.w.WriteString("  prompts were sized with the chat template " + t + ":\n" +
					"  is it the one the server applies, and --tokenizer the model's?\n")
			} else {
				b.w.WriteString("  for exact lengths: --tokenizer with the model's tokenizer (its folder or HuggingFace id:\n" +
					"  the chat template in its tokenizer_config.json then sizes chat prompts too),\n" +
					"  --chat-template FILE, or --tokenizer server\n")
			}
		}
	}
	if ct := l.CachedTokens; ct != nil {
		b.line("Prompt cache hit rate (server's count):", fmt.Sprintf("%.1f%%", 100*ct.HitRate),
			fmt.Sprintf("(%.1f tok/request; %d of %d requests said)", ct.Mean, ct.Requests, l.Completed))
	}
	b.line("Request throughput (req/s):", consoleFloat(l.RequestThroughput))
	if l.Goodput != nil {
		b.line("Request goodput (req/s):", consoleFloat(*l.Goodput))
	}
	b.line("Output token throughput (tok/s):", consoleFloat(l.OutputThroughput))
	b.line("Peak output token throughput (tok/s):", consoleFloat(l.PeakOutputThroughput))
	b.line("Peak concurrent requests:", strconv.Itoa(l.PeakConcurrency))
	b.line("Mean concurrent requests:", consoleFloat(l.MeanConcurrency))
	b.line("Total Token throughput (tok/s):", consoleFloat(l.TotalTokenThroughput))
	if l.InputsPerS != nil {
		b.line("Input throughput (inputs/s):", consoleFloat(*l.InputsPerS))
	}
	if l.DocumentsPerS != nil {
		b.line("Document throughput (docs/s):", consoleFloat(*l.DocumentsPerS))
	}
	if l.Unstreamed {
		b.line("Input token throughput (tok/s):", consoleFloat(l.InputThroughput))
		w.WriteString("No streams (--stream=false, embeddings or rerank): TTFT, TPOT, ITL and chunk gap\n" +
			"are not measured; E2EL is sent to the whole response.\n")
	}
	if l.GoodputTokenThroughput != nil {
		b.line("Goodput token throughput (tok/s):", consoleFloat(*l.GoodputTokenThroughput))
	}
	if l.GoodFraction != nil {
		b.line("Good requests (met every SLO):", fmt.Sprintf("%d (%.1f%%)", *l.GoodRequests, 100**l.GoodFraction))
	}
	b.cost(s, l)

	for _, m := range consoleSections(opts.Verbose) {
		st, ok := l.Metrics.Get(m.Key)
		if !ok {
			continue // absent: a level without streams (said above)
		}
		b.stats(m.Title, m.Short, st, opts)
		if m.Key == metrics.KeyTTFT && l.FirstContent != nil {
			// Reasoning models: the answer starts later than the first (reasoning) token.
			fc, _ := metrics.Lookup(metrics.KeyFirstContent)
			b.stats(fc.Title, fc.Short, l.FirstContent, opts)
		}
		if tc, ok := l.Metrics.Get(metrics.KeyFirstToolCall); m.Key == metrics.KeyTTFT && ok {
			// Answers that called a tool: when their call's first token came.
			ft, _ := metrics.Lookup(metrics.KeyFirstToolCall)
			b.stats(ft.Title, ft.Short, tc, opts)
		}
	}
	if l.ReadLag != nil {
		// The client's own lateness: how long arrived bytes waited for it (kernel stamps
		// keep this wait out of the figures above).
		m, _ := metrics.Lookup(metrics.KeyReadLag)
		b.stats(m.Title, m.Short, l.ReadLag, opts)
	}
	b.phases(l)
	if l.ServerTimings != nil {
		b.serverTimings(l.ServerTimings)
	}
	b.turns(l.Turns)
	b.tasks(l.Tasks)
	b.endpoints(l.Endpoints)
	b.stages(l.Stages)
	b.predictionInterval(l.PredictionInterval, &l.Level)
	b.acrossRuns(l)
	b.steadyState(l.SteadyState)
	if l.SLO != nil {
		w.WriteString(consoleRule("SLO Verdict", '-') + "\n")
		w.WriteString(fmt.Sprintf("%-40s ", "Verdict:") + console.Wrap(verdictWord(l.SLO), 41, 41, console.Width) + "\n")
		for _, t := range l.SLO.Terms {
			v := "n/a"
			if t.Value != nil {
				v = consoleFloat(*t.Value)
			}
			word := passFail(t.Pass)
			if t.Undecided {
				word = "undecided (" + t.Reason + ")"
			}
			b.line("  "+t.Term, v, word)
		}
	}
	w.WriteString(strings.Repeat("=", consoleWidth) + "\n")
	if b.note {
		w.WriteString("(low n) too few samples to bound this percentile's 95% confidence interval;\n" +
			"        treat it as indicative (P99 needs >= 368 samples, P90 >= 36).\n")
	}
}

// cost prints what the level's work cost at the run's price, when it was priced: the cost
// rate, where it came from, and the cost of each unit the level produced.
func (b *consoleBlock) cost(s *Summary, l *Level) {
	c := l.Cost
	if c == nil {
		return
	}
	b.w.WriteString(consoleRule("Cost (USD)", '-') + "\n")
	rate := ""
	if p := s.Price; p != nil && p.GPU != nil {
		rate = fmt.Sprintf("(%d GPU%s at %s per GPU-hour)", p.GPU.GPUs, console.Plural(p.GPU.GPUs, "", "s"), fmtNum(p.GPU.USDPerGPUHour))
	} else if p != nil && p.Tokens != nil {
		rate = fmt.Sprintf("(tokens billed at %s / %s per 1M input / output)", fmtNum(p.Tokens.USDPerMillionInput), fmtNum(p.Tokens.USDPerMillionOutput))
	}
	b.line("Cost per hour:", fmtNum(c.USDPerHour), rate)
	if s.Price != nil && s.Price.Source != "" {
		b.w.WriteString(wrapIndented("price: "+s.Price.Source, 41, 100) + "\n")
	}
	usd := func(label string, v *float64, note, none string) {
		if v == nil {
			b.line(label, "n/a", none)
			return
		}
		b.line(label, fmtNum(*v), note)
	}
	usd("Cost per 1M output tokens:", c.PerMillionOutputTokens, "", "(no output tokens)")
	usd("Cost per 1M tokens (input + output):", c.PerMillionTokens, "", "(no tokens)")
	usd("Cost per 1k requests:", c.Per1kRequests, "", "(no completed request)")
	if slos, _ := metrics.ParseSLOs(s.SLO); metrics.HasBound(slos) {
		usd("Cost per 1M good output tokens:", c.PerMillionGoodOutputTokens,
			"(only requests that met every per-request SLO)", "(no request met every per-request SLO)")
	}
}

// acrossRuns prints a repeated level's figures across its runs as mean ± the half-width
// of their t-distribution 95% interval.
func (b *consoleBlock) acrossRuns(l *Level) {
	a := l.AcrossRuns
	if a == nil {
		return
	}
	b.w.WriteString(consoleRule(fmt.Sprintf("Across %d Runs (mean ± 95%% CI)", len(l.Runs)), '-') + "\n")
	pm := func(iv metrics.Interval) string {
		if math.IsNaN(iv.HalfWidth()) {
			return consoleFloat(iv.Mean)
		}
		if iv.Clipped() { // the interval stops at zero: print it whole
			return consoleFloat(iv.Mean) + " (" + consoleFloat(iv.Lo) + "-" + consoleFloat(iv.Hi) + ")"
		}
		return consoleFloat(iv.Mean) + " ± " + consoleFloat(iv.HalfWidth())
	}
	for _, f := range []struct{ key, label string }{{"request_throughput", "Request throughput (req/s):"}, {"output_throughput", "Output token throughput (tok/s):"}} {
		if iv, ok := a.Level[f.key]; ok {
			b.line(f.label, pm(iv))
		}
	}
	for _, m := range metrics.Registry {
		if !m.Headline {
			continue
		}
		for _, stat := range []string{"mean", "p50", "p99"} {
			if iv, ok := a.Get(m.Key, stat); ok {
				label := "Mean"
				if stat != "mean" {
					label = strings.ToUpper(stat[:1]) + stat[1:]
				}
				b.line(fmt.Sprintf("%s %s (ms):", label, m.Short), pm(iv))
			}
		}
	}
}

// steadyState prints where the level was steady, or that it never was, why and what to do.
func (b *consoleBlock) steadyState(ss *metrics.SteadyState) {
	if ss == nil {
		return
	}
	if ss.Reached && ss.StartS != nil && ss.EndS != nil {
		b.line("Steady state (s of the run):", fmt.Sprintf("%.2f-%.2f", *ss.StartS, *ss.EndS),
			fmt.Sprintf("(%d requests, %s tok/s)", ss.Completed, consoleFloat(ss.OutputThroughput)))
		return
	}
	// The reason and the advice wrapped under the value column, to keep within 100.
	b.line("Steady state:", "NOT REACHED")
	b.w.WriteString(wrapIndented("<-- "+ss.Reason, 41, 100) + "\n")
	if ss.Advice != "" {
		b.w.WriteString(wrapIndented("    "+ss.Advice, 41, 100) + "\n")
	}
}

// consoleSections are the registry's metrics printed as sections of a level block: the
// headline ones, then with verbose the others (optional and level-kept metrics have
// blocks of their own).
func consoleSections(verbose bool) []*metrics.Metric {
	var out []*metrics.Metric
	for _, pass := range []bool{true, false} {
		if !pass && !verbose {
			break
		}
		for _, m := range metrics.Registry {
			if !m.Optional && !m.OnLevel && m.Headline == pass {
				out = append(out, m)
			}
		}
	}
	return out
}

// phases prints the HTTP phases, one line each (mean, P50, P99), when the connection
// set-up is not negligible: DNS + connect + TLS at the median above 1 ms or above 5% of
// the median TTFT.
func (b *consoleBlock) phases(l *Level) {
	setup := 0.0
	measured := false
	for _, k := range []string{metrics.KeyDNS, metrics.KeyConnect, metrics.KeyTLS} {
		if st, ok := l.Metrics.Get(k); ok && st.Count > 0 {
			p, _ := st.Get(50)
			if !math.IsNaN(p.Value) {
				setup += p.Value
				measured = true
			}
		}
	}
	ttft, _ := l.Metrics.Stat(metrics.KeyTTFT).Get(50)
	if !measured || !(setup > 1 || (!math.IsNaN(ttft.Value) && setup > 0.05*ttft.Value)) {
		return
	}
	b.w.WriteString(consoleRule("HTTP Phases", '-') + "\n")
	for _, k := range metrics.PhaseKeys {
		st, ok := l.Metrics.Get(k)
		if !ok || st.Count == 0 {
			continue
		}
		m, _ := metrics.Lookup(k)
		p50, _ := st.Get(50)
		p99, ok99 := st.Get(99)
		v := consoleFloat(st.Mean) + " / " + consoleFloat(p50.Value)
		label := m.Short + " mean / P50"
		if ok99 {
			v += " / " + consoleFloat(p99.Value)
			label += " / P99"
		}
		b.line(label+" (ms):", v, fmt.Sprintf("(%d requests)", st.Count))
	}
}

// stats prints one latency section: mean, median and the chosen percentiles.
func (b *consoleBlock) stats(title, short string, st *metrics.Stats, opts ConsoleOptions) {
	b.w.WriteString(consoleRule(title, '-') + "\n")
	if st.Count == 0 {
		b.line(fmt.Sprintf("Mean %s (ms):", short), "n/a", "(no samples)")
		return
	}
	mean := ""
	if st.MeanMethod != "" && !math.IsNaN(st.MeanLo) {
		mean = ciNote(st.MeanLo, st.MeanHi, st.MeanMethod)
	}
	b.line(fmt.Sprintf("Mean %s (ms):", short), consoleFloat(st.Mean), mean)
	if p, ok := st.Get(50); ok {
		b.pct(fmt.Sprintf("Median %s (ms):", short), p, st.Count)
	}
	for _, q := range consolePercentiles(st, opts) {
		p, _ := st.Get(q)
		b.pct(fmt.Sprintf("P%s %s (ms):", strconv.FormatFloat(q, 'f', -1, 64), short), p, st.Count)
	}
}

// turns prints a multi-turn level's figures per turn (levels[i].turns): each turn's
// requests, failures, mean prompt (the history grows it), and TTFT and E2EL percentiles.
func (b *consoleBlock) turns(ts []metrics.TurnStats) {
	if len(ts) < 2 {
		return
	}
	b.w.WriteString(consoleRule("Per Turn (ms)", '-') + "\n")
	b.w.WriteString(fmt.Sprintf("%-5s %9s %6s %10s %9s %9s %9s %9s\n", "turn", "completed", "failed", "input tok", "TTFT P50", "TTFT P99", "E2EL P50", "E2EL P99"))
	var cells lowCells
	pct := func(st metrics.Stats, p float64) string { return cells.cell(st, p, consoleFloat) }
	defer cells.footnote(b.w, "")
	for _, t := range ts {
		in := "-"
		if t.InputTokensMean != nil {
			in = strconv.FormatFloat(*t.InputTokensMean, 'f', 0, 64)
		}
		b.w.WriteString(fmt.Sprintf("%-5d %9d %6d %10s %9s %9s %9s %9s\n", t.Turn, t.Completed, t.Failed, in,
			pct(t.TTFT, 50), pct(t.TTFT, 99), pct(t.E2EL, 50), pct(t.E2EL, 99)))
	}
}

// serverTimings prints the client-vs-server comparison, two lines per figure: the means
// side by side, then the per-request gap (front end, network, client) and its share.
func (b *consoleBlock) serverTimings(st *metrics.ServerTimings) {
	b.w.WriteString(consoleRule("Server-reported Timings", '-') + "\n")
	b.line("Requests with server timings:", strconv.Itoa(st.Requests))
	if st.OutputTokensDiffer > 0 {
		b.line("Output token count differs:", strconv.Itoa(st.OutputTokensDiffer), "<-- server timed other tokens than the client counted")
	}
	for _, m := range []struct {
		name, phase string
		g           *metrics.ServerGap
	}{{"TTFT", "prefill", st.TTFT}, {"TPOT", "decode", st.TPOT}, {"Request", "total", st.Total}} {
		g := m.g
		if g == nil {
			if m.name != "Request" { // few servers report a total; say nothing when none did
				b.line(m.name+" client / server (ms):", "n/a", "(the server reported no "+m.phase+" time)")
			}
			continue
		}
		b.line(m.name+" client / server, mean (ms):", consoleFloat(g.ClientMean)+" / "+consoleFloat(g.ServerMean))
		var notes []string
		if g.GapShare != nil {
			notes = append(notes, noNegativeZero(fmt.Sprintf("%.1f", 100**g.GapShare))+"% of the client's")
		}
		if slices.Contains(g.Unreliable, "gap_p99_ms") {
			notes = append(notes, fmt.Sprintf("low n: %d samples", g.Requests))
			b.note = true
		}
		extra := ""
		if len(notes) > 0 {
			extra = "(" + strings.Join(notes, "; ") + ")"
		}
		b.line(m.name+" gap mean / P50 / P99 (ms):",
			consoleFloat(g.GapMean)+" / "+consoleFloat(g.GapP50)+" / "+consoleFloat(g.GapP99), extra)
		if m.name == "TPOT" && st.ServerPerTokenMean != nil {
			b.line("Server's own ms/token (decode/N):", consoleFloat(*st.ServerPerTokenMean))
		}
	}
}

func (b *consoleBlock) pct(label string, p metrics.Percentile, n int) {
	flag := ""
	if !p.Reliable() {
		flag = fmt.Sprintf("(low n: %d samples)", n)
		b.note = true
	} else {
		flag = ciNote(p.Lo, p.Hi, p.Method)
	}
	b.line(label, consoleFloat(p.Value), flag)
}

// ciNote is a figure's 95% interval as a level block prints it; an order-statistics one
// holds only for independent requests, and says so; one of the steady part (the level's
// first wave left out) says that.
func ciNote(lo, hi float64, method string) string {
	s := "(95% CI " + consoleFloat(lo) + "-" + consoleFloat(hi)
	switch method {
	case metrics.MethodBatchMeans:
	case metrics.MethodBatchMeansSteady:
		s += " after the first wave"
	default:
		s += " if independent"
	}
	return s + ")"
}

// consolePercentiles picks the percentile lines after the median.
func consolePercentiles(st *metrics.Stats, opts ConsoleOptions) []float64 {
	want := opts.Percentiles
	if want == nil {
		for _, q := range []float64{90, 99} {
			if _, ok := st.Get(q); ok {
				want = append(want, q)
			}
		}
		if want == nil {
			for _, p := range st.Percentiles {
				want = append(want, p.P)
			}
		}
	}
	var out []float64
	for _, q := range want {
		if _, ok := st.Get(q); ok && q != 50 {
			out = append(out, q)
		}
	}
	return out
}

// verdictWord is a level's verdict as its block prints it: pass, FAIL when a term failed,
// or fail / undecided with why when the terms alone do not say (oversaturated, too few
// samples).
func verdictWord(v *metrics.Verdict) string {
	switch {
	case v.Pass:
		return "pass"
	case v.Undecided:
		return "undecided (" + strings.TrimPrefix(v.Reason, "undecided: ") + ")"
	case v.Reason != "":
		return "fail (" + v.Reason + ")"
	}
	return passFail(false)
}

func passFail(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// consoleLadder prints one row per level and marks the sweet spot and the SLO limit.
// ladderStyle is a table of single-space-padded columns under one rule: about half the
// width of boxed cells, so a ladder fits 100 columns.
var ladderStyle = func() table.Style {
	st := table.StyleDefault
	st.Box = table.BoxStyle{MiddleHorizontal: "-", MiddleSeparator: " ", MiddleVertical: " ", PaddingLeft: "", PaddingRight: "",
		BottomLeft: "", BottomRight: "", BottomSeparator: "", Left: "", Right: "", TopLeft: "", TopRight: "", TopSeparator: "",
		LeftSeparator: "", RightSeparator: "", UnfinishedRow: "~"}
	st.Options = table.Options{SeparateHeader: true, SeparateColumns: true}
	return st
}()

// ladderLoad is a level's load for the ladder: "c=16", "4 req/s".
func ladderLoad(l *Level) string {
	load := l.Name
	switch {
	case len(l.Stages) > 0:
		load = "stages, peak " + stagesPeak(l.Stages)
	case l.Concurrency > 0:
		load = "c=" + strconv.Itoa(l.Concurrency)
	case l.Rate > 0:
		load = strconv.FormatFloat(l.Rate, 'f', -1, 64) + " req/s"
	}
	if l.Partial {
		load += " (partial)"
	}
	switch l.EndReason { // a level a stopping rule ended
	case EndOversaturated:
		load += " (oversaturated)"
	case EndMaxErrorRate:
		load += " (errors)"
	case EndUnreachable:
		load += " (unreachable)"
	}
	return load
}

func consoleLadder(w *bufio.Writer, s *Summary, opts ConsoleOptions) {
	t := table.NewWriter()
	t.SetStyle(ladderStyle)
	t.Style().Format.Header = text.FormatDefault
	var cells lowCells
	cell := func(st metrics.Stats, p float64) string {
		return cells.cell(st, p, func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) })
	}
	// Columns: each a header and a cell per level. Goodput and verdict only where the SLOs
	// give them, the marks only where a level has one, ITL P99 and E2EL P99 with Wide (and
	// in each level's block), so that the table fits 100 columns.
	type column struct {
		head  string
		cell  func(i int, l *Level) string
		right bool
	}
	stat := func(l *Level, key string) metrics.Stats { return l.Metrics.Stat(key) }
	cols := []column{
		// The sweet spot and the SLO limit are marked beside the level's number (* and +).
		{"#", func(i int, _ *Level) string {
			n := strconv.Itoa(i)
			if s.SweetSpot != nil && s.SweetSpot.Index == i {
				n += "*"
			}
			if s.SLOLimit != nil && s.SLOLimit.Index == i {
				n += "+"
			}
			return n
		}, false},
		{"load", func(_ int, l *Level) string { return ladderLoad(l) }, false},
		{"req/s", func(_ int, l *Level) string { return strconv.FormatFloat(l.RequestThroughput, 'f', 2, 64) }, true},
	}
	// The throughput the knee is found on: tok/s, or inputs/s (docs/s) for pooled APIs,
	// whose levels have no token timings: their latency is E2EL alone.
	levels := make([]metrics.Level, len(s.Levels))
	streamed := false
	for i := range s.Levels {
		levels[i] = s.Levels[i].Level
		streamed = streamed || stat(&s.Levels[i], metrics.KeyTTFT).Count > 0
	}
	fig := metrics.LadderThroughput(levels)
	cols = append(cols, column{fig.Unit, func(i int, _ *Level) string { return strconv.FormatFloat(fig.Of(&levels[i]), 'f', 1, 64) }, true})
	if streamed || opts.Wide {
		cols = append(cols,
			column{"TTFT P50", func(_ int, l *Level) string { return cell(stat(l, metrics.KeyTTFT), 50) }, true},
			column{"TTFT P99", func(_ int, l *Level) string { return cell(stat(l, metrics.KeyTTFT), 99) }, true},
			column{"TPOT P50", func(_ int, l *Level) string { return cell(stat(l, metrics.KeyTPOT), 50) }, true},
			column{"TPOT P99", func(_ int, l *Level) string { return cell(stat(l, metrics.KeyTPOT), 99) }, true})
	}
	if opts.Wide {
		cols = append(cols, column{"ITL P99", func(_ int, l *Level) string { return cell(stat(l, metrics.KeyITL), 99) }, true})
	}
	cols = append(cols, column{"E2EL P50", func(_ int, l *Level) string { return cell(stat(l, metrics.KeyE2EL), 50) }, true})
	if opts.Wide || !streamed {
		cols = append(cols, column{"E2EL P99", func(_ int, l *Level) string { return cell(stat(l, metrics.KeyE2EL), 99) }, true})
	}
	cols = append(cols, column{"failed", func(_ int, l *Level) string { return strconv.Itoa(l.Failed) }, true})
	hasGood, hasVerdict := false, false
	for i := range s.Levels {
		hasGood = hasGood || s.Levels[i].GoodFraction != nil
		hasVerdict = hasVerdict || s.Levels[i].SLO != nil
	}
	if hasGood || opts.Wide {
		cols = append(cols, column{"goodput", func(_ int, l *Level) string {
			if l.GoodFraction == nil {
				return "-"
			}
			return fmt.Sprintf("%.1f%%", 100**l.GoodFraction)
		}, true})
	}
	if hasVerdict || opts.Wide {
		cols = append(cols, column{"SLO", func(_ int, l *Level) string {
			if l.SLO == nil {
				return "-"
			}
			if l.SLO.Undecided {
				return "undecided"
			}
			return passFail(l.SLO.Pass)
		}, false})
	}
	// The cost per million output tokens where the run was priced; the good tokens' with Wide.
	priced, goodCost := false, false
	for i := range s.Levels {
		priced = priced || s.Levels[i].Cost != nil
		goodCost = goodCost || s.Levels[i].Cost != nil && s.Levels[i].Cost.PerMillionGoodOutputTokens != nil
	}
	costCell := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmtNum(*v)
	}
	if priced {
		cols = append(cols, column{"$/1M out", func(_ int, l *Level) string {
			if l.Cost == nil {
				return "-"
			}
			return costCell(l.Cost.PerMillionOutputTokens)
		}, true})
	}
	if goodCost && opts.Wide {
		cols = append(cols, column{"$/1M good", func(_ int, l *Level) string {
			if l.Cost == nil {
				return "-"
			}
			return costCell(l.Cost.PerMillionGoodOutputTokens)
		}, true})
	}
	// GPU energy per output token where --gpu-metrics measured it.
	for i := range s.Levels {
		if g := s.Levels[i].GPU; g != nil && g.JoulesPerOutputToken != nil {
			cols = append(cols, column{"J/tok", func(_ int, l *Level) string {
				if l.GPU == nil || l.GPU.JoulesPerOutputToken == nil {
					return "-"
				}
				return fmtNum(*l.GPU.JoulesPerOutputToken)
			}, true})
			break
		}
	}
	head := table.Row{}
	cfg := []table.ColumnConfig{}
	for c, col := range cols {
		head = append(head, col.head)
		if col.right {
			cfg = append(cfg, table.ColumnConfig{Number: c + 1, Align: text.AlignRight, AlignHeader: text.AlignRight})
		}
	}
	t.AppendHeader(head)
	for i := range s.Levels {
		row := table.Row{}
		for _, col := range cols {
			row = append(row, col.cell(i, &s.Levels[i]))
		}
		t.AppendRow(row)
	}
	w.WriteString("Ladder (latencies in ms)\n")
	t.SetColumnConfigs(cfg)
	t.SuppressTrailingSpaces()
	w.WriteString(t.Render() + "\n")
	cells.footnote(w, " (indicative only)")
	switch {
	case !opts.Wide && streamed:
		w.WriteString("(ITL and E2EL P99: each level's block and --wide)\n")
	case !opts.Wide:
		w.WriteString("(no token timings: the requests were not streamed; E2EL is their latency)\n")
	}
	pickLine := func(label string, p *metrics.Pick, none string) {
		if p == nil {
			w.WriteString(label + none + "\n")
			return
		}
		line := fmt.Sprintf("%s%s (level %d): %s", label, s.Levels[p.Index].Load(), p.Index, p.Reason)
		if len(line) > 100 { // the reason on lines of their own, under the pick
			line = fmt.Sprintf("%s%s (level %d):\n%s", label, s.Levels[p.Index].Load(), p.Index, wrapIndented(p.Reason, len(label), 100))
		}
		w.WriteString(line + "\n")
		if c := p.Cost; c != nil {
			w.WriteString(wrapIndented(pickCost(c), len(label), 100) + "\n")
		}
	}
	_, judged := s.SLOPassed()
	if s.SweetSpot == nil {
		w.WriteString("Sweet spot (*): " + strings.TrimLeft(wrapIndented(NoSweetSpotReason(s), 16, 100), " ") + "\n")
	} else {
		pickLine("Sweet spot (*): ", s.SweetSpot, "")
	}
	if judged {
		pickLine("SLO limit (+):  ", s.SLOLimit, "none: no level meets the SLOs")
		if e := s.SLOLimitEstimate; e != nil {
			w.WriteString(wrapIndented(LimitEstimateText(e, s.Levels), len("SLO limit (+):  "), 100) + "\n")
		}
	}
	var unsteady []string
	perSlot := false
	for i, l := range s.Levels {
		if ss := l.SteadyState; ss != nil && !ss.Reached && l.EndReason != EndOversaturated && len(l.Stages) == 0 {
			unsteady = append(unsteady, strconv.Itoa(i))
			perSlot = perSlot || strings.HasPrefix(ss.Reason, "too few requests per slot")
		}
	}
	if len(unsteady) > 0 {
		advice := "run each level longer (--requests, --duration)"
		if perSlot {
			advice = fmt.Sprintf("give each level at least %d requests per slot (--requests) for figures to rely on", 4*metrics.MinRequestsPerSlot)
		}
		which := "level " + unsteady[0]
		if len(unsteady) > 1 {
			which = "levels " + strings.Join(unsteady, ", ")
		}
		w.WriteString("Not steady:  " + strings.TrimLeft(wrapIndented(fmt.Sprintf("%s never reached a steady state (see each level's block): a quick look; %s", which, advice), 13, 100), " ") + "\n")
	}
}

// pickCost is a pick's cost in USD, as the ladder says it under the pick.
func pickCost(c *metrics.Cost) string {
	var parts []string
	for _, f := range []struct {
		v    *float64
		unit string
	}{{c.PerMillionOutputTokens, "per 1M output tokens"}, {c.PerMillionGoodOutputTokens, "per 1M good output tokens"}, {c.Per1kRequests, "per 1k requests"}} {
		if f.v != nil {
			parts = append(parts, fmtNum(*f.v)+" "+f.unit)
		}
	}
	if len(parts) == 0 {
		return "cost: " + fmtNum(c.USDPerHour) + " USD per hour, for no output"
	}
	return "cost (USD): " + strings.Join(parts, ", ")
}

// errorNote is the first message of a kind of failure (bounded), its Retry-After and what
// to do about it, for the line beside its count.
// errorName names a kind of failure: its kind, and its HTTP status where it has one.
func errorName(d metrics.ErrorDetail) string {
	if d.Status != 0 {
		return d.Kind + " " + strconv.Itoa(d.Status)
	}
	return d.Kind
}

func errorNote(d metrics.ErrorDetail) string {
	msg := d.FirstMessage
	if r := []rune(msg); len(r) > 100 {
		msg = string(r[:100]) + "…"
	}
	note := "first: " + strconv.Quote(msg)
	if msg == "" {
		note = ""
	}
	if d.RetryAfterS > 0 {
		note += fmt.Sprintf(" (Retry-After %gs)", d.RetryAfterS)
	}
	if d.Hint != "" {
		note += "; " + d.Hint
	}
	return strings.TrimPrefix(note, "; ")
}

// wrapIndented breaks text at spaces into lines of at most width columns, each indented.
func wrapIndented(text string, indent, width int) string {
	return strings.Repeat(" ", indent) + console.Wrap(text, indent, indent, width)
}

// FirstErrors says in one line what a level's failures were, the most common kinds first
// (at most two): "http_error 400 ×8 (first: "..."; hint)". It is what an error that ends a
// command names, for a console that did not show the level.
func FirstErrors(l *Level) string {
	var parts []string
	for i, d := range l.ErrorDetails {
		if i == 2 {
			parts = append(parts, fmt.Sprintf("and %d more kinds", len(l.ErrorDetails)-2))
			break
		}
		s := fmt.Sprintf("%s ×%d", errorName(d), d.Count)
		if n := errorNote(d); n != "" {
			s += " (" + n + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// lowCells formats percentiles for a console table, "~" after one whose interval the
// samples cannot bound, and remembers whether it marked one, for the footnote.
type lowCells struct{ low bool }

// cell is percentile p of st formatted by format ("-" when not measured).
func (c *lowCells) cell(st metrics.Stats, p float64, format func(float64) string) string {
	pc, ok := st.Get(p)
	if !ok || st.Count == 0 {
		return "-"
	}
	v := format(pc.Value)
	if !pc.Reliable() {
		v += "~"
		c.low = true
	}
	return v
}

// footnote explains the mark, after the table that used it (with more said after it).
func (c *lowCells) footnote(w io.StringWriter, more string) {
	if c.low {
		w.WriteString("~ too few samples to bound this percentile's 95% confidence interval" + more + "\n")
	}
}

// LimitEstimateText is the SLO limit estimated from every level (metrics.LimitEstimate):
// its value and 90% interval in the levels' unit, or which side is open and why.
func LimitEstimateText(e *metrics.LimitEstimate, levels []Level) string {
	unit, f := "", func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	if len(levels) > 0 && levels[0].Concurrency > 0 {
		unit = "concurrency "
	} else {
		unit, f = "rate ", func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) + " req/s" }
	}
	side := func(v *float64, open string) string {
		if v == nil {
			return open
		}
		return f(*v)
	}
	ci := "90% CI " + side(e.CI90[0], "below the levels run") + " – " + side(e.CI90[1], "above the levels run")
	if e.Value == nil {
		return "estimate: " + e.Note + " (" + ci + ")"
	}
	return fmt.Sprintf("estimate: %s%s (%s), where %s crosses its bound on a monotone fit of every level",
		unit, f(*e.Value), ci, e.Term)
}
