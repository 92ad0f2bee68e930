package metrics

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// serverCase: every figure the tests expect is worked out by hand here.
func serverCase() []record.Record {
	// A: sent 1000, tokens at 1050 and every 10 ms to 1090, N = 5.
	//    Client TTFT 50, TPOT 40/4 = 10. Server prefill 20, decode 36 over 5 tokens:
	//    TTFT 20 (gap 30), TPOT 36/4 = 9 (gap 1), own per-token 36/5 = 7.2.
	a := rec(1000*ms, 1000*ms, 1095*ms, 5, ev{1050 * ms, 1}, ev{1060 * ms, 1}, ev{1070 * ms, 1}, ev{1080 * ms, 1}, ev{1090 * ms, 1})
	//    Server total 90 against the client's done − sent 95: gap 5.
	a.Server = &record.ServerTimings{PromptTokens: 32, Prefill: 20 * ms, OutputTokens: 5, Decode: 36 * ms, Total: 90 * ms}
	// B: sent 2000, tokens at 2070, 2085, 2100, N = 3. Client TTFT 70, TPOT 30/2 = 15.
	//    Server queue 10 + prefill 20 = 30 (gap 40); decode 28 over 3: TPOT 14 (gap 1), own 28/3.
	b := rec(2000*ms, 2000*ms, 2100*ms, 3, ev{2070 * ms, 1}, ev{2085 * ms, 1}, ev{2100 * ms, 1})
	//    Total 95 against 100: gap 5.
	b.Server = &record.ServerTimings{Queue: 10 * ms, Prefill: 20 * ms, OutputTokens: 3, Decode: 28 * ms, Total: 95 * ms}
	// C: no prefill reported (left out of TTFT). Sent 3000, tokens at 3040, 3060, N = 2:
	//    client TPOT 20. The server timed 3 tokens (differs from N) in 10 ms: TPOT 10/2 = 5
	//    (gap 15), own 10/3.
	c := rec(3000*ms, 3000*ms, 3061*ms, 2, ev{3040 * ms, 1}, ev{3060 * ms, 1})
	c.Server = &record.ServerTimings{OutputTokens: 3, Decode: 10 * ms}
	// G: one token, sent 4000, at 4025: client TTFT 25, server prefill 5 (gap 20); no TPOT.
	g := rec(4000*ms, 4000*ms, 4026*ms, 1, ev{4025 * ms, 1})
	//    Total 20 against 26: gap 6.
	g.Server = &record.ServerTimings{Prefill: 5 * ms, OutputTokens: 1, Total: 20 * ms}
	// Excluded: a failure, a warm-up and a request without server timings.
	f := rec(5000*ms, 5000*ms, 5100*ms, 3, ev{5050 * ms, 3})
	f.Error = &record.Error{Kind: record.KindDisconnect}
	f.Server = &record.ServerTimings{Prefill: 1 * ms, OutputTokens: 3, Decode: 1 * ms}
	w := rec(0, 0, 100*ms, 3, ev{50 * ms, 1}, ev{60 * ms, 1}, ev{70 * ms, 1})
	w.Warmup = true
	w.Server = &record.ServerTimings{Prefill: 1 * ms, OutputTokens: 3, Decode: 1 * ms}
	n := rec(6000*ms, 6000*ms, 6100*ms, 2, ev{6010 * ms, 1}, ev{6090 * ms, 1})
	return []record.Record{a, b, c, g, f, w, n}
}

