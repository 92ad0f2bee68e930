package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/workload"
)

// fakeSource makes request i with InputTokens i+1, or replays a trace of arrivals.
type fakeSource struct {
	arrivals []time.Duration // a trace when non-nil
}

func (s fakeSource) Request(level, i int) workload.Request {
	r := workload.Request{InputTokens: i + 1, OutputTokens: 8}
	if s.arrivals != nil {
		r.Arrival, r.HasArrival = s.arrivals[i%len(s.arrivals)], true
	}
	return r
}

func (s fakeSource) Len() int { return len(s.arrivals) }

// fakeTarget "takes" took(i) per request on whatever clock is running (fake in synctest),
// records Sent at entry and Done at exit, and tracks the peak number in flight.
type fakeTarget struct {
	took            func(i int) time.Duration
	inFlight, peak  atomic.Int64
	mu              sync.Mutex
	entered, exited []int
}

func (f *fakeTarget) Do(ctx context.Context, start time.Time, req workload.Request, rec *record.Record) {
	rec.Sent = record.Since(start, time.Now())
	n := f.inFlight.Add(1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if req.InputTokens != rec.Index+1 {
		panic(fmt.Sprintf("request %d handed request for index %d", rec.Index, req.InputTokens-1))
	}
	t := time.NewTimer(f.took(rec.Index))
	select {
	case <-t.C:
		rec.Events.Base = rec.Sent
		rec.Events.Append(record.Since(start, time.Now()), 1)
		rec.OutputTokens = 1
	case <-ctx.Done():
		t.Stop()
		rec.Error = &record.Error{Kind: record.KindCanceled, Message: ctx.Err().Error()}
	}
	f.inFlight.Add(-1)
	rec.Done = record.Since(start, time.Now())
}

func fixed(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }

// collector is a concurrency-safe sink.
type collector struct {
	mu   sync.Mutex
	recs []*record.Record
}

func (c *collector) sink(r *record.Record) {
	c.mu.Lock()
	c.recs = append(c.recs, r)
	c.mu.Unlock()
}

// sorted returns the records by index.
func (c *collector) sorted() []*record.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.recs)
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out
}

