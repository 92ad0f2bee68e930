package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/llmbench/llmbench/internal/console"
)

// Format is how a comparison is written: tables for a terminal, JSON for scripts, or
// Markdown tables for a pull request's comment.
type Format string

// The formats Write writes.
const (
	FormatTable    Format = "table"
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
)

// ParseFormat is the Format named s; any other name is an error that lists them.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatTable, FormatJSON, FormatMarkdown:
		return f, nil
	}
	return "", fmt.Errorf("%q is not table, json or markdown", s)
}

// Write writes c in format f (WriteText, WriteJSON or WriteMarkdown).
func Write(w io.Writer, c Comparison, f Format) error {
	switch f {
	case FormatJSON:
		return WriteJSON(w, c)
	case FormatMarkdown:
		WriteMarkdown(w, c)
	default:
		WriteText(w, c)
	}
	return nil
}

// WriteText writes c as one table per level, for a terminal.
func WriteText(w io.Writer, c Comparison) { write(w, c, false) }

// WriteMarkdown writes c as one Markdown table per level (a pull request's comment).
func WriteMarkdown(w io.Writer, c Comparison) { write(w, c, true) }

// WriteJSON writes c as one indented JSON document, for scripts.
func WriteJSON(w io.Writer, c Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

func write(w io.Writer, c Comparison, markdown bool) {
	for _, r := range []struct {
		name, dir string
		run       RunInfo
	}{{"A", c.A, c.RunA}, {"B", c.B, c.RunB}} {
		line := fmt.Sprintf("%s: %s — %s, %s, started %s", r.name, r.dir, r.run.Target, r.run.Model, r.run.StartedAt)
		if utf8.RuneCountInString(line) > console.Width { // the run's description under its folder
			line = fmt.Sprintf("%s: %s\n   %s, %s, started %s", r.name, r.dir, r.run.Target, r.run.Model, r.run.StartedAt)
		}
		fmt.Fprintln(w, line)
	}
	if c.Targets != "" {
		fmt.Fprintln(w, "note: "+console.Wrap(c.Targets, 6, 6, console.Width))
	}
	for _, warn := range c.Warnings {
		fmt.Fprintf(w, "warning: %s: the figures measure different things\n", warn)
	}
	fmt.Fprintln(w)
	for i, l := range c.Levels {
		if i > 0 {
			fmt.Fprintln(w)
		}
		t := table.NewWriter()
		t.SetOutputMirror(w)
		title := fmt.Sprintf("%s (A level %d, B level %d)", l.Load, l.IndexA, l.IndexB)
		t.AppendHeader(table.Row{"figure", "A", "B", "change", "relative", "p-value", "beyond noise"})
		for _, f := range l.Figures {
			t.AppendRow(table.Row{f.Name, fmtNum(f.A), fmtNum(f.B), fmtSigned(f.Delta), fmtPct(f.Relative), fmtP(f.PValue), fmtSig(f.Significant)})
		}
		if markdown {
			fmt.Fprintf(w, "**%s**\n\n", title)
			t.RenderMarkdown()
		} else {
			t.SetTitle(title)
			t.Render()
		}
	}
	fmt.Fprintf(w, "\nbeyond noise: two-sided Mann–Whitney U test on per-request values, p < %v\n", c.Alpha)
	if c.Threshold != nil {
		if len(c.Regressions) == 0 {
			fmt.Fprintf(w, "no regression beyond %.1f%%\n", 100**c.Threshold)
		}
		for _, r := range c.Regressions {
			fmt.Fprintf(w, "REGRESSION: %s\n", r)
		}
	}
	if c.AcrossRuns {
		fmt.Fprintf(w, "both runs were repeated (--repeat): throughputs and percentiles are tested across runs instead, by Welch's t-test on the runs' values, p < %v\n", c.Alpha)
	}
}

func fmtNum(v *float64) string {
	if v == nil {
		return "-"
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", *v), "0"), ".")
}

func fmtSigned(v *float64) string {
	if v == nil {
		return "-"
	}
	s := fmtNum(v)
	if *v > 0 {
		s = "+" + s
	}
	return s
}

func fmtPct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", *v*100)
}

func fmtP(v *float64) string {
	if v == nil {
		return "-"
	}
	if *v < 0.0001 {
		return "<0.0001"
	}
	return fmt.Sprintf("%.4f", *v)
}

func fmtSig(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "yes"
	default:
		return "no"
	}
}
