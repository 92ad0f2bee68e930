package load

import (
	"context"
	"errors"
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// TestTextbookTable reproduces the textbook table (issue 3, "Done when"). With
// disaggregated prefill a request's first token comes after 512 × 0.02 = 10.24 ms, and
// the c requests of a closed loop then decode in lock-step, one token per step of
// 8 × (1 + 0.12 × (c − 1)) ms. So TPOT is the step time and the throughput is
// c × 100 tokens per E2EL = 10.24 + 99 × step.
func TestTextbookTable(t *testing.T) {
	p := simProfile(t, "textbook")
	for _, tc := range []struct {
		c          int
		tpot, tput float64
	}{{1, 8.00, 125}, {4, 10.88, 368}, {16, 22.40, 718}, {64, 68.48, 943}} {
		lvl := Level{Concurrency: tc.c, Requests: 20 * tc.c, Warmup: tc.c}
		recs, _ := simulate(t, p, lvl, fixedSource{in: 512, out: 100})
		var tpots []float64
		var measured = recs[:0:0]
		for _, r := range recs {
			if r.OutputTokens != 100 || !r.OK() {
				t.Fatalf("c=%d: request %d: %d tokens, error %v", tc.c, r.Index, r.OutputTokens, r.Error)
			}
			if !r.Warmup {
				tpots = append(tpots, tpotMs(r))
				measured = append(measured, r)
			}
		}
		tpot := percentile(tpots, 50)
		tput := outputThroughput(measured)
		t.Logf("c=%d: TPOT P50 %.2f ms, output throughput %.1f tok/s", tc.c, tpot, tput)
		if math.Abs(tpot/tc.tpot-1) > 0.02 {
			t.Errorf("c=%d: TPOT P50 %.3f ms, want %.2f ± 2%%", tc.c, tpot, tc.tpot)
		}
		if math.Abs(tput/tc.tput-1) > 0.02 {
			t.Errorf("c=%d: output throughput %.1f tok/s, want %.0f ± 2%%", tc.c, tput, tc.tput)
		}
	}
}

// TestSimulateRecords: the records carry what a live run's would: indices, warm-up marks,
// times on the run's timeline (from levelStart), events based at Sent, usage counts.
func TestSimulateRecords(t *testing.T) {
	p := simProfile(t, "h200-llama-3.1-8b")
	lvl := Level{Index: 3, Concurrency: 4, Requests: 20, Warmup: 4}
	src := funcSource(func(i int) workload.Request {
		return workload.Request{InputTokens: 200 + 10*i, OutputTokens: 30 + i}
	})
	start := 5 * time.Second
	var recs []*record.Record
	end, reason, err := simulateLevel(context.Background(), p, lvl, start, src, func(r *record.Record) { recs = append(recs, r) })
	if err != nil {
		t.Fatal(err)
	}
	if reason != EndRequests {
		t.Errorf("end reason %q, want %q", reason, EndRequests)
	}
	if len(recs) != 24 {
		t.Fatalf("%d records, want 24", len(recs))
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Index < recs[j].Index })
	ids := map[string]bool{}
	var last time.Duration
	for i, r := range recs {
		if r.Index != i || r.Level != 3 || r.Warmup != (i < 4) || !r.OK() {
			t.Errorf("record %d: index %d level %d warmup %v error %v", i, r.Index, r.Level, r.Warmup, r.Error)
		}
		if r.InputTokens != 200+10*i || r.ServerPromptTokens != r.InputTokens || r.OutputTokens != 30+i || r.OutputTokensSource != record.SourceUsage {
			t.Errorf("record %d: tokens %d/%d/%d source %q", i, r.InputTokens, r.ServerPromptTokens, r.OutputTokens, r.OutputTokensSource)
		}
		if r.Events.Tokens() != r.OutputTokens || r.Events.Len() != r.OutputTokens || r.Events.Base != r.Sent {
			t.Errorf("record %d: %d events of %d tokens, base %v sent %v", i, r.Events.Len(), r.Events.Tokens(), r.Events.Base, r.Sent)
		}
		ft, _ := r.FirstToken()
		lt, _ := r.LastToken()
		if r.Scheduled != r.Sent || r.Sent < start || ft <= r.Sent || lt != r.Done {
			t.Errorf("record %d: scheduled %v sent %v first %v last %v done %v", i, r.Scheduled, r.Sent, ft, lt, r.Done)
		}
		if ids[r.ResponseID] || r.ResponseID == "" {
			t.Errorf("record %d: response id %q repeated or empty", i, r.ResponseID)
		}
		ids[r.ResponseID] = true
		last = max(last, r.Done)
	}
	if end != last {
		t.Errorf("level end %v, last done %v", end, last)
	}
	// The first four share the first step; later ones are sent as slots free.
	for i := 1; i < 4; i++ {
		if recs[i].Sent != start {
			t.Errorf("record %d sent at %v, want the level start", i, recs[i].Sent)
		}
	}
}

