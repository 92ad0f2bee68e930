package plan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/llmbench/llmbench/internal/report"
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
			{"deployment", func(_ int, c Candidate) string { return fmt.Sprintf("%d × %s tp %d", c.Replicas, c.GPU, c.TP) }, false},
			{"GPUs", func(_ int, c Candidate) string { return fmt.Sprint(c.GPUs) }, true},
			{"dtype", func(_ int, c Candidate) string { return c.Dtype }, false},
			{"seqs", func(_ int, c Candidate) string { return fmt.Sprint(c.MaxNumSeqs) }, true},
			{"batched", func(_ int, c Candidate) string { return fmt.Sprint(c.MaxBatchedTokens) }, true},
			{"prefill", func(_ int, c Candidate) string { return c.Prefill }, true},
			{"router", func(_ int, c Candidate) string { return c.Router }, true},
			{"$/hour", func(_ int, c Candidate) string { return fmtOpt(c.USDPerHour, "%.2f") }, false},
			{"$/M out", func(_ int, c Candidate) string { return fmtOpt(c.CostPerMillionOutputTokens, "%.3f") }, false},
			{"headroom", func(_ int, c Candidate) string { return fmtOpt(c.HeadroomRate, "%.3g "+pl.unit()) }, false},
			{"horizon", func(_ int, c Candidate) string { return fmtSeconds(c.HorizonS) }, true},
		}
		for k, t := range pl.Candidates[0].SLO {
			cols = append(cols, column{t.Term, func(_ int, c Candidate) string {
				if k < len(c.SLO) {
					return c.SLO[k].String()
				}
				return "-"
			}, false})
		}
		var keep []column
		for _, col := range cols {
			differ := false
			for i, c := range shownC {
				differ = differ || col.cell(i, c) != col.cell(0, shownC[0])
			}
			if wide || !col.wide || col.head != "GPUs" && col.head != "horizon" && differ {
				keep = append(keep, col)
			}
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		row := make([]string, len(keep))
		for j, col := range keep {
			row[j] = col.head
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
		for i, c := range shownC {
			for j, col := range keep {
				row[j] = col.cell(i, c)
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
		if len(shownC) < meeting {
			fmt.Fprintf(w, "(%d more meet the SLOs: plan.json has them all)\n", meeting-len(shownC))
		}
		if !wide && len(keep) < len(cols) {
			fmt.Fprintln(w, "(--wide adds GPUs, the horizon and the engine settings the rows share; plan.json has them)")
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
		s += fmt.Sprintf("; it meets the SLOs up to %s %s", fmtOpt(b.HeadroomRate, "%.3g"), pl.unit())
		if n := b.Replicas - 1; n > 0 {
			s += fmt.Sprintf(" (%d %s)", n, plural(n, "replica misses them", "replicas miss them"))
		}
		fmt.Fprintln(w, "\n"+wrap(s+".", 0, 2))
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
		{plural(len(miss), "misses the SLOs", "miss the SLOs"), miss}} {
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
}

// String is the term's value with its margin, for the table: "212 ms (+58%)".
func (t Term) String() string {
	if t.Value == nil {
		return "-"
	}
	v := fmt.Sprintf("%.3g", *t.Value)
	if t.Unit == "ms" {
		v = fmt.Sprintf("%.4g ms", *t.Value)
	}
	if t.Margin != nil {
		v += fmt.Sprintf(" (%+.0f%%)", 100**t.Margin)
	}
	return v
}

// Width is the most columns the console's lines take (report.ConsoleWidth).
const Width = report.ConsoleWidth

// wrap folds text starting at column first within Width, its other lines indented.
func wrap(text string, first, indent int) string { return report.Wrap(text, first, indent, Width) }

func fmtOpt(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
