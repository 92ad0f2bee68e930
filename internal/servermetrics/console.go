package servermetrics

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/console"
)

var familyNames = map[string]string{
	FamilyVLLM: "vLLM", FamilySGLang: "SGLang", FamilyTGI: "TGI", FamilyLlamaCpp: "llama.cpp",
}

// WriteConsole prints a level's "Server Metrics" section in the console summary's style
// (vLLM's 50-column rules and "{:<40} {:<10}" rows). Figures the server does not export are
// left out; nothing is printed for a nil summary.
func WriteConsole(w io.Writer, s *Summary) error {
	if s == nil {
		return nil
	}
	var b strings.Builder
	title := "Server Metrics"
	if n, ok := familyNames[s.Family]; ok {
		title += " (" + n + ")"
	}
	b.WriteString(rule(title) + "\n")
	line := func(label, value string) {
		b.WriteString(strings.TrimRight(fmt.Sprintf("%-40s %-10s", label, value), " ") + "\n")
	}
	line("Scrapes (failed):", fmt.Sprintf("%d (%d)", s.Scrapes, s.FailedScrapes))
	if s.FailedScrapes > 0 && s.LastError != "" {
		line("Last scrape error:", console.Wrap(s.LastError, 41, 41, console.Width)) // an error can be long: it fits the console too
	}
	if s.Scrapes == s.FailedScrapes {
		_, err := io.WriteString(w, b.String())
		return err
	}
	gauge := func(name string, st *Stat, f func(float64) string) {
		if st != nil {
			line("Mean "+name+":", f(st.Mean))
			line("Max "+name+":", f(st.Max))
		}
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	pct := func(v float64) string { return strconv.FormatFloat(100*v, 'f', 2, 64) + "%" }
	gauge("running requests", s.Running, num)
	gauge("waiting requests", s.Waiting, num)
	gauge("KV-cache usage", s.KVCacheUsage, pct)
	if s.Preemptions != nil {
		line("Preemptions:", strconv.FormatFloat(*s.Preemptions, 'f', -1, 64))
	}
	if s.PrefixCacheHitRate != nil {
		line("Prefix-cache hit rate:", pct(*s.PrefixCacheHitRate))
	}
	if s.PromptTokensPerS != nil {
		line("Server prompt tokens/s:", num(*s.PromptTokensPerS))
	}
	if s.GenerationTokensPerS != nil {
		line("Server generation tokens/s:", num(*s.GenerationTokensPerS))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// rule centres title in a 50-wide rule of '-', like Python's '{:-^50}'.format(title).
func rule(title string) string {
	pad := 50 - len(title)
	if pad < 0 {
		return title
	}
	return strings.Repeat("-", pad/2) + title + strings.Repeat("-", pad-pad/2)
}
