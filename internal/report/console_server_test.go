package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// serverTimingsSummary is levelRecords' c=4 level as a server that reports its own timings
// would give it: prefill 10-12 ms (the client sees TTFT 72-78 ms), decode 11 ms per step
// (the client sees 11.6 ms), a total 2 ms short of the client's request time, and every
// third request reasoning for two events first.
func serverTimingsSummary(t *testing.T) *Summary {
	t.Helper()
	recs := levelRecords(0, 4, 60, 0)
	for i := range recs {
		r := &recs[i]
		r.Server = &record.ServerTimings{PromptTokens: 260, Prefill: time.Duration(10+i%3) * time.Millisecond,
			OutputTokens: 20, Decode: 19 * 11 * time.Millisecond, Total: r.Done - r.Sent - 2*time.Millisecond}
		if i%3 == 0 {
			r.FirstContent = r.Events.Time(2)
		}
	}
	cfg := metrics.Config{Percentiles: []float64{50, 90, 99}}
	s := &Summary{
		Version: "v0.0.0-test", StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), RunStartUnix: 1767323045,
		Seed: 42, EndReason: "completed", Target: NewTarget("http://127.0.0.1:11434", "ollama", "test-model"),
		Percentiles: cfg.Percentiles,
		Levels:      []Level{{Name: "c=4", Concurrency: 4, Level: metrics.Aggregate(recs, cfg)}},
	}
	s.Judge()
	return s
}

func TestServerTimingsConsoleGolden(t *testing.T) {
	s := serverTimingsSummary(t)
	var con bytes.Buffer
	if err := Console(&con, s, ConsoleOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "server_timings_console.golden", con.Bytes())
	out := con.String()
	ttfc := strings.Index(out, "-----------Time to First Content Token------------")
	tpot := strings.Index(out, "-----Time per Output Token (excl. 1st token)------")
	if ttfc < 0 || tpot < ttfc {
		t.Error("the first-content section does not follow TTFT")
	}
	for _, want := range []string{
		"-------------Server-reported Timings-------------",
		"Requests with server timings:            60",
		"TTFT client / server, mean (ms):         75.05 / 11.00",
		"TPOT gap mean / P50 / P99 (ms):          0.60 / 0.60 / 0.60\n" + strings.Repeat(" ", 41) + "(5.2% of the client's; low n: 60 samples)",
		"Server's own ms/token (decode/N):        10.45",
		"Request gap mean / P50 / P99 (ms):       2.00 / 2.00 / 2.00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("console lacks %q", want)
		}
	}
}

func TestServerTimingsJSONRoundTrip(t *testing.T) {
	s := serverTimingsSummary(t)
	var a, b bytes.Buffer
	if err := WriteJSON(&a, s); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&b, back); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("round trip changed summary.json:\n%s\n---\n%s", a.String(), b.String())
	}
	st := back.Levels[0].ServerTimings
	if st == nil || st.TTFT == nil || st.TPOT == nil || st.Total == nil || back.Levels[0].FirstContent == nil {
		t.Fatalf("server timings or first content lost: %+v", back.Levels[0])
	}
	if st.Requests != 60 || back.Levels[0].FirstContent.Count != 60 {
		t.Errorf("requests %d, first-content samples %d; want 60, 60", st.Requests, back.Levels[0].FirstContent.Count)
	}
}
