package load

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/workload"
)

// turnSource is a multi-turn workload as internal/workload builds it: request i is turn
// i%turns of conversation i/turns, later turns carry the think time.
type turnSource struct {
	turns int
	think time.Duration
}

func (s turnSource) Request(level, i int) workload.Request {
	r := workload.Request{InputTokens: i + 1, OutputTokens: 8, Conversation: i / s.turns, Turn: i % s.turns, Turns: s.turns}
	if r.Turn > 0 {
		r.ThinkTime = s.think
	}
	return r
}

func (turnSource) Len() int { return 0 }

// turnTarget takes took(i) per request, fails the indices in fail, and tracks the peak in
// flight.
type turnTarget struct {
	took           func(i int) time.Duration
	fail           map[int]bool
	inFlight, peak atomic.Int64
}

func (f *turnTarget) Do(ctx context.Context, start time.Time, req workload.Request, rec *record.Record) {
	rec.Sent = record.Since(start, time.Now())
	if req.InputTokens != rec.Index+1 || req.Turn+1 != rec.Turn || req.Conversation != rec.Conversation {
		panic(fmt.Sprintf("record %d (conversation %d turn %d) handed request %d (conversation %d turn %d)",
			rec.Index, rec.Conversation, rec.Turn, req.InputTokens-1, req.Conversation, req.Turn+1))
	}
	n := f.inFlight.Add(1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	defer f.inFlight.Add(-1)
	t := time.NewTimer(f.took(rec.Index))
	select {
	case <-t.C:
		if f.fail[rec.Index] {
			rec.Error = &record.Error{Kind: record.KindHTTPStatus, Status: 500}
		} else {
			rec.Events.Base = rec.Sent
			rec.Events.Append(record.Since(start, time.Now()), 1)
			rec.OutputTokens = 1
		}
	case <-ctx.Done():
		t.Stop()
		rec.Error = &record.Error{Kind: record.KindCanceled, Message: ctx.Err().Error()}
	}
	rec.Done = record.Since(start, time.Now())
}

// varied gives each request its own length, so conversations drift apart.
func varied(i int) time.Duration { return ms(10 + float64(i*37%50)) }

// checkTurns checks what every multi-turn level must satisfy: each index at most once,
// with its conversation and turn; turn k only after turn k-1 succeeded, scheduled at its
// done plus the think time and not sent before; nothing after a failed turn. It returns
// the records by conversation.
func checkTurns(t *testing.T, recs []*record.Record, turns int, think time.Duration) map[int][]*record.Record {
	t.Helper()
	convs := map[int][]*record.Record{}
	seen := map[int]bool{}
	for _, r := range recs {
		if seen[r.Index] {
			t.Errorf("index %d sent twice", r.Index)
		}
		seen[r.Index] = true
		if r.Conversation != r.Index/turns || r.Turn != r.Index%turns+1 {
			t.Errorf("record %d: conversation %d turn %d", r.Index, r.Conversation, r.Turn)
		}
		convs[r.Conversation] = append(convs[r.Conversation], r)
	}
	for c, rs := range convs {
		sort.Slice(rs, func(a, b int) bool { return rs[a].Turn < rs[b].Turn })
		for k, r := range rs {
			if r.Turn != k+1 {
				t.Errorf("conversation %d: turn %d sent without turn %d", c, r.Turn, k+1)
				break
			}
			if r.Sent < r.Scheduled {
				t.Errorf("record %d sent at %v before it was due at %v", r.Index, r.Sent, r.Scheduled)
			}
			if k == 0 {
				continue
			}
			prev := rs[k-1]
			if !prev.OK() {
				t.Errorf("conversation %d: turn %d sent after turn %d failed", c, r.Turn, prev.Turn)
			}
			if r.Scheduled != prev.Done+think {
				t.Errorf("record %d scheduled at %v, want turn %d's done %v + think %v", r.Index, r.Scheduled, prev.Turn, prev.Done, think)
			}
		}
	}
	return convs
}

func TestConversationsClosedLoop(t *testing.T) {
	const turns, think = 4, 200 * time.Millisecond
	tgt := &turnTarget{took: varied}
	recs, reason, _ := run(t, Level{Concurrency: 3, Requests: 24}, turnSource{turns, think}, tgt)
	if reason != EndRequests || len(recs) != 24 {
		t.Fatalf("%d records, ended by %q; want 24, requests", len(recs), reason)
	}
	convs := checkTurns(t, recs, turns, think)
	if len(convs) != 6 {
		t.Fatalf("%d conversations, want 6", len(convs))
	}
	// A worker holds its slot through a conversation, think times included: never more
	// than 3 conversations between their first Scheduled and last Done, and a new one
	// starts exactly when another ends.
	var starts, ends []int64
	endAt := map[time.Duration]bool{}
	for c, rs := range convs {
		if len(rs) != turns {
			t.Errorf("conversation %d: %d turns", c, len(rs))
		}
		for _, r := range rs {
			if r.Sent != r.Scheduled {
				t.Errorf("record %d: sent %v, scheduled %v", r.Index, r.Sent, r.Scheduled)
			}
		}
		starts, ends = append(starts, int64(rs[0].Scheduled)), append(ends, int64(rs[len(rs)-1].Done))
		endAt[rs[len(rs)-1].Done] = true
	}
	if p := metrics.PeakOverlap(starts, ends); p != 3 {
		t.Errorf("%d conversations at once, want 3 (one per worker)", p)
	}
	for c := 3; c < 6; c++ {
		if !endAt[convs[c][0].Scheduled] {
			t.Errorf("conversation %d started at %v, when no other ended", c, convs[c][0].Scheduled)
		}
	}
	if p := tgt.peak.Load(); p > 3 {
		t.Errorf("%d requests in flight, concurrency 3", p)
	}
}

func TestConversationsOpenLoop(t *testing.T) {
	const turns, think = 3, time.Second
	lvl := Level{Rate: 10, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 15, Warmup: 2}
	recs, reason, took := run(t, lvl, turnSource{turns, think}, &turnTarget{took: varied})
	if reason != EndRequests || len(recs) != 17 {
		t.Fatalf("%d records, ended by %q; want 17, requests", len(recs), reason)
	}
	convs := checkTurns(t, recs, turns, think)
	// Conversation starts follow the plan: one every 100 ms (the rate is of conversations).
	for c, rs := range convs {
		if rs[0].Scheduled != ms(100*float64(c)) {
			t.Errorf("conversation %d started at %v, want %v", c, rs[0].Scheduled, ms(100*float64(c)))
		}
	}
	// Warm-up by index: the first two requests; the last conversation is cut at 17.
	for _, r := range recs {
		if r.Warmup != (r.Index < 2) {
			t.Errorf("record %d: warmup %v", r.Index, r.Warmup)
		}
	}
	if n := len(convs[5]); n != 2 {
		t.Errorf("last conversation sent %d turns, want 2 (requests 0..16)", n)
	}
	// The level lasts until the last turn is done, not a think time longer.
	last := slices.MaxFunc(recs, func(a, b *record.Record) int { return int(a.Done - b.Done) })
	if took != last.Done {
		t.Errorf("Run took %v, last done %v", took, last.Done)
	}
}

// TestConversationFailureEndsIt: a failed turn ends its conversation; the measured
// requests it would have sent go to a new conversation, so the level still sends
// Requests measured requests.
func TestConversationFailureEndsIt(t *testing.T) {
	const turns = 4
	for _, lvl := range []Level{
		{Concurrency: 2, Requests: 12},
		{Rate: 20, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 12},
	} {
		tgt := &turnTarget{took: fixed(ms(30)), fail: map[int]bool{5: true}}
		recs, reason, _ := run(t, lvl, turnSource{turns, 50 * time.Millisecond}, tgt)
		checkTurns(t, recs, turns, 50*time.Millisecond)
		var idx []int
		for _, r := range recs {
			idx = append(idx, r.Index)
		}
		want := []int{0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13}
		if !slices.Equal(idx, want) || reason != EndRequests {
			t.Errorf("%+v: sent %v ended by %q, want %v by requests", lvl, idx, reason, want)
		}
	}
}

// TestConversationsDuration: nothing scheduled at or after the level's Duration is sent,
// whichever turn it is; cool-down and warm-up time mark turns by their own due times.
func TestConversationsDuration(t *testing.T) {
	const turns, think = 3, 500 * time.Millisecond
	for _, lvl := range []Level{
		{Rate: 5, Arrival: schedule.Arrival{Kind: schedule.Constant}, Duration: 2 * time.Second, WarmupTime: 300 * time.Millisecond, Cooldown: 400 * time.Millisecond},
		{Concurrency: 2, Duration: 2 * time.Second, WarmupTime: 300 * time.Millisecond, Cooldown: 400 * time.Millisecond},
	} {
		recs, reason, _ := run(t, lvl, turnSource{turns, think}, &turnTarget{took: fixed(ms(100))})
		checkTurns(t, recs, turns, think)
		if reason != EndDuration {
			t.Errorf("%+v: ended by %q", lvl, reason)
		}
		later := 0
		for _, r := range recs {
			if r.Scheduled >= lvl.Duration {
				t.Errorf("record %d scheduled at %v, after the level's end", r.Index, r.Scheduled)
			}
			if want := r.Scheduled < lvl.WarmupTime || r.Scheduled >= lvl.Duration-lvl.Cooldown; r.Warmup != want {
				t.Errorf("record %d scheduled at %v: warmup %v", r.Index, r.Scheduled, r.Warmup)
			}
			if r.Turn > 1 {
				later++
			}
		}
		if later == 0 || len(recs) < 6 {
			t.Errorf("%+v: %d records, %d later turns", lvl, len(recs), later)
		}
	}
}

// TestConversationsWarmupTimeRefunds: turns marked warm-up by time do not count towards
// Requests, even when their conversation started inside the warm-up and went on after it.
func TestConversationsWarmupTimeRefunds(t *testing.T) {
	const turns, think = 3, 100 * time.Millisecond
	for _, lvl := range []Level{
		{Concurrency: 2, Requests: 7, WarmupTime: 250 * time.Millisecond},
		{Rate: 20, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 7, WarmupTime: 250 * time.Millisecond},
	} {
		recs, reason, _ := run(t, lvl, turnSource{turns, think}, &turnTarget{took: fixed(ms(50))})
		checkTurns(t, recs, turns, think)
		measured, warm := 0, 0
		for _, r := range recs {
			if r.Warmup {
				warm++
				if r.Scheduled >= lvl.WarmupTime {
					t.Errorf("record %d at %v marked warm-up", r.Index, r.Scheduled)
				}
			} else {
				measured++
			}
		}
		if measured != 7 || warm == 0 || reason != EndRequests {
			t.Errorf("%+v: %d measured, %d warm-up, ended by %q; want 7 measured", lvl, measured, warm, reason)
		}
	}
}

// TestConversationsMaxConcurrency: the cap counts requests of every turn; a follow-up
// waiting for a slot keeps its due time and shows the wait as lag.
func TestConversationsMaxConcurrency(t *testing.T) {
	const turns, think = 3, 10 * time.Millisecond
	tgt := &turnTarget{took: fixed(ms(200))}
	lvl := Level{Rate: 50, Arrival: schedule.Arrival{Kind: schedule.Constant}, Requests: 30, MaxConcurrency: 4}
	recs, _, _ := run(t, lvl, turnSource{turns, think}, tgt)
	checkTurns(t, recs, turns, think)
	if len(recs) != 30 || tgt.peak.Load() != 4 {
		t.Errorf("%d records, peak in flight %d; want 30, 4", len(recs), tgt.peak.Load())
	}
	lagged := 0
	for _, r := range recs {
		if r.Turn > 1 && r.Sent > r.Scheduled {
			lagged++
		}
	}
	if lagged == 0 {
		t.Error("no follow-up waited for a slot")
	}
}

// TestConversationShards: shards split conversations, not requests; their union is the
// unsharded level, with the same due times in an open loop.
func TestConversationShards(t *testing.T) {
	const turns, think = 3, 150 * time.Millisecond
	for _, base := range []Level{
		{Rate: 20, Requests: 40, Warmup: 4, Seed: 5},
		{Concurrency: 6, Requests: 40, Warmup: 4},
	} {
		whole, _, _ := run(t, base, turnSource{turns, think}, &turnTarget{took: varied})
		want := byIndex(t, whole)
		for _, n := range []int{2, 3} {
			union := map[int]planned{}
			measured := 0
			for s := range n {
				lvl := base
				lvl.Shard, lvl.Shards = s, n
				recs, _, _ := run(t, lvl, turnSource{turns, think}, &turnTarget{took: varied})
				checkTurns(t, recs, turns, think)
				for i, p := range byIndex(t, recs) {
					if (i/turns)%n != s {
						t.Errorf("shard %d of %d sent index %d of conversation %d", s, n, i, i/turns)
					}
					if !p.warm {
						measured++
					}
					union[i] = p
				}
			}
			if measured != base.Requests || len(union) != len(want) {
				t.Errorf("%+v N=%d: %d requests (%d measured), whole level %d", base, n, len(union), measured, len(want))
			}
			for i, p := range want {
				if _, ok := union[i]; !ok {
					t.Errorf("N=%d: index %d not sent by any shard", n, i)
				} else if !base.Closed() && union[i] != p {
					t.Errorf("N=%d: index %d: shards %+v, whole level %+v", n, i, union[i], p)
				}
			}
		}
	}
}

// TestConversationsCancel: every dispatched turn is reported; nothing is sent after the
// cancellation, not even a turn whose think time was running.
func TestConversationsCancel(t *testing.T) {
	const turns, think = 5, 300 * time.Millisecond
	for _, lvl := range []Level{{Concurrency: 3, Requests: 100}, {Rate: 10, Requests: 100}} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			var mu sync.Mutex
			var recs []*record.Record
			tgt := &turnTarget{took: fixed(ms(100))}
			start := time.Now()
			time.AfterFunc(time.Second+ms(250), cancel)
			reason, err := Run(ctx, start, lvl, turnSource{turns, think}, tgt, func(r *record.Record) {
				mu.Lock()
				recs = append(recs, r)
				mu.Unlock()
			})
			if err != nil || reason != EndInterrupted {
				t.Fatalf("reason %q err %v", reason, err)
			}
			canceled := 0
			for _, r := range recs {
				if r.Sent > time.Second+ms(250) {
					t.Errorf("record %d sent at %v, after the cancellation", r.Index, r.Sent)
				}
				if r.Error != nil && r.Error.Kind == record.KindCanceled {
					canceled++
				}
			}
			if len(recs) == 0 || canceled == 0 {
				t.Errorf("%d records, %d canceled", len(recs), canceled)
			}
		})
	}
}

