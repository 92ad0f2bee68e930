package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// connRecords are 40 completed requests of one level; every 4th opened a new connection
// (DNS, connect, TLS of setup each), the others reused one (write and headers only).
// Request 5 was retried, requests 6 and 7 have TTFT upper bounds.
func connRecords(setup time.Duration) []record.Record {
	ms := time.Millisecond
	var out []record.Record
	for i := range 40 {
		r := record.Record{Index: i, Scheduled: time.Duration(i) * 10 * ms, OutputTokens: 3, OutputTokensSource: record.SourceUsage, InputTokens: 10}
		r.Sent = r.Scheduled
		r.Events.Base = r.Sent
		for k := range 3 {
			r.Events.Append(r.Sent+time.Duration(50+10*k)*ms, 1)
		}
		r.Done = r.Sent + 80*ms
		r.Phases = &record.Phases{Write: 100 * time.Microsecond, Headers: 40 * ms, Has: record.PhaseWrite | record.PhaseHeaders}
		if i%4 == 0 {
			r.Phases.DNS, r.Phases.Connect, r.Phases.TLS = setup, setup, setup
			r.Phases.Has |= record.PhaseDNS | record.PhaseConnect | record.PhaseTLS
		}
		r.Retried = i == 5
		r.TTFTUpperBound = i == 6 || i == 7
		out = append(out, r)
	}
	return out
}

func connSummary(recs []record.Record) *Summary {
	cfg := metrics.Config{Percentiles: []float64{50, 99}}
	return &Summary{Schema: SchemaV1, Percentiles: cfg.Percentiles, Levels: []Level{{Name: "c=4", Concurrency: 4, Level: metrics.Aggregate(recs, cfg)}}}
}

func TestConsolePhasesAndRetries(t *testing.T) {
	var con bytes.Buffer
	if err := Console(&con, connSummary(connRecords(2*time.Millisecond)), ConsoleOptions{}); err != nil {
		t.Fatal(err)
	}
	out := con.String()
	for _, want := range []string{
		"Retried / TTFT upper-bound requests:     1 / 2",
		"-------------------HTTP Phases--------------------",
		"DNS mean / P50 / P99 (ms):               2.00 / 2.00 / 2.00 (10 requests)",
		"Headers mean / P50 / P99 (ms):           40.00 / 40.00 / 40.00 (40 requests)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("console lacks %q:\n%s", want, out)
		}
	}
	// Set-up that costs nothing (a local server) is left out; so are zero counts.
	quiet := connRecords(10 * time.Microsecond)
	for i := range quiet {
		quiet[i].Retried, quiet[i].TTFTUpperBound = false, false
	}
	con.Reset()
	Console(&con, connSummary(quiet), ConsoleOptions{})
	if strings.Contains(con.String(), "HTTP Phases") || strings.Contains(con.String(), "Retried") {
		t.Errorf("negligible phases or zero counts printed:\n%s", con.String())
	}
}

func TestCSVPhasesAndCountsAtTheEnd(t *testing.T) {
	var b bytes.Buffer
	s := connSummary(connRecords(2 * time.Millisecond))
	plain := connRecords(2 * time.Millisecond)
	for i := range plain {
		plain[i].Phases = nil
	}
	s.Levels = append(s.Levels, connSummary(plain).Levels[0])
	if err := WriteCSV(&b, s); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := rows[0]
	at := func(name string) int {
		for i, h := range head {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %s in %v", name, head)
		return -1
	}
	if at("slo_limit") > at("dns_mean_ms") || at("headers_p99_ms") > at("retried") || at("ttft_upper_bound") > at("error_statuses") || at("error_statuses") > at("input_throughput") || at("documents_per_s") > at("end_reason") || at("runs") > at("cost_usd_per_hour") || at("cost_per_million_good_output_tokens") > at("tasks_completed") || head[len(head)-1] != "prefix_cache_hits" || at("model_p99_ms") > at("cached_tokens_requests") {
		t.Errorf("new columns not at the end: %v", head)
	}
	if rows[1][at("connect_p50_ms")] != "2" || rows[1][at("retried")] != "1" || rows[1][at("ttft_upper_bound")] != "2" {
		t.Errorf("row %v", rows[1])
	}
	if rows[2][at("connect_p50_ms")] != "" || rows[2][at("write_mean_ms")] != "" {
		t.Errorf("unmeasured phases not empty: %v", rows[2])
	}
}

func TestSummaryJSONPhases(t *testing.T) {
	var b bytes.Buffer
	s := connSummary(connRecords(2 * time.Millisecond))
	if err := WriteJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Levels []struct {
			Retried        *int                       `json:"retried"`
			TTFTUpperBound *int                       `json:"ttft_upper_bound"`
			Metrics        map[string]json.RawMessage `json:"metrics"`
		}
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	l := back.Levels[0]
	if l.Retried == nil || *l.Retried != 1 || l.TTFTUpperBound == nil || *l.TTFTUpperBound != 2 {
		t.Errorf("counts %v %v", l.Retried, l.TTFTUpperBound)
	}
	for _, k := range []string{"dns_ms", "connect_ms", "tls_ms", "write_ms", "headers_ms"} {
		if _, ok := l.Metrics[k]; !ok {
			t.Errorf("%s absent", k)
		}
	}
	rt, err := ReadJSON(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := rt.Levels[0].Metrics.Get(metrics.KeyConnect); !ok || st.Count != 10 {
		t.Errorf("connect_ms lost in the round trip: %v %+v", ok, st)
	}
}

// The request anatomy carries a request's measured phases as a tenth element (null for
// a phase not measured); a request without phases keeps its nine.
func TestAnatomySamplePhases(t *testing.T) {
	recs := connRecords(2 * time.Millisecond)
	recs[1].Phases = nil
	js, _ := json.Marshal(chartsOf(t, recs).Levels[0].Sample)
	var rows [][]any
	if err := json.Unmarshal(js, &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		idx := int(r[0].(float64))
		switch {
		case idx == 1 && len(r) != 9:
			t.Errorf("request without phases: %v", r)
		case idx == 0:
			if len(r) != 10 || !strings.Contains(string(must(json.Marshal(r[9]))), "[0.002,0.002,0.002,0.0001,0.04]") {
				t.Errorf("new connection: %v", r)
			}
		case idx == 2:
			if len(r) != 10 || string(must(json.Marshal(r[9]))) != "[null,null,null,0.0001,0.04]" {
				t.Errorf("reused connection: %v", r)
			}
		}
	}
}

func must(b []byte, _ error) []byte { return b }