// run runs lvl in a synctest bubble starting at the bubble's t = 0 and returns the
// records by index, the end reason and how long Run took on the fake clock.
func run(t *testing.T, lvl Level, src workload.Source, tgt Target) ([]*record.Record, EndReason, time.Duration) {
	t.Helper()
	var (
		c      collector
		reason EndReason
		took   time.Duration
	)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var err error
		reason, err = Run(t.Context(), start, lvl, src, tgt, c.sink)
		if err != nil {
			t.Fatal(err)
		}
		took = time.Since(start)
	})
	return c.sorted(), reason, took
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestValidate(t *testing.T) {
	good := []Level{
		{Concurrency: 4, Requests: 10},
		{Rate: 2.5, Duration: time.Minute, WarmupTime: 10 * time.Second, Cooldown: 5 * time.Second},
		{Rate: 1, Arrival: schedule.Arrival{Kind: schedule.Gamma, Burstiness: 0.5}, MaxConcurrency: 3, Requests: 1, Warmup: 2},
		{Concurrency: 3, Requests: 3, Shard: 2, Shards: 3},
		{Rate: 1, Requests: 1, Shard: 0, Shards: 1},
	}
	for _, l := range good {
		if err := l.Validate(); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
	bad := []struct {
		l    Level
		want []string
	}{
		{Level{}, []string{"neither concurrency nor rate", "neither requests nor duration"}},
		{Level{Concurrency: 2, Rate: 1, Requests: 1}, []string{"not both"}},
		{Level{Concurrency: -1, Requests: 1}, []string{"concurrency -1 is negative"}},
		{Level{Rate: -2, Requests: 1}, []string{"rate -2"}},
		{Level{Rate: 1, Requests: 1, Arrival: schedule.Arrival{Kind: "zipf"}}, []string{`arrival: unknown arrival kind "zipf"`}},
		{Level{Concurrency: 2, MaxConcurrency: 4, Requests: 1}, []string{"max concurrency applies to an open loop"}},
		{Level{Index: -1, Rate: 1, MaxConcurrency: -1, Requests: -1, Duration: -time.Second, Warmup: -1, WarmupTime: -1, Cooldown: -1},
			[]string{"index -1", "max concurrency -1", "requests -1", "duration -1s", "warm-up -1 requests", "warm-up time -1ns", "cool-down -1ns is negative"}},
		{Level{Rate: 1, Requests: 5, Cooldown: time.Second}, []string{"cool-down 1s needs a duration"}},
		{Level{Rate: 1, Duration: 10 * time.Second, WarmupTime: 6 * time.Second, Cooldown: 4 * time.Second}, []string{"leave nothing of duration 10s"}},
		{Level{Rate: 1, Requests: 1, Shard: 1}, []string{"shard 1 given without a shard count"}},
		{Level{Rate: 1, Requests: 1, Shard: 3, Shards: 3}, []string{"shard 3 is outside 0..2"}},
		{Level{Concurrency: 2, Requests: 1, Shards: 3}, []string{"concurrency 2 cannot be split among 3", "requests 1 cannot be split"}},
		{Level{Rate: 1, MaxConcurrency: 2, Requests: 1, Shards: 3}, []string{"max concurrency 2 cannot be split"}},
		{Level{Rate: 1, Requests: 1, Shards: -1}, []string{"shard count -1"}},
	}
	for _, c := range bad {
		err := c.l.Validate()
		if err == nil {
			t.Errorf("%+v validated", c.l)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q does not mention %q", c.l, err, w)
			}
		}
		if got := strings.Count(err.Error(), "\n") + 1; got != len(c.want) {
			t.Errorf("%+v: %d problems reported, want %d: %v", c.l, got, len(c.want), err)
		}
	}
	if _, err := Run(context.Background(), time.Now(), Level{}, fakeSource{}, &fakeTarget{}, nil); err == nil {
		t.Error("Run accepted an invalid level")
	}
	if _, err := Run(context.Background(), time.Now(), Level{Rate: 1, Requests: 1}, nil, nil, nil); err == nil {
		t.Error("Run accepted a nil source and target")
	}
}

// TestValidateFields: each problem is a *fielderr.Error keyed by the field whose value it
// quotes first, so that a caller can name the field as its users know it.
func TestValidateFields(t *testing.T) {
	cases := []struct {
		l    Level
		want []string
	}{
		{Level{Rate: 1, MaxConcurrency: -1, Requests: -1, Warmup: -1, WarmupTime: -1, Cooldown: -1},
			[]string{"MaxConcurrency", "Requests", "Warmup", "WarmupTime", "Cooldown"}},
		{Level{Rate: 1, Requests: 1, Cooldown: time.Second}, []string{"Cooldown"}},
		{Level{Concurrency: 2, MaxConcurrency: 4, Duration: -time.Second}, []string{"MaxConcurrency", "Duration"}},
		{Level{Rate: 1, Duration: 5 * time.Second, Cooldown: 5 * time.Second}, []string{"Duration"}},
		{Level{Concurrency: 2, Requests: 1, Shard: 3, Shards: 3}, []string{"Shard", "Concurrency", "Requests"}},
		{Level{Index: -1, Rate: math.NaN(), Arrival: schedule.Arrival{Kind: "zipf"}, MaxErrorRate: 1, Repeat: -1, Requests: 1, Shards: -1},
			[]string{"Index", "Rate", "MaxErrorRate", "Repeat", "Shards"}},
	}
	for _, c := range cases {
		var got []string
		for _, err := range c.l.Validate().(interface{ Unwrap() []error }).Unwrap() {
			var fe *fielderr.Error
			if !errors.As(err, &fe) {
				t.Fatalf("%+v: %v is not a *fielderr.Error", c.l, err)
			}
			got = append(got, fe.Field)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: fields %v, want %v", c.l, got, c.want)
		}
	}
}

