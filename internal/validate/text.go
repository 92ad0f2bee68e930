package validate

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/console"
)

// WriteText prints each simulated row's headline figures, predicted against measured with
// the error, the skipped rows with their reasons, and each group's median and worst error.
func WriteText(w io.Writer, rep *Report) error {
	var skipped []Result
	for _, r := range rep.Rows {
		if r.Skipped != "" {
			skipped = append(skipped, r)
			continue
		}
		fmt.Fprintln(w, clip(r.ID, console.Width))
		fmt.Fprintf(w, "  %-20s %12s %12s %9s\n", "figure", "predicted", "measured", "error")
		for _, k := range Headline {
			m, ok := r.Measured[k]
			if !ok {
				continue
			}
			p, ok := r.Predicted[k]
			if !ok {
				fmt.Fprintf(w, "  %-20s %12s %12s %9s\n", k, "—", num(m), "—")
				continue
			}
			fmt.Fprintf(w, "  %-20s %12s %12s %8s%%\n", k, num(p), num(m), pct(r.ErrorPct[k]))
		}
		if c := r.Capacity; c != nil {
			fmt.Fprintf(w, "  %-20s %12s %12s %8s%%\n", "capacity (req/s)", num(c.PredictedRate), num(c.SubmittedRate), pct(c.ErrorPct))
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(w, "\nSkipped %d of %d rows:\n", len(skipped), len(rep.Rows))
		for _, r := range skipped {
			fmt.Fprintln(w, "  "+console.Wrap(r.ID+": "+r.Skipped, 2, 4, console.Width))
		}
	}
	writeGroups(w, rep.Groups)
	if c := rep.Capacity; c != nil {
		fmt.Fprintln(w, "\n"+console.Wrap(fmt.Sprintf("Capacity: the highest Poisson rate meeting each row's P99 limits, against its submitted rate, "+
			"over %d rows: median |error| %.1f%% (median %+.1f%%); over-predicted by more than 25%% (a fleet bought too small) in %d",
			c.Rows, c.MedianAbsPct, c.MedianPct, c.OverPredicted25), 0, 2, console.Width))
	}
	return nil
}

// writeGroups prints each group's median |error| and worst error per headline figure.
func writeGroups(w io.Writer, groups []GroupResult) {
	fmt.Fprintln(w, "\nError by group (model × GPU × engine × load): median |error| / worst, in %")
	for _, g := range groups {
		fmt.Fprintf(w, "%s: %d rows simulated, %d skipped\n", clip(g.Group.String(), 60), g.Rows, g.Skipped)
		if g.Rows == 0 {
			continue
		}
		for _, k := range Headline {
			if e, ok := g.Figures[k]; ok {
				fmt.Fprintf(w, "  %-20s %9.1f %9s  (n %d)\n", k, e.MedianPct, pct(e.WorstPct), e.N)
			}
		}
	}
}

// pct is a signed error in %, to three figures.
func pct(e float64) string {
	if math.Abs(e) >= 1000 {
		return fmt.Sprintf("%+.0f", e)
	}
	return fmt.Sprintf("%+.3g", e)
}

// num is a figure to four significant digits, without an exponent.
func num(v float64) string {
	if math.Abs(v) >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// WriteJSON writes validation.json to path, making its folder: after a long validation, a
// folder not yet made does not lose what was simulated, and an interrupted write leaves the
// previous file whole.
func WriteJSON(path string, rep *Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteJSON(path, rep)
}

// Markdown is the groups as a Markdown table of median |error| / worst per headline
// figure, for docs/measurements.md.
func Markdown(w io.Writer, groups []GroupResult) {
	head := []string{"group", "rows"}
	for _, k := range Headline {
		head = append(head, k)
	}
	fmt.Fprintln(w, "| "+strings.Join(head, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat("---|", len(head)))
	for _, g := range groups {
		cells := []string{g.Group.String(), fmt.Sprintf("%d (+%d skipped)", g.Rows, g.Skipped)}
		for _, k := range Headline {
			e, ok := g.Figures[k]
			if !ok {
				cells = append(cells, "—")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.0f / %s", e.MedianPct, pct(e.WorstPct)))
		}
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}

// WriteMarkdown writes Markdown's table of rep's groups to path, as WriteJSON does.
func WriteMarkdown(path string, rep *Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		Markdown(w, rep.Groups)
		return nil
	})
}