// TestConversationsPlan drives the plan by hand: a conversation never reserves more than
// the level's remaining measured requests, and a quota is never exceeded.
func TestConversationsPlan(t *testing.T) {
	c := NewConversations(Level{Concurrency: 1, Requests: 5}, 3)
	a, ok := c.Start(0)
	if !ok || a.Index != 0 || a.Warmup {
		t.Fatalf("start: %+v %v", a, ok)
	}
	b, ok := c.Start(0) // reserves the other 2 of 5
	if !ok || b.Index != 3 {
		t.Fatalf("second start: %+v %v", b, ok)
	}
	if _, ok := c.Start(0); ok || c.Reason() != "" {
		t.Fatalf("third conversation started with every request reserved (reason %q)", c.Reason())
	}
	b1, ok := c.Next(b, false, time.Second)
	if !ok || b1.Index != 4 || b1.Scheduled != time.Second {
		t.Fatalf("turn after %+v: %+v %v", b, b1, ok)
	}
	if _, ok := c.Next(b1, false, 2*time.Second); ok {
		t.Fatal("conversation 1 sent a third turn beyond its reservation")
	}
	a1, _ := c.Next(a, false, time.Second)
	a2, ok := c.Next(a1, false, 2*time.Second)
	if !ok || a2.Index != 2 || c.Reason() != EndRequests {
		t.Fatalf("last turn: %+v %v, reason %q", a2, ok, c.Reason())
	}
	if _, ok := c.Next(a2, false, 3*time.Second); ok {
		t.Fatal("a turn after the last")
	}
	// One conversation among two shards: the second has nothing to send, and says so.
	c = NewConversations(Level{Concurrency: 2, Requests: 3, Shard: 1, Shards: 2}, 3)
	if _, ok := c.Start(0); ok || c.Reason() != EndRequests {
		t.Errorf("empty shard: started %v, reason %q", ok, c.Reason())
	}
	// Sharded quotas split the measured range by conversation: 7 requests of 3 turns are
	// conversations 0 and 2 (one turn) on shard 0 and conversation 1 on shard 1.
	for s, want := range []int{4, 3} {
		if got := NewConversations(Level{Rate: 1, Requests: 7, Shard: s, Shards: 2}, 3).quota; got != want {
			t.Errorf("shard %d: quota %d, want %d", s, got, want)
		}
	}
}
