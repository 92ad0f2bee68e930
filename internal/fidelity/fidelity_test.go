package fidelity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

func TestUnixMicros(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"1712345678.123456", 1712345678123456, false},
		{"1712345678.1", 1712345678100000, false},
		{"1712345678", 1712345678000000, false},
		{"1712345678.1234569", 1712345678123456, false}, // truncated, not rounded
		{"-1.5", -1500000, false},
		{"0.000001", 1, false},
		{"1e9", 0, true},
		{"1.2x", 0, true},
		{"1.2345678x", 0, true},
		{".5", 0, true},
		{"", 0, true},
	} {
		got, err := record.ParseMicros(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("record.ParseMicros(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestReadTruthErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"not json", `{"id":`, "truth line 1"},
		{"missing id", `{"received_unix":1.0,"event_unix":[]}`, `missing "id"`},
		{"missing received", `{"id":"a","event_unix":[]}`, `missing "received_unix"`},
		{"bad event", `{"id":"a","received_unix":1.0,"event_unix":[1.0,"x"]}`, "truth line 1"},
		{"negative exponent event", `{"id":"a","received_unix":1.0,"event_unix":[1.0,2e-3]}`, "event_unix[1]"},
		{"float exponent", `{"id":"a","received_unix":1e9,"event_unix":[]}`, "received_unix"},
		{"token count length", `{"id":"a","received_unix":1.0,"event_unix":[1.0,2.0],"event_tokens":[1]}`, "1 entries for 2 events"},
		{"token count zero", `{"id":"a","received_unix":1.0,"event_unix":[1.0],"event_tokens":[0]}`, "event_tokens[0]"},
		{"step count", `{"id":"a","received_unix":1.0,"event_unix":[1.0,2.0],"step_unix":[1.0]}`, "step_unix has 1 entries for 2 events"},
		{"bad step", `{"id":"a","received_unix":1.0,"event_unix":[1.0],"step_unix":[1e3]}`, "step_unix[0]"},
		{"duplicate", "{\"id\":\"a\",\"received_unix\":1.0,\"event_unix\":[]}\n\n{\"id\":\"a\",\"received_unix\":1.0,\"event_unix\":[]}", `truth line 3: response id "a" appears twice`},
	} {
		_, err := ReadTruth(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// The server's own line format (server.TruthLine via appendLine) reads back exactly.
func TestReadTruth(t *testing.T) {
	in := `{"id":"chatcmpl-1","stream":true,"received_unix":1700000000.010200,"prompt_sha256":"ab12","prompt_tokens":5,"completion_tokens":3,"finish_reason":"length","event_unix":[1700000000.050000,1700000000.070001],"step_unix":[1700000000.049990,1700000000.070000],"event_tokens":[1,2]}
{"id":"cmpl-2","stream":true,"received_unix":1700000000.000000,"prompt_tokens":5,"completion_tokens":0,"event_unix":[],"fault":"disconnect","canceled":true}
`
	tr, err := ReadTruth(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	a := tr["chatcmpl-1"]
	if a == nil || a.Received != 1700000000010200 || a.PromptSHA256 != "ab12" || a.PromptTokens != 5 || len(a.Events) != 2 || a.Events[1] != 1700000000070001 || a.Tokens[1] != 2 ||
		fmt.Sprint(a.Steps) != "[1700000000049990 1700000000070000]" {
		t.Errorf("chatcmpl-1 = %+v", a)
	}
	b := tr["cmpl-2"]
	if b == nil || b.PromptSHA256 != "" || b.Fault != "disconnect" || !b.Canceled || len(b.Events) != 0 || b.Tokens != nil || b.Steps != nil {
		t.Errorf("cmpl-2 = %+v", b)
	}
}

const t0 = 1_700_000_000_000_000 // the run's t = 0, Unix µs

// rec builds a record with events at the given offsets (µs from t = 0) and token counts.
func rec(id string, sent int64, events []int64, tokens []int) record.Record {
	r := record.Record{ResponseID: id, Sent: time.Duration(sent) * time.Microsecond}
	r.Events.Base = r.Sent
	for i, e := range events {
		n := 1
		if tokens != nil {
			n = tokens[i]
		}
		r.Events.Append(time.Duration(e)*time.Microsecond, n)
	}
	return r
}

// truth builds a truth entry from offsets (µs from t = 0).
func truth(id string, received int64, events []int64, tokens []int32) *Truth {
	t := &Truth{ID: id, Received: t0 + received, Tokens: tokens}
	for _, e := range events {
		t.Events = append(t.Events, t0+e)
	}
	return t
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestJoin(t *testing.T) {
	tr := map[string]*Truth{
		// a: sent at 10 ms, received 0.2 ms later; events 50/70/90 ms, read 0.3/0.1/0.9 ms late.
		"a": truth("a", 10_200, []int64{50_000, 70_000, 90_000}, nil),
		// b: a one-token then a two-token event; the client's gap is 30 ms, the server's 29 ms.
		"b": truth("b", 100_000, []int64{120_000, 149_000}, []int32{1, 2}),
		// c: the server sent three events, the client recorded two before failing.
		"c": truth("c", 200_000, []int64{210_000, 220_000, 230_000}, nil),
		// d: no record claims it.
		"d": truth("d", 0, []int64{1}, nil),
	}
	recs := []record.Record{
		rec("a", 10_000, []int64{50_300, 70_100, 90_900}, nil),
		rec("b", 100_000, []int64{120_500, 150_500}, []int{1, 2}),
		rec("c", 200_000, []int64{210_000, 220_002}, nil),
		rec("", 0, nil, nil),         // failed before the stream
		rec("zzz", 0, nil, nil),      // not in the truth
		rec("a", 0, []int64{1}, nil), // duplicate id
	}
	recs[3].Error = &record.Error{Kind: record.KindConnect}
	recs[2].Error = &record.Error{Kind: record.KindDisconnect}
	recs[1].TTFTUpperBound = true // its first event shared a read with its second
	j := NewJoin(tr, time.UnixMicro(t0), Options{})
	for i := range recs {
		j.Add(&recs[i])
	}
	r := j.Report()
	want := Report{Records: 6, Matched: 3, NoResponseID: 1, NoTruth: 1, Duplicate: 1, CountMismatch: 1,
		UnmatchedTruth: 1, Events: 7, Requests: 3, TTFTUpperBound: 1}
	got := r
	got.EventTime, got.TTFT, got.ITL, got.SendDelay, got.FirstEvent = Stats{}, Stats{}, Stats{}, Stats{}, Stats{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counts = %+v\nwant     %+v", got, want)
	}
	// Event errors (ms): a 0.3 0.1 0.9; b 0.5 1.5; c 0 0.002. Sorted: 0 .002 .1 .3 .5 .9 1.5.
	ev := r.EventTime
	if ev.Count != 7 || !near(ev.Min, 0) || !near(ev.Max, 1.5) || !near(ev.P50, 0.3) ||
		!near(ev.Mean, (0.3+0.1+0.9+0.5+1.5+0+0.002)/7) || !near(ev.P90, 0.9+0.4*0.6) {
		t.Errorf("event time = %+v", ev)
	}
	// TTFT errors: a (50.3-10)-(50-10.2)=0.5; b 20.5-20=0.5; c 10-10=0.
	if tt := r.TTFT; tt.Count != 3 || !near(tt.Min, 0) || !near(tt.Max, 0.5) || !near(tt.P50, 0.5) {
		t.Errorf("ttft = %+v", tt)
	}
	// First-event errors of the exact TTFTs: a 0.3, c 0 (b is an upper bound).
	if fe := r.FirstEvent; fe.Count != 2 || !near(fe.Min, 0) || !near(fe.Max, 0.3) {
		t.Errorf("first event = %+v", fe)
	}
	// ITL samples: a 19.8-20=-0.2, 20.8-20=0.8; b two samples of 15-14.5=0.5; c 10.002-10=0.002.
	if it := r.ITL; it.Count != 5 || !near(it.Min, -0.2) || !near(it.Max, 0.8) || !near(it.P50, 0.5) ||
		!near(it.Mean, (-0.2+0.8+0.5+0.5+0.002)/5) {
		t.Errorf("itl = %+v", it)
	}
	// Send delays: a 0.2, b 0, c 0.
	if sd := r.SendDelay; sd.Count != 3 || !near(sd.Max, 0.2) || !near(sd.P50, 0) {
		t.Errorf("send delay = %+v", sd)
	}
	if r.ClockWarning != "" {
		t.Errorf("unexpected clock warning %q", r.ClockWarning)
	}

	var text, js bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"6 read, 3 joined", "7 token events paired", "1 without a response id, 1 not in the truth, 1 duplicate",
		"1 requests differ", "1 truth lines", "event time                  7    0.472    0.000    0.300    1.140"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text output lacks %q:\n%s", s, text.String())
		}
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !reflect.DeepEqual(back, r) {
		t.Errorf("JSON round trip: %v\n%+v\n%+v", err, back, r)
	}
}

// The server's pacing comes from the truth alone: each event's send minus its step's end,
// and the server's ITL samples minus the steps' (a truth without step_unix adds nothing).
func TestJoinServerPacing(t *testing.T) {
	a := truth("a", 0, []int64{10_050, 20_900, 31_000}, []int32{1, 2, 1})
	a.Steps = []int64{t0 + 10_000, t0 + 20_000, t0 + 30_000}
	tr := map[string]*Truth{"a": a, "b": truth("b", 0, []int64{5_000, 6_000}, nil)}
	ra := rec("a", 0, []int64{10_100, 21_000, 31_000}, []int{1, 2, 1})
	rb := rec("b", 0, []int64{5_000, 6_000}, nil)
	j := NewJoin(tr, time.UnixMicro(t0), Options{})
	j.Add(&ra)
	j.Add(&rb)
	r := j.Report()
	// Sent late by 0.05, 0.9 and 1 ms.
	if se := r.ServerEvent; se.Count != 3 || !near(se.Min, 0.05) || !near(se.P50, 0.9) || !near(se.Max, 1) {
		t.Errorf("server event = %+v", se)
	}
	// Server gaps 10.85 ms over 2 tokens, 10.1 over 1; the steps' 10 over 2, 10 over 1:
	// two samples of 0.425 and one of 0.1.
	if si := r.ServerITL; si.Count != 3 || !near(si.Min, 0.1) || !near(si.Max, 0.425) || !near(si.P50, 0.425) {
		t.Errorf("server ITL = %+v", si)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"server - engine step (ms)", "event time                  3    0.650    0.050    0.900",
		"ITL (per token)             3    0.317    0.100    0.425"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
	j = NewJoin(map[string]*Truth{"b": tr["b"]}, time.UnixMicro(t0), Options{})
	j.Add(&rb)
	text.Reset()
	if err := WriteText(&text, j.Report()); err != nil || strings.Contains(text.String(), "engine step") {
		t.Errorf("without step_unix: %v\n%s", err, text.String())
	}
}

// A started_at 5 ms too early puts every client event before the server's write: flagged.
func TestJoinClockWarning(t *testing.T) {
	tr := map[string]*Truth{"a": truth("a", 0, []int64{10_000, 20_000}, nil)}
	r0 := rec("a", 0, []int64{10_100, 20_100}, nil)
	j := NewJoin(tr, time.UnixMicro(t0-5000), Options{})
	j.Add(&r0)
	r := j.Report()
	if !near(r.EventTime.Max, -4.9) || r.Early != 2 || !strings.Contains(r.ClockWarning, "4.900 ms before") {
		t.Errorf("event time %+v, warning %q", r.EventTime, r.ClockWarning)
	}
	// Sub-µs truncation is not a disagreement.
	j = NewJoin(tr, time.UnixMicro(t0).Add(-101500*time.Nanosecond), Options{})
	j.Add(&r0)
	if r := j.Report(); r.ClockWarning != "" || r.Early != 0 {
		t.Errorf("1.5 µs early: warning %q, %d early", r.ClockWarning, r.Early)
	}
	// A minority of early events is the server stamping after its write, not a clock.
	tr["b"] = truth("b", 0, []int64{10_000, 20_000, 30_000}, nil)
	r1 := rec("b", 0, []int64{9_700, 20_100, 30_300}, nil)
	j = NewJoin(tr, time.UnixMicro(t0), Options{})
	j.Add(&r0)
	j.Add(&r1)
	if r := j.Report(); r.ClockWarning != "" || r.Early != 1 || !near(r.EventTime.Min, -0.3) {
		t.Errorf("one early event: warning %q, %d early, min %v", r.ClockWarning, r.Early, r.EventTime.Min)
	}
}

// Warm-up records are left out of the errors (and out of "truth only") unless asked for.
func TestJoinWarmup(t *testing.T) {
	tr := map[string]*Truth{
		"w": truth("w", 0, []int64{10_000}, nil),
		"m": truth("m", 0, []int64{20_000}, nil),
	}
	w := rec("w", 0, []int64{19_000}, nil) // 9 ms late: the start-up storm
	w.Warmup = true
	m := rec("m", 0, []int64{20_100}, nil)
	for _, include := range []bool{false, true} {
		j := NewJoin(tr, time.UnixMicro(t0), Options{IncludeWarmup: include})
		j.Add(&w)
		j.Add(&m)
		r := j.Report()
		wantWarm, wantEvents, wantMax := 1, 1, 0.1
		if include {
			wantWarm, wantEvents, wantMax = 0, 2, 9
		}
		if r.Warmup != wantWarm || r.Events != wantEvents || !near(r.EventTime.Max, wantMax) || r.UnmatchedTruth != 0 || r.Records != 2 {
			t.Errorf("include %v: warm-up %d, events %d, max %v, truth only %d, records %d", include, r.Warmup, r.Events, r.EventTime.Max, r.UnmatchedTruth, r.Records)
		}
		var text bytes.Buffer
		if err := WriteText(&text, r); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(text.String(), "1 warm-up and cool-down records left out"); got == include {
			t.Errorf("include %v: text mentions the warm-up: %v\n%s", include, got, text.String())
		}
	}
}

// BySecond groups event errors by the second of the run in which the client read them.
func TestJoinBySecond(t *testing.T) {
	tr := map[string]*Truth{"a": truth("a", 0, []int64{100_000, 900_000, 1_500_000, 3_200_000}, nil)}
	a := rec("a", 0, []int64{100_500, 900_100, 1_503_000, 3_200_200}, nil)
	j := NewJoin(tr, time.UnixMicro(t0), Options{BySecond: true})
	j.Add(&a)
	r := j.Report()
	want := []struct {
		sec, n int
		max    float64
	}{{0, 2, 0.5}, {1, 1, 3}, {3, 1, 0.2}} // second 2 had no event: no row
	if len(r.PerSecond) != len(want) {
		t.Fatalf("per second = %+v", r.PerSecond)
	}
	for i, w := range want {
		if g := r.PerSecond[i]; g.Second != w.sec || g.Count != w.n || !near(g.Max, w.max) {
			t.Errorf("row %d = %+v, want second %d, %d events, max %v", i, g, w.sec, w.n, w.max)
		}
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "1                1     3.000     3.000     3.000     3.000") {
		t.Errorf("text lacks second 1's row:\n%s", text.String())
	}
	j = NewJoin(tr, time.UnixMicro(t0), Options{})
	j.Add(&a)
	if r := j.Report(); r.PerSecond != nil || r.Events != 4 {
		t.Errorf("without BySecond: %d events, per second %+v", r.Events, r.PerSecond)
	}
}

func TestPercentile(t *testing.T) {
	v := []int64{4e6, 1e6, 3e6, 2e6} // ms 1..4
	s := statsOf(v)
	// numpy.percentile([1,2,3,4], [1,50,90,99]) = 1.03, 2.5, 3.7, 3.97
	if !near(s.P1, 1.03) || !near(s.P50, 2.5) || !near(s.P90, 3.7) || !near(s.P99, 3.97) || !near(s.Mean, 2.5) {
		t.Errorf("stats = %+v", s)
	}
	if one := statsOf([]int64{7e6}); one.P50 != 7 || one.P999 != 7 {
		t.Errorf("one sample: %+v", one)
	}
	if (statsOf(nil) != Stats{}) {
		t.Error("empty stats not zero")
	}
}
