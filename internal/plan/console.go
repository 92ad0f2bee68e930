package plan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the candidates meeting the SLOs, cheapest first (at most limit rows;
// 0 is all), the chosen one, and why the others were left out.
func WriteTable(w io.Writer, pl *Plan, limit int) {
	meeting := pl.meeting()
	fmt.Fprintf(w, "%d of %d candidates meet %s at %s req/s", meeting, pl.Evaluated, pl.SLO, fmtRate(pl.Rate))
	if pl.Interrupted {
		fmt.Fprintf(w, " (interrupted: %d of %d planned)", pl.Evaluated, pl.Configurations)
	}
	fmt.Fprintln(w)
	if meeting > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		head := []string{"#", "deployment", "GPUs", "dtype", "seqs", "batched", "prefill", "router", "$/hour", "$/M out", "headroom", "horizon"}
		for _, t := range pl.Candidates[0].SLO {
			head = append(head, t.Term)
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		shown := 0
		for i, c := range pl.Candidates {
			if !c.MeetsSLO || limit > 0 && shown == limit {
				break
			}
			shown++
			row := []string{fmt.Sprint(i + 1), fmt.Sprintf("%d × %s tp %d", c.Replicas, c.GPU, c.TP), fmt.Sprint(c.GPUs), c.Dtype,
				fmt.Sprint(c.MaxNumSeqs), fmt.Sprint(c.MaxBatchedTokens), c.Prefill, c.Router,
				fmtOpt(c.USDPerHour, "%.2f"), fmtOpt(c.CostPerMillionOutputTokens, "%.3f"), fmtOpt(c.HeadroomRate, "%.3g req/s"),
				fmtSeconds(c.HorizonS)}
			for _, t := range c.SLO {
				row = append(row, t.String())
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
		if shown < meeting {
			fmt.Fprintf(w, "(%d more meet the SLOs: plan.json has them all)\n", meeting-shown)
		}
	}
	if b := pl.BestCandidate(); b != nil {
		fmt.Fprintf(w, "\nChosen: %s", b.Describe())
		if b.USDPerHour != nil {
			fmt.Fprintf(w, ": %s USD/hour", fmtOpt(b.USDPerHour, "%.2f"))
		}
		if b.CostPerMillionOutputTokens != nil {
			fmt.Fprintf(w, ", %s USD per million output tokens", fmtOpt(b.CostPerMillionOutputTokens, "%.3f"))
		}
		fmt.Fprintf(w, "; it meets the SLOs up to %s req/s", fmtOpt(b.HeadroomRate, "%.3g"))
		if n := b.Replicas - 1; n > 0 {
			fmt.Fprintf(w, " (%d %s)", n, plural(n, "replica misses them", "replicas miss them"))
		}
		fmt.Fprintln(w, ".")
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
		fmt.Fprintf(w, "\n%d %s, for instance:\n", len(g.cands), g.what)
		seen := map[string]bool{}
		shown := 0
		for _, c := range g.cands {
			if seen[c.Reason] || shown == 3 {
				continue
			}
			seen[c.Reason] = true
			shown++
			fmt.Fprintf(w, "  %s: %s\n", c.Describe(), c.Reason)
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
