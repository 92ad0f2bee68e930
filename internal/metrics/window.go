package metrics

import (
	"math"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// windows keeps a level's figures per bucket of time, so that figures over a sub-window of
// the level — a steady state found only at the level's end — can be computed after the
// fact by merging buckets, and so that batch means (batch.go) have the level's requests in
// time order. Per bucket: the outcomes, tokens and every metric's distribution of the
// requests that finished in it (by done time), the output tokens of completed requests
// emitted in it (by event time) and the request-time in flight in it. Buckets start
// Config.Window wide (DefaultWindow when 0) and double, merging in pairs, whenever a level
// outgrows maxBuckets, so memory stays bounded whatever the level's length.
type windows struct {
	width   time.Duration
	buckets map[int64]*windowAcc
	lo, hi  int64 // the lowest and highest bucket index in use
	top     int64 // the latest bucket that received a record
	sealed  int64 // buckets below this were frozen (they rarely receive more)
}

// DefaultWindow is the buckets' first width when Config.Window is 0.
const DefaultWindow = 10 * time.Millisecond

// maxBuckets bounds a level's buckets: past twice this, the width doubles.
const maxBuckets = 256

// windowAcc is one bucket: outcome counts, tokens, in-flight time and every metric's
// distribution.
type windowAcc struct {
	completed, failed, canceled int
	good                        int // completed requests within every per-request bound
	input, output               int
	tokens                      int64   // output tokens of completed requests emitted in the bucket
	busy                        int64   // µs of requests in flight within the bucket (partial coverage)
	cover                       int     // difference count of requests covering whole buckets
	dists                       []*Dist // by registry index; nil until a sample
}

func newWindows(width time.Duration) *windows {
	if width <= 0 {
		width = DefaultWindow
	}
	return &windows{width: width, buckets: map[int64]*windowAcc{}, lo: math.MaxInt64, hi: math.MinInt64, sealed: math.MinInt64}
}

func (w *windows) index(t time.Duration) int64 { return int64(max(t, 0) / w.width) }

// at returns bucket b, made when missing.
func (w *windows) at(b int64) *windowAcc {
	acc := w.buckets[b]
	if acc == nil {
		acc = &windowAcc{dists: make([]*Dist, len(Registry))}
		w.buckets[b] = acc
		w.lo, w.hi = min(w.lo, b), max(w.hi, b)
	}
	return acc
}

// bucket is the bucket of a record's done time.
func (w *windows) bucket(done time.Duration) *windowAcc {
	b := w.index(done)
	acc := w.at(b)
	if b > w.top {
		w.top = b
		// Records arrive in about done order: freeze the buckets two behind, so they cost
		// their distinct values only (a late record thaws its bucket again).
		if w.sealed == math.MinInt64 {
			w.sealed = w.lo
		}
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

// add puts one measured record in its buckets: r's outcome and samples were counted into
// acc (its done bucket) by the aggregator; here its time in flight and, when completed,
// its tokens by event time.
func (w *windows) inflight(sent, done time.Duration) {
	if done < sent {
		done = sent
	}
	ws := int64(w.width / time.Microsecond)
	s, d := int64(max(sent, 0)/time.Microsecond), int64(max(done, 0)/time.Microsecond)
	bs, bd := s/ws, d/ws
	if bs == bd {
		w.at(bs).busy += d - s
	} else {
		w.at(bs).busy += (bs+1)*ws - s
		w.at(bd).busy += d - bd*ws
		if bd > bs+1 {
			w.at(bs+1).cover++
			w.at(bd).cover--
		}
	}
	w.coarsen()
}

// tokensOf adds a completed record's output tokens to the buckets of their events.
func (w *windows) tokensOf(r *record.Record) {
	cur := int64(math.MinInt64)
	var acc *windowAcc
	r.Events.Each(func(_ int, t time.Duration, n int) {
		if b := w.index(t); b != cur {
			cur, acc = b, w.at(b)
		}
		acc.tokens += int64(n)
	})
	w.coarsen()
}

// integrate turns the whole-bucket coverage counts into in-flight time.
func (w *windows) integrate() {
	if w.lo > w.hi {
		return
	}
	ws := int64(w.width / time.Microsecond)
	run := 0
	for b := w.lo; b <= w.hi; b++ {
		acc := w.buckets[b]
		if acc == nil {
			if run == 0 {
				continue
			}
			acc = w.at(b)
		}
		run += acc.cover
		acc.cover = 0
		acc.busy += int64(run) * ws
	}
}

// coarsen doubles the width while the level spans more than 2 maxBuckets buckets.
func (w *windows) coarsen() {
	for w.hi-w.lo >= 2*maxBuckets {
		w.integrate()
		old := w.buckets
		w.buckets, w.lo, w.hi = make(map[int64]*windowAcc, len(old)/2+1), math.MaxInt64, math.MinInt64
		w.width *= 2
		for b, acc := range old {
			n := w.at(b / 2)
			n.completed += acc.completed
			n.failed += acc.failed
			n.canceled += acc.canceled
			n.good += acc.good
			n.input += acc.input
			n.output += acc.output
			n.tokens += acc.tokens
			n.busy += acc.busy
			for i, d := range acc.dists {
				if d != nil {
					n.dists[i] = mergeAll([]*Dist{n.dists[i], d})
				}
			}
		}
		w.top /= 2
		w.sealed = math.MinInt64
	}
}

// outcome counts a measured failed or canceled request in its bucket.
func (w *windows) outcome(r *record.Record) {
	acc := w.bucket(r.Done)
	if r.Error.Kind == record.KindCanceled {
		acc.canceled++
	} else {
		acc.failed++
	}
}

// completed counts a completed measured request, good or not, and its tokens in its bucket.
func (w *windows) completed(r *record.Record, n int, good bool) {
	acc := w.bucket(r.Done)
	acc.completed++
	if good {
		acc.good++
	}
	acc.input += r.InputTokens
	acc.output += n
	w.tokensOf(r)
}

// span is the buckets [lo, hi) covering [from, to) (offsets from the run's start),
// rounded out to whole buckets, in order; missing ones are nil.
func (w *windows) span(from, to time.Duration) (lo, hi int64, accs []*windowAcc) {
	lo, hi = int64(from/w.width), int64((to+w.width-1)/w.width)
	for b := lo; b < hi; b++ {
		accs = append(accs, w.buckets[b])
	}
	return lo, hi, accs
}

// Window returns the figures of the requests that finished in [from, to) (offsets from
// the run's start), rounded out to whole buckets (their width doubles as a level grows): outcome
// counts, tokens, throughputs over the window's length, the mean in-flight requests,
// every metric's statistics with confidence intervals by batch means over the window
// (batch.go), and the SLO verdict on the window's requests (the per-token metrics, which
// buckets do not keep, judged over the whole level so far). Figures that need the whole
// level (peak concurrency and throughput, goodput per second) are not given.
func (a *Aggregator) Window(from, to time.Duration) Level {
	lv := Level{Errors: map[string]int{}, Dists: map[string]*Dist{}}
	w := a.windows
	if to <= from {
		setStats(&lv, make([]*Dist, len(Registry)), a.present, a.skip, a.cfg.percentiles(), nil)
		return lv
	}
	w.integrate()
	lo, hi, accs := w.span(from, to)
	var busy int64
	good := 0
	for _, acc := range accs {
		if acc == nil {
			continue
		}
		good += acc.good
		lv.Completed += acc.completed
		lv.Failed += acc.failed
		lv.Canceled += acc.canceled
		lv.TotalInputTokens += acc.input
		lv.TotalOutputTokens += acc.output
		busy += acc.busy
	}
	// The window's distributions are its batches merged: the same samples, fewer runs to
	// merge than its buckets.
	batches := bucketBatches(accs)
	dists := make([]*Dist, len(Registry))
	for i := range dists {
		dists[i] = mergeAll(batches[i])
	}
	for i, m := range Registry {
		lv.Dists[m.Key] = dists[i]
		if m.PerToken {
			lv.Dists[m.Key] = a.dists[i]
		}
	}
	// An agentic level's tasks that ended in the window's buckets (task:p99<=60s).
	a.tasks.windowDists(lo*int64(w.width/time.Microsecond), hi*int64(w.width/time.Microsecond), lv.Dists)
	var goodFraction, errorRate *float64
	if judged := lv.Completed + lv.Failed; judged > 0 {
		errorRate = ptr(float64(lv.Failed) / float64(judged))
		if definesGoodput(a.cfg.SLOs) {
			goodFraction = ptr(float64(good) / float64(judged))
		}
	}
	lv.SLO = evaluate(a.cfg.SLOs, lv.Dists, goodFraction, errorRate)
	dur := (time.Duration(hi-lo) * w.width).Seconds()
	lv.DurationS = dur
	lv.RequestThroughput = float64(lv.Completed) / dur
	lv.OutputThroughput = float64(lv.TotalOutputTokens) / dur
	lv.TotalTokenThroughput = float64(lv.TotalInputTokens+lv.TotalOutputTokens) / dur
	lv.MeanConcurrency = float64(busy) / 1e6 / dur
	setStats(&lv, dists, a.present, a.skip, a.cfg.percentiles(), batches)
	return lv
}

// series returns, for the buckets from the level's first to its last, the output tokens
// emitted and the mean requests in flight in each, and the first bucket's index.
func (w *windows) series() (first int64, tokens, inflight []float64) {
	w.integrate()
	if w.lo > w.hi {
		return 0, nil, nil
	}
	ws := float64(w.width / time.Microsecond)
	for b := w.lo; b <= w.hi; b++ {
		var tk, bz float64
		if acc := w.buckets[b]; acc != nil {
			tk, bz = float64(acc.tokens), float64(acc.busy)/ws
		}
		tokens, inflight = append(tokens, tk), append(inflight, bz)
	}
	return w.lo, tokens, inflight
}
