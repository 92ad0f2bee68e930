package load

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/workload"
)

// sent is a request as a clockless driver sent it: when, and the record Dispatch made.
type sent struct {
	at  time.Duration
	rec *record.Record
}

// driveFixed runs lvl through Dispatch on a clock of its own, every request taking svc, and
// returns what was sent, in order, and the in-flight count after each event.
func driveFixed(t *testing.T, lvl Level, svc time.Duration) (out []sent, inflight []int) {
	t.Helper()
	if err := lvl.Validate(); err != nil {
		t.Fatal(err)
	}
	src := fixedSource{in: 10, out: 10}
	first := src.Request(lvl.Index, 0)
	if err := workloadFits(lvl, first); err != nil {
		t.Fatal(err)
	}
	d := NewDispatch(lvl, src, first)
	type fin struct {
		at time.Duration
		s  Send
	}
	var ends []fin
	now := time.Duration(0)
	launch := func(s Send) {
		out = append(out, sent{at: now, rec: s.Record(lvl.Index, s.Scheduled)})
		ends = append(ends, fin{now + svc, s})
	}
	d.Start(launch)
	for !d.Done() {
		next, due := d.NextDue()
		slices.SortStableFunc(ends, func(a, b fin) int { return int(a.at - b.at) })
		if len(ends) > 0 && (!due || ends[0].at <= next) {
			f := ends[0]
			ends = ends[1:]
			now = f.at
			d.Finished(&f.s, Succeeded, svc, now, now, launch)
		} else if due {
			now = next
			d.Due(now, launch)
		} else {
			t.Fatal("nothing due and nothing in flight, but the level is not done")
		}
		inflight = append(inflight, d.InFlight())
	}
	return out, inflight
}

func stagedLevel(t *testing.T, spec string) Level {
	st, err := schedule.ParseStages(spec)
	if err != nil {
		t.Fatal(err)
	}
	l := Level{Stages: st, Duration: st.Total(), Seed: 7}
	if st.Kind == schedule.StageRate {
		l.Rate = st.Max()
	} else {
		l.Concurrency = int(st.Max())
	}
	return l
}

// An open loop with rate stages sends each stage's expected arrivals and stamps each
// record with the stage it was due in.
func TestOpenLoopStages(t *testing.T) {
	lvl := stagedLevel(t, "30s:2,60s:2->16,30s:16")
	lvl.Arrival = schedule.Arrival{Kind: schedule.Constant}
	out, _ := driveFixed(t, lvl, 50*time.Millisecond)
	count := map[int16]int{}
	for _, s := range out {
		if got := int16(lvl.Stages.Index(s.rec.Scheduled)); s.rec.Stage != got || got == 0 {
			t.Fatalf("request %d due %v stamped stage %d, want %d", s.rec.Index, s.rec.Scheduled, s.rec.Stage, got)
		}
		if s.at.Truncate(time.Microsecond) != s.rec.Scheduled {
			t.Fatalf("request %d sent at %v, due %v", s.rec.Index, s.at, s.rec.Scheduled)
		}
		count[s.rec.Stage]++
	}
	for stage, want := range map[int16]int{1: 60, 2: 540, 3: 480} {
		if d := count[stage] - want; d < -1 || d > 1 {
			t.Errorf("stage %d: %d requests, want %d ± 1", stage, count[stage], want)
		}
	}
	// Sharded: the shards' union is the unsharded level, due times and stages included.
	var union []sent
	for s := range 2 {
		l := lvl
		l.Shard, l.Shards = s, 2
		part, _ := driveFixed(t, l, 50*time.Millisecond)
		union = append(union, part...)
	}
	slices.SortFunc(union, func(a, b sent) int { return a.rec.Index - b.rec.Index })
	if len(union) != len(out) {
		t.Fatalf("shards sent %d, unsharded %d", len(union), len(out))
	}
	for i := range out {
		if union[i].rec.Scheduled != out[i].rec.Scheduled || union[i].rec.Stage != out[i].rec.Stage {
			t.Fatalf("request %d: sharded due %v stage %d, unsharded %v stage %d", i, union[i].rec.Scheduled, union[i].rec.Stage, out[i].rec.Scheduled, out[i].rec.Stage)
		}
	}
}

