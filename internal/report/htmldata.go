package report

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// Limits that keep the report's memory bounded whatever the size of the run: bounded
// buckets over time (the per-level sample and distributions are the aggregation's).
const (
	// maxCollectBuckets bounds the over-time arrays while reading; the width coarsens past it.
	maxCollectBuckets = 20000
	// maxShownBuckets bounds the points of the over-time chart.
	maxShownBuckets = 3000
)

// bucketWidths is the ladder of over-time bucket widths (s); each divides the next, so
// buckets merge exactly when the run outgrows a width.
var bucketWidths = []float64{0.1, 1, 10, 60, 600, 3600}

// cdfGrid holds the cumulative fractions at which the CDF charts are sampled: dense in the
// body, denser in the tail where latency SLOs live.
var cdfGrid = func() []float64 {
	var q []float64
	for i := 0; i <= 196; i++ { // 0 .. 0.98 step 0.005
		q = append(q, float64(i)/200)
	}
	for i := 981; i <= 999; i++ {
		q = append(q, float64(i)/1000)
	}
	for i := 9991; i <= 9999; i++ {
		q = append(q, float64(i)/10000)
	}
	return append(q, 1)
}()

// cdfMetrics are the registry's metrics drawn as CDFs, in display order.
var cdfMetrics = func() []*metrics.Metric {
	var out []*metrics.Metric
	for _, m := range metrics.Registry {
		if m.CDF {
			out = append(out, m)
		}
	}
	return out
}()

// Charts is what the page's per-request charts need: per level the aggregation's
// distributions and sample of requests, and run-wide series over time (Collector).
type Charts struct {
	Levels   []*levelData `json:"levels"`
	CDFGrid  []float64    `json:"cdf_q"`
	OverTime *overTime    `json:"over_time"`
	Notes    []string     `json:"notes,omitempty"` // problems worth telling the reader
	Records  int          `json:"records"`
}

// levelData is one level's per-request view.
type levelData struct {
	Level    int     `json:"level"`
	Requests int     `json:"requests"` // every record of the level, warm-up included
	Measured int     `json:"measured"` // not warm-up / cool-down
	OK       int     `json:"ok"`       // measured and successful
	Failed   int     `json:"failed"`   // measured, failed (not canceled)
	Start    float64 `json:"start_s"`  // first scheduled/sent of the level
	End      float64 `json:"end_s"`    // last done of the level
	// Sample holds up to metrics.SampleSize requests, ordered by sent time.
	Sample []sampleReq `json:"sample"`
	// CDF maps a metric (ttft_ms, tpot_ms, itl_ms) to its values at cdfGrid.
	CDF map[string]*cdfData `json:"cdf"`
}

// cdfData is one distribution sampled at cdfGrid.
type cdfData struct {
	N      uint64    `json:"n"` // samples (ITL: tokens)
	Values []float64 `json:"v"` // ms at each cdfGrid fraction
}

// sampleReq is one request of a timeline sample. It marshals as a compact array:
// [index, scheduled_s, sent_s, first_token_s|null, last_token_s|null, done_s, output_tokens,
// warmup (0/1), error kind|null], then, only when the request's HTTP phases were measured,
// [dns_s, connect_s, tls_s, write_s, headers_s] with null for a phase not measured.
type sampleReq metrics.SampledRequest