// TestSimulateDeterministic: the same inputs give identical records.
func TestSimulateDeterministic(t *testing.T) {
	run := func() string {
		p := simProfile(t, "h200-llama-3.1-8b")
		p.Engine.KVCacheTokens = 20000 // force preemptions too
		src := funcSource(func(i int) workload.Request {
			return workload.Request{InputTokens: 100 + (i*7919)%3000, OutputTokens: 20 + (i*104729)%700}
		})
		recs, _ := simulate(t, p, Level{Rate: 40, Requests: 300, Seed: 9}, src)
		var b []byte
		for _, r := range recs {
			b = record.AppendJSON(b, r)
			b = append(b, '\n')
		}
		return string(b)
	}
	a, b := run(), run()
	if a != b {
		t.Error("two identical simulations produced different records")
	}
}

// TestSimulateOpenLoop: requests are sent at the plan's due times; with a concurrency cap,
// late ones wait for a slot (schedule lag) but keep their due time as Scheduled.
func TestSimulateOpenLoop(t *testing.T) {
	p := simProfile(t, "textbook")
	lvl := Level{Rate: 50, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 40}
	recs, _ := simulate(t, p, lvl, fixedSource{in: 100, out: 20})
	for i, r := range recs {
		want := time.Duration(i) * 20 * time.Millisecond
		if d := r.Scheduled - want; d < -time.Microsecond || d > time.Microsecond || r.Sent != r.Scheduled {
			t.Errorf("request %d scheduled %v sent %v, want %v", i, r.Scheduled, r.Sent, want)
		}
	}
	lvl.MaxConcurrency = 2
	recs, _ = simulate(t, p, lvl, fixedSource{in: 100, out: 20})
	lagged := 0
	for i, r := range recs {
		if r.Sent < r.Scheduled {
			t.Errorf("request %d sent before it was due", i)
		}
		if r.Sent > r.Scheduled {
			lagged++
		}
	}
	// Each request takes 2 + 19 × 8.96 ms ≈ 172 ms, so two slots serve about 11.6/s of 50/s.
	if lagged < 30 {
		t.Errorf("only %d of 40 requests waited for a slot", lagged)
	}
}

// TestSimulateDuration: a timed level stops sending at its duration and waits for the
// requests in flight.
func TestSimulateDuration(t *testing.T) {
	p := simProfile(t, "textbook")
	recs, end := simulate(t, p, Level{Concurrency: 2, Duration: 2 * time.Second}, fixedSource{in: 512, out: 100})
	for _, r := range recs {
		if r.Sent >= 2*time.Second {
			t.Errorf("request %d sent at %v, after the duration", r.Index, r.Sent)
		}
	}
	// Each request takes 10.24 + 99 × 8.96 ms = 897.28 ms: three rounds start before 2 s.
	if len(recs) != 6 || end != 3*897280*time.Microsecond {
		t.Errorf("%d records ending at %v, want 6 ending at %v", len(recs), end, 3*897280*time.Microsecond)
	}
}