// A closed loop with concurrency stages holds the stages' count in flight: slots open as
// a ramp passes each whole number, each due then, and close as their requests finish.
func TestClosedLoopStages(t *testing.T) {
	lvl := stagedLevel(t, "concurrency:10s:2,10s:2->6,10s:6,10s:1")
	svc := 300 * time.Millisecond
	out, _ := driveFixed(t, lvl, svc)
	// Replay the sends and ends: in flight never passes the stages' count at a send, and
	// each stage's steady part holds its count.
	type ev struct {
		at time.Duration
		d  int
	}
	var evs []ev
	for _, s := range out {
		evs = append(evs, ev{s.at, +1}, ev{s.at + svc, -1})
		if s.rec.Scheduled > s.at {
			t.Fatalf("request %d sent at %v before its due %v", s.rec.Index, s.at, s.rec.Scheduled)
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.d - b.d // ends first at a tie, as a freed slot is refilled
	})
	n := 0
	for _, e := range evs {
		n += e.d
		if c := lvl.Stages.Count(e.at); e.d > 0 && n > c {
			t.Fatalf("%d in flight at %v, stages hold %d", n, e.at, c)
		}
	}
	at := func(t0 time.Duration) int {
		k := 0
		for _, s := range out {
			if s.at <= t0 && t0 < s.at+svc {
				k++
			}
		}
		return k
	}
	for _, c := range []struct {
		t    time.Duration
		want int
	}{{5 * time.Second, 2}, {15*time.Second + 100*time.Millisecond, 4}, {25 * time.Second, 6}, {35 * time.Second, 1}} {
		if got := at(c.t); got != c.want {
			t.Errorf("%d in flight at %v, want %d", got, c.t, c.want)
		}
	}
	// The ramp's third slot opens at 12.5 s (2 + 4·2.5/10 = 3), and its first request is due then.
	var third time.Duration = -1
	for _, s := range out {
		if s.at > 10*time.Second && at(s.at) == 3 && third < 0 {
			third = s.rec.Scheduled
		}
	}
	if third != 12500*time.Millisecond {
		t.Errorf("the third slot's first request due at %v, want 12.5s", third)
	}
	// Sharded in two: together they hold the same count in flight.
	for _, probe := range []time.Duration{5 * time.Second, 25 * time.Second, 35 * time.Second} {
		total := 0
		for s := range 2 {
			l := lvl
			l.Shard, l.Shards = s, 2
			part, _ := driveFixed(t, l, svc)
			for _, x := range part {
				if x.at <= probe && probe < x.at+svc {
					total++
				}
			}
		}
		if want := at(probe); total != want {
			t.Errorf("shards hold %d in flight at %v, unsharded %d", total, probe, want)
		}
	}
}

func TestStagedLevelValidate(t *testing.T) {
	lvl := stagedLevel(t, "30s:2,30s:8")
	lvl.Rate, lvl.Requests, lvl.Duration = 4, 10, time.Minute+time.Second
	err := lvl.Validate()
	for _, want := range []string{"rate 4 is not the rate stages' peak 8", "requests 10 given with stages", "duration 1m1s is not the stages' total 1m0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to say %q", err, want)
		}
	}
	c := stagedLevel(t, "concurrency:30s:2")
	c.Concurrency = 3
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "concurrency 3 is not the concurrency stages' peak 2") {
		t.Errorf("Validate = %v", err)
	}
	if err := workloadFits(stagedLevel(t, "30s:2"), workload.Request{HasArrival: true}); err == nil || !strings.Contains(err.Error(), "--trace-speed") {
		t.Errorf("a trace with stages: %v", err)
	}
	if err := workloadFits(c, workload.Request{Turns: 3}); err == nil || !strings.Contains(err.Error(), "stage such a workload by rate") {
		t.Errorf("multi-turn with concurrency stages: %v", err)
	}
}

// Stages that close every slot before they end still end the level by its duration.
func TestClosedLoopStagesEndingAtZero(t *testing.T) {
	lvl := stagedLevel(t, "concurrency:2s:2,2s:0")
	src := fixedSource{in: 10, out: 10}
	d := NewDispatch(lvl, src, src.Request(0, 0))
	var sent []Send
	d.Start(func(s Send) { sent = append(sent, s) })
	now := time.Duration(0)
	for len(sent) > 0 {
		s := sent[0]
		sent = sent[1:]
		now += 500 * time.Millisecond
		d.Finished(&s, Succeeded, 0, now, now, func(s Send) { sent = append(sent, s) })
	}
	if !d.Done() || d.Reason() != EndDuration {
		t.Errorf("done %v, reason %q; want the level over by its duration", d.Done(), d.Reason())
	}
}