func TestClosedLoopReusesSlots(t *testing.T) {
	// Request i takes (i%3+1)·100 ms; two slots. Slot A: 0 (0–100), 2 (100–400), 5 (400–500)...
	took := func(i int) time.Duration { return time.Duration(i%3+1) * 100 * time.Millisecond }
	tgt := &fakeTarget{took: took}
	lvl := Level{Index: 3, Concurrency: 2, Requests: 7}
	recs, reason, elapsed := run(t, lvl, fakeSource{}, tgt)
	if reason != EndRequests {
		t.Errorf("reason %q", reason)
	}
	if len(recs) != 7 {
		t.Fatalf("%d records, want 7", len(recs))
	}
	// Simulate the slots by hand: each request goes to the slot that frees first.
	slots := []time.Duration{0, 0}
	var wantEnd time.Duration
	for i, r := range recs {
		if r.Index != i || r.Level != 3 || r.Warmup || r.InputTokens != i+1 {
			t.Errorf("record %d: index %d level %d warm %v input %d", i, r.Index, r.Level, r.Warmup, r.InputTokens)
		}
		s := slices.Index(slots, slices.Min(slots))
		if r.Scheduled != slots[s] || r.Sent != r.Scheduled {
			t.Errorf("request %d scheduled %v sent %v, want both %v (when its slot freed)", i, r.Scheduled, r.Sent, slots[s])
		}
		slots[s] += took(i)
		if r.Done != slots[s] || r.Error != nil {
			t.Errorf("request %d done %v err %v, want %v", i, r.Done, r.Error, slots[s])
		}
		wantEnd = max(wantEnd, slots[s])
	}
	if tgt.peak.Load() != 2 {
		t.Errorf("peak in flight %d, want 2", tgt.peak.Load())
	}
	if elapsed != wantEnd {
		t.Errorf("Run took %v, want %v (until the last request finished)", elapsed, wantEnd)
	}
}

func TestOpenLoopDueTimes(t *testing.T) {
	for _, arr := range []string{"constant", "poisson", "gamma:0.3"} {
		t.Run(arr, func(t *testing.T) {
			a, _ := schedule.ParseArrival(arr)
			lvl := Level{Rate: 20, Arrival: a, Requests: 50, Seed: 5}
			// Each request takes 975 ms: requests overlap, and none delays the next dispatch.
			tgt := &fakeTarget{took: fixed(ms(975))}
			recs, reason, elapsed := run(t, lvl, fakeSource{}, tgt)
			if reason != EndRequests || len(recs) != 50 {
				t.Fatalf("reason %q, %d records", reason, len(recs))
			}
			plan := schedule.NewPlan(a, 20, 5)
			var last time.Duration
			for i, r := range recs {
				last = plan.Next()
				due := last.Truncate(time.Microsecond)
				if r.Index != i || r.Scheduled != due || r.Sent != due {
					t.Errorf("request %d (index %d): scheduled %v sent %v, want due %v", i, r.Index, r.Scheduled, r.Sent, due)
				}
			}
			if elapsed != last+ms(975) {
				t.Errorf("Run took %v, want the last due time %v + 975ms", elapsed, last)
			}
			if arr == "constant" && tgt.peak.Load() != 20 {
				t.Errorf("peak in flight %d, want 20 (975 ms at 20/s)", tgt.peak.Load())
			}
		})
	}
}

