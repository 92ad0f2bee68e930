package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// TestConsoleTasks: an agentic level's block shows its tasks, their time in the model and in
// tools, and each call position's context, cached tokens and TTFT, within the console's width.
func TestConsoleTasks(t *testing.T) {
	var recs []record.Record
	for task := range 3 {
		at := time.Duration(task) * time.Second
		for c := 1; c <= 2; c++ {
			r := record.Record{Task: int32(task), Call: int16(c), Scheduled: at, Sent: at, Done: at + 500*time.Millisecond,
				FinalCall: c == 2, InputTokens: 1000 * c, OutputTokens: 2, HasCachedPromptTokens: true, CachedPromptTokens: int32(900 * (c - 1))}
			if c == 2 {
				r.ToolTime = 250 * time.Millisecond
			}
			r.Events.Base = r.Sent
			r.Events.Append(r.Sent+time.Duration(40*c)*time.Millisecond, 1)
			r.Events.Append(r.Done, 1)
			recs = append(recs, r)
			at = r.Done + 250*time.Millisecond
		}
	}
	s := &Summary{Levels: []Level{{Level: metrics.Aggregate(recs, metrics.Config{})}}}
	s.Judge()
	var b bytes.Buffer
	if err := ConsoleLevel(&b, s, 0, ConsoleOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Agentic Tasks", "Tasks completed:                         3", "task (ms)                     1250.00",
		"in the model (ms)             1000.00", "in tools (ms)                  250.00", "2             3        2000         900"} {
		if !strings.Contains(out, want) {
			t.Errorf("console lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if len([]rune(line)) > console.Width {
			t.Errorf("line of %d columns: %s", len([]rune(line)), line)
		}
	}
}
