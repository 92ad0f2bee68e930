package bench

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/sim"
)

// openRateFar is how far past the fastest open loop a calibration probed a rate lies
// outside it: queueing delay grows without bound as the rate nears capacity, so less far
// than the lengths' factor.
const openRateFar = 1.5

// Validity states calibration c's validity range (line, for the console's standard
// output) and warns where the run asks for loads far outside it (warnings, for its
// standard error): trust shown, not claimed.
func (s *Spec) Validity(c *sim.Calibration) (line string, warnings []string) {
	line = fmt.Sprintf("Calibrated on %s (%s): prompts %d–%d tokens, outputs %d–%d, %d–%d requests in flight",
		c.Source, c.Date, c.PromptTokens[0], c.PromptTokens[1], c.OutputTokens[0], c.OutputTokens[1], c.Concurrency[0], c.Concurrency[1])
	inFlight, rate := 0, 0.0
	for _, l := range s.Levels {
		inFlight = max(inFlight, l.Concurrency, l.MaxConcurrency)
		rate = math.Max(rate, l.Rate)
	}
	open := rate > 0
	e, of := c.Error, ""
	switch {
	case open && !math.IsNaN(c.ErrorOpen[figure.TTFTP50]):
		e, of = c.ErrorOpen, " of open loops"
	case !open && !math.IsNaN(c.ErrorClosed[figure.TTFTP50]):
		e, of = c.ErrorClosed, " of closed loops"
	}
	if !math.IsNaN(e[figure.TTFTP50]) {
		line += fmt.Sprintf("; held-out error%s TTFT P50 %.1f%%, TPOT P50 %.1f%%", of, e[figure.TTFTP50], e[figure.TPOTP50])
	}
	line = console.Wrap(line, 0, 2, console.Width)
	switch r := c.OpenRates; {
	case open && r[1] == 0:
		warnings = append(warnings, "warning: an open loop, and the calibration probed none: its held-out error is that of closed loops (a calibration by this llmbench probes an open loop too)")
	case open && rate > openRateFar*r[1]:
		warnings = append(warnings, fmt.Sprintf("warning: an open loop at %g req/s, beyond %g× the fastest probed (%.3g req/s): queueing grows faster than the probe's rates show, so this is an extrapolation of the calibrated profile, not a prediction it was checked on", rate, openRateFar, r[1]))
	}
	w := s.Workload
	for _, o := range c.Outside(w.InputTokens.Spread(), w.OutputTokens.Spread(), inFlight) {
		warnings = append(warnings, fmt.Sprintf("warning: %s: an extrapolation of the calibrated profile, not a prediction it was checked on", o))
	}
	// Levels in a load the calibration's verdict did not trust, each reason once with the
	// levels it concerns.
	prompts := w.InputTokens.Spread()
	var reasons []string
	levels := map[string][]string{}
	for _, l := range s.Levels {
		for _, r := range c.Untrusted(prompts, max(l.Concurrency, l.MaxConcurrency), l.Rate) {
			if levels[r] == nil {
				reasons = append(reasons, r)
			}
			levels[r] = append(levels[r], LevelName(l))
		}
	}
	for _, r := range reasons {
		warnings = append(warnings, console.Wrap(fmt.Sprintf("warning: %s: %s", strings.Join(levels[r], ", "), r), 0, 9, console.Width))
	}
	return line, warnings
}

// LimitNote warns of requests deployment d's max_model_len refuses or cuts.
func (s *Spec) LimitNote(d sim.Deployment) string {
	in, out := s.Workload.InputTokens.Spread()[1], s.Workload.OutputTokens.Spread()[1]
	switch {
	case d.MaxModelLen == 0 || in == 0:
	case d.TruncatePrompts && in > d.MaxModelLen:
		return fmt.Sprintf("warning: prompts up to %d tokens, and the server cuts any longer than its %d-token context to their last %d tokens (deployment.truncate_prompts, as Ollama past num_ctx does): those are simulated as %d-token prompts, and the model never sees the rest",
			in, d.MaxModelLen, d.MaxModelLen, d.MaxModelLen)
	case !d.TruncatePrompts && in+out > d.MaxModelLen:
		return fmt.Sprintf("warning: prompts up to %d tokens and outputs up to %d exceed the deployment's max_model_len of %d: the server refuses such requests (HTTP 400), and so does the simulation; the summary counts them as failed",
			in, out, d.MaxModelLen)
	}
	return ""
}

// PaceSensitivity simulates sum's open-loop levels again with slower (the same profile
// slowerBy slower, 0.05 for 5 %) and says, in the console's lines, how far each level's TTFT
// and TPOT P50 move; none where no open loop ran. Near the knee an open loop's queue turns
// a small change of the server's pace into a large one of its latency, larger than any
// fit's error: a prediction there holds only while the server keeps the pace it was
// calibrated at, and the user should know it before buying GPUs by it.
func PaceSensitivity(ctx context.Context, cfg Config, sum *report.Summary, slower LevelRunner, slowerBy float64) ([]string, error) {
	moves, err := PaceMoves(ctx, cfg, sum, slower)
	if err != nil || len(moves) == 0 {
		return nil, err
	}
	var lines, far []string
	for _, m := range moves {
		var parts []string
		moved := false
		for _, f := range m.Figures {
			moved = moved || f.Pct() > 2*100*slowerBy
			parts = append(parts, fmt.Sprintf("%s %.4g → %.4g ms (%+.0f%%)", strings.ToUpper(strings.Replace(f.Key.Name(), "_p", " P", 1)), f.From, f.To, f.Pct()))
		}
		lines = append(lines, "  "+console.Wrap(m.Level+": "+strings.Join(parts, ", "), 2, 4, console.Width))
		if moved {
			far = append(far, m.Level)
		}
	}
	head := fmt.Sprintf("Pace sensitivity: the open loops again with the server %.0f%% slower than calibrated (as a busy host or a drifting server runs; calibrate states the drift it saw):", 100*slowerBy)
	lines = append([]string{console.Wrap(head, 0, 2, console.Width)}, lines...)
	if len(far) > 0 {
		lines = append(lines, "  "+console.Wrap(fmt.Sprintf("Pace-bound (%s): latency that moves more than %.0f%% for a %.0f%% slower server (near the knee, or where batching buys little) is predicted only while the server keeps its calibrated pace; leave headroom",
			strings.Join(far, ", "), 2*100*slowerBy, 100*slowerBy), 2, 4, console.Width))
	}
	return lines, nil
}
