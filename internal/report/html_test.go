package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/rundesc"
	"github.com/llmbench/llmbench/internal/schedule"
)

// The CDFs the page draws agree with the percentiles in summary.json (computed here by
// synthLevel from the same records with the docs/design.md definitions).
func TestPrepareRecordsCDFMatchesSummaryPercentiles(t *testing.T) {
	sum, recs := synthRun([]int{1, 8, 32}, 60, 11)
	d := chartsOf(t, recs)
	var s struct {
		Levels []struct {
			Completed int
			Failed    int
			Metrics   map[string]map[string]any
		}
	}
	if err := json.Unmarshal(sum, &s); err != nil {
		t.Fatal(err)
	}
	if len(d.Levels) != 3 || d.Records != len(recs) {
		t.Fatalf("levels %d records %d, want 3 and %d", len(d.Levels), d.Records, len(recs))
	}
	qi := map[string]int{"p50": slices.Index(cdfGrid, 0.5), "p99": slices.Index(cdfGrid, 0.99), "p99.9": slices.Index(cdfGrid, 0.999)}
	for k, i := range qi {
		if i < 0 {
			t.Fatalf("cdfGrid lacks %s", k)
		}
	}
	for li, lv := range d.Levels {
		if lv.OK != s.Levels[li].Completed || lv.Failed != s.Levels[li].Failed || lv.Requests != 62 || lv.Measured != 60 {
			t.Errorf("level %d counts: %+v", li, lv)
		}
		for _, cm := range cdfMetrics {
			m := cm.JSON
			c := lv.CDF[m]
			if c == nil {
				t.Fatalf("level %d %s: no CDF", li, m)
			}
			if want := s.Levels[li].Metrics[m]["count"].(float64); float64(c.N) != want {
				t.Errorf("level %d %s: %d samples, summary has %v", li, m, c.N, want)
			}
			for k, i := range qi {
				want := s.Levels[li].Metrics[m][k].(float64)
				if got := c.Values[i]; math.Abs(got-want) > 1e-6*want {
					t.Errorf("level %d %s %s: CDF %v, summary %v", li, m, k, got, want)
				}
			}
			if !slices.IsSorted(c.Values) {
				t.Errorf("level %d %s: CDF values not monotone", li, m)
			}
		}
	}
}

