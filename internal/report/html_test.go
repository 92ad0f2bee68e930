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
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
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
	sum := `{"schema":"llmbench/summary/v1","llmbench_version":"v1<b>","target":{"url":"http://h/?a=1&b=2","api":"openai-chat","model":` + jsonString(evil) + `,"api_key":"sk-SECRET-1"},
	 "headers":{"Authorization":"Bearer sk-SECRET-2","X-Trace":"ok"},"seed":18446744073709551615,
	 "levels":[{"name":` + jsonString(`<img src=x onerror=alert(2)>`) + `,"concurrency":4,"completed":3,"failed":1,"errors":{"http_status":1},"output_throughput":120.5,
	   "metrics":{"ttft_ms":{"count":3,"p50":12.5,"p99":30,"ci95":{"p50":[10,14],"p99":[20,null]}}}}],
	 "sweet_spot":{"index":0,"concurrency":4,"reason":"only <level>"},"slo_limit":null,"extra_field":{"nested":[1,2]}}`
	var b bytes.Buffer
	if err := WriteHTML(&b, []byte(sum), nil); err != nil {
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
	if n := strings.Count(page, "</script>"); n != 4 { // error hook, data, uPlot, report.js
		t.Errorf("%d </script> in the page, want 4", n)
	}
	for _, want := range []string{"&lt;/script&gt;&lt;script&gt;alert(1)", "&lt;img src=x onerror=alert(2)&gt;", "http://h/?a=1&amp;b=2", "18446744073709551615", "X-Trace", "extra_field.nested", "1, 2", `class="flag"`, "95% CI 10.00 – 14.00 ms", "http_status: 1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The embedded data decodes back to the summary's values.
	m := regexp.MustCompile(`(?s)<script type="application/json" id="llmbench-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data element")
	}
	var data struct {
		Summary struct {
			Target  map[string]string
			Headers map[string]string
			Levels  []struct{ Name string }
		}
		Records *Charts
	}
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	if data.Summary.Target["model"] != evil || data.Summary.Levels[0].Name != `<img src=x onerror=alert(2)>` || data.Records != nil {
		t.Fatalf("embedded data did not round-trip: %+v", data)
	}
	if data.Summary.Target["api_key"] != redacted || data.Summary.Headers["Authorization"] != redacted || data.Summary.Headers["X-Trace"] != "ok" {
		t.Fatalf("redaction: %+v", data.Summary)
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

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
	for _, m := range regexp.MustCompile(`(?i)(url\(\s*['"]?[a-z]*|@import)`).FindAllString(page, -1) {
		if !strings.HasSuffix(strings.ToLower(m), "data") {
			t.Fatalf("the page's CSS loads %q", m)
		}
	}
	if !strings.Contains(page, "uPlot") || len(page) < 50000 {
		t.Fatal("the chart library is not inlined")
	}
}

func TestWriteHTMLErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ summary, records, want string }{
		{`{`, "", "summary.json"},
		{`[1]`, "", "want a JSON object"},
		{`{"levels":{}}`, "", `"levels" must be a list`},
		{`{} {}`, "", "trailing data"},
		{`{}]`, "", "trailing data"},
		{`{}`, filepath.Join(dir, "missing.jsonl"), "missing.jsonl"},
	} {
		var b bytes.Buffer
		err := writeHTMLRecords(&b, []byte(tc.summary), tc.records)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one mentioning %q", tc.summary, err, tc.want)
		}
		if b.Len() != 0 {
			t.Errorf("%s: wrote %d bytes despite the error", tc.summary, b.Len())
		}
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{}\n{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeHTMLRecords(&bytes.Buffer{}, []byte(`{}`), bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("corrupt records: %v", err)
	}
	// A minimal summary with no levels and no records still renders.
	var b bytes.Buffer
	if err := WriteHTML(&b, []byte(`{}`), nil); err != nil || !strings.Contains(b.String(), "lists no levels") {
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
		if err := WriteHTML(&b, []byte(sum), nil); err != nil {
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