func (s sampleReq) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	b = strconv.AppendInt(b, int64(s.Index), 10)
	sec := func(d time.Duration) {
		b = append(b, ',')
		b = strconv.AppendFloat(b, d.Seconds(), 'f', -1, 64)
	}
	sec(s.Scheduled)
	sec(s.Sent)
	if s.HasTokens {
		sec(s.First)
		sec(s.Last)
	} else {
		b = append(b, ",null,null"...)
	}
	sec(s.Done)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(s.OutputTokens), 10)
	if s.Warmup {
		b = append(b, ",1,"...)
	} else {
		b = append(b, ",0,"...)
	}
	if s.ErrKind == "" {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendQuote(b, s.ErrKind) // kinds are short ASCII identifiers
	}
	if p := s.Phases; p != nil {
		b = append(b, ",["...)
		for i, ph := range []struct {
			has record.PhaseSet
			d   time.Duration
		}{{record.PhaseDNS, p.DNS}, {record.PhaseConnect, p.Connect}, {record.PhaseTLS, p.TLS}, {record.PhaseWrite, p.Write}, {record.PhaseHeaders, p.Headers}} {
			if i > 0 {
				b = append(b, ',')
			}
			if p.Has&ph.has == 0 {
				b = append(b, "null"...)
				continue
			}
			b = strconv.AppendFloat(b, ph.d.Seconds(), 'f', -1, 64)
		}
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

// overTime holds whole-run series in fixed-width buckets starting at t = 0.
type overTime struct {
	WidthS     float64   `json:"width_s"`
	Tokens     []float64 `json:"output_tokens_per_s"` // output tokens per second
	InFlight   []float64 `json:"in_flight"`           // time-averaged in-flight requests
	FailedPerS []float64 `json:"failed_per_s"`        // failed requests (by done time) per second
}

// Collector gathers a run's figures from its records, one record at a time and each
// once: a metrics.Aggregator per level, and the run-wide series over time for
// report.html. run, simulate, report and merge all feed one, so the page and the summary
// come from the same aggregation. Memory is bounded independently of the number of
// records (metrics.Aggregator). Not safe for concurrent use.
type Collector struct {
	cfg    metrics.Config
	levels map[int]*metrics.Aggregator
	vllm   map[int]*VLLMRequests               // per level, with KeepVLLMRequests
	runs   map[int]map[int]*metrics.Aggregator // a repeated level's runs, by level and repeat
	ends   map[int]map[int]*metrics.Aggregator // a balanced run's endpoints, by level and endpoint
	stages map[int]map[int]*metrics.Aggregator // a staged level's stages, by level and stage
	spans  map[int][]span                      // a staged level's requests, for its backlog (stages.go)
	ot     *bucketer
	n      int
	notes  []string
	cache  map[int]*cacheCount // per level: prefix-cache hits (cachehits.go)
	// SharedPrefix is the prompt tokens every request shares (the workload's shared
	// prefix, --prefix-tokens, and the chat template's own), which a prompt cache serving
	// is no hit; set before Add.
	SharedPrefix int
}

// NewCollector starts collecting with cfg for every level.
func NewCollector(cfg metrics.Config) *Collector {
	return &Collector{cfg: cfg, levels: map[int]*metrics.Aggregator{}, runs: map[int]map[int]*metrics.Aggregator{},
		ends: map[int]map[int]*metrics.Aggregator{}, stages: map[int]map[int]*metrics.Aggregator{}, spans: map[int][]span{}, ot: newBucketer()}
}

// KeepVLLMRequests has the collector keep every level's requests for vLLM's per-request
// arrays (--result-format vllm): memory then grows with the requests.
func (c *Collector) KeepVLLMRequests() { c.vllm = map[int]*VLLMRequests{} }

// VLLMRequests are level i's requests, with KeepVLLMRequests; nil otherwise.
func (c *Collector) VLLMRequests(i int) *VLLMRequests {
	if c.vllm == nil {
		return nil
	}
	if c.vllm[i] == nil {
		c.vllm[i] = &VLLMRequests{}
	}
	return c.vllm[i]
}

// Add takes one record of any level.
func (c *Collector) Add(r *record.Record) {
	c.n++
	if c.vllm != nil {
		c.VLLMRequests(r.Level).Add(r)
	}
	a := c.levels[r.Level]
	if a == nil {
		a = metrics.NewAggregator(c.cfg)
		c.levels[r.Level] = a
	}
	a.Add(r)
	c.countCache(r)
	if r.Repeat > 0 { // a repeated level: each run's figures too
		c.part(c.runs, r.Level, int(r.Repeat)).Add(r)
	}
	if r.Endpoint > 0 { // a balanced run: each endpoint's figures too
		c.part(c.ends, r.Level, int(r.Endpoint)).Add(r)
	}
	if r.Stage > 0 { // a staged level: each stage's figures too
		c.part(c.stages, r.Level, int(r.Stage)).Add(r)
		c.spans[r.Level] = append(c.spans[r.Level], span{stage: r.Stage, scheduled: r.Scheduled, done: r.Done})
	}
	// Over time: what the server saw, warm-up included.
	if r.Error == nil || r.Sent > 0 { // a zero Sent with an error: never sent
		c.ot.addInterval(r.Sent, r.Done)
	}
	r.Events.Each(func(_ int, t time.Duration, n int) { c.ot.addTokens(t, n) })
	if r.Error != nil && r.Error.Kind != record.KindCanceled {
		c.ot.addFailure(r.Done)
	}
}

// part is the aggregator of level's part k in parts (its runs, its endpoints), made on first use.
func (c *Collector) part(parts map[int]map[int]*metrics.Aggregator, level, k int) *metrics.Aggregator {
	byK := parts[level]
	if byK == nil {
		byK = map[int]*metrics.Aggregator{}
		parts[level] = byK
	}
	a := byK[k]
	if a == nil {
		a = metrics.NewAggregator(c.cfg)
		byK[k] = a
	}
	return a
}

// Note records a problem worth telling the page's reader (a truncated records.jsonl).
func (c *Collector) Note(s string) { c.notes = append(c.notes, s) }

// Notes are the problems noted so far.
func (c *Collector) Notes() []string { return c.notes }

// Indices are the levels that have records, in order.
func (c *Collector) Indices() []int {
	out := make([]int, 0, len(c.levels))
	for i := range c.levels {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// Level returns level i's figures (those of no records when it has none); a repeated
// level's pool every run's requests and carry each run's figures and those across runs.
func (c *Collector) Level(i int) metrics.Level {
	a := c.levels[i]
	if a == nil {
		return metrics.NewAggregator(c.cfg).Level()
	}
	if len(c.stages[i]) > 0 {
		a.Varies(levelVaries)
		for _, r := range c.runs[i] {
			r.Varies(levelVaries)
		}
	}
	lv := a.Level()
	if byRun := c.runs[i]; len(byRun) > 0 {
		reps := make([]int, 0, len(byRun))
		for r := range byRun {
			reps = append(reps, r)
		}
		sort.Ints(reps)
		for _, r := range reps {
			lv.Runs = append(lv.Runs, byRun[r].Level())
		}
		lv.AcrossRuns = metrics.Across(lv.Runs)
	}
	return lv
}

// Endpoints are level i's figures by endpoint of a balanced run (urls: the run's, in
// --url order), every endpoint of urls listed whether or not it got a request; nil for a
// run of one endpoint.
func (c *Collector) Endpoints(i int, urls []string) []Endpoint {
	if len(urls) < 2 {
		return nil
	}
	out := make([]Endpoint, len(urls))
	for k, u := range urls {
		out[k] = Endpoint{Endpoint: k + 1, URL: u}
		if a := c.ends[i][k+1]; a != nil {
			out[k].Level = a.Level()
		} else {
			out[k].Level = metrics.NewAggregator(c.cfg).Level()
		}
	}
	return out
}

// Charts builds report.html's per-request data from the summary's levels (whose figures
// came from this collector's Level) and the series over time.
func (c *Collector) Charts(sum *Summary) *Charts {
	out := &Charts{CDFGrid: cdfGrid, OverTime: c.ot.finish(), Notes: c.notes, Records: c.n}
	for i := range sum.Levels {
		lv := &sum.Levels[i].Level
		an := lv.Anatomy
		if an == nil || an.Requests == 0 {
			continue
		}
		ld := &levelData{Level: i, Requests: an.Requests, Measured: an.Measured, OK: an.OK, Failed: an.Failed,
			Start: an.Start.Seconds(), End: an.End.Seconds(), CDF: map[string]*cdfData{}}
		for _, s := range an.Sample {
			ld.Sample = append(ld.Sample, sampleReq(s))
		}
		for _, m := range cdfMetrics {
			q := lv.Dists[m.Key]
			if q.Count() == 0 {
				continue
			}
			cd := &cdfData{N: q.Count(), Values: make([]float64, len(cdfGrid))}
			for j, f := range cdfGrid {
				v, _ := q.Percentile(f * 100)
				cd.Values[j] = roundSig(v)
			}
			ld.CDF[m.JSON] = cd
		}
		out.Levels = append(out.Levels, ld)
	}
	return out
}

// roundSig keeps 7 significant digits: far below what a chart shows, and it keeps the page small.
func roundSig(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 7, 64), 64)
	return f
}

// bucketer accumulates whole-run series in buckets of a width from bucketWidths, coarsening
// when the run outgrows maxCollectBuckets. In-flight time is kept as exact per-bucket areas
// with an O(1) update per request: partial buckets at both ends directly, whole buckets in a
// difference array that is integrated on coarsening and at the end.
type bucketer struct {
	wi      int // index in bucketWidths
	tokens  []float64
	failed  []float64
	area    []float64 // request-seconds in the bucket from partial coverage
	diff    []float64 // +1 at the first fully covered bucket, -1 after the last
	maxTime time.Duration
}

func newBucketer() *bucketer { return &bucketer{} }

func (b *bucketer) width() time.Duration {
	return time.Duration(bucketWidths[b.wi] * float64(time.Second))
}

// fit makes bucket i addressable for time t, coarsening as needed; it returns t's bucket.
func (b *bucketer) fit(t time.Duration) int {
	if t < 0 {
		t = 0
	}
	b.maxTime = max(b.maxTime, t)
	i := int(t / b.width())
	for i >= maxCollectBuckets && b.wi < len(bucketWidths)-1 {
		b.coarsen()
		i = int(t / b.width())
	}
	if i >= len(b.tokens) {
		n := i + 1
		b.tokens = grow(b.tokens, n)
		b.failed = grow(b.failed, n)
		b.area = grow(b.area, n)
		b.diff = grow(b.diff, n+1)
	}
	return i
}

func grow(s []float64, n int) []float64 {
	if n <= len(s) {
		return s
	}
	return append(s, make([]float64, n-len(s))...)
}

func (b *bucketer) integrate() {
	w := bucketWidths[b.wi]
	run := 0.0
	for i := range b.area {
		run += b.diff[i]
		b.area[i] += run * w
		b.diff[i] = 0
	}
	if len(b.diff) > len(b.area) {
		clear(b.diff[len(b.area):])
	}
}

func (b *bucketer) coarsen() {
	b.integrate()
	ratio := int(math.Round(bucketWidths[b.wi+1] / bucketWidths[b.wi]))
	merge := func(s []float64) []float64 {
		out := make([]float64, (len(s)+ratio-1)/ratio)
		for i, v := range s {
			out[i/ratio] += v
		}
		return out
	}
	b.tokens, b.failed, b.area = merge(b.tokens), merge(b.failed), merge(b.area)
	b.diff = make([]float64, len(b.area)+1)
	b.wi++
}

func (b *bucketer) addTokens(t time.Duration, n int) { b.tokens[b.fit(t)] += float64(n) }

func (b *bucketer) addFailure(t time.Duration) { b.failed[b.fit(t)]++ }

// addInterval adds one request in flight over [s, d).
func (b *bucketer) addInterval(s, d time.Duration) {
	if d <= s {
		return
	}
	b.fit(d) // first, so the width is final for both ends
	i, j := b.fit(s), b.fit(d)
	w := b.width()
	if i == j {
		b.area[i] += (d - s).Seconds()
		return
	}
	b.area[i] += (time.Duration(i+1)*w - s).Seconds()
	b.area[j] += (d - time.Duration(j)*w).Seconds()
	if j > i+1 {
		b.diff[i+1]++
		b.diff[j]--
	}
}

// finish integrates and picks the shown width: 1 s (what peak_output_throughput uses), finer
// for runs too short for it to draw a shape, coarser for long runs.
func (b *bucketer) finish() *overTime {
	b.integrate()
	span := b.maxTime.Seconds()
	target := 1
	for bucketWidths[target] > bucketWidths[0] && span/bucketWidths[target] < 60 && target > 0 {
		target--
	}
	for target < len(bucketWidths)-1 && span/bucketWidths[target] > maxShownBuckets {
		target++
	}
	for b.wi < target {
		b.coarsen()
		b.integrate()
	}
	w := bucketWidths[b.wi]
	ot := &overTime{WidthS: w}
	for i := range b.tokens {
		ot.Tokens = append(ot.Tokens, roundSig(b.tokens[i]/w))
		ot.InFlight = append(ot.InFlight, roundSig(b.area[i]/w))
		ot.FailedPerS = append(ot.FailedPerS, roundSig(b.failed[i]/w))
	}
	return ot
}
