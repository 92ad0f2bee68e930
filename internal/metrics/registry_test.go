package metrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

func TestRegistryWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for i, m := range Registry {
		if m.Key == "" || m.JSON != m.Key+"_ms" || m.Title == "" || m.Short == "" || m.Description == "" || m.Samples == nil || m.index != i {
			t.Errorf("registry entry %d incomplete: %+v", i, m)
		}
		if seen[m.JSON] {
			t.Errorf("%s twice", m.JSON)
		}
		seen[m.JSON] = true
		if got, ok := Lookup(m.JSON); !ok || got != m {
			t.Errorf("Lookup(%q) = %v, %v", m.JSON, got, ok)
		}
	}
	// The JSON of levels[i].metrics keeps its historical order.
	want := []string{"ttft", "tpot", "itl", "chunk_gap", "e2el", "schedule_lag", "ttft_from_schedule", "e2el_from_schedule", "dns", "connect", "tls", "write", "headers", "first_tool_call"}
	if !slices.Equal(MetricNames, want) {
		t.Errorf("MetricNames %v, want %v", MetricNames, want)
	}
}

// The time to the first tool-call token is measured over the requests that called a tool,
// from their first tool-call event, and is absent from a level where none did; the level
// counts those requests and their tool-call tokens.
func TestFirstToolCall(t *testing.T) {
	text := rec(0, 10*ms, 95*ms, 2, ev{60 * ms, 1}, ev{80 * ms, 1})
	lv := Aggregate([]record.Record{text}, Config{})
	if _, ok := lv.Metrics.Get(KeyFirstToolCall); ok || lv.ToolCalls != 0 {
		t.Errorf("first_tool_call present without a tool call: %+v", lv.Metrics)
	}
	b, _ := json.Marshal(lv)
	if strings.Contains(string(b), "tool_call") {
		t.Errorf("level JSON mentions tool calls without any: %s", b)
	}
	// Text first (TTFT 50 ms), the call's first token at 80 ms: 70 ms after sent.
	mixed := rec(0, 10*ms, 95*ms, 3, ev{60 * ms, 1}, ev{80 * ms, 2})
	mixed.Index = 1
	mixed.ToolCallTokens, mixed.FirstToolCall = 2, 80*ms
	only := rec(0, 10*ms, 95*ms, 2, ev{40 * ms, 1}, ev{50 * ms, 1})
	only.Index = 2
	only.ToolCallTokens, only.FirstToolCall = 2, 40*ms
	lv = Aggregate([]record.Record{text, mixed, only}, Config{})
	st, ok := lv.Metrics.Get(KeyFirstToolCall)
	if !ok || st.Count != 2 || st.Min != 30 || st.Max != 70 {
		t.Errorf("first_tool_call %+v, want 2 samples, 30 and 70 ms", st)
	}
	if lv.ToolCalls != 2 || lv.TotalToolCallTokens != 4 {
		t.Errorf("tool calls %d carrying %d tokens, want 2 and 4", lv.ToolCalls, lv.TotalToolCallTokens)
	}
}

// phased is a completed request with the given phases measured.
func phased(idx int, has record.PhaseSet) record.Record {
	r := rec(0, 10*ms, 95*ms, 2, ev{60 * ms, 1}, ev{80 * ms, 1})
	r.Index = idx
	r.Phases = &record.Phases{DNS: 2 * ms, Connect: 3 * ms, TLS: 4 * ms, Write: 100 * time.Microsecond, Headers: 45 * ms, Has: has}
	return r
}