func TestServerTimingsHandComputed(t *testing.T) {
	st := compareServerTimings(serverCase())
	if st == nil {
		t.Fatal("no server timings")
	}
	if st.Requests != 4 || st.OutputTokensDiffer != 1 {
		t.Errorf("requests %d, output tokens differ %d; want 4, 1", st.Requests, st.OutputTokensDiffer)
	}
	tt := st.TTFT
	if tt == nil || tt.Requests != 3 {
		t.Fatalf("TTFT %+v, want 3 requests (A, B, G)", tt)
	}
	near(t, "TTFT client mean", tt.ClientMean, (50+70+25)/3.0)
	near(t, "TTFT client p50", tt.ClientP50, 50)
	near(t, "TTFT server mean", tt.ServerMean, (20+30+5)/3.0)
	near(t, "TTFT server p50", tt.ServerP50, 20)
	near(t, "TTFT gap mean", tt.GapMean, 30)
	near(t, "TTFT gap p50", tt.GapP50, 30)
	near(t, "TTFT gap p99", tt.GapP99, 30+0.98*10) // gaps 20 30 40, h = 0.99*2
	near(t, "TTFT gap share", *tt.GapShare, 30/((50+70+25)/3.0))

	tp := st.TPOT
	if tp == nil || tp.Requests != 3 {
		t.Fatalf("TPOT %+v, want 3 requests (A, B, C)", tp)
	}
	near(t, "TPOT client mean", tp.ClientMean, 15)
	near(t, "TPOT client p50", tp.ClientP50, 15)
	near(t, "TPOT server mean", tp.ServerMean, (9+14+5)/3.0)
	near(t, "TPOT server p50", tp.ServerP50, 9)
	near(t, "TPOT gap mean", tp.GapMean, 17/3.0)
	near(t, "TPOT gap p50", tp.GapP50, 1)
	near(t, "TPOT gap p99", tp.GapP99, 1+0.98*14) // gaps 1 1 15
	near(t, "TPOT gap share", *tp.GapShare, (17/3.0)/15)
	near(t, "server per-token mean", *st.ServerPerTokenMean, (7.2+28/3.0+10/3.0)/3)

	to := st.Total
	if to == nil || to.Requests != 3 {
		t.Fatalf("total %+v, want 3 requests (A, B, G)", to)
	}
	near(t, "total client mean", to.ClientMean, (95+100+26)/3.0)
	near(t, "total server mean", to.ServerMean, (90+95+20)/3.0)
	near(t, "total server p50", to.ServerP50, 90)
	near(t, "total gap mean", to.GapMean, 16/3.0)
	near(t, "total gap p50", to.GapP50, 5)

	// Three samples bound no percentile's 95% interval.
	want := []string{"client_p50_ms", "server_p50_ms", "gap_p50_ms", "gap_p99_ms"}
	if !slices.Equal(tt.Unreliable, want) || !slices.Equal(tp.Unreliable, want) {
		t.Errorf("unreliable %v / %v, want %v", tt.Unreliable, tp.Unreliable, want)
	}
}

func TestServerTimingsReliableWithManySamples(t *testing.T) {
	var recs []record.Record
	for i := range 400 {
		s := time.Duration(i) * time.Second
		r := rec(s, s, s+60*ms, 2, ev{s + 40*ms, 1}, ev{s + 50*ms, 1})
		r.Server = &record.ServerTimings{Prefill: time.Duration(10+i%5) * ms, OutputTokens: 2, Decode: 9 * ms}
		recs = append(recs, r)
	}
	st := compareServerTimings(recs)
	if len(st.TTFT.Unreliable) != 0 || len(st.TPOT.Unreliable) != 0 {
		t.Errorf("400 samples: unreliable %v / %v", st.TTFT.Unreliable, st.TPOT.Unreliable)
	}
	near(t, "TTFT gap p50", st.TTFT.GapP50, 28) // prefill 10..14, median 12
	near(t, "TPOT gap mean", st.TPOT.GapMean, 1)
}

func TestServerTimingsAbsent(t *testing.T) {
	recs := serverCase()
	for i := range recs {
		if !recs[i].Warmup && recs[i].Error == nil {
			recs[i].Server = nil
		}
	}
	// Only the failed and the warm-up request carry timings: nothing to compare.
	if st := compareServerTimings(recs); st != nil {
		t.Errorf("got %+v, want nil", st)
	}
	// Decode-only timings: TTFT and total are null, TPOT is not.
	recs = serverCase()[2:3]
	st := compareServerTimings(recs)
	if st == nil || st.TTFT != nil || st.TPOT == nil || st.Total != nil {
		t.Errorf("decode-only: %+v", st)
	}
	// A zero client TPOT mean cannot carry a share.
	r := rec(0, 0, 10*ms, 2, ev{5 * ms, 2})
	r.Server = &record.ServerTimings{OutputTokens: 2, Decode: 1 * ms}
	st = compareServerTimings([]record.Record{r})
	if st.TPOT.GapShare != nil {
		t.Errorf("share %v with a zero client TPOT", *st.TPOT.GapShare)
	}
	near(t, "negative gap", st.TPOT.GapMean, -1)
}

