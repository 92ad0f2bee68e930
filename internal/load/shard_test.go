package load

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
)

// planned is what must agree between a sharded and an unsharded run.
type planned struct {
	scheduled time.Duration
	warm      bool
}

func byIndex(t *testing.T, recs []*record.Record) map[int]planned {
	t.Helper()
	m := make(map[int]planned, len(recs))
	for _, r := range recs {
		if _, dup := m[r.Index]; dup {
			t.Errorf("index %d sent twice", r.Index)
		}
		m[r.Index] = planned{r.Scheduled, r.Warmup}
	}
	return m
}

func TestOpenLoopShardsPartitionThePlan(t *testing.T) {
	levels := []Level{
		{Rate: 50, Requests: 100, Warmup: 7, Seed: 11},
		{Rate: 30, Arrival: schedule.Arrival{Kind: schedule.Gamma, Burstiness: 0.4}, Duration: 3 * time.Second,
			WarmupTime: 500 * time.Millisecond, Cooldown: 400 * time.Millisecond, Seed: 3},
		{Rate: 40, Requests: 60, WarmupTime: 300 * time.Millisecond, MaxConcurrency: 12},
	}
	for li, base := range levels {
		whole, reason, _ := run(t, base, fakeSource{}, &fakeTarget{took: fixed(ms(20))})
		want := byIndex(t, whole)
		for _, n := range []int{2, 3, 4, 7} {
			t.Run(fmt.Sprintf("level%d/N=%d", li, n), func(t *testing.T) {
				union := map[int]planned{}
				for s := range n {
					lvl := base
					lvl.Shard, lvl.Shards = s, n
					recs, r, _ := run(t, lvl, fakeSource{}, &fakeTarget{took: fixed(ms(20))})
					if r != reason {
						t.Errorf("shard %d ended by %q, the whole level by %q", s, r, reason)
					}
					for i, p := range byIndex(t, recs) {
						if i%n != s {
							t.Errorf("shard %d sent index %d", s, i)
						}
						if _, dup := union[i]; dup {
							t.Errorf("index %d sent by two shards", i)
						}
						union[i] = p
					}
				}
				if len(union) != len(want) {
					t.Errorf("shards sent %d requests, the whole level %d", len(union), len(want))
				}
				for i, p := range want {
					if union[i] != p {
						t.Errorf("index %d: shards %+v, whole level %+v", i, union[i], p)
					}
				}
			})
		}
	}
}

func TestClosedLoopShardsPartition(t *testing.T) {
	base := Level{Concurrency: 7, Requests: 50, Warmup: 3}
	for _, n := range []int{1, 2, 3, 5, 7} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			seen := map[int]bool{}
			workers := 0
			for s := range n {
				lvl := base
				lvl.Shard, lvl.Shards = s, n
				tgt := &fakeTarget{took: func(i int) time.Duration { return ms(float64(10 + i%4*7)) }}
				recs, reason, _ := run(t, lvl, fakeSource{}, tgt)
				if reason != EndRequests {
					t.Errorf("shard %d: reason %q", s, reason)
				}
				if got := int(tgt.peak.Load()); got != lvl.ShardConcurrency() {
					t.Errorf("shard %d: peak in flight %d, want its %d workers", s, got, lvl.ShardConcurrency())
				}
				workers += lvl.ShardConcurrency()
				measured := 0
				for _, r := range recs {
					if r.Index%n != s || seen[r.Index] {
						t.Errorf("shard %d: index %d (duplicate %v)", s, r.Index, seen[r.Index])
					}
					seen[r.Index] = true
					if r.Warmup != (r.Index < 3) {
						t.Errorf("index %d warmup %v", r.Index, r.Warmup)
					}
					if !r.Warmup {
						measured++
					}
				}
				if measured != lvl.ShardRequests() {
					t.Errorf("shard %d measured %d, want %d", s, measured, lvl.ShardRequests())
				}
			}
			if workers != 7 {
				t.Errorf("shards ran %d workers in all, want 7", workers)
			}
			for i := range 53 {
				if !seen[i] {
					t.Errorf("index %d sent by no shard", i)
				}
			}
			if len(seen) != 53 {
				t.Errorf("%d distinct indices, want 53", len(seen))
			}
		})
	}
}

// TestOpenLoopShardsLarge checks the pure plan on a long level, without running it.
func TestOpenLoopShardsLarge(t *testing.T) {
	base := Level{Rate: 1000, Arrival: schedule.Arrival{Kind: schedule.Gamma, Burstiness: 0.5}, Requests: 20000, Warmup: 500, Seed: 99}
	collect := func(l Level) []Planned {
		var out []Planned
		o := NewOpenLoop(l, fakeSource{})
		for p, ok := o.Next(); ok; p, ok = o.Next() {
			out = append(out, p)
		}
		return out
	}
	whole := collect(base)
	if len(whole) != 20500 {
		t.Fatalf("%d planned, want 20500", len(whole))
	}
	for _, n := range []int{2, 5, 16} {
		got := make([]Planned, len(whole))
		count := 0
		for s := range n {
			lvl := base
			lvl.Shard, lvl.Shards = s, n
			for _, p := range collect(lvl) {
				if got[p.Index].Request.InputTokens != 0 {
					t.Fatalf("N=%d: index %d planned twice", n, p.Index)
				}
				got[p.Index] = p
				count++
			}
		}
		if count != len(whole) {
			t.Errorf("N=%d: %d planned in all, want %d", n, count, len(whole))
		}
		for i := range whole {
			g, w := got[i], whole[i]
			if g.Index != w.Index || g.Due != w.Due || g.Warmup != w.Warmup || g.Request.InputTokens != w.Request.InputTokens {
				t.Fatalf("N=%d: index %d = %+v, whole plan %+v", n, i, got[i], whole[i])
			}
		}
	}
}

func TestShardShares(t *testing.T) {
	for _, c := range []struct{ conc, max, req, warm, n int }{{7, 5, 50, 3, 3}, {16, 0, 100, 0, 16}, {5, 9, 11, 2, 4}} {
		var conc, maxc, req, total int
		for s := range c.n {
			l := Level{Concurrency: c.conc, MaxConcurrency: c.max, Requests: c.req, Warmup: c.warm, Shard: s, Shards: c.n}
			conc += l.ShardConcurrency()
			maxc += l.ShardMaxConcurrency()
			req += l.ShardRequests()
			total += l.Total()
		}
		if conc != c.conc || maxc != c.max || req != c.req || total != c.req+c.warm {
			t.Errorf("%+v: shares sum to %d, %d, %d, %d", c, conc, maxc, req, total)
		}
	}
}
