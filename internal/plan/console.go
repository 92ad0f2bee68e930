package plan

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/llmbench/llmbench/internal/console"
)

// WriteTable prints the candidates meeting the SLOs, cheapest first (at most limit rows;
// 0 is all), the chosen one, and why the others were left out, within Width columns: the
// table's engine settings (seqs, batched tokens, prefill, router) only where the rows
// differ in them, and no GPUs or horizon column, unless wide (every column; plan.json has
// them all).
func WriteTable(w io.Writer, pl *Plan, limit int, wide bool) {
	meeting := pl.meeting()
	head := fmt.Sprintf("%d of %d candidates meet %s at %s %s", meeting, pl.Evaluated, pl.SLO, fmtRate(pl.Rate), pl.unit())
	if pl.Interrupted {
		head += fmt.Sprintf(" (interrupted: %d of %d planned)", pl.Evaluated, pl.Configurations)
	}
	fmt.Fprintln(w, wrap(head, 0, 2))
	if c := confidenceLine(pl); c != "" {
		fmt.Fprintln(w, wrap(c, 0, 2))
	}
	if meeting > 0 {
		fmt.Fprintln(w)
		var shownC []Candidate
		for _, c := range pl.Candidates {
			if !c.MeetsSLO || limit > 0 && len(shownC) == limit {
				break
			}
			shownC = append(shownC, c)
		}
		type column struct {
			head string
			cell func(i int, c Candidate) string
			wide bool // shown by default only where the rows differ in it
		}
		cols := []column{
			{"#", func(i int, _ Candidate) string { return fmt.Sprint(i + 1) }, false},
			{"deployment", func(_ int, c Candidate) string { return fmt.Sprintf("%d × %s %s", c.Replicas, c.GPU, c.Split()) }, false},
			{"GPUs", func(_ int, c Candidate) string { return fmt.Sprint(c.GPUs) }, true},
			{"dtype", func(_ int, c Candidate) string { return c.Dtype }, false},
			{"seqs", func(_ int, c Candidate) string { return fmt.Sprint(c.MaxNumSeqs) }, true},
			{"batched", func(_ int, c Candidate) string { return fmt.Sprint(c.MaxBatchedTokens) }, true},
			{"prefill", func(_ int, c Candidate) string { return c.Prefill }, true},
			{"router", func(_ int, c Candidate) string { return c.Router }, true},
			{"spec", func(_ int, c Candidate) string { return specCell(c.Speculative) }, true},
			{"$/hour", func(_ int, c Candidate) string { return fmtOpt(c.USDPerHour, "%.2f") }, false},
			{"$/M out", func(_ int, c Candidate) string { return fmtOpt(c.CostPerMillionOutputTokens, "%.3f") }, false},
			{"kW", func(_ int, c Candidate) string { return fmtOpt(c.PowerKW, "%.2f") }, true},
			{"tok/s/kW", func(_ int, c Candidate) string { return fmtOpt(c.OutputTokensPerSPerKW, "%.0f") }, true},
			{"headroom", func(_ int, c Candidate) string { return fmtOpt(c.HeadroomRate, "%.3g "+pl.unit()) }, false},
			{"horizon", func(_ int, c Candidate) string { return fmtSeconds(c.HorizonS) }, true},
		}
		// Each term's value with its margin; where that is wider than the console, the
		// values alone and one column of the tightest margin.
		terms := func(margins bool) []column {
			var out []column
			for k, t := range pl.Candidates[0].SLO {
				head := t.Term
				if !margins { // the bounds are in the line above the table
					head = strings.Replace(strings.FieldsFunc(t.Term, func(r rune) bool { return r == '<' || r == '>' || r == '=' })[0], ":", " ", 1)
				}
				out = append(out, column{head, func(_ int, c Candidate) string {
					if k >= len(c.SLO) {
						return "-"
					}
					if margins {
						return c.SLO[k].cell(pl.Confidence)
					}
					return c.SLO[k].value()
				}, false})
			}
			if !margins {
				out = append(out, column{"margin", func(_ int, c Candidate) string { return tightest(c.SLO, pl.Confidence) }, false})
			}
			return out
		}
		var keep []column
		for _, col := range cols {
			differ := false
			for i, c := range shownC {
				differ = differ || col.cell(i, c) != col.cell(0, shownC[0])
			}
			if wide || !col.wide || col.head != "GPUs" && col.head != "horizon" && col.head != "tok/s/kW" && differ {
				keep = append(keep, col)
			}
		}
		table := func(cols []column) string {
			var b strings.Builder
			tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
			row := make([]string, len(cols))
			for j, col := range cols {
				row[j] = col.head
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
			for i, c := range shownC {
				for j, col := range cols {
					row[j] = col.cell(i, c)
				}
				fmt.Fprintln(tw, strings.Join(row, "\t"))
			}
			tw.Flush()
			return b.String()
		}
		out := table(append(keep, terms(true)...))
		compact := !wide && console.Widest(out) > Width
		if compact {
			out = table(append(keep, terms(false)...))
		}
		io.WriteString(w, out)
		if compact {
			if n := pl.names.Wide; n != "" {
				fmt.Fprintf(w, "(margin: how far inside its bound the tightest term lies; %s shows each term's)\n", n)
			} else {
				fmt.Fprintln(w, "(margin: how far inside its bound the tightest term lies)")
			}
		}
		if pl.Confidence != ConfidencePoint && len(shownC[0].Intervals) > 0 {
			fmt.Fprintln(w, "(each term's value as simulated, its margin at its interval's edge)")
		}
		if len(shownC) < meeting {
			fmt.Fprintf(w, "(%d more meet the SLOs: plan.json has them all)\n", meeting-len(shownC))
		}
		if !wide && len(keep) < len(cols) {
			if n := pl.names.Wide; n != "" {
				fmt.Fprintf(w, "(%s adds GPUs, the horizon, tok/s per kW and the settings the rows share: plan.json has them)\n", n)
			} else {
				fmt.Fprintln(w, "(plan.json has GPUs, the horizon, tok/s per kW and the settings the rows share)")
			}
		}
	}
	if b := pl.BestCandidate(); b != nil {
		s := "Chosen: " + b.Describe()
		if b.USDPerHour != nil {
			s += fmt.Sprintf(": %s USD/hour", fmtOpt(b.USDPerHour, "%.2f"))
		}
		if b.CostPerMillionOutputTokens != nil {
			s += fmt.Sprintf(", %s USD per million output tokens", fmtOpt(b.CostPerMillionOutputTokens, "%.3f"))
		}
		if b.PowerKW != nil {
			s += fmt.Sprintf("; its GPUs draw about %s kW (estimated)", fmtOpt(b.PowerKW, "%.2f"))
			if b.EnergyUSDPerHour != nil {
				s += fmt.Sprintf(", %s USD/hour of it at %g USD/kWh", fmtOpt(b.EnergyUSDPerHour, "%.2f"), pl.Electricity)
				if pl.PUE > 1 {
					s += fmt.Sprintf(" and PUE %g", pl.PUE)
				}
			}
		}
		if pl.Objective == ObjectiveEnergy {
			s += "; chosen for the least power"
		}
		s += fmt.Sprintf("; it meets the SLOs up to %s %s", fmtOpt(b.HeadroomRate, "%.3g"), pl.unit())
		if n := b.Replicas - 1; n > 0 {
			s += fmt.Sprintf(" (%d %s)", n, console.Plural(n, "replica misses them", "replicas miss them"))
		}
		if !b.GPUCalibrated {
			s += "; " + b.GPU + ": not calibrated on this GPU"
		}
		if e := atEdge(b.SLO); pl.Confidence == ConfidencePoint && e != "" {
			s += "; at its 90% prediction intervals' unfavourable edge: " + e
		}
		fmt.Fprintln(w, "\n"+wrap(s+".", 0, 2))
		var same []string
		for _, c := range pl.Candidates {
			if c.EquivalentToBest {
				same = append(same, c.Describe())
			}
		}
		if len(same) > 0 {
			fmt.Fprintln(w, wrap(fmt.Sprintf("Equivalent within the plan's precision (the same price on as many GPUs, headroom within the search's 5 %%): %s. Chosen by the tie-break: %s.",
				strings.Join(same, "; "), TieBreak), 0, 2))
		}
	}
	var noFit, miss []Candidate
	for _, c := range pl.Candidates {
		switch {
		case !c.Fits:
			noFit = append(noFit, c)
		case !c.MeetsSLO:
			miss = append(miss, c)
		}
	}
	for _, g := range []struct {
		what  string
		cands []Candidate
	}{{"cannot be deployed as configured (they do not fit the GPUs' memory, or the simulator refuses their settings)", noFit},
		{console.Plural(len(miss), "misses the SLOs", "miss the SLOs"), miss}} {
		if len(g.cands) == 0 {
			continue
		}
		fmt.Fprintln(w, "\n"+wrap(fmt.Sprintf("%d %s, for instance:", len(g.cands), g.what), 0, 2))
		seen := map[string]bool{}
		shown := 0
		for _, c := range g.cands {
			if seen[c.Reason] || shown == 3 {
				continue
			}
			seen[c.Reason] = true
			shown++
			fmt.Fprintln(w, "  "+wrap(c.Describe()+": "+c.Reason, 2, 4))
		}
	}
	uncalibrated(w, pl)
}

// confidenceLine says what the fleets were judged on: at ConfidenceInterval, each term's
// interval factors over the candidates (they differ with the GPU and engine the validation
// rows measured); "" when no candidate has an interval.
func confidenceLine(pl *Plan) string {
	type span struct{ lo, hi float64 }
	var order []string
	spans := map[string]*span{}
	calibrated := false
	for _, c := range pl.Candidates {
		calibrated = calibrated || c.profile.Calibration != nil
		for _, t := range c.Intervals {
			f := t.Factor
			sp, ok := spans[t.Term]
			if !ok {
				order = append(order, t.Term)
				spans[t.Term] = &span{f, f}
				continue
			}
			sp.lo, sp.hi = min(sp.lo, f), max(sp.hi, f)
		}
	}
	if len(order) == 0 {
		if pl.ConfidenceReason != "" {
			return "Judged at the point (" + pl.ConfidenceReason + ")."
		}
		return ""
	}
	var parts []string
	for _, term := range order {
		sp := spans[term]
		f := "×" + fmtFactor(sp.lo)
		if sp.hi > sp.lo*1.001 {
			f += "–" + fmtFactor(sp.hi)
		}
		parts = append(parts, term+" "+f)
	}
	source := "how far the simulator was measured from real servers"
	if calibrated {
		source = "the calibration's largest held-out error"
	}
	intervals := "The 90% prediction intervals, " + source + " (docs/simulator.md#prediction-intervals), reach " +
		strings.Join(parts, ", ") + " the simulated figures"
	name := func(value string) string { return strings.TrimSpace(pl.names.Confidence + " " + value) }
	switch {
	case pl.Confidence == ConfidencePoint && pl.ConfidenceReason != "":
		return "Judged at the point (" + pl.ConfidenceReason + "; " + name(ConfidenceInterval) + " judges at the edge anyway). " +
			intervals + " (plan.json: margin_at_edge)."
	case pl.Confidence == ConfidencePoint:
		return "Judged at the point (" + name(ConfidencePoint) + "). " + intervals + " (plan.json: margin_at_edge)."
	}
	return "Judged at the unfavourable edge of each term's 90% prediction interval and at the point (" + name(ConfidencePoint) + " " +
		"judges the point alone). " + intervals + "."
}

// fmtMs is a duration in ms as read best: "24.38 ms", "62.7 s".
func fmtMs(ms float64) string {
	if ms >= 10000 {
		return fmt.Sprintf("%.3g s", ms/1000)
	}
	return fmt.Sprintf("%.4g ms", ms)
}

// fmtFactor is an interval's factor: "2.57", "140", "1140".
func fmtFactor(f float64) string {
	if f >= 100 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.3g", f)
}

// atEdge is each term's value at its interval's edge with its margin there: "tpot:p99<=40ms
// 25.1 ms (+37%)".
func atEdge(terms []Term) string {
	var parts []string
	for _, t := range terms {
		if t.ValueAtEdge != nil && t.MarginAtEdge != nil {
			parts = append(parts, fmt.Sprintf("%s %s (%+.0f%%)", t.Term, fmtMs(*t.ValueAtEdge), 100**t.MarginAtEdge))
		}
	}
	return strings.Join(parts, ", ")
}

// uncalibrated notes the GPUs of the plan no measurement has checked the simulator on.
func uncalibrated(w io.Writer, pl *Plan) {
	var gpus []string
	for _, c := range pl.Candidates {
		if !c.GPUCalibrated && !slices.Contains(gpus, c.GPU) {
			gpus = append(gpus, c.GPU)
		}
	}
	if len(gpus) == 0 {
		return
	}
	slices.Sort(gpus)
	fmt.Fprintln(w, "\n"+wrap(fmt.Sprintf("Not calibrated on this GPU: %s (the roofline's datasheet figures and constants fitted on H200, H100 and A100 measurements, unchecked there: docs/simulator.md)",
		strings.Join(gpus, ", ")), 0, 2))
}

// String is the term's value with its margin, for the table: "212 ms (+58%)".
func (t Term) String() string {
	v := t.value()
	if t.Value != nil && t.Margin != nil {
		v += fmt.Sprintf(" (%+.0f%%)", 100**t.Margin)
	}
	return v
}

// cell is the term's value with its margin as judged under confidence: at
// ConfidenceInterval the margin at its interval's edge where it has one, "14.2 ms (+45%)".
func (t Term) cell(confidence string) string {
	v := t.value()
	if m := t.judgedMargin(confidence); t.Value != nil && m != nil {
		v += fmt.Sprintf(" (%+.0f%%)", 100**m)
	}
	return v
}

// judgedMargin is the margin a fleet was judged on: the smaller of the point's and the
// edge's at ConfidenceInterval (it must meet both), the point's otherwise.
func (t Term) judgedMargin(confidence string) *float64 {
	if confidence != ConfidencePoint && t.MarginAtEdge != nil && (t.Margin == nil || *t.MarginAtEdge < *t.Margin) {
		return t.MarginAtEdge
	}
	return t.Margin
}

// value is the term's value alone: "212 ms".
func (t Term) value() string {
	if t.Value == nil {
		return "-"
	}
	if t.Unit == "ms" {
		return fmt.Sprintf("%.4g ms", *t.Value)
	}
	return fmt.Sprintf("%.3g", *t.Value)
}

// tightest is the smallest margin of the terms: "+39%".
func tightest(terms []Term, confidence string) string {
	var best *float64
	for _, t := range terms {
		if m := t.judgedMargin(confidence); m != nil && (best == nil || *m < *best) {
			best = m
		}
	}
	if best == nil {
		return "-"
	}
	return fmt.Sprintf("%+.0f%%", 100**best)
}

// Width is the most columns the console's lines take (console.Width).
const Width = console.Width

// wrap folds text starting at column first within Width, its other lines indented.
func wrap(text string, first, indent int) string { return console.Wrap(text, first, indent, Width) }

func fmtOpt(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

// specCell is a candidate's speculative decoding in the table: "K4 A0.8", or "off".
func specCell(sp *Speculative) string {
	if sp == nil {
		return "off"
	}
	return fmt.Sprintf("K%d A%g", sp.DraftTokens, sp.Acceptance)
}