// TestSimulateInterrupted: a cancelled context reports the requests in flight as cancelled.
func TestSimulateInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var recs []*record.Record
	n := 0
	_, reason, err := simulateLevel(ctx, simProfile(t, "textbook"), Level{Concurrency: 8, Requests: 1_000_000}, 0, fixedSource{in: 10, out: 10}, func(r *record.Record) {
		recs = append(recs, r)
		if n++; n == 100 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || reason != EndInterrupted {
		t.Fatalf("error %v, end reason %q; want context.Canceled, %q", err, reason, EndInterrupted)
	}
	cancelled := 0
	for _, r := range recs {
		if r.Error != nil && r.Error.Kind == record.KindCanceled {
			cancelled++
		}
	}
	if cancelled != 8 {
		t.Errorf("%d cancelled records, want the 8 in flight", cancelled)
	}
}

// traceSource is a replayed trace of n requests, one every 10 ms.
type traceSource int

func (n traceSource) Request(level, i int) workload.Request {
	return workload.Request{InputTokens: 50, OutputTokens: 5, Arrival: time.Duration(i) * 10 * time.Millisecond, HasArrival: true}
}
func (n traceSource) Len() int { return int(n) }

// TestVirtualEndReasons: a level ends as Run's would, and says so: its requests, its
// duration, or the end of the trace it replays.
func TestVirtualEndReasons(t *testing.T) {
	p := simProfile(t, "textbook")
	for _, c := range []struct {
		name string
		lvl  Level
		src  workload.Source
		want EndReason
		n    int
	}{
		{"closed requests", Level{Concurrency: 2, Requests: 6}, fixedSource{in: 10, out: 5}, EndRequests, 6},
		{"closed duration", Level{Concurrency: 2, Duration: time.Second}, fixedSource{in: 10, out: 5}, EndDuration, 0},
		{"open duration", Level{Rate: 20, Duration: time.Second}, fixedSource{in: 10, out: 5}, EndDuration, 0},
		{"trace runs out", Level{Rate: 100, Requests: 50}, traceSource(12), EndTrace, 12},
		{"trace cut by requests", Level{Rate: 100, Requests: 5}, traceSource(12), EndRequests, 5},
	} {
		n := 0
		_, reason, err := simulateLevel(context.Background(), p, c.lvl, 0, c.src, func(*record.Record) { n++ })
		if err != nil || reason != c.want || (c.n > 0 && n != c.n) {
			t.Errorf("%s: %d records, end reason %q, %v; want %d, %q", c.name, n, reason, err, c.n, c.want)
		}
	}
}

// BenchmarkSimulate1M is the wall time of simulating 1,000,000 requests (issue 3's target
// is 5 s): the default roofline profile, concurrency 256, 512 input and 128 output tokens.
func BenchmarkSimulate1M(b *testing.B) {
	p := simProfile(b, "h200-llama-3.1-8b")
	lvl := Level{Concurrency: 256, Requests: 1_000_000}
	src := fixedSource{in: 512, out: 128}
	for b.Loop() {
		n := 0
		if _, _, err := simulateLevel(context.Background(), p, lvl, 0, src, func(*record.Record) { n++ }); err != nil {
			b.Fatal(err)
		}
		if n != 1_000_000 {
			b.Fatalf("%d records", n)
		}
	}
}

// TestSeqsNeeded: a run in which max_num_seqs held nothing back is the same run under any
// limit from the most it needed up, and not under one below it (plan reuses such runs).
func TestSeqsNeeded(t *testing.T) {
	p := simProfile(t, "textbook")
	lvl := Level{Rate: 6, Arrival: schedule.Arrival{Kind: "poisson"}, Duration: 30 * time.Second, Seed: 3}
	run := func(seqs int) (int, []time.Duration) {
		q := p
		q.Engine.MaxNumSeqs = seqs
		v, err := sim.NewVirtual(q)
		if err != nil {
			t.Fatal(err)
		}
		var done []time.Duration
		if _, _, err := RunVirtual(context.Background(), lvl, 0, fixedSource{in: 512, out: 100}, v, func(r *record.Record) { done = append(done, r.Done) }); err != nil {
			t.Fatal(err)
		}
		return v.SeqsNeeded(), done
	}
	need, ref := run(256)
	if need < 2 || need > 256 {
		t.Fatalf("needed %d sequences under a limit of 256, want a batch that never reached it", need)
	}
	if got, at := run(need); got != need || !slices.Equal(at, ref) {
		t.Errorf("under a limit of %d (what it needed): needed %d, records differ %v", need, got, !slices.Equal(at, ref))
	}
	if got, at := run(need - 1); got <= need-1 || slices.Equal(at, ref) {
		t.Errorf("under a limit of %d (one less): needed %d (want more than the limit), same records %v", need-1, got, slices.Equal(at, ref))
	}
}
