package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
)

// lateLevels is fakeLevels with each request sent lag after its due time, and, with
// readLag, its bytes read that late.
func lateLevels(lag, readLag time.Duration) LevelRunner {
	return func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error) {
		for i := range lvl.Requests {
			r := &record.Record{Level: lvl.Index, Index: i, Scheduled: time.Duration(i) * 20 * time.Millisecond}
			r.Sent = r.Scheduled + lag
			r.Done = r.Sent + 100*time.Millisecond
			r.Events.Base = r.Sent
			r.Events.Append(r.Sent+50*time.Millisecond, 1) // TTFT 50 ms: 10% is 5 ms, below 10 ms
			r.Events.Append(r.Done, 3)
			r.OutputTokens = 4
			if readLag > 0 {
				r.KernelStamps, r.ReadLag = true, readLag
			}
			sink(r)
		}
		return load.EndRequests, nil
	}
}

// A level whose client fell behind (schedule lag P99 over 10 ms and over 10% of TTFT P50,
// or read lag P99 over 10 ms) is marked client_behind and the console says what to do; a
// level on time is not.
func TestClientBehind(t *testing.T) {
	for _, c := range []struct {
		name         string
		lag, readLag time.Duration
		want         string
	}{
		{"on time", 2 * time.Millisecond, 0, ""},
		{"sent late", 30 * time.Millisecond, 0, "schedule lag P99 30.0 ms, above 10.0 ms"},
		{"read late", 0, 25 * time.Millisecond, "read lag P99 25.0 ms, above 10 ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Levels = cfg.Levels[:1]
			var out bytes.Buffer
			cfg.Console.Out = &out
			o, err := Run(context.Background(), cfg, time.Now(), lateLevels(c.lag, c.readLag))
			if err != nil || o.Err != nil {
				t.Fatalf("Run: %v, %v", err, o.Err)
			}
			said := strings.Contains(out.String(), "Client behind")
			if got := o.Summary.Levels[0].ClientBehind; got != (c.want != "") || said != got ||
				!strings.Contains(out.String(), c.want) || (got && !strings.Contains(out.String(), "--shard I/N")) {
				t.Errorf("client_behind %v, console:\n%s\nwant %q", got, out.String(), c.want)
			}
		})
	}
}
