package metrics

import (
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// windows keeps a level's per-request figures per bucket of the requests' done time
// (Config.Window wide), so that figures over a sub-window of the level — a steady state
// found only at the level's end — can be computed after the fact by merging buckets.
type windows struct {
	width   time.Duration
	buckets map[int64]*windowAcc
	top     int64 // the latest bucket that received a record
	sealed  int64 // buckets below this were frozen (they rarely receive more)
}

// windowAcc is one bucket: outcome counts, tokens and every metric's distribution.
type windowAcc struct {
	completed, failed, canceled int
	input, output               int
	dists                       []*Dist // by registry index; nil until a sample
}

func (w *windows) bucket(done time.Duration) *windowAcc {
	b := int64(max(done, 0) / w.width)
	acc := w.buckets[b]
	if acc == nil {
		acc = &windowAcc{dists: make([]*Dist, len(Registry))}
		w.buckets[b] = acc
	}
	if b > w.top {
		w.top = b
		// Records arrive in about done order: freeze the buckets two behind, so they cost
		// their distinct values only (a late record thaws its bucket again).
		for ; w.sealed < b-1; w.sealed++ {
			if old := w.buckets[w.sealed]; old != nil {
				for _, d := range old.dists {
					if d != nil {
						d.build()
					}
				}
			}
		}
	}
	return acc
}

// outcome counts a measured failed or canceled request in its bucket.
func (w *windows) outcome(r *record.Record) {
	if w == nil {
		return
	}
	acc := w.bucket(r.Done)
	if r.Error.Kind == record.KindCanceled {
		acc.canceled++
	} else {
		acc.failed++
	}
}

// completed counts a completed measured request and its tokens in its bucket.
func (w *windows) completed(r *record.Record, n int) {
	if w == nil {
		return
	}
	acc := w.bucket(r.Done)
	acc.completed++
	acc.input += r.InputTokens
	acc.output += n
}

// samples puts a measured request's samples of the metrics of a scope in its bucket.
func (w *windows) samples(r *record.Record, scope Scope) {
	if w == nil {
		return
	}
	acc := w.bucket(r.Done)
	for i, m := range Registry {
		if m.Scope != scope {
			continue
		}
		m.Samples(r, func(num, den int64, weight uint64) {
			if acc.dists[i] == nil {
				acc.dists[i] = NewDist()
			}
			acc.dists[i].AddRatio(num, den, weight)
		})
	}
}

// Window returns the figures of the requests that finished in [from, to) (offsets from
// the run's start), rounded out to whole buckets of Config.Window: outcome counts, tokens,
// throughputs over the window's length, and every metric's statistics. Figures that need
// the whole level (peak concurrency and throughput, goodput, SLO verdicts) are not given.
// Without Config.Window it returns an empty Level.
func (a *Aggregator) Window(from, to time.Duration) Level {
	lv := Level{Errors: map[string]int{}, Dists: map[string]*Dist{}}
	w := a.windows
	if w == nil || to <= from {
		setStats(&lv, make([]*Dist, len(Registry)), a.present, a.cfg.percentiles())
		return lv
	}
	lo, hi := int64(from/w.width), int64((to+w.width-1)/w.width)
	dists := make([]*Dist, len(Registry))
	for i := range dists {
		dists[i] = NewDist()
	}
	for b := lo; b < hi; b++ {
		acc := w.buckets[b]
		if acc == nil {
			continue
		}
		lv.Completed += acc.completed
		lv.Failed += acc.failed
		lv.Canceled += acc.canceled
		lv.TotalInputTokens += acc.input
		lv.TotalOutputTokens += acc.output
		for i, d := range acc.dists {
			dists[i].Merge(d)
		}
	}
	for i, m := range Registry {
		lv.Dists[m.Key] = dists[i]
	}
	dur := (time.Duration(hi-lo) * w.width).Seconds()
	lv.DurationS = dur
	lv.RequestThroughput = float64(lv.Completed) / dur
	lv.OutputThroughput = float64(lv.TotalOutputTokens) / dur
	lv.TotalTokenThroughput = float64(lv.TotalInputTokens+lv.TotalOutputTokens) / dur
	setStats(&lv, dists, a.present, a.cfg.percentiles())
	return lv
}