func TestTimelineSampleDeterministicAndUniform(t *testing.T) {
	mk := func(n int) []record.Record {
		var recs []record.Record
		for i := range n {
			r := record.Record{Level: 3, Index: i, Scheduled: time.Duration(i) * time.Millisecond, Sent: time.Duration(i) * time.Millisecond}
			r.Events.Base = r.Sent
			r.Events.Append(r.Sent+20*time.Millisecond, 1)
			r.Events.Append(r.Sent+30*time.Millisecond, 1)
			r.Done, r.OutputTokens = r.Sent+31*time.Millisecond, 2
			recs = append(recs, r)
		}
		return recs
	}
	recs := mk(10000)
	prep := func(order []record.Record) *levelData {
		return chartsOf(t, order).Levels[0]
	}
	a := prep(recs)
	shuffled := slices.Clone(recs)
	rand.New(rand.NewPCG(9, 9)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b := prep(shuffled)
	if len(a.Sample) != metrics.SampleSize {
		t.Fatalf("sample of %d, want %d", len(a.Sample), metrics.SampleSize)
	}
	ja, _ := json.Marshal(a.Sample)
	jb, _ := json.Marshal(b.Sample)
	if !bytes.Equal(ja, jb) {
		t.Fatal("the sample depends on the order of records.jsonl")
	}
	if !slices.IsSortedFunc(a.Sample, func(x, y sampleReq) int { return int(x.Sent - y.Sent) }) {
		t.Fatal("sample not ordered by sent time")
	}
	// Uniform over the level: the sampled indices' mean and spread match the population's.
	var sum float64
	seen := map[int]bool{}
	for _, s := range a.Sample {
		sum += float64(s.Index)
		seen[s.Index] = true
	}
	if len(seen) != metrics.SampleSize {
		t.Fatal("duplicate requests in the sample")
	}
	if mean := sum / metrics.SampleSize; math.Abs(mean-4999.5) > 250 {
		t.Fatalf("sample mean index %.0f, population 4999.5: not uniform", mean)
	}
	// Small levels are kept whole.
	if small := prep(mk(50)); len(small.Sample) != 50 {
		t.Fatalf("level of 50: sample %d", len(small.Sample))
	}
	// The compact encoding: [index, scheduled, sent, first, last, done, tokens, warmup, error].
	s := sampleReq{Index: 7, Scheduled: 1500 * time.Millisecond, Sent: 1501 * time.Millisecond, Done: 2 * time.Second, Warmup: true, ErrKind: "http_status"}
	if got, _ := json.Marshal(s); string(got) != `[7,1.5,1.501,null,null,2,0,1,"http_status"]` {
		t.Fatalf("sample encoding %s", got)
	}
}

func TestOverTimeBuckets(t *testing.T) {
	b := newBucketer()
	// One request in flight over [0.05 s, 0.35 s) with two tokens at 0.15 s and one at 0.34 s,
	// another over [0.2 s, 0.25 s) that failed.
	b.addInterval(50*time.Millisecond, 350*time.Millisecond)
	b.addTokens(150*time.Millisecond, 2)
	b.addTokens(340*time.Millisecond, 1)
	b.addInterval(200*time.Millisecond, 250*time.Millisecond)
	b.addFailure(250 * time.Millisecond)
	ot := b.finish()
	if ot.WidthS != 0.1 {
		t.Fatalf("width %v, want 0.1 s for a short run", ot.WidthS)
	}
	wantInFlight := []float64{0.5, 1, 1.5, 0.5}
	wantTokens := []float64{0, 20, 0, 10}
	wantFailed := []float64{0, 0, 10, 0}
	for i := range wantInFlight {
		if math.Abs(ot.InFlight[i]-wantInFlight[i]) > 1e-9 || ot.Tokens[i] != wantTokens[i] || ot.FailedPerS[i] != wantFailed[i] {
			t.Fatalf("bucket %d: in flight %v tokens/s %v failed/s %v; want %v %v %v", i, ot.InFlight[i], ot.Tokens[i], ot.FailedPerS[i], wantInFlight[i], wantTokens[i], wantFailed[i])
		}
	}

	// A long run coarsens while reading and still conserves request-seconds and tokens.
	rng := rand.New(rand.NewPCG(5, 6))
	b = newBucketer()
	var area, tokens float64
	for range 20000 {
		s := time.Duration(rng.Float64() * float64(5000*time.Second))
		d := s + time.Duration(rng.Float64()*float64(90*time.Second))
		b.addInterval(s, d)
		area += (d - s).Seconds()
		b.addTokens(d, 3)
		tokens += 3
	}
	ot = b.finish()
	if ot.WidthS != 10 || len(ot.InFlight) > maxShownBuckets {
		t.Fatalf("a 5000 s run: width %v with %d buckets", ot.WidthS, len(ot.InFlight))
	}
	var gotArea, gotTokens float64
	for i := range ot.InFlight {
		gotArea += ot.InFlight[i] * ot.WidthS
		gotTokens += ot.Tokens[i] * ot.WidthS
	}
	if math.Abs(gotArea-area) > 1e-3*area || math.Abs(gotTokens-tokens) > 1e-3*tokens {
		t.Fatalf("area %v (want %v), tokens %v (want %v)", gotArea, area, gotTokens, tokens)
	}
	// 1 s buckets for an ordinary run, as peak_output_throughput uses.
	b = newBucketer()
	b.addInterval(0, 300*time.Second)
	if ot := b.finish(); ot.WidthS != 1 || len(ot.InFlight) != 301 || ot.InFlight[150] != 1 {
		t.Fatalf("a 300 s run: width %v, %d buckets, in flight %v", ot.WidthS, len(ot.InFlight), ot.InFlight[150])
	}
}

// A 200,000-request level keeps a bounded state: a 2,000 sample, and distributions that
// grow with distinct values (here a few hundred), not with the 3.2 million samples; the
// page's CDFs are the summary's own distributions.
func TestCollectorBoundedState(t *testing.T) {
	col := NewCollector(metrics.Config{Percentiles: []float64{50, 99, 99.9}})
	for i := range 200000 {
		r := record.Record{Level: 0, Index: i, Scheduled: time.Duration(i) * time.Millisecond}
		r.Sent = r.Scheduled
		r.Events.Base = r.Sent
		for k := range 16 {
			r.Events.Append(r.Sent+time.Duration(20000+k*(7000+i%5*311)+i%13*17)*time.Microsecond, 1)
		}
		r.Done, r.OutputTokens = r.Sent+time.Second, 16
		col.Add(&r)
	}
	sum := &Summary{Levels: []Level{{Level: col.Level(0)}}}
	lv := sum.Levels[0]
	if len(lv.Anatomy.Sample) != metrics.SampleSize {
		t.Fatalf("sample holds %d", len(lv.Anatomy.Sample))
	}
	for _, m := range cdfMetrics {
		if q := lv.Dists[m.Key]; q.Distinct() > 5000 {
			t.Fatalf("%s: %d distinct values kept", m.Key, q.Distinct())
		}
	}
	if len(col.ot.tokens) > maxCollectBuckets {
		t.Fatalf("%d over-time buckets", len(col.ot.tokens))
	}
	d := col.Charts(sum)
	if c := d.Levels[0].CDF["itl_ms"]; c.N != 200000*15 {
		t.Fatalf("ITL CDF: n %d", c.N)
	}
	p99 := lv.Metrics.Stat(metrics.KeyITL)
	if p, _ := p99.Get(99); d.Levels[0].CDF["itl_ms"].Values[slices.Index(cdfGrid, 0.99)] != roundSig(p.Value) {
		t.Errorf("ITL CDF at 0.99 differs from the summary's P99 %v", p.Value)
	}
}

func TestPrepareRecordsBadLines(t *testing.T) {
	good := `{"level":0,"index":0,"warmup":false,"scheduled_s":0.1,"sent_s":0.1,"first_token_s":0.2,"last_token_s":0.2,"done_s":0.3,"response_id":"x","input_tokens":1,"output_tokens":1,"output_tokens_source":"usage","events":[[0.2,1]],"error":null}`
	// A killed writer leaves an unterminated last line: skipped and noted.
	d, err := prepareRecords(strings.NewReader(good + "\n" + good + "\n" + good[:40]))
	if err != nil {
		t.Fatal(err)
	}
	if d.Records != 2 || len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "line 3") {
		t.Fatalf("records %d notes %q", d.Records, d.Notes)
	}
	// Anything else is corrupt and named by line.
	for _, in := range []string{good + "\n{\"level\":\n" + good + "\n", good + "\nnot json\n"} {
		if _, err := prepareRecords(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Fatalf("%q: err %v, want one naming line 2", in, err)
		}
	}
	// Lines of any length.
	long := strings.Replace(good, `"response_id":"x"`, `"response_id":"`+strings.Repeat("y", 200000)+`"`, 1)
	if d, err := prepareRecords(strings.NewReader(long + "\n" + good)); err != nil || d.Records != 2 {
		t.Fatalf("long line: %v, %+v", err, d)
	}
	if d, err := prepareRecords(strings.NewReader("")); err != nil || d.Records != 0 || len(d.Levels) != 0 {
		t.Fatalf("empty file: %v %+v", err, d)
	}
}

