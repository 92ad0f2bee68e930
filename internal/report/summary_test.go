package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/rundesc"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// levelRecords simulates n measured requests of a closed-loop level at concurrency c: TTFT 40+8c ms (+ i%7 ms),
// 20 output tokens 10+0.4c ms apart with every 5th event a 2-token chunk, so throughput
// bends as c grows. Every failEvery-th request fails with HTTP 503 (0: none).
func levelRecords(level, c, n, failEvery int) []record.Record {
	ms := time.Millisecond
	slot := make([]time.Duration, c)
	var out []record.Record
	for i := range n + c { // the first c requests are warm-up
		s := i % c
		r := record.Record{Level: level, Index: i, Warmup: i < c, Scheduled: slot[s], Sent: slot[s] + time.Duration(i%3)*100*time.Microsecond,
			InputTokens: 256, ServerPromptTokens: 260, OutputTokens: 20, OutputTokensSource: record.SourceUsage}
		r.Events.Base = r.Sent
		if failEvery > 0 && i%failEvery == failEvery-1 {
			r.Error = &record.Error{Kind: record.KindHTTPStatus, Status: 503, Message: "overloaded"}
			r.OutputTokens, r.ServerPromptTokens = 0, 0
			r.Done = r.Sent + 5*ms
		} else {
			t := r.Sent + time.Duration(40+8*c+i%7)*ms
			gap := time.Duration(10_000+400*c) * time.Microsecond
			for k := 0; k < 20; {
				nt := 1
				if k%5 == 4 && k+2 <= 20 {
					nt = 2
				}
				if k > 0 {
					t += gap * time.Duration(nt) // a 2-token chunk arrives after two steps
				}
				r.Events.Append(t, nt)
				k += nt
			}
			r.Done = t + ms
		}
		slot[s] = r.Done
		out = append(out, r)
	}
	return out
}