func TestOpenLoopMaxConcurrencyLag(t *testing.T) {
	// Due every 100 ms, each takes 250 ms, one slot: the queue grows and every wait is lag.
	lvl := Level{Rate: 10, Arrival: schedule.Arrival{Kind: schedule.Constant}, MaxConcurrency: 1, Requests: 4}
	tgt := &fakeTarget{took: fixed(ms(250))}
	recs, _, elapsed := run(t, lvl, fakeSource{}, tgt)
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		due, sent := ms(100*float64(i)), ms(250*float64(i))
		if r.Scheduled != due || r.Sent != sent {
			t.Errorf("request %d: scheduled %v sent %v, want %v and %v (lag %v)", i, r.Scheduled, r.Sent, due, sent, sent-due)
		}
	}
	if tgt.peak.Load() != 1 || elapsed != ms(1000) {
		t.Errorf("peak %d, took %v", tgt.peak.Load(), elapsed)
	}
}

func TestWarmupByCount(t *testing.T) {
	for _, lvl := range []Level{
		{Concurrency: 2, Requests: 5, Warmup: 3},
		{Rate: 50, Requests: 5, Warmup: 3},
	} {
		recs, reason, _ := run(t, lvl, fakeSource{}, &fakeTarget{took: fixed(ms(30))})
		if reason != EndRequests || len(recs) != 8 {
			t.Fatalf("%+v: reason %q, %d records, want 8", lvl, reason, len(recs))
		}
		for i, r := range recs {
			if r.Index != i || r.Warmup != (i < 3) {
				t.Errorf("%+v: record %d index %d warmup %v", lvl, i, r.Index, r.Warmup)
			}
		}
	}
}

func TestWarmupAndCooldownByTime(t *testing.T) {
	constant := schedule.Arrival{Kind: schedule.Constant}
	t.Run("open duration", func(t *testing.T) {
		// Due at 0, 100, ..., 900 ms; warm-up < 300 ms; cool-down >= 800 ms; stop at 1 s.
		lvl := Level{Rate: 10, Arrival: constant, Duration: time.Second, WarmupTime: ms(300), Cooldown: ms(200)}
		recs, reason, elapsed := run(t, lvl, fakeSource{}, &fakeTarget{took: fixed(ms(500))})
		if reason != EndDuration || len(recs) != 10 {
			t.Fatalf("reason %q, %d records, want duration and 10", reason, len(recs))
		}
		for i, r := range recs {
			if want := i < 3 || i >= 8; r.Warmup != want {
				t.Errorf("request %d due %v: warmup %v, want %v", i, r.Scheduled, r.Warmup, want)
			}
			if r.Error != nil {
				t.Errorf("request %d failed: %v (in-flight requests must finish at the level end)", i, r.Error)
			}
		}
		if elapsed != ms(1400) {
			t.Errorf("Run took %v, want 1.4s: the last request (due 900 ms) finishes", elapsed)
		}
	})
	t.Run("open requests", func(t *testing.T) {
		// Warm-up by time, then 3 measured requests.
		lvl := Level{Rate: 10, Arrival: constant, Requests: 3, WarmupTime: ms(250), Warmup: 1}
		recs, reason, _ := run(t, lvl, fakeSource{}, &fakeTarget{took: fixed(ms(10))})
		if reason != EndRequests || len(recs) != 6 {
			t.Fatalf("reason %q, %d records, want 6", reason, len(recs))
		}
		for i, r := range recs {
			if r.Warmup != (i < 3) {
				t.Errorf("request %d due %v: warmup %v", i, r.Scheduled, r.Warmup)
			}
		}
	})
	t.Run("closed duration", func(t *testing.T) {
		// One worker, 300 ms per request: slots free at 0, 300, 600, 900; stop at 1 s.
		lvl := Level{Concurrency: 1, Duration: time.Second, WarmupTime: ms(200), Cooldown: ms(150)}
		recs, reason, elapsed := run(t, lvl, fakeSource{}, &fakeTarget{took: fixed(ms(300))})
		if reason != EndDuration || len(recs) != 4 {
			t.Fatalf("reason %q, %d records, want 4", reason, len(recs))
		}
		for i, r := range recs {
			if r.Scheduled != ms(300*float64(i)) || r.Warmup != (i == 0 || i == 3) {
				t.Errorf("request %d: scheduled %v warmup %v", i, r.Scheduled, r.Warmup)
			}
		}
		if elapsed != ms(1200) {
			t.Errorf("Run took %v, want 1.2s", elapsed)
		}
	})
}

