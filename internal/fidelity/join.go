package fidelity

import (
	"math"
	"slices"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// Join pairs records with their ground truth, one record at a time, so that records.jsonl
// can be streamed. Records carry offsets from the run's t = 0 on the client's monotonic
// clock; the truth carries wall-clock Unix times. Start, the wall instant of t = 0
// (summary.json's started_at), maps one onto the other: client wall = Start + offset. That
// holds while the wall clock neither steps nor slews during the run (docs/performance.md).
type Join struct {
	opts  Options
	truth map[string]*Truth
	start int64 // Start in Unix ns
	seen  map[string]bool

	records, warmup, matched, noID, noTruth, duplicate, mismatch, noEvents, kernel, upper int
	// Signed errors in ns, kept whole and sorted at the end: percentiles are exact.
	event, ttft, itl, send []int64
	// The server's own pacing, from the truth alone: each event's send minus its step's
	// end, and the server's ITL samples minus the engine steps'.
	pacing, pacingITL []int64
	first             []int64 // the first event's error, of records whose TTFT is exact
	// second[s] holds the event errors read in second s of the run (with BySecond).
	second [][]int64
}

// Options choose what a Join pairs and reports.
type Options struct {
	// IncludeWarmup pairs warm-up and cool-down records too. By default they are left out,
	// as from every figure the run reports: the error that matters is the error in those.
	IncludeWarmup bool
	// BySecond adds Report.PerSecond: the event-time error per second of the run, which
	// shows where a tail comes from (the start, a round of requests ending together).
	BySecond bool
}

// NewJoin joins records to truth, with start the wall instant of the records' t = 0.
func NewJoin(truth map[string]*Truth, start time.Time, opts Options) *Join {
	return &Join{opts: opts, truth: truth, start: start.UnixNano(), seen: map[string]bool{}}
}

// wall is the client's wall instant of a record offset, in Unix ns.
func (j *Join) wall(d time.Duration) int64 { return j.start + int64(d) }

// Add joins one record. Records that failed still count: their events before the failure
// were measured like any other.
func (j *Join) Add(r *record.Record) {
	j.records++
	if r.Warmup && !j.opts.IncludeWarmup {
		j.warmup++
		if r.ResponseID != "" {
			j.seen[r.ResponseID] = true // its truth line is accounted for, not unmatched
		}
		return
	}
	if r.ResponseID == "" {
		j.noID++
		return
	}
	t, ok := j.truth[r.ResponseID]
	if !ok {
		j.noTruth++
		return
	}
	if j.seen[r.ResponseID] {
		j.duplicate++ // two records claim one response: the second is not paired again
		return
	}
	j.seen[r.ResponseID] = true
	j.matched++
	if r.KernelStamps {
		j.kernel++
	}
	n := min(r.Events.Len(), len(t.Events))
	if r.Events.Len() != len(t.Events) {
		j.mismatch++
	}
	if n == 0 {
		j.noEvents++
		return
	}
	sent := j.wall(r.Sent)
	j.send = append(j.send, t.Received*1000-sent)
	if r.TTFTUpperBound {
		j.upper++
	}
	r.Events.Each(func(i int, at time.Duration, nc int) {
		if i >= n {
			return
		}
		c, s := j.wall(at), t.Events[i]*1000
		j.event = append(j.event, c-s)
		if j.opts.BySecond && at >= 0 {
			sec := int(at / time.Second)
			for len(j.second) <= sec {
				j.second = append(j.second, nil)
			}
			j.second[sec] = append(j.second[sec], c-s)
		}
		if i == 0 {
			// TTFT as the client measured it minus TTFT as the server served it.
			j.ttft = append(j.ttft, (c-sent)-(s-t.Received*1000))
			if !r.TTFTUpperBound {
				j.first = append(j.first, c-s)
			}
		}
	})
	// ITL: the registry's samples of the record against those of the truth's own events,
	// gap for gap: each gap carrying nc tokens gives nc samples of gap/nc (docs/design.md §2).
	truthITL := itlSamples(truthRecord(t.Events, t.Tokens, n), 1000)
	j.itl = appendITLErrors(j.itl, itlSamples(r, 1000), truthITL)
	if t.Steps != nil {
		for i := range n {
			j.pacing = append(j.pacing, (t.Events[i]-t.Steps[i])*1000)
		}
		j.pacingITL = appendITLErrors(j.pacingITL, truthITL, itlSamples(truthRecord(t.Steps, t.Tokens, n), 1000))
	}
}

// itlSamples are the registry's per-token ITL samples of r in ns (its offsets times scale).
func itlSamples(r *record.Record, scale int64) []itlSample {
	var out []itlSample
	itl.Samples(r, func(num, den int64, w uint64) { out = append(out, itlSample{num * scale, den, w}) })
	return out
}

// appendITLErrors appends a's samples minus b's, gap for gap (up to the shorter), each
// weighted as a's.
func appendITLErrors(dst []int64, a, b []itlSample) []int64 {
	for k, s := range a[:min(len(a), len(b))] {
		e := int64(math.Round(float64(s.num)/float64(s.den) - float64(b[k].num)/float64(b[k].den)))
		for range s.w {
			dst = append(dst, e)
		}
	}
	return dst
}

// itl is the registry's per-token ITL.
var itl, _ = metrics.Lookup(metrics.KeyITL)

// itlSample is one ITL sample, num/den ns, of weight w.
type itlSample struct {
	num, den int64
	w        uint64
}

// truthRecord holds the first n of the times at (Unix µs; µs from the first), carrying
// tokens (nil: one each), as a record's events.
func truthRecord(at []int64, tokens []int32, n int) *record.Record {
	r := &record.Record{}
	r.Events.Grow(n)
	for i := range n {
		k := 1
		if tokens != nil {
			k = int(tokens[i])
		}
		r.Events.Append(time.Duration(at[i]-at[0])*time.Microsecond, k)
	}
	return r
}

// Report is the outcome of a join. Errors are client minus server, in ms: positive means
// the client saw an event later (or measured a longer interval) than the server produced it.
type Report struct {
	Records        int `json:"records"`         // records read
	Warmup         int `json:"warmup_excluded"` // warm-up and cool-down records left out (Options.IncludeWarmup)
	Matched        int `json:"matched"`         // records joined to a truth line
	NoResponseID   int `json:"no_response_id"`  // records with no response id (failed before the stream)
	NoTruth        int `json:"no_truth"`        // response ids the truth does not have
	Duplicate      int `json:"duplicate"`       // records repeating an already joined response id
	CountMismatch  int `json:"count_mismatch"`  // joined records whose event counts differ (paired up to the shorter)
	NoEvents       int `json:"no_events"`       // joined records with no event to pair
	UnmatchedTruth int `json:"unmatched_truth"` // truth lines no record claimed
	Events         int `json:"events"`          // paired token events
	Requests       int `json:"paired_requests"` // joined records with at least one paired event
	KernelStamped  int `json:"kernel_stamped"`  // joined records whose events the kernel stamped (the rest: read time)

	// EventTime: each paired event's client read time minus the server's write time.
	EventTime Stats `json:"event_time_error_ms"`
	// TTFT: client TTFT (first token - sent) minus the server's (first event - received).
	// It adds to the first event's lateness the time the request took to reach the handler.
	TTFT Stats `json:"ttft_error_ms"`
	// ITL: each of the client's ITL samples minus the server's for the same gap.
	ITL Stats `json:"itl_error_ms"`
	// SendDelay: the server's receipt of the request minus the client's sent.
	SendDelay Stats `json:"send_delay_ms"`
	// FirstEvent: the first token event's time error, over the requests whose TTFT is
	// exact; TTFTUpperBound counts the paired requests left out of it, whose first event
	// shared a read and a receive stamp with a later one (their TTFT is an upper bound).
	FirstEvent     Stats `json:"first_event_error_ms"`
	TTFTUpperBound int   `json:"ttft_upper_bound"`

	// ServerEvent: each paired event's write time at the server minus the end of the engine
	// step whose tokens it carries: how late the server sent it (the truth alone; empty for
	// a truth file without step_unix). ServerITL: the server's ITL samples minus the engine
	// steps' for the same gap, the unevenness its pacing adds.
	ServerEvent Stats `json:"server_event_delay_ms"`
	ServerITL   Stats `json:"server_itl_error_ms"`

	// Early counts events the client read before the server's stamp. The stamp is taken
	// after the write and flush return, so the client can read the bytes first: a few
	// early events by a fraction of a ms are the server's own delay, not the client's.
	Early int `json:"early_events"`
	// PerSecond is the event-time error of the events read in each second of the run
	// (Options.BySecond), from second 0; Second is the offset from the run's t = 0.
	PerSecond []SecondStats `json:"per_second,omitempty"`
	// ClockWarning is set when the median event was read before it was stamped: the
	// client's and server's wall clocks disagree (or the start instant is wrong), which
	// shifts every event-time error by the same amount.
	ClockWarning string `json:"clock_warning,omitempty"`
}

// Stats summarise one signed error distribution in ms. Percentiles interpolate linearly
// between order statistics (numpy's default), over all samples: exact, not binned.
type Stats struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	P1    float64 `json:"p1"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99.9"`
	Max   float64 `json:"max"`
}