func ladderSummary(t *testing.T, sloSpec string, concs []int) *Summary {
	t.Helper()
	slos, err := metrics.ParseSLOs(sloSpec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := metrics.Config{Percentiles: []float64{50, 90, 99}, SLOs: slos}
	s := &Summary{
		Version:      "v0.0.0-test",
		StartedAt:    time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		RunStartUnix: 1767323045,
		Seed:         42,
		EndReason:    "completed",
		Target:       NewTarget("http://user:pw@127.0.0.1:8000?api_key=sk-123", "openai-chat", "test-model"),
		Workload:     rundesc.Workload{Dataset: "random", Tokenizer: "o200k_base", InputTokens: "256", OutputTokens: "20"},
		Load:         rundesc.Load{Mode: rundesc.ModeSimulate, Requests: 60},
		Percentiles:  cfg.Percentiles,
		SLO:          sloSpec,
	}
	for i, c := range concs {
		s.Load.Levels = append(s.Load.Levels, rundesc.Level{Concurrency: c, Requests: 60})
		fail := 0
		if c == 64 {
			fail = 10
		}
		recs := levelRecords(i, c, max(60, 4*c), fail)
		if c == 16 {
			// One level whose events the kernel stamped: its read lag shows everywhere.
			for j := range recs {
				recs[j].KernelStamps, recs[j].ReadLag = true, time.Duration(j%5)*100*time.Microsecond
			}
		}
		lv := metrics.Aggregate(recs, cfg)
		s.Levels = append(s.Levels, Level{Name: "c=" + strconv.Itoa(c), Concurrency: c, Level: lv})
	}
	s.Judge()
	return s
}

func TestLadderGolden(t *testing.T) {
	s := ladderSummary(t, "ttft<=300ms,tpot:p90<=20ms,goodput>=0.9", []int{1, 4, 16, 64})
	// Priced, so that every output shows the cost (two GPUs at 3.50 USD an hour each).
	s.Price = &metrics.Price{GPU: &metrics.GPUPrice{USDPerGPUHour: 3.5, GPUs: 2}, Source: "--gpu-price, --gpus"}
	s.Judge()
	if s.SLOLimit == nil || s.SLOLimit.Concurrency != 16 {
		t.Errorf("slo limit %+v, want concurrency 16", s.SLOLimit)
	}
	if s.SweetSpot == nil || s.SweetSpot.Concurrency != 16 {
		t.Errorf("sweet spot %+v, want concurrency 16", s.SweetSpot)
	}
	if passed, judged := s.SLOPassed(); !passed || !judged {
		t.Errorf("SLOPassed = %v, %v", passed, judged)
	}
	var con, js, cs bytes.Buffer
	if err := Console(&con, s, ConsoleOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteCSV(&cs, s); err != nil {
		t.Fatal(err)
	}
	golden(t, "ladder_console.golden", con.Bytes())
	golden(t, "ladder_summary.golden.json", js.Bytes())
	golden(t, "ladder_summary.golden.csv", cs.Bytes())
	for _, want := range []string{
		"============ Serving Benchmark Result ============",
		"---------------Time to First Token----------------",
		"-----Time per Output Token (excl. 1st token)------",
		"Failed requests:                         26         <-- FAILURES: 10.2% of requests",
		"  http_status 503:                       26\n" + strings.Repeat(" ", 41) + `first: "overloaded"; the server is overloaded or starting`,
		"2*+ c=16",
	} {
		if !strings.Contains(con.String(), want) {
			t.Errorf("console lacks %q", want)
		}
	}
	if strings.Contains(js.String(), "sk-123") || strings.Contains(js.String(), "pw@") {
		t.Error("summary.json leaks a credential from the target URL")
	}
}

func TestSingleLevelConsoleGolden(t *testing.T) {
	s := ladderSummary(t, "", []int{4})
	var con bytes.Buffer
	if err := Console(&con, s, ConsoleOptions{Verbose: true, Percentiles: []float64{90, 99}}); err != nil {
		t.Fatal(err)
	}
	golden(t, "single_console.golden", con.Bytes())
	if strings.Contains(con.String(), "Ladder") || strings.Contains(con.String(), "goodput") {
		t.Error("single level without SLOs: no ladder table, no goodput")
	}
	if !strings.Contains(con.String(), "(low n: 60 samples)") {
		t.Error("P99 of 60 TTFT samples is not flagged")
	}
	if s.SweetSpot != nil || s.SLOLimit != nil {
		t.Errorf("one level: picks %+v %+v", s.SweetSpot, s.SLOLimit)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	s := ladderSummary(t, "ttft<=300ms,tpot:p99<=20ms", []int{1, 4, 16})
	var a bytes.Buffer
	if err := WriteJSON(&a, s); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, back); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("round trip changed summary.json:\n%s\n---\n%s", a.String(), b.String())
	}
	if back.Levels[1].Metrics.Stat("ttft").Count != s.Levels[1].Metrics.Stat("ttft").Count || back.Levels[2].SLO == nil {
		t.Error("levels lost in the round trip")
	}
	for _, c := range []struct{ in, err string }{
		{`{"schema":"llmbench/summary/v4"}`, `schema "llmbench/summary/v4" is not supported`},
		{`{"schema":"llmbench/summary/v2","load":{"levels":3}}`, "summary.json (llmbench/summary/v2): json: cannot unmarshal"},
		{`{"schema":"other"}`, "not an llmbench summary"},
		{`{`, "unexpected end of JSON input"},
	} {
		if _, err := ReadJSON(strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("ReadJSON(%s) = %v, want %q", c.in, err, c.err)
		}
	}
}

func TestJudgeSkipsPartialLevels(t *testing.T) {
	s := ladderSummary(t, "tpot:p90<=100ms", []int{1, 4, 16, 64})
	if s.SLOLimit == nil || s.SLOLimit.Index != 3 {
		t.Fatalf("limit %+v, want the top level", s.SLOLimit)
	}
	s.Levels[3].Partial = true
	s.Judge()
	if s.SLOLimit == nil || s.SLOLimit.Index != 2 || s.SLOLimit.Concurrency != 16 {
		t.Errorf("limit %+v, want level 2 once level 3 is partial", s.SLOLimit)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8000":                       "http://127.0.0.1:8000",
		"https://u:p@api.example.com/v1":              "https://api.example.com/v1",
		"https://x.example.com/v1?api-key=abc&mode=1": "https://x.example.com/v1?api-key=REDACTED&mode=1",
		"https://x.example.com/?sig=abc":              "https://x.example.com/?sig=REDACTED",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEndReasons(t *testing.T) {
	if got := EndError(errors.New("records.jsonl: disk full")); got != "error: records.jsonl: disk full" {
		t.Errorf("EndError = %q", got)
	}
	got := JoinEndReasons([]EndReason{EndCompleted, EndInterrupted, EndCompleted, EndKilled})
	if want := EndReason("completed; interrupted; killed: recomputed from records.jsonl"); got != want {
		t.Errorf("JoinEndReasons = %q, want %q", got, want)
	}
	if got := JoinEndReasons([]EndReason{EndCompleted, EndCompleted}); got != EndCompleted {
		t.Errorf("JoinEndReasons of alike shards = %q", got)
	}
}

// A v1 summary (as llmbench wrote it before v2, abridged to one level) reads as v3, its
// description typed, and writes again with v1's keys and values under the v3 schema.
func TestReadV1(t *testing.T) {
	v1 := `{
  "schema": "llmbench/summary/v1",
  "llmbench_version": "dev",
  "started_at": "2026-12-01T08:47:23.067422513Z",
  "run_start_unix": 1796114843.067422,
  "seed": 1,
  "end_reason": "completed",
  "target": {"url": "", "api": "", "model": "textbook", "closes_connections": false, "closed_connections": 0},
  "workload": {"dataset": "random", "tokenizer": "o200k_base", "input_tokens": "512", "output_tokens": "128", "trace_speed": 1},
  "load": {"mode": "simulate", "levels": [{"concurrency": 1, "requests": 8}], "requests": 8, "sim_profile": "textbook", "ignore_eos": false},
  "percentiles": [50, 90, 95, 99, 99.9],
  "levels": [{"name": "concurrency 1", "concurrency": 1, "partial": false, "completed": 8, "failed": 0}],
  "sweet_spot": null,
  "slo_limit": null
}`
	s, err := ReadJSON(strings.NewReader(v1))
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema != SchemaV3 || s.Levels[0].EndReason != "requests" || s.EndReason != EndCompleted || s.Load.Mode != rundesc.ModeSimulate ||
		len(s.Load.Levels) != 1 || s.Load.Levels[0].Requests != 8 || s.Workload.InputTokens != "512" ||
		s.Levels[0].Completed != 8 || s.Target.Model != "textbook" {
		t.Errorf("read back %+v", s)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	var in, out map[string]any
	json.Unmarshal([]byte(v1), &in)
	json.Unmarshal(b.Bytes(), &out)
	if out["schema"] != SchemaV3 {
		t.Errorf("written as %v", out["schema"])
	}
	for _, k := range []string{"workload", "load", "target", "end_reason", "started_at", "seed", "percentiles"} {
		if !reflect.DeepEqual(in[k], out[k]) {
			t.Errorf("%s: v1 %v, written back %v", k, in[k], out[k])
		}
	}
}

// The ladder fits 100 columns, SLO columns and marks included; --wide adds the rest.
func TestLadderFits100Columns(t *testing.T) {
	s := ladderSummary(t, "ttft<=300ms,tpot:p99<=20ms", []int{1, 4, 16, 64, 256})
	for _, wide := range []bool{false, true} {
		var b bytes.Buffer
		if err := ConsoleLadder(&b, s, ConsoleOptions{Wide: wide}); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(b.String(), "\n") {
			if !wide && utf8.RuneCountInString(line) > 100 {
				t.Errorf("%d columns: %q", utf8.RuneCountInString(line), line)
			}
		}
		if has := strings.Contains(b.String(), "ITL P99"); has != wide {
			t.Errorf("wide %v: ITL P99 column %v", wide, has)
		}
	}
	var b bytes.Buffer
	ConsoleLadder(&b, ladderSummary(t, "", []int{1, 4}), ConsoleOptions{})
	if strings.Contains(b.String(), "goodput") || strings.Contains(b.String(), "SLO") {
		t.Errorf("no SLOs, yet goodput or SLO columns:\n%s", b.String())
	}
}

// A v2 summary reads as v3: each level's end reason from its load (duration, requests, or
// interrupted when partial), and every percentile interval it wrote named as the
// order-statistics one it was.
func TestReadV2(t *testing.T) {
	v2 := `{"schema": "llmbench/summary/v2", "load": {"mode": "run", "duration": "30s"},
  "levels": [{"name": "rate 2", "rate": 2, "partial": false, "completed": 8,
    "metrics": {"ttft_ms": {"count": 8, "mean": 10, "p50": 10, "ci95": {"p50": [9, 11]}, "unreliable": []}}},
   {"name": "rate 4", "rate": 4, "partial": true, "completed": 1}]}`
	s, err := ReadJSON(strings.NewReader(v2))
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema != SchemaV3 || s.Levels[0].EndReason != "duration" || s.Levels[1].EndReason != "interrupted" {
		t.Errorf("schema %s, end reasons %q %q", s.Schema, s.Levels[0].EndReason, s.Levels[1].EndReason)
	}
	if p, _ := s.Levels[0].Metrics.Stat("ttft").Get(50); p.Method != metrics.MethodOrderStatistics || p.Lo != 9 {
		t.Errorf("v2 interval read as %+v", p)
	}
}

// TestKernelStamped: a level with a read lag was kernel-stamped; completed requests with
// none were not; a run that completed nothing says nothing.
func TestKernelStamped(t *testing.T) {
	for _, tc := range []struct {
		levels []Level
		want   bool
	}{
		{[]Level{{Level: metrics.Level{Completed: 3}}}, false},
		{[]Level{{Level: metrics.Level{Completed: 3}}, {Level: metrics.Level{Completed: 2, ReadLag: &metrics.Stats{}}}}, true},
		{[]Level{{Level: metrics.Level{Failed: 4}}}, true},
	} {
		if got := (&Summary{Levels: tc.levels}).KernelStamped(); got != tc.want {
			t.Errorf("%+v: KernelStamped %v, want %v", tc.levels, got, tc.want)
		}
	}
}

// TestBisectedReplaysTheSearch: the levels a search's bisection placed are found again from
// the levels' loads and verdicts: the probes after the first that failed, not the doubling
// before it nor the grid after the bisection; a run that was no search has none.
func TestBisectedReplaysTheSearch(t *testing.T) {
	runs := []struct {
		c    int
		pass bool
	}{{1, true}, {2, true}, {4, true}, {8, false}, {6, true}, {7, false}, {5, true}, {9, false}}
	s := &Summary{}
	s.Load.Search, s.Load.SearchMax = "concurrency", 1024
	for _, r := range runs {
		l := Level{Concurrency: r.c}
		l.SLO = &metrics.Verdict{Pass: r.pass}
		s.Levels = append(s.Levels, l)
	}
	want := []bool{false, false, false, false, true, true, false, false}
	if got := s.bisected(); !slices.Equal(got, want) {
		t.Errorf("bisected = %v, want %v", got, want)
	}
	s.Load.Search = ""
	if got := s.bisected(); slices.Contains(got, true) {
		t.Errorf("no search: bisected = %v, want none", got)
	}
}
