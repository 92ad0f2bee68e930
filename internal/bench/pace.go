package bench

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
)

// PaceMove is how far an open-loop level's TTFT and TPOT P50 moved when the level ran again
// on a slower server: those of the two that both runs measured.
type PaceMove struct {
	Level   string
	Figures []FigureMove
}

// FigureMove is a figure's value, in ms, in the first run and again.
type FigureMove struct {
	Key      figure.Key
	From, To float64
}

// Pct is the move in percent of From.
func (m FigureMove) Pct() float64 { return 100 * (m.To/m.From - 1) }

// PaceMoves runs sum's open-loop levels again with slower (cfg's run on a server of another
// pace; its files in a folder of its own, removed after) and says how far each moved. None
// for a closed loop, whose latency moves with the pace, no more, or an interrupted run.
func PaceMoves(ctx context.Context, cfg Config, sum *report.Summary, slower LevelRunner) ([]PaceMove, error) {
	if !slices.ContainsFunc(sum.Levels, func(l report.Level) bool { return l.Rate > 0 }) {
		return nil, nil
	}
	tmp, err := os.MkdirTemp("", "llmbench-pace-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cfg.Output = Output{Dir: filepath.Join(tmp, "run"), Records: record.FormatCompact}
	cfg.Console = Console{Out: io.Discard, Quiet: true}
	out, err := Run(ctx, cfg, time.Now(), slower)
	if err != nil || ctx.Err() != nil { // interrupted: nothing to compare, and nothing lost
		return nil, err
	}
	var moves []PaceMove
	for i, l := range sum.Levels {
		if l.Rate <= 0 || i >= len(out.Summary.Levels) {
			continue
		}
		m := PaceMove{Level: l.Name}
		for _, k := range []figure.Key{figure.TTFTP50, figure.TPOTP50} {
			a, b := levelFigure(&l, k), levelFigure(&out.Summary.Levels[i], k)
			if !math.IsNaN(a) && !math.IsNaN(b) && a > 0 {
				m.Figures = append(m.Figures, FigureMove{Key: k, From: a, To: b})
			}
		}
		if len(m.Figures) > 0 {
			moves = append(moves, m)
		}
	}
	return moves, nil
}

// levelFigure is a level's figure k in ms; NaN when the level has none.
func levelFigure(l *report.Level, k figure.Key) float64 {
	f := k.Figure()
	s, ok := l.Stats(f.Metric)
	if !ok {
		return math.NaN()
	}
	p, ok := s.Get(f.Pct)
	if !ok {
		return math.NaN()
	}
	return p.Value
}