func TestClosedLoopDuration(t *testing.T) {
	lvl := Level{Concurrency: 3, Duration: time.Second}
	tgt := &fakeTarget{took: fixed(ms(300))}
	recs, reason, elapsed := run(t, lvl, fakeSource{}, tgt)
	// Slots free at 0, 300, 600, 900 ms (three each); at 1.2 s the level is over.
	if reason != EndDuration || len(recs) != 12 || elapsed != ms(1200) {
		t.Fatalf("reason %q, %d records, took %v; want duration, 12, 1.2s", reason, len(recs), elapsed)
	}
	for i, r := range recs {
		if r.Index != i || r.Error != nil || r.Warmup {
			t.Errorf("record %d: %+v", i, r)
		}
	}
}

func TestTraceArrivals(t *testing.T) {
	src := fakeSource{arrivals: []time.Duration{0, ms(50), ms(50), ms(20), ms(400)}}
	lvl := Level{Rate: 1, Requests: 100} // the trace, not the rate, sets the due times
	recs, reason, elapsed := run(t, lvl, src, &fakeTarget{took: fixed(ms(10))})
	if reason != EndTrace || len(recs) != 5 {
		t.Fatalf("reason %q, %d records; want trace, 5", reason, len(recs))
	}
	for i, r := range recs {
		want := src.arrivals[i]
		if i == 3 {
			want = ms(50) // due before the previous one: sent at once, late
		}
		if r.Scheduled != src.arrivals[i] || r.Sent != want {
			t.Errorf("request %d: scheduled %v sent %v, want %v / %v", i, r.Scheduled, r.Sent, src.arrivals[i], want)
		}
	}
	if elapsed != ms(410) {
		t.Errorf("took %v", elapsed)
	}
}

func TestCancellationReportsEveryInFlightRequest(t *testing.T) {
	for _, lvl := range []Level{
		{Concurrency: 5, Requests: 1000},
		{Rate: 100, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 1000},
		{Rate: 100, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 1000, MaxConcurrency: 30},
	} {
		t.Run(fmt.Sprintf("c%d-r%g-max%d", lvl.Concurrency, lvl.Rate, lvl.MaxConcurrency), func(t *testing.T) {
			prog := &Progress{}
			lvl.Progress = prog
			tgt := &fakeTarget{took: fixed(10 * time.Second)}
			var c collector
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				start := time.Now()
				time.AfterFunc(ms(1005), cancel)
				reason, err := Run(ctx, start, lvl, fakeSource{}, tgt, c.sink)
				if err != nil || reason != EndInterrupted {
					t.Errorf("Run = %q, %v; want interrupted", reason, err)
				}
				if took := time.Since(start); took != ms(1005) {
					t.Errorf("Run returned after %v, want at once on cancel (1.005s)", took)
				}
			})
			recs := c.sorted()
			want := 5 // closed loop: the workers' first requests
			if lvl.Rate > 0 {
				want = 101 // due at 0, 10, ..., 1000 ms
				if lvl.MaxConcurrency > 0 {
					want = lvl.MaxConcurrency
				}
			}
			if len(recs) != want || prog.Sent() != want || prog.Done() != want || prog.InFlight() != 0 {
				t.Fatalf("%d records (progress sent %d done %d), want %d", len(recs), prog.Sent(), prog.Done(), want)
			}
			for i, r := range recs {
				if r.Index != i || r.Error == nil || r.Error.Kind != record.KindCanceled || r.Done != ms(1005) {
					t.Errorf("record %d: index %d error %v done %v", i, r.Index, r.Error, r.Done)
				}
			}
		})
	}
}