// Phases are metrics present only when measured: absent from the JSON when no record
// measured them, with their own count when some did.
func TestPhasesPresentOnlyWhenMeasured(t *testing.T) {
	plain := rec(0, 10*ms, 95*ms, 2, ev{60 * ms, 1}, ev{80 * ms, 1})
	lv := Aggregate([]record.Record{plain}, Config{})
	b, err := json.Marshal(lv.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"dns_ms", "connect_ms", "tls_ms", "write_ms", "headers_ms"} {
		if strings.Contains(string(b), k) {
			t.Errorf("%s present without any measurement: %s", k, b)
		}
	}
	if !strings.HasPrefix(string(b), `{"ttft_ms":{"count":1,`) || !strings.Contains(string(b), `"e2el_from_schedule_ms":{"count":1`) {
		t.Errorf("metrics JSON %s", b)
	}

	// A reused connection measures write and headers only; a new one every phase.
	reused := phased(1, record.PhaseWrite|record.PhaseHeaders)
	fresh := phased(2, record.PhaseDNS|record.PhaseConnect|record.PhaseTLS|record.PhaseWrite|record.PhaseHeaders)
	failed := phased(3, record.PhaseDNS|record.PhaseConnect)
	failed.Error = &record.Error{Kind: record.KindHTTPStatus, Status: 503}
	lv = Aggregate([]record.Record{plain, reused, fresh, failed}, Config{})
	for _, c := range []struct {
		key   string
		count int
		mean  float64
	}{{KeyDNS, 1, 2}, {KeyConnect, 1, 3}, {KeyTLS, 1, 4}, {KeyWrite, 2, 0.1}, {KeyHeaders, 2, 45}} {
		st, ok := lv.Metrics.Get(c.key)
		if !ok || st.Count != c.count {
			t.Errorf("%s: present %v, %+v; want %d samples (completed requests only)", c.key, ok, st, c.count)
			continue
		}
		near(t, c.key+" mean", st.Mean, c.mean)
	}
	b, _ = json.Marshal(lv.Metrics)
	var order []string
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		order = append(order, k.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	if want := []string{"ttft_ms", "tpot_ms", "itl_ms", "chunk_gap_ms", "e2el_ms", "schedule_lag_ms", "ttft_from_schedule_ms", "e2el_from_schedule_ms", "dns_ms", "connect_ms", "tls_ms", "write_ms", "headers_ms"}; !slices.Equal(order, want) {
		t.Errorf("key order %v", order)
	}
	var back Metrics
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if b2, _ := json.Marshal(back); string(b2) != string(b) {
		t.Errorf("round trip:\n%s\n%s", b2, b)
	}
}

func TestRetriedAndTTFTUpperBoundCounts(t *testing.T) {
	a := rec(0, 10*ms, 95*ms, 1, ev{60 * ms, 1})
	a.Retried = true
	b := rec(0, 10*ms, 95*ms, 1, ev{60 * ms, 1})
	b.TTFTUpperBound, b.Retried = true, true
	c := rec(0, 10*ms, 50*ms, 0)
	c.Retried, c.Error = true, &record.Error{Kind: record.KindDisconnect} // failed: still counted
	w := rec(0, 0, 5*ms, 1, ev{3 * ms, 1})
	w.Retried, w.TTFTUpperBound, w.Warmup = true, true, true // warm-up: not measured
	lv := Aggregate([]record.Record{a, b, c, w}, Config{})
	if lv.Retried != 3 || lv.TTFTUpperBound != 1 {
		t.Errorf("retried %d ttft_upper_bound %d, want 3 and 1", lv.Retried, lv.TTFTUpperBound)
	}
	js, _ := json.Marshal(Aggregate(nil, Config{}))
	if !strings.Contains(string(js), `"retried":0,"ttft_upper_bound":0`) {
		t.Errorf("the counts are not always present: %s", js)
	}
}

// streamRecords is a level whose records arrive out of order: every figure must come out
// as from the records in order, the peak output throughput included.
func streamRecords() []record.Record {
	rng := rand.New(rand.NewPCG(3, 4))
	var out []record.Record
	for i := range 400 {
		sent := time.Duration(i)*3*ms + time.Duration(rng.IntN(997))*time.Microsecond
		r := rec(sent-time.Duration(rng.IntN(5))*ms, sent, 0, 0)
		r.Index = i
		t := sent + time.Duration(20+rng.IntN(300))*ms
		n := 1 + rng.IntN(40)
		for k := 0; k < n; {
			c := 1 + rng.IntN(3)
			r.Events.Append(t, c)
			k += c
			t += time.Duration(1+rng.IntN(30000)) * time.Microsecond
		}
		r.OutputTokens, r.Done = r.Events.Tokens(), t
		r.Turn = 1 + i%3
		if i%17 == 0 {
			r.Error = &record.Error{Kind: record.KindTimeout}
		}
		if i%5 == 0 {
			r.KernelStamps, r.ReadLag = true, time.Duration(rng.IntN(900))*time.Microsecond
		}
		if i%7 == 0 {
			r.Phases = &record.Phases{Connect: time.Duration(rng.IntN(5000)) * time.Microsecond, Has: record.PhaseConnect}
		}
		out = append(out, r)
	}
	return out
}

func TestAggregatorOrderIndependent(t *testing.T) {
	recs := streamRecords()
	slos, _ := ParseSLOs("ttft<=200ms,chunk_gap<=25ms,itl:p99<=20ms")
	cfg := Config{Percentiles: []float64{50, 99}, SLOs: slos}
	want, _ := json.Marshal(Aggregate(recs, cfg))
	// Done order (how run and report feed it), and the reverse: the first request sent
	// arrives last, so the peak output throughput's origin is known only at the end.
	for _, order := range []func(a, b record.Record) int{
		func(a, b record.Record) int { return int(a.Done - b.Done) },
		func(a, b record.Record) int { return int(b.Sent - a.Sent) },
	} {
		shuffled := slices.Clone(recs)
		slices.SortStableFunc(shuffled, order)
		if got, _ := json.Marshal(Aggregate(shuffled, cfg)); string(got) != string(want) {
			t.Errorf("figures depend on the order of the records:\n%s\n%s", got, want)
		}
	}
}

// A chunk-gap bound judges each request by its largest raw gap, like ITL's.
func TestSLOBoundOnAnyRegistryMetric(t *testing.T) {
	ok := rec(0, 0, 100*ms, 3, ev{10 * ms, 1}, ev{20 * ms, 1}, ev{30 * ms, 1})
	slow := rec(0, 0, 100*ms, 3, ev{10 * ms, 1}, ev{20 * ms, 1}, ev{60 * ms, 1})
	slos, err := ParseSLOs("chunk_gap<=10ms,e2el_from_schedule<=1s,connect:p50<=5ms")
	if err != nil {
		t.Fatal(err)
	}
	lv := Aggregate([]record.Record{ok, slow}, Config{SLOs: slos})
	if *lv.GoodRequests != 1 {
		t.Errorf("good requests %d, want 1", *lv.GoodRequests)
	}
	if lv.SLO == nil || len(lv.SLO.Terms) != 1 || lv.SLO.Terms[0].Value != nil {
		t.Errorf("a verdict on an unmeasured phase: %+v", lv.SLO)
	}
	if _, err := ParseSLOs("schedule_lag<=1ms"); err == nil || !strings.Contains(err.Error(), "chunk_gap") {
		t.Errorf("schedule lag is no per-request bound; err %v", err)
	}
}

// AddSample's weighted samples are the same as that many single ones.
func TestAddSampleWeighted(t *testing.T) {
	bulk, one := NewAggregator(Config{}), NewAggregator(Config{})
	bulk.AddSample(KeyITL, 7000, 3, 5)
	for range 5 {
		one.AddSample("itl_ms", 7000, 3, 1)
	}
	a, b := bulk.Level(), one.Level()
	if ja, _ := json.Marshal(a.Metrics); string(ja) != string(must(json.Marshal(b.Metrics))) || a.Metrics.Stat(KeyITL).Count != 5 {
		t.Errorf("weighted %s\nsingle %s", ja, must(json.Marshal(b.Metrics)))
	}
}

func must(b []byte, _ error) []byte { return b }

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// Figures over a sub-window, from per-bucket distributions merged at the end, equal those of
// the records that finished in it.
func TestAggregatorWindow(t *testing.T) {
	recs := streamRecords()
	cfg := Config{Percentiles: []float64{50, 90, 99}, Window: 100 * ms}
	a := NewAggregator(cfg)
	for i := range recs {
		a.Add(&recs[i])
	}
	full := a.Level()
	from, to := 400*ms, 900*ms
	got := a.Window(from, to)
	var in []record.Record
	for _, r := range recs {
		if r.Done >= from && r.Done < to {
			in = append(in, r)
		}
	}
	want := Aggregate(in, cfg)
	if got.Completed != want.Completed || got.Failed != want.Failed || got.TotalOutputTokens != want.TotalOutputTokens || got.Completed == 0 {
		t.Errorf("window counts %d/%d/%d, want %d/%d/%d", got.Completed, got.Failed, got.TotalOutputTokens, want.Completed, want.Failed, want.TotalOutputTokens)
	}
	near(t, "window duration", got.DurationS, 0.5)
	near(t, "window output throughput", got.OutputThroughput, float64(want.TotalOutputTokens)/0.5)
	for _, k := range MetricNames {
		if m, _ := Lookup(k); m.PerToken {
			if got.Metrics.Stat(k).Count != 0 {
				t.Errorf("%s over the window: per-token metrics are not kept per bucket", k)
			}
			continue
		}
		g, w := got.Metrics.Stat(k), want.Metrics.Stat(k)
		if jg, jw := must(json.Marshal(g)), must(json.Marshal(w)); string(jg) != string(jw) {
			t.Errorf("%s over the window:\n%s\nwant %s", k, jg, jw)
		}
	}
	// The whole level's figures do not depend on the buckets' width (only the intervals
	// by batch means do, which need buckets).
	plain := Aggregate(recs, Config{Percentiles: cfg.Percentiles})
	for _, k := range MetricNames {
		g, w := full.Metrics.Stat(k), plain.Metrics.Stat(k)
		if g.Count != w.Count || !sameFloat(g.Mean, w.Mean) || len(g.Percentiles) != len(w.Percentiles) {
			t.Errorf("%s: Config.Window changed the level's figures", k)
			continue
		}
		for i := range g.Percentiles {
			if !sameFloat(g.Percentiles[i].Value, w.Percentiles[i].Value) {
				t.Errorf("%s: Config.Window changed P%g", k, g.Percentiles[i].P)
			}
		}
	}
	if lv := NewAggregator(Config{}).Window(0, time.Second); lv.Completed != 0 {
		t.Error("a window without Config.Window")
	}
}

// Past pendingMax token events the peak output throughput's origin is fixed at the earliest
// sent seen: exact as long as the first request sent came in before.
func TestPeakTokensFrozenOrigin(t *testing.T) {
	defer func(n int) { pendingMax = n }(pendingMax)
	recs := streamRecords()
	want := Aggregate(recs, Config{}).PeakOutputThroughput
	slices.SortStableFunc(recs, func(a, b record.Record) int { return int(a.Done - b.Done) })
	events := 0
	for _, r := range recs {
		if r.Error == nil {
			events += r.Events.Len()
		}
		if r.Index == 0 {
			break
		}
	}
	pendingMax = events + 1
	a := NewAggregator(Config{})
	for i := range recs {
		a.Add(&recs[i])
	}
	if !a.peak.frozen || a.peak.pending != nil {
		t.Fatal("the origin was not fixed before the end")
	}
	if got := a.Level().PeakOutputThroughput; got != want || want == 0 {
		t.Errorf("peak output throughput %v, want %v", got, want)
	}
}

// Level.Stats reaches every registry metric by key, the OnLevel ones on the level itself:
// the same figures as the distributions behind them, absent when an optional one was not
// measured.
func TestLevelStatsByKey(t *testing.T) {
	r := rec(0, 10*ms, 95*ms, 2, ev{60 * ms, 1}, ev{80 * ms, 1})
	r.KernelStamps, r.ReadLag = true, 3*ms
	lv := Aggregate([]record.Record{r}, Config{})
	for _, m := range Registry {
		st, ok := lv.Stats(m.Key)
		measured := lv.Dists[m.Key].Count() > 0
		switch {
		case !m.Optional && !ok, m.Key == KeyReadLag && !ok:
			t.Errorf("%s: absent", m.Key)
		case m.Optional && m.Key != KeyReadLag && ok:
			t.Errorf("%s: present without a measurement", m.Key)
		case ok && measured && uint64(st.Count) != lv.Dists[m.Key].Count():
			t.Errorf("%s: count %d, distribution %d", m.Key, st.Count, lv.Dists[m.Key].Count())
		}
	}
	if st, _ := lv.Stats(KeyReadLag); st != lv.ReadLag || st.Max != 3 {
		t.Errorf("read lag %+v, level's %+v", st, lv.ReadLag)
	}
	if _, ok := lv.Stats("nonesuch"); ok {
		t.Error("an unknown key has statistics")
	}
}
