package report

import (
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/servermetrics"
)

const msec = time.Millisecond

// A request's phases follow one another on the time axis, from its schedule to the stream's
// close; a failed one is red from its send; measured HTTP phases come before and after the send.
func TestRequestSpans(t *testing.T) {
	type want struct {
		x0, x1 float64
		col    string
	}
	check := func(name string, r metrics.SampledRequest, ws []want) {
		t.Helper()
		got := requestSpans(&r)
		if len(got) != len(ws) {
			t.Fatalf("%s: %d spans %+v, want %d", name, len(got), got, len(ws))
		}
		for i, w := range ws {
			if g := got[i]; g.Color != w.col || g.X0 != w.x0 || g.X1 != w.x1 {
				t.Errorf("%s: span %d is %v..%v %s, want %v..%v %s", name, i, g.X0, g.X1, g.Color, w.x0, w.x1, w.col)
			}
		}
	}
	check("streamed", metrics.SampledRequest{Scheduled: 1000 * msec, Sent: 1100 * msec, First: 1200 * msec, Last: 1500 * msec, Done: 1600 * msec, HasTokens: true},
		[]want{{1, 1.1, colQueue}, {1.1, 1.2, colPrefill}, {1.2, 1.5, colDecode}, {1.5, 1.6, colTail}})
	check("failed", metrics.SampledRequest{Scheduled: 1000 * msec, Sent: 1000 * msec, Done: 1300 * msec, ErrKind: "http_status"},
		[]want{{1, 1, colQueue}, {1, 1.3, colFailed}})
	check("unstreamed with phases", metrics.SampledRequest{Scheduled: 1000 * msec, Sent: 1100 * msec, Done: 1600 * msec,
		Phases: &record.Phases{Connect: 50 * msec, Headers: 100 * msec, TLS: 7 * msec, Has: record.PhaseConnect | record.PhaseHeaders}},
		[]want{{1, 1.05, colQueue}, {1.05, 1.1, colSetup}, {1.1, 1.2, colHeaders}, {1.2, 1.6, colPrefill}})
}

// A level with more requests than the plot has pixel rows draws one per row, spread
// evenly through the sample, and says so; the rows list names each row's request.
func TestAnatomySubsamples(t *testing.T) {
	ld := &levelData{Level: 0, Requests: 2000, Measured: 2000, OK: 2000}
	for i := range 2000 {
		s := time.Duration(i) * msec
		ld.Sample = append(ld.Sample, sampleReq{Index: i, Scheduled: s, Sent: s, First: s + 10*msec, Last: s + 50*msec, Done: s + 60*msec, HasTokens: true})
	}
	v := anatomyChart(ld, []Level{{Concurrency: 8}})
	rows := strings.Split(v.Rows, ",")
	if len(rows) != 520-62 || rows[0] != "0" || rows[1] != "4" {
		t.Errorf("%d rows starting %v, want 458 from 0 in steps of 2000/458", len(rows), rows[:2])
	}
	if !strings.Contains(v.Info, "458 of them drawn") || v.Name != "concurrency 8" {
		t.Errorf("info %q, name %q", v.Info, v.Name)
	}
	if svg := string(v.Chart); !strings.Contains(svg, `data-y="0 2000"`) || strings.Count(svg, "<path d=\"M") < 3 {
		t.Errorf("the timeline's y axis should count the 2,000 requests, with a path per phase: %.400s", svg)
	}
}

// The server's charts are drawn only from series it reported; the charts over time share
// the run's time axis, from 0 to the last bucket, level or sample.
func TestServerChartsAndRunSpan(t *testing.T) {
	levels := []Level{{Concurrency: 1}, {Concurrency: 4}}
	if serverCharts(nil, levels) != "" {
		t.Error("server charts without server metrics")
	}
	levels[1].Server = &servermetrics.Summary{Series: servermetrics.Columns{TS: []float64{10, 11, 12}, KVCacheUsage: servermetrics.Column{0.1, 0.2, 0.3}}}
	out := string(serverCharts(nil, levels))
	if !strings.Contains(out, `data-chart="server-kv"`) || strings.Contains(out, `data-chart="server-requests"`) {
		t.Errorf("only KV cache usage was reported, so only its chart: %.300s", out)
	}
	ch := &Charts{OverTime: &overTime{WidthS: 1, Tokens: make([]float64, 9)}, Levels: []*levelData{{Level: 0, Start: 0, End: 4}, {Level: 1, Start: 5, End: 11.5}}}
	if r := runSpan(ch, levels); r.Lo != 0 || r.Hi != 12 {
		t.Errorf("run span %+v, want 0..12 (the last server sample)", r)
	}
	if bands := levelBands(ch, levels); len(bands) != 2 || bands[1].Label != "c=4" || bands[0].X1 != 4 {
		t.Errorf("bands %+v", bands)
	}
}