func TestAddDiffExact(t *testing.T) {
	d := NewDist()
	addDiff(d, 1, 3, 1, 6)    // 1/3 - 1/6 = 1/6 µs
	addDiff(d, 10, 3, 40, 12) // 10/3 - 10/3 = 0
	addDiff(d, 1, 7, 2, 7)    // -1/7
	if got := d.Values(); !slices.Equal(got, []float64{-1.0 / 7000, 0, 1.0 / 6000}) {
		t.Errorf("values %v", got)
	}
	// Where the exact fraction overflows, whole microseconds remain.
	d = NewDist()
	big := int64(math.MaxInt64 / 2)
	addDiff(d, big, 3, 1, big)
	if got, want := d.Max(), math.Round(float64(big)/3)/1000; math.Abs(got-want) > 1e-3*want {
		t.Errorf("overflow fallback %v, want %v", got, want)
	}
}

func TestFirstContentStats(t *testing.T) {
	// R: reasoning first, first token at 30, content at 80 -> 80. P: content first at 40.
	r := rec(0, 0, 100*ms, 4, ev{30 * ms, 1}, ev{80 * ms, 3})
	r.FirstContent = 80 * ms
	p := rec(100*ms, 100*ms, 200*ms, 2, ev{140 * ms, 2})
	bad := rec(200*ms, 200*ms, 300*ms, 2, ev{210 * ms, 2})
	bad.FirstContent, bad.Error = 250*ms, &record.Error{Kind: record.KindTimeout}
	s := firstContentStats([]record.Record{r, p, bad}, []float64{50})
	if s == nil || s.Count != 2 {
		t.Fatalf("stats %+v, want 2 samples", s)
	}
	near(t, "first content mean", s.Mean, 60)
	near(t, "first content min", s.Min, 40)
	near(t, "first content p50", s.Percentiles[0].Value, 60)
	if s := firstContentStats([]record.Record{p, bad}, nil); s != nil {
		t.Errorf("no completed request reasoned first: %+v", s)
	}
}

func TestAggregateServerFields(t *testing.T) {
	lv := Aggregate(serverCase(), Config{Percentiles: []float64{50, 99}})
	if lv.ServerTimings == nil || lv.ServerTimings.TTFT == nil || lv.ServerTimings.TTFT.Requests != 3 {
		t.Errorf("server timings %+v", lv.ServerTimings)
	}
	js, err := json.Marshal(lv)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"server_timings":{"requests":4,`, `"gap_p99_ms":`, `"first_content_ms":null`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("summary lacks %s", want)
		}
	}
	js, _ = json.Marshal(Aggregate(handCase(), Config{}))
	if !strings.Contains(string(js), `"server_timings":null`) {
		t.Error("no server timings: want server_timings null")
	}
}

// Read lag: over measured, sent records with kernel stamps, failures included.
func TestReadLagStats(t *testing.T) {
	mk := func(lag time.Duration, kernel bool) record.Record {
		r := rec(0, ms, 100*ms, 1, ev{50 * ms, 1})
		r.KernelStamps, r.ReadLag = kernel, lag
		return r
	}
	a, b, failed := mk(2*ms, true), mk(4*ms, true), mk(9*ms, true)
	failed.Error = &record.Error{Kind: record.KindDisconnect}
	warm := mk(100*ms, true)
	warm.Warmup = true
	never := mk(50*ms, true)
	never.Sent, never.Error = 0, &record.Error{Kind: record.KindConnect}
	readStamped := mk(0, false)
	lv := Aggregate([]record.Record{a, b, failed, warm, never, readStamped}, Config{Percentiles: []float64{50}})
	s := lv.ReadLag
	if s == nil || s.Count != 3 {
		t.Fatalf("read lag %+v, want 3 samples", s)
	}
	near(t, "read lag max", s.Max, 9)
	near(t, "read lag p50", s.Percentiles[0].Value, 4)
	if lv := Aggregate([]record.Record{readStamped}, Config{}); lv.ReadLag != nil {
		t.Errorf("read stamps only: %+v", lv.ReadLag)
	}
}