func TestWriteHTMLEscapesAndRedacts(t *testing.T) {
	evil := `</script><script>alert(1)</script><!--`
	lv := Level{Name: `<img src=x onerror=alert(2)>`, Concurrency: 4}
	lv.Completed, lv.Failed, lv.Errors, lv.OutputThroughput = 3, 1, map[string]int{"http_status": 1}, 120.5
	inf := math.Inf(1)
	lv.Metrics.Set(metrics.KeyTTFT, metrics.Stats{Count: 3, Mean: 15, Std: 1, Min: 10, Max: 30,
		Percentiles: []metrics.Percentile{{P: 50, Value: 12.5, Lo: 10, Hi: 14}, {P: 99, Value: 30, Lo: 20, Hi: inf}}})
	sum := &Summary{Schema: SchemaV2, Version: "v1<b>", Seed: math.MaxInt64, // not exact as a float64
		Target: Target{URL: "http://h/?a=1&b=2", API: "openai-chat", Model: evil},
		Load: rundesc.Load{Headers: []string{"X-Trace: ok"}, ExtraBody: map[string]any{
			"api_key": "sk-SECRET-1", "max_tokens": 5.0,
			"nested": map[string]any{"password": "sk-SECRET-2", "k": []any{1.0, 2.0}},
		}},
		Levels:    []Level{lv},
		SweetSpot: &metrics.Pick{Index: 0, Concurrency: 4, Reason: "only <level>"},
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, sum, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, secret := range []string{"sk-SECRET-1", "sk-SECRET-2"} {
		if strings.Contains(page, secret) {
			t.Errorf("the page shows secret %q", secret)
		}
	}
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>", "only <level>"} {
		if strings.Contains(page, bad) {
			t.Errorf("unescaped %q in the page", bad)
		}
	}
	if n := strings.Count(page, "</script>"); n != 3 { // error hook, data, report.js
		t.Errorf("%d </script> in the page, want 3", n)
	}
	for _, want := range []string{"&lt;/script&gt;&lt;script&gt;alert(1)", "&lt;img src=x onerror=alert(2)&gt;", "http://h/?a=1&amp;b=2", "9223372036854775807", "X-Trace: ok",
		"load.extra_body.api_key</th><td>[redacted]", "load.extra_body.nested.k</th><td>1, 2", "load.extra_body.max_tokens</th><td>5",
		`class="flag"`, "95% CI 10.00 – 14.00 ms", "too few samples for P99", "http_status: 1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The embedded data decodes back to the summary's levels and picks.
	m := regexp.MustCompile(`(?s)<script type="application/json" id="llmbench-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data element")
	}
	var data struct {
		Summary struct {
			Levels    []Level
			SweetSpot *metrics.Pick `json:"sweet_spot"`
		}
		Records *Charts
	}
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	if len(data.Summary.Levels) != 1 || data.Summary.Levels[0].Name != lv.Name || data.Summary.SweetSpot.Reason != "only <level>" || data.Records != nil {
		t.Fatalf("embedded data did not round-trip: %+v", data)
	}
	if p, _ := data.Summary.Levels[0].Metrics.Stat(metrics.KeyTTFT).Get(99); p.Value != 30 || p.Reliable() {
		t.Fatalf("embedded TTFT P99 %+v", p)
	}
}

// The configuration table reads the typed summary by summary.json's names, as summary.json
// writes the values: omitempty fields left out, null and empty values shown as such, numbers
// in JSON's form, lists of flat objects on one line, secret-looking names redacted.
func TestConfigRows(t *testing.T) {
	sum := &Summary{Schema: SchemaV2, Version: "v9", StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC), RunStartUnix: 1767323045.0000006,
		EndReason: EndCompleted, Target: NewTarget("http://h:1", "openai-chat", "m"), Percentiles: []float64{50, 99.9},
		Workload: rundesc.Workload{Dataset: "random", InputTokens: "256"},
		Load: rundesc.Load{Mode: rundesc.ModeRun, Levels: []rundesc.Level{{Concurrency: 1, Requests: 8}, {Rate: 2.5}}, Headers: []string{},
			ExtraBody: map[string]any{"tiny": 1e-7, "huge": 1e22, "client_secret": map[string]any{"a": 1.0}, "token": "", "auth_token": nil,
				"list": []any{map[string]any{"a": 1.0}, []any{true}}}},
		Levels: []Level{{Name: "x"}}, SweetSpot: &metrics.Pick{Reason: "r"},
	}
	rows, err := configRows(sum)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var keys []string
	for _, r := range rows {
		got[r.K] = r.V
		keys = append(keys, r.K)
	}
	for k, want := range map[string]string{
		"llmbench_version": "v9", "started_at": "2026-01-02T03:04:05.0000006Z", "run_start_unix": "1767323045.0000007", "seed": "0",
		"end_reason": "completed", "target.closes_connections": "false", "workload.tokenizer": "—", "workload.input_tokens": "256",
		"percentiles": "50, 99.9", "load.levels": "concurrency=1 requests=8; rate=2.5", "load.headers": "", "load.ignore_eos": "false",
		"load.extra_body.tiny": "1e-7", "load.extra_body.huge": "1e+22", "load.extra_body.client_secret": redacted,
		"load.extra_body.token": "—", "load.extra_body.auth_token": "null",
		"load.extra_body.list[0].a": "1", "load.extra_body.list[1]": "true",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	for _, k := range []string{"slo", "load.search", "load.keep_alive", "levels", "sweet_spot", "slo_limit", "load.extra_body.client_secret.a"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s shown: %q", k, got[k])
		}
	}
	if want := []string{"llmbench_version", "schema", "started_at", "run_start_unix", "end_reason", "seed", "target.api"}; !slices.Equal(keys[:len(want)], want) {
		t.Errorf("rows in order %v, want %v first", keys, want)
	}
	// A search has no planned ladder: null, as summary.json writes it.
	sum.Load = rundesc.Load{Search: "concurrency"}
	if rows, err = configRows(sum); err != nil || !slices.Contains(rows, kv{"load.levels", "null"}) || !slices.Contains(rows, kv{"load.search", "concurrency"}) {
		t.Errorf("search: %v %v", err, rows)
	}
}

// The page shows the figures the console prints, from the same typed summary: here each
// level's TTFT P50 in the ladder table and the console's "Median TTFT" line.
func TestHTMLShowsConsoleFigures(t *testing.T) {
	s := ladderSummary(t, "ttft<=300ms,tpot:p99<=20ms", []int{1, 4, 16})
	var con bytes.Buffer
	if err := Console(&con, s, ConsoleOptions{}); err != nil {
		t.Fatal(err)
	}
	medians := regexp.MustCompile(`Median TTFT \(ms\):\s+([0-9.]+)`).FindAllStringSubmatch(con.String(), -1)
	v, err := buildView(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(medians) != len(s.Levels) || len(v.Levels) != len(s.Levels) {
		t.Fatalf("%d console medians, %d page rows, %d levels", len(medians), len(v.Levels), len(s.Levels))
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, s, nil); err != nil {
		t.Fatal(err)
	}
	for i, row := range v.Levels {
		p, _ := s.Levels[i].Metrics.Stat(metrics.KeyTTFT).Get(50)
		if row.TTFT50.Text != fmtNum(p.Value) {
			t.Errorf("level %d: page TTFT P50 %s, summary %v", i, row.TTFT50.Text, p.Value)
		}
		c, err1 := strconv.ParseFloat(medians[i][1], 64)
		h, err2 := strconv.ParseFloat(row.TTFT50.Text, 64)
		if err1 != nil || err2 != nil || math.Abs(c-h) > 0.005+math.Abs(h)*5e-4 { // each rounded for print
			t.Errorf("level %d: console median TTFT %s, page %s", i, medians[i][1], row.TTFT50.Text)
		}
		if !strings.Contains(page.String(), ">"+row.TTFT50.Text+"</td>") {
			t.Errorf("level %d: the page lacks TTFT P50 %s", i, row.TTFT50.Text)
		}
	}
	if !v.HasSLO || !v.HasGoodput || v.Levels[0].Verdict.Text == "" {
		t.Errorf("verdict and goodput columns: %v %v %+v", v.HasSLO, v.HasGoodput, v.Levels[0])
	}
}

func TestSecretKeyNames(t *testing.T) {
	for _, k := range []string{"api_key", "apiKey", "API-KEY", "x-api-key", "Authorization", "cookie", "token", "openai_api_key", "client_secret", "password", "access_token"} {
		if !secretKey.MatchString(k) {
			t.Errorf("%q not treated as secret", k)
		}
	}
	for _, k := range []string{"output_tokens", "total_input_tokens", "input_tokens", "max_tokens", "output_tokens_source", "tokenizer", "model", "url", "peak_output_throughput"} {
		if secretKey.MatchString(k) {
			t.Errorf("%q wrongly treated as secret", k)
		}
	}
}

// Opening the page fetches nothing: every script and style is inline.
func TestWriteHTMLSelfContained(t *testing.T) {
	dir := t.TempDir()
	sum, recordsPath := writeSynthRun(t, dir, []int{1, 4}, 20)
	var b bytes.Buffer
	if err := writeHTMLRecords(&b, sum, recordsPath); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if m := regexp.MustCompile(`(?i)<(script|link|img|iframe|source|video|audio|embed|object)\b[^>]*\b(src|href|data)\s*=`).FindString(page); m != "" {
		t.Fatalf("the page references an external resource: %s", m)
	}
	// url(#id) names an element of the page itself (the charts' clip paths): it fetches nothing.
	for _, m := range regexp.MustCompile(`(?i)(url\(\s*['"]?[a-z#]*|@import)`).FindAllString(page, -1) {
		if !strings.HasSuffix(strings.ToLower(m), "data") && !strings.Contains(m, "#") {
			t.Fatalf("the page's CSS loads %q", m)
		}
	}
	// Every chart is inline SVG drawn on the server, the over-time ones and the request
	// anatomy too: there is no chart library to load.
	for _, want := range []string{`data-chart="anatomy-0"`, `data-chart="anatomy-1"`, `data-chart="overtime-tokens"`, `data-chart="overtime-requests"`, `data-chart="tradeoff-ttft"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks the chart %s", want)
		}
	}
	if strings.Contains(page, "uPlot") {
		t.Error("the page still carries uPlot")
	}
}

func TestWriteHTMLErrors(t *testing.T) {
	dir := t.TempDir()
	empty := []byte(`{"schema":"llmbench/summary/v2"}`)
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{}\n{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ records, want string }{
		{filepath.Join(dir, "missing.jsonl"), "missing.jsonl"},
		{bad, "bad.jsonl: line 1"},
	} {
		var b bytes.Buffer
		if err := writeHTMLRecords(&b, empty, tc.records); err == nil || !strings.Contains(err.Error(), tc.want) || b.Len() != 0 {
			t.Errorf("%s: err %v with %d bytes written, want one mentioning %q and none", tc.records, err, b.Len(), tc.want)
		}
	}
	// Figures JSON cannot carry fail the page, writing nothing.
	var b bytes.Buffer
	nan := &Summary{Levels: []Level{{Level: metrics.Level{RequestThroughput: math.NaN()}}}}
	if err := WriteHTML(&b, nan, nil); err == nil || !strings.Contains(err.Error(), "chart data") || b.Len() != 0 {
		t.Errorf("NaN throughput: err %v, %d bytes", err, b.Len())
	}
	if err := WriteHTML(&b, nil, nil); err == nil || b.Len() != 0 {
		t.Errorf("no summary: err %v, %d bytes", err, b.Len())
	}
	// A minimal summary with no levels and no records still renders.
	if err := WriteHTML(&b, &Summary{}, nil); err != nil || !strings.Contains(b.String(), "lists no levels") {
		t.Fatalf("empty summary: %v", err)
	}
}

func TestFmtNum(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{0, "0"}, {1234.56, "1235"}, {123.456, "123.5"}, {12.3456, "12.35"}, {1.23456, "1.235"}, {0.0123456, "0.01235"}, {math.NaN(), "—"}, {-5, "-5.000"}} {
		if got := fmtNum(c.in); got != c.want {
			t.Errorf("fmtNum(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

var benchRecords = flag.Int("prep-records", 100000, "records streamed by BenchmarkPrepareRecords")

// BenchmarkPrepareRecords streams a large run (4 levels, ~100 tokens a request) through
// prepareRecords without touching disk and reports the peak heap, which must stay flat as the
// run grows: go test ./internal/report -run ^$ -bench PrepareRecords -benchtime 1x -prep-records 1000000
func BenchmarkPrepareRecords(b *testing.B) {
	for range b.N {
		pr, pw := io.Pipe()
		go func() {
			bw := bufio.NewWriterSize(pw, 1<<16)
			var buf []byte
			rng := rand.New(rand.NewPCG(1, 1))
			for i := range *benchRecords {
				lvl := i * 4 / *benchRecords
				r := record.Record{Level: lvl, Index: i, Scheduled: time.Duration(i) * 250 * time.Microsecond}
				r.Sent = r.Scheduled + 100*time.Microsecond
				r.Events.Base = r.Sent
				t := r.Sent + time.Duration(20+rng.IntN(200))*time.Millisecond
				n := 50 + rng.IntN(100)
				for range n {
					r.Events.Append(t, 1)
					t += time.Duration(5000+rng.IntN(20000)) * time.Microsecond
				}
				r.Done, r.OutputTokens, r.OutputTokensSource = t, n, record.SourceUsage
				buf = append(record.AppendJSON(buf[:0], &r), '\n')
				bw.Write(buf)
			}
			bw.Flush()
			pw.Close()
		}()
		var peak uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
		start := time.Now()
		d, err := prepareRecords(pr)
		el := time.Since(start)
		close(stop)
		<-done
		if err != nil {
			b.Fatal(err)
		}
		page, _ := json.Marshal(d)
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(el.Microseconds())/float64(*benchRecords), "µs/record")
		b.ReportMetric(float64(len(page))/(1<<10), "data-KiB")
	}
}

// The client's read lag, kept on the level beside its metrics, gets its own table; without
// it (read-time stamps), no table.
func TestWriteHTMLReadLag(t *testing.T) {
	level := `{"name":"c=4","concurrency":4,"completed":3,"metrics":{"ttft_ms":{"count":3,"p50":12.5}}%s}`
	for _, c := range []struct {
		extra string
		want  bool
	}{
		{`,"read_lag_ms":{"count":3,"mean":0.75,"min":0.1,"max":2.25,"p50":0.5,"p99":2.2}`, true},
		{`,"read_lag_ms":null`, false},
		{``, false},
	} {
		sum := `{"schema":"llmbench/summary/v1","levels":[` + fmt.Sprintf(level, c.extra) + `]}`
		var b bytes.Buffer
		if err := writeHTMLRecords(&b, []byte(sum), ""); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		if got := strings.Contains(page, "Client read lag"); got != c.want {
			t.Errorf("%q: read lag table %v, want %v", c.extra, got, c.want)
		}
		if c.want && !strings.Contains(page, "2.25") {
			t.Errorf("the read lag table lacks its max")
		}
	}
}

// jsonFloat writes numbers as encoding/json does, so the configuration table shows them as
// summary.json holds them.
func TestJSONFloatAsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fs := []float64{0, -0.5, 1e-6, 9.99e-7, 1e21, 9.99e20, 1e22, -1e-7, 123456789.123, math.MaxFloat64, math.SmallestNonzeroFloat64}
	for range 2000 {
		fs = append(fs, math.Float64frombits(rng.Uint64()))
	}
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonFloat(f, 64); got != string(want) {
			t.Errorf("jsonFloat(%v) = %s, encoding/json %s", f, got, want)
		}
		want32, err := json.Marshal(float32(f))
		if err != nil {
			continue // out of float32's range
		}
		if got := jsonFloat(float64(float32(f)), 32); got != string(want32) {
			t.Errorf("jsonFloat(float32 %v) = %s, encoding/json %s", float32(f), got, want32)
		}
	}
}

// The SLO limit card shows only when SLO verdict terms were given: without them no level
// can be the limit, and "no level meets the SLOs" would be wrong.
func TestSLOLimitCardOnlyWithVerdicts(t *testing.T) {
	for _, c := range []struct {
		slo  string
		want bool
	}{{"", false}, {"ttft<=300ms", false}, {"tpot:p99<=20ms", true}} {
		v, err := buildView(ladderSummary(t, c.slo, []int{1, 4}), nil)
		if err != nil {
			t.Fatal(err)
		}
		has := false
		for _, cd := range v.Cards {
			has = has || cd.Label == "SLO limit"
		}
		if has != c.want {
			t.Errorf("--slo %q: SLO limit card %v, want %v", c.slo, has, c.want)
		}
	}
}

// report.html lists each level's failures by kind and status with the first message and
// what to do, as the console and summary.json do.
func TestHTMLFailures(t *testing.T) {
	s := ladderSummary(t, "", []int{4, 64}) // level 1 (c=64) fails some requests
	var page bytes.Buffer
	if err := WriteHTML(&page, s, nil); err != nil {
		t.Fatal(err)
	}
	d := s.Levels[1].ErrorDetails
	if len(d) == 0 {
		t.Fatal("the fixture has no failures")
	}
	for _, want := range []string{`<section id="failures">`, ">" + strconv.Itoa(d[0].Count) + "<", d[0].Kind} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	page.Reset()
	WriteHTML(&page, ladderSummary(t, "", []int{4}), nil)
	if strings.Contains(page.String(), `id="failures"`) {
		t.Error("a run without failures has a failures section")
	}
}

// A priced run's page shows each level's cost as the console prints it, in the ladder and a
// section of its own, and the picks' cost on their cards; an unpriced run's shows none.
func TestHTMLCost(t *testing.T) {
	s := ladderSummary(t, "ttft<=300ms,tpot:p90<=20ms", []int{1, 4, 16}) // a P90 its 60 requests decide
	s.Price = &metrics.Price{GPU: &metrics.GPUPrice{USDPerGPUHour: 3.5, GPUs: 1}, Source: "--gpu-price"}
	s.Judge()
	var con, page bytes.Buffer
	Console(&con, s, ConsoleOptions{})
	if err := WriteHTML(&page, s, nil); err != nil {
		t.Fatal(err)
	}
	printed := regexp.MustCompile(`Cost per 1M output tokens:\s+(\S+)`).FindAllStringSubmatch(con.String(), -1)
	good := regexp.MustCompile(`Cost per 1M good output tokens:\s+(\S+)`).FindAllStringSubmatch(con.String(), -1)
	if len(printed) != len(s.Levels) || len(good) != len(s.Levels) {
		t.Fatalf("%d console costs for %d levels", len(printed), len(s.Levels))
	}
	html := page.String()
	for i := range s.Levels {
		for _, want := range []string{"<td>" + printed[i][1] + "</td>", "<td>" + good[i][1] + "</td>"} {
			if !strings.Contains(html, want) {
				t.Errorf("level %d: the page lacks %s", i, want)
			}
		}
	}
	for _, want := range []string{`<section id="cost">`, "USD / 1M out", "1 GPU at 3.500 USD per GPU-hour (--gpu-price)",
		"· " + fmtNum(*s.SweetSpot.Cost.PerMillionOutputTokens) + " USD per 1M output tokens"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	page.Reset()
	WriteHTML(&page, ladderSummary(t, "", []int{4}), nil)
	if strings.Contains(page.String(), `id="cost"`) || strings.Contains(page.String(), "USD / 1M out") {
		t.Error("an unpriced run's page shows a cost")
	}
}

// A balanced level's endpoints and a staged level's stages get a row each on the page,
// with the figures the summary holds for them.
func TestHTMLShowsEndpointsAndStages(t *testing.T) {
	s := ladderSummary(t, "tpot:p99<=20ms", []int{1, 4})
	s.Levels[0].Endpoints = []Endpoint{{Endpoint: 1, URL: "http://a:8000", Level: s.Levels[0].Level}, {Endpoint: 2, URL: "http://b:8000", Level: s.Levels[0].Level}}
	st, err := schedule.ParseStages("30s:1,30s:1->4")
	if err != nil {
		t.Fatal(err)
	}
	s.Levels[1].Stages = StagesOf(st)
	for k := range s.Levels[1].Stages {
		s.Levels[1].Stages[k].Level = s.Levels[1].Level
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, s, nil); err != nil {
		t.Fatal(err)
	}
	p, _ := s.Levels[1].Metrics.Stat(metrics.KeyTTFT).Get(50)
	for _, want := range []string{`id="parts"`, "endpoint 1: http://a:8000", "endpoint 2: http://b:8000", "stage 1: 1/s, 0s-30s", "stage 2: 1→4/s, 30s-60s", ">ramp</td>", ">" + fmtNum(p.Value) + "</td>"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	page.Reset()
	s.Levels[0].Endpoints, s.Levels[1].Stages = nil, nil
	if err := WriteHTML(&page, s, nil); err != nil || strings.Contains(page.String(), `id="parts"`) {
		t.Errorf("a run with neither has the section (err %v)", err)
	}
}
