package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
)

// TestPaceMoves: an open-loop level run again on a server half as fast moves its TTFT and
// TPOT P50 by 100%; a closed loop is not run again.
func TestPaceMoves(t *testing.T) {
	cfg := testConfig(t)
	cfg.Levels = []load.Level{FinishLevel(load.Level{Rate: 5}, 0, 3, 1, 1)}
	out, err := Run(context.Background(), cfg, time.Now(), fakeLevels)
	if err != nil || out.Err != nil {
		t.Fatalf("Run: %v, %v", err, out.Err)
	}
	slower := func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error) {
		return fakeLevels(ctx, lvl, func(r *record.Record) {
			twice := &record.Record{Level: r.Level, Index: r.Index, Sent: r.Sent, Done: r.Sent + 2*(r.Done-r.Sent), OutputTokens: r.OutputTokens}
			twice.Events.Base = r.Sent
			twice.Events.Append(r.Sent+4*time.Millisecond, 1)
			twice.Events.Append(twice.Done, 3)
			sink(twice)
		})
	}
	moves, err := PaceMoves(context.Background(), cfg, out.Summary, slower)
	if err != nil || len(moves) != 1 || len(moves[0].Figures) != 2 {
		t.Fatalf("PaceMoves: %+v, %v: want one level's TTFT and TPOT", moves, err)
	}
	for i, k := range []figure.Key{figure.TTFTP50, figure.TPOTP50} {
		if f := moves[0].Figures[i]; f.Key != k || math.Abs(f.Pct()-100) > 1e-6 {
			t.Errorf("%s: %+v (%.2f%%): want %s moved by 100%%", moves[0].Level, f, f.Pct(), k.Name())
		}
	}
	closed := testConfig(t)
	out, err = Run(context.Background(), closed, time.Now(), fakeLevels)
	if err != nil {
		t.Fatal(err)
	}
	if moves, err := PaceMoves(context.Background(), closed, out.Summary, slower); err != nil || moves != nil {
		t.Errorf("closed loop: %+v, %v: want no rerun", moves, err)
	}
}
