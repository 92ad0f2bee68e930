package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/workload"
)

// testRequest sends one request before anything is measured, as vLLM's client does: a
// server that cannot answer stops the run here, with its error and what to do, instead of
// after a level of failures; one that answers is warm (a model loaded on first use, as
// Ollama's is, would otherwise put its load time into the first measured TTFT). It is the
// first level's first request, so nothing of the measured sequence changes; it is not
// recorded.
func testRequest(ctx context.Context, stdio Stdio, cfg *benchConfig, cl *client.Client, req workload.Request) error {
	var rec record.Record
	start := time.Now()
	cl.Do(ctx, start, req, &rec)
	if ctx.Err() != nil {
		return withCode(ExitInterrupted, fmt.Errorf("interrupted during the test request"))
	}
	if e := rec.Error; e != nil {
		msg := e.Kind
		if e.Status != 0 {
			msg = fmt.Sprintf("%s %d", e.Kind, e.Status)
		}
		if e.Message != "" {
			msg += ": " + e.Message
		}
		if h := e.Hint(); h != "" {
			msg += "\n  hint: " + h
		}
		return withCode(ExitLevelErrors, fmt.Errorf("the test request failed, so nothing was measured (--test-request=false skips it): %s", msg))
	}
	if !cfg.quiet {
		line := fmt.Sprintf("Test request: ok in %s", roundMS(rec.Done-rec.Sent))
		if ft, ok := rec.FirstToken(); ok && !rec.Unstreamed {
			line += fmt.Sprintf(", first token after %s", roundMS(ft-rec.Sent))
		}
		if rec.OutputTokens > 0 {
			line += fmt.Sprintf(", %d output tokens", rec.OutputTokens)
		}
		fmt.Fprintln(stdio.Out, line+" (not measured)")
	}
	return nil
}

// roundMS shows a duration in milliseconds to a tenth.
func roundMS(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", d.Seconds()*1e3)
}
