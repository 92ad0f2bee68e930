package report

import (
	"fmt"
	"strings"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/metrics"
)

// endpoints prints a balanced level's figures by endpoint (--url given several times): the
// requests each took, how many failed and why, and their medians.
func (b *consoleBlock) endpoints(es []Endpoint) {
	if len(es) == 0 {
		return
	}
	b.w.WriteString(consoleRule("By Endpoint", '-') + "\n")
	fmt.Fprintf(b.w, "%-3s %7s %6s %9s %9s %9s %9s  %s\n", "#", "done", "failed", "TTFT P50", "TPOT P50", "E2EL P50", "tok/s", "url")
	median := func(e *Endpoint, key string) string {
		st, ok := e.Metrics.Get(key)
		if !ok || st.Count == 0 {
			return "-"
		}
		p, ok := st.Get(50)
		if !ok {
			return "-"
		}
		return consoleFloat(p.Value)
	}
	for i := range es {
		e := &es[i]
		fmt.Fprintf(b.w, "%-3d %7d %6d %9s %9s %9s %9s  %s\n", e.Endpoint, e.Completed, e.Failed,
			median(e, metrics.KeyTTFT), median(e, metrics.KeyTPOT), median(e, metrics.KeyE2EL), consoleFloat(e.OutputThroughput), e.URL)
	}
	for i := range es {
		if e := &es[i]; e.Failed > 0 && len(e.ErrorDetails) > 0 {
			var why []string
			for _, d := range e.ErrorDetails {
				why = append(why, fmt.Sprintf("%d %s", d.Count, errorName(d)))
			}
			b.w.WriteString(console.Wrap(fmt.Sprintf("endpoint %d failed %d of %d: %s", e.Endpoint, e.Failed, e.Completed+e.Failed,
				strings.Join(why, ", ")), 0, 2, console.Width) + "\n")
		}
	}
}