func TestProgressLive(t *testing.T) {
	prog := &Progress{}
	lvl := Level{Concurrency: 4, Requests: 8, Progress: prog}
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			Run(t.Context(), time.Now(), lvl, fakeSource{}, &fakeTarget{took: fixed(time.Second)}, nil)
		}()
		time.Sleep(ms(1500))
		synctest.Wait()
		if prog.Sent() != 8 || prog.Done() != 4 || prog.InFlight() != 4 {
			t.Errorf("mid-level: sent %d done %d in flight %d, want 8, 4, 4", prog.Sent(), prog.Done(), prog.InFlight())
		}
		<-done
		if prog.Done() != 8 {
			t.Errorf("done %d", prog.Done())
		}
	})
	if got := lvl.Total(); got != 8 {
		t.Errorf("Total %d", got)
	}
}

// slowSource takes build to make each request, as prompt synthesis can.
type slowSource struct {
	fakeSource
	build time.Duration
}

func (s slowSource) Request(level, i int) workload.Request {
	time.Sleep(s.build)
	return s.fakeSource.Request(level, i)
}

func TestScheduleLagFromBuildingRequests(t *testing.T) {
	src := slowSource{build: ms(5)}
	// The level's lookahead is built before its clock starts (request 0 first, then the
	// other 5 of the 6: 30 ms), so that a Source that asks the target (the server's
	// /tokenize) does not load it while it is measured, and no request waits for its build.
	for _, lvl := range []Level{{Concurrency: 2, Requests: 6}, {Rate: 50, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 6}} {
		recs, _, _ := run(t, lvl, src, &fakeTarget{took: fixed(ms(100))})
		for i, r := range recs {
			if r.Sent != r.Scheduled {
				t.Errorf("rate %v concurrency %d, request %d: scheduled %v sent %v: a lag from building requests", lvl.Rate, lvl.Concurrency, i, r.Scheduled, r.Sent)
			}
		}
		if lvl.Rate > 0 {
			for i, r := range recs {
				if want := ms(30 + 20*float64(i)); r.Scheduled != want {
					t.Errorf("open loop request %d: scheduled %v, want %v (the clock starts once the lookahead is built)", i, r.Scheduled, want)
				}
			}
		}
	}
	// Past the lookahead, requests are built while earlier ones are in flight: a closed
	// loop of 2 needs 16 ahead, so its 17th is built during the level, in time.
	recs, _, _ := run(t, Level{Concurrency: 2, Requests: 40}, src, &fakeTarget{took: fixed(ms(100))})
	for _, r := range recs {
		if r.Sent != r.Scheduled {
			t.Errorf("closed loop of 40, request %d: lag %v", r.Index, r.Sent-r.Scheduled)
		}
	}
}

func TestTimesAreFromTheRunStart(t *testing.T) {
	// A later level of a ladder: the run started 10 s before this level.
	for _, lvl := range []Level{{Concurrency: 1, Requests: 2}, {Rate: 10, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 2}} {
		var c collector
		synctest.Test(t, func(t *testing.T) {
			start := time.Now().Add(-10 * time.Second)
			if _, err := Run(t.Context(), start, lvl, fakeSource{}, &fakeTarget{took: fixed(ms(150))}, c.sink); err != nil {
				t.Fatal(err)
			}
		})
		recs := c.sorted()
		want := []time.Duration{10 * time.Second, 10*time.Second + ms(150)}
		if lvl.Rate > 0 {
			want[1] = 10*time.Second + ms(100)
		}
		for i, r := range recs {
			if r.Scheduled != want[i] || r.Sent != want[i] {
				t.Errorf("%+v request %d: scheduled %v sent %v, want %v", lvl, i, r.Scheduled, r.Sent, want[i])
			}
		}
	}
}
