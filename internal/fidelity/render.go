package fidelity

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

func formatMs(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// WriteText prints the report as a small table: one row per error distribution.
func WriteText(w io.Writer, r Report) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "Records:          %d read, %d joined to the truth (%d with events),\n                  %d token events paired\n",
		r.Records, r.Matched, r.Requests, r.Events)
	if r.Matched > 0 {
		fmt.Fprintf(b, "Event times:      %d joined records stamped with the kernel's receive time, %d at read time\n",
			r.KernelStamped, r.Matched-r.KernelStamped)
	}
	if r.Warmup > 0 {
		fmt.Fprintf(b, "Warm-up:          %d warm-up and cool-down records left out, as from every figure of the run\n", r.Warmup)
	}
	if n := r.NoResponseID + r.NoTruth + r.Duplicate; n > 0 {
		fmt.Fprintf(b, "Not joined:       %d without a response id, %d not in the truth, %d duplicate ids\n",
			r.NoResponseID, r.NoTruth, r.Duplicate)
	}
	if r.CountMismatch > 0 {
		fmt.Fprintf(b, "Event counts:     %d requests differ from the truth (paired up to the shorter)\n", r.CountMismatch)
	}
	if r.UnmatchedTruth > 0 {
		fmt.Fprintf(b, "Truth only:       %d truth lines no record claimed\n", r.UnmatchedTruth)
	}
	fmt.Fprintln(b)
	// 20 + 9 × 9 columns: within a terminal's 100.
	fmt.Fprintf(b, "%-20s %8s %8s %8s %8s %8s %8s %8s %8s\n", "client - server (ms)", "count", "mean", "min", "p50", "p90", "p99", "p99.9", "max")
	row := func(name string, s Stats) {
		if s.Count == 0 {
			fmt.Fprintf(b, "%-20s %8d %8s\n", name, 0, "-")
			return
		}
		fmt.Fprintf(b, "%-20s %8d %8s %8s %8s %8s %8s %8s %8s\n", name, s.Count, formatMs(s.Mean),
			formatMs(s.Min), formatMs(s.P50), formatMs(s.P90), formatMs(s.P99), formatMs(s.P999), formatMs(s.Max))
	}
	row("event time", r.EventTime)
	row("TTFT", r.TTFT)
	row("first event (exact)", r.FirstEvent)
	row("ITL (per token)", r.ITL)
	row("send delay", r.SendDelay)
	if r.ServerEvent.Count > 0 {
		fmt.Fprintf(b, "\n%-20s\n", "server - engine step (ms)")
		row("event time", r.ServerEvent)
		row("ITL (per token)", r.ServerITL)
	}
	if len(r.PerSecond) > 0 {
		fmt.Fprintf(b, "\nevent time by second of the run (ms)\n%-8s %9s %9s %9s %9s %9s\n", "second", "events", "p50", "p99", "p99.9", "max")
		for _, s := range r.PerSecond {
			fmt.Fprintf(b, "%-8d %9d %9s %9s %9s %9s\n", s.Second, s.Count, formatMs(s.P50), formatMs(s.P99), formatMs(s.P999), formatMs(s.Max))
		}
	}
	if r.TTFTUpperBound > 0 {
		fmt.Fprintf(b, "\n%d requests had their first token event in the same read, with the same receive stamp, as a\nlater one: their TTFT is an upper bound (levels[i].ttft_upper_bound), and the first-event row\nleaves them out\n", r.TTFTUpperBound)
	}
	if r.Early > 0 {
		fmt.Fprintf(b, "\n%d events arrived before the server's stamp, which it takes after its write returns (on one\nhost the kernel stamps the bytes inside that write): the server's own delay, at most %s ms\n",
			r.Early, formatMs(-r.EventTime.Min))
	}
	if r.ClockWarning != "" {
		fmt.Fprintf(b, "\nwarning: %s\n", r.ClockWarning)
	}
	return b.Flush()
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