// SecondStats is the event-time error over one second of the run.
type SecondStats struct {
	Second int `json:"second"`
	Stats
}

// clockSlack is how early an event may appear to be read and still count as on time:
// records and truth are both truncated to the µs, so 2 µs either way is rounding.
const clockSlack = 2 * time.Microsecond

// clockWarnAt is how early the median event must appear before the clocks are called into
// question. With kernel receive stamps on one host, the kernel stamps the bytes inside the
// server's write call, so a typical event arrives some µs before the server's own stamp
// (taken after the call returns); a clock or start-instant mistake is far larger.
const clockWarnAt = 50 * time.Microsecond

// Report computes the statistics. It may be called more than once.
func (j *Join) Report() Report {
	r := Report{
		Records: j.records, Warmup: j.warmup, Matched: j.matched, NoResponseID: j.noID, NoTruth: j.noTruth,
		Duplicate: j.duplicate, CountMismatch: j.mismatch, NoEvents: j.noEvents,
		UnmatchedTruth: len(j.truth) - len(j.seen), Events: len(j.event), Requests: len(j.ttft), KernelStamped: j.kernel,
		EventTime: statsOf(j.event), TTFT: statsOf(j.ttft), ITL: statsOf(j.itl), SendDelay: statsOf(j.send),
		FirstEvent: statsOf(j.first), TTFTUpperBound: j.upper,
		ServerEvent: statsOf(j.pacing), ServerITL: statsOf(j.pacingITL),
	}
	for i, v := range j.second {
		if len(v) > 0 {
			r.PerSecond = append(r.PerSecond, SecondStats{Second: i, Stats: statsOf(v)})
		}
	}
	for _, e := range j.event { // sorted by statsOf
		if e >= -int64(clockSlack) {
			break
		}
		r.Early++
	}
	if r.EventTime.Count > 0 && r.EventTime.P50 < -ms(int64(clockWarnAt)) {
		r.ClockWarning = "the median event was read " + formatMs(-r.EventTime.P50) +
			" ms before the server wrote it: the client's and server's wall clocks disagree (or the start instant is not the run's t = 0), so every event-time error is shifted by about that much"
	}
	return r
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// statsOf sorts v in place and summarises it.
func statsOf(v []int64) Stats {
	if len(v) == 0 {
		return Stats{}
	}
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += float64(x)
	}
	return Stats{
		Count: len(v), Mean: sum / float64(len(v)) / 1e6, Min: ms(v[0]), Max: ms(v[len(v)-1]),
		P1: percentile(v, 1), P50: percentile(v, 50), P90: percentile(v, 90),
		P99: percentile(v, 99), P999: percentile(v, 99.9),
	}
}

// percentile of sorted v in ms.
func percentile(v []int64, p float64) float64 {
	return metrics.Quantile(len(v), p, func(k int) float64 { return ms(v[k]) })
}
