package calibrate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// replay is a point's requests as a workload: request i is the i-th measured one, with its
// arrival when the point was an open loop (replayed as a trace).
type replay struct{ pt *Point }

func (r replay) Len() int { return len(r.pt.Requests) }

func (r replay) Request(_, i int) workload.Request {
	q := r.pt.Requests[min(i, len(r.pt.Requests)-1)]
	return workload.Request{InputTokens: q.Prompt, OutputTokens: max(q.Output, 1), Arrival: q.Arrival, HasArrival: r.pt.Open}
}

// level is the point's load as load.RunVirtual runs it.
func (pt *Point) level() load.Level {
	warm := 0
	for _, q := range pt.Requests {
		if q.Warmup {
			warm++
		}
	}
	l := load.Level{Requests: len(pt.Requests) - warm, Warmup: warm}
	if pt.Open {
		l.Rate, l.Arrival = 1, schedule.Arrival{Kind: schedule.Constant} // unused: the trace's arrivals rule
	} else {
		l.Concurrency = pt.Concurrency
	}
	return l
}

// predict simulates the point on profile p and returns the figures simulate would report.
func predict(ctx context.Context, p sim.Profile, pt *Point) (figure.Values, error) {
	srv, err := bench.Deploy(p)
	if err != nil {
		return figure.Values{}, err
	}
	d := newDists()
	refused := 0
	var why string
	sink := func(r *record.Record) {
		if r.Error != nil && r.Error.Kind == record.KindHTTPStatus {
			refused++
			why = r.Error.Message
		}
		d.add(r)
	}
	if _, _, err := load.RunVirtual(ctx, pt.level(), 0, replay{pt}, srv, sink); err != nil {
		return figure.Values{}, err
	}
	if refused > 0 {
		return figure.Values{}, fmt.Errorf("%s: the profile refuses %d of its requests (%s)", pt.Name, refused, why)
	}
	return d.figures(), nil
}

// predictAll predicts every point on profile p (with its step noise: P99s too).
func predictAll(ctx context.Context, p sim.Profile, pts []*Point) (map[*Point]figure.Values, error) {
	out := make(map[*Point]figure.Values, len(pts))
	for _, pt := range pts {
		fig, err := predict(ctx, p, pt)
		if err != nil {
			return nil, err
		}
		out[pt] = fig
	}
	return out, nil
}

// dists hold a point's fitted figures as metrics' own derivations give them (the
// registry's Samples) in sparse distributions, one per metric of the figures: a full
// Aggregator's dense counters cost more than the simulation itself, and a fit simulates
// each point thousands of times.
type dists []*metrics.Dist

// fitted are the registry's metrics of the figures (figure.Metrics), in order, and
// distOf is each figure's index among them.
var fitted, distOf = func() ([]*metrics.Metric, [figure.N]int) {
	var ms []*metrics.Metric
	var of [figure.N]int
	for _, k := range figure.Metrics() {
		m, ok := metrics.Lookup(k)
		if !ok {
			panic("calibrate: no metric " + k)
		}
		ms = append(ms, m)
	}
	for _, k := range figure.All {
		of[k] = slices.IndexFunc(ms, func(m *metrics.Metric) bool { return m.Key == k.Figure().Metric })
	}
	return ms, of
}()

func newDists() dists {
	d := make(dists, len(fitted))
	for i := range d {
		d[i] = metrics.NewSparseDist()
	}
	return d
}

// add takes a measured request's samples: succeeded, not a warm-up (as levels count them).
func (d dists) add(r *record.Record) {
	if r.Error != nil || r.Warmup {
		return
	}
	for i, dst := range d {
		fitted[i].Samples(r, func(num, den int64, w uint64) { dst.AddRatio(num, den, w) })
	}
}

// figures are each figure's percentile of its metric's distribution.
func (d dists) figures() figure.Values {
	var f figure.Values
	for _, k := range figure.All {
		f[k] = nan
		if v, ok := d[distOf[k]].Percentile(k.Figure().Pct); ok {
			f[k] = v
		}
	}
	return f
}

// completed is the number of requests that completed with a first token: TTFT's samples.
func (d dists) completed() int { return int(d[distOf[figure.TTFTP50]].Count()) }

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// seFloor is the least relative standard error a figure is trusted to: clocks, a live
// server's pacing and the simulator's model of a step are not better than 2 %.
const seFloor = 0.02

// relativeErrors estimates each fitted figure's relative standard error from the spread of
// its samples: the median's is about 1.253 σ/√n with σ = 1.4826 × the median absolute
// deviation (robust to a long tail), and a tail percentile's (P99) about three times a
// median's.
func (d dists) relativeErrors() figure.Values {
	se := func(x *metrics.Dist, scale float64) float64 {
		v := x.Values()
		if len(v) < 2 {
			return 1 // one sample: barely a measurement
		}
		m := metrics.Median(v)
		if m <= 0 {
			return 1
		}
		dev := make([]float64, len(v))
		for i, x := range v {
			dev[i] = math.Abs(x - m)
		}
		return math.Max(scale*1.253*1.4826*metrics.Median(dev)/m/math.Sqrt(float64(len(v))), seFloor)
	}
	var f figure.Values
	for _, k := range figure.All {
		scale := 1.0
		if k.Figure().Pct != 50 {
			scale = 3
		}
		f[k] = se(d[distOf[k]], scale)
	}
	return f
}
