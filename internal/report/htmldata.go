package report

import (
	"bufio"
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// Limits that keep the report's memory bounded whatever the size of the run: one pass over
// records.jsonl, a fixed-size sample per level, bounded quantile estimators, bounded buckets.
const (
	// timelineSample is how many requests per level the request-anatomy chart draws.
	timelineSample = 2000
	// maxCollectBuckets bounds the over-time arrays while reading; the width coarsens past it.
	maxCollectBuckets = 20000
	// maxShownBuckets bounds the points of the over-time chart.
	maxShownBuckets = 3000
	// sampleSeed makes the per-level timeline sample reproducible.
	sampleSeed = 0x6c6c6d62656e6368 // "llmbench"
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

// cdfMetrics are the per-level distributions drawn as CDFs, in display order.
var cdfMetrics = []string{"ttft_ms", "tpot_ms", "itl_ms"}

// recordData is what the page's per-request charts need, prepared from records.jsonl.
type recordData struct {
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
	// Sample holds up to timelineSample requests, ordered by sent time.
	Sample []sampleReq `json:"sample"`
	// CDF maps a metric (ttft_ms, tpot_ms, itl_ms) to its values at cdfGrid.
	CDF map[string]*cdfData `json:"cdf"`

	sampler *bottomK
	// q holds the exact distributions behind CDF, the same as summary.json's (metrics.Dist:
	// memory grows with distinct values, not samples).
	q map[string]*metrics.Dist
}

// cdfData is one distribution sampled at cdfGrid.
type cdfData struct {
	N      uint64    `json:"n"` // samples (ITL: tokens)
	Values []float64 `json:"v"` // ms at each cdfGrid fraction
}

// sampleReq is one request of a timeline sample. It marshals as a compact array:
// [index, scheduled_s, sent_s, first_token_s|null, last_token_s|null, done_s, output_tokens,
// warmup (0/1), error kind|null].
type sampleReq struct {
	Index        int
	Scheduled    time.Duration
	Sent         time.Duration
	First, Last  time.Duration
	HasTokens    bool
	Done         time.Duration
	OutputTokens int
	Warmup       bool
	ErrKind      string
	key          uint64 // sampling priority; smallest keys are kept
}

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
	return append(b, ']'), nil
}

// overTime holds whole-run series in fixed-width buckets starting at t = 0.
type overTime struct {
	WidthS     float64   `json:"width_s"`
	Tokens     []float64 `json:"output_tokens_per_s"` // output tokens per second
	InFlight   []float64 `json:"in_flight"`           // time-averaged in-flight requests
	FailedPerS []float64 `json:"failed_per_s"`        // failed requests (by done time) per second
}

// prepareRecords reads records.jsonl in one pass with memory bounded independently of the
// number of records. A truncated last line (a killed writer) is skipped and noted; any other
// undecodable line is an error naming it.
func prepareRecords(r io.Reader) (*recordData, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	p := newPreparer()
	var pending error // a bad line is fatal only when another line follows it
	lineNo := 0
	for {
		line, err := readLine(br)
		if len(line) > 0 || err == nil {
			lineNo++
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("records.jsonl: %w", err)
		}
		if b := bytes.TrimSpace(line); len(b) > 0 {
			if pending != nil {
				return nil, pending
			}
			var rec record.Record
			if derr := rec.UnmarshalJSON(b); derr != nil {
				pending = fmt.Errorf("records.jsonl line %d: %w", lineNo, derr)
				if errors.Is(err, io.EOF) && line[len(line)-1] != '\n' {
					// Unterminated last line: the writer was killed mid-line.
					p.notes = append(p.notes, fmt.Sprintf("records.jsonl: last line %d is truncated and was ignored", lineNo))
					pending = nil
				}
			} else {
				p.add(&rec)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if pending != nil {
		// A bad, newline-terminated last line is still a corrupt file, not a killed writer.
		return nil, pending
	}
	return p.finish(), nil
}

// readLine returns the next line including its '\n' (absent on the last line), of any length.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	buf := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		buf = append(buf, line...)
	}
	return buf, err
}

type preparer struct {
	levels map[int]*levelData
	ot     *bucketer
	notes  []string
	n      int
}

func newPreparer() *preparer {
	return &preparer{levels: map[int]*levelData{}, ot: newBucketer()}
}

func (p *preparer) level(i int) *levelData {
	lv := p.levels[i]
	if lv == nil {
		lv = &levelData{Level: i, Start: math.Inf(1), End: math.Inf(-1), sampler: &bottomK{k: timelineSample}, q: map[string]*metrics.Dist{}}
		for _, m := range cdfMetrics {
			lv.q[m] = metrics.NewDist()
		}
		p.levels[i] = lv
	}
	return lv
}

func (p *preparer) add(r *record.Record) {
	p.n++
	lv := p.level(r.Level)
	lv.Requests++
	sent := r.Error == nil || r.Sent > 0 // a zero Sent with an error: never sent
	start := r.Scheduled
	if sent && r.Sent < start {
		start = r.Sent
	}
	lv.Start = min(lv.Start, start.Seconds())
	lv.End = max(lv.End, r.Done.Seconds())

	s := sampleReq{
		Index: r.Index, Scheduled: r.Scheduled, Sent: r.Sent, Done: r.Done,
		OutputTokens: r.OutputTokens, Warmup: r.Warmup,
		key: splitmix(sampleSeed ^ uint64(r.Level)<<40 ^ uint64(r.Index)),
	}
	if !sent {
		s.Sent = r.Scheduled
	}
	if first, ok := r.FirstToken(); ok {
		s.First, s.HasTokens = first, true
		s.Last, _ = r.LastToken()
	}
	if r.Error != nil {
		s.ErrKind = r.Error.Kind
	}
	lv.sampler.offer(s)

	// Over time: what the server saw, warm-up included.
	if sent {
		p.ot.addInterval(r.Sent, r.Done)
	}
	r.Events.Each(func(_ int, t time.Duration, n int) { p.ot.addTokens(t, n) })
	if r.Error != nil && r.Error.Kind != record.KindCanceled {
		p.ot.addFailure(r.Done)
	}

	if r.Warmup {
		return
	}
	lv.Measured++
	if r.Error != nil {
		if r.Error.Kind != record.KindCanceled {
			lv.Failed++
		}
		return
	}
	lv.OK++
	// docs/design.md §2 definitions, in ms.
	first, ok := r.FirstToken()
	if !ok {
		return
	}
	lv.q["ttft_ms"].AddMicros(micros(first - r.Sent))
	last, _ := r.LastToken()
	n := r.OutputTokens
	if n <= 0 {
		n = r.Events.Tokens() // as metrics.Aggregate counts N
	}
	if n >= 2 {
		lv.q["tpot_ms"].AddRatio(micros(last-first), int64(n-1), 1)
	}
	prev := first
	r.Events.Each(func(i int, t time.Duration, n int) {
		if i > 0 {
			// A gap carrying n tokens is n ITL samples of gap/n.
			lv.q["itl_ms"].AddRatio(micros(t-prev), int64(n), uint64(n))
		}
		prev = t
	})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

func (p *preparer) finish() *recordData {
	out := &recordData{CDFGrid: cdfGrid, OverTime: p.ot.finish(), Notes: p.notes, Records: p.n}
	idx := make([]int, 0, len(p.levels))
	for i := range p.levels {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		lv := p.levels[i]
		lv.Sample = lv.sampler.sorted()
		lv.CDF = map[string]*cdfData{}
		for _, m := range cdfMetrics {
			q := lv.q[m]
			if q.Count() == 0 {
				continue
			}
			c := &cdfData{N: q.Count(), Values: make([]float64, len(cdfGrid))}
			for j, f := range cdfGrid {
				v, _ := q.Percentile(f * 100)
				c.Values[j] = roundSig(v)
			}
			lv.CDF[m] = c
		}
		lv.sampler, lv.q = nil, nil
		out.Levels = append(out.Levels, lv)
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

// splitmix is SplitMix64's finaliser: a well-mixed 64-bit hash, so the smallest keys form a
// uniform sample that depends only on (level, index), not on the order of the file.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// bottomK keeps the k offered items with the smallest keys (a max-heap on key).
type bottomK struct {
	k     int
	items []sampleReq
}

func (b *bottomK) Len() int           { return len(b.items) }
func (b *bottomK) Less(i, j int) bool { return b.items[i].key > b.items[j].key }
func (b *bottomK) Swap(i, j int)      { b.items[i], b.items[j] = b.items[j], b.items[i] }
func (b *bottomK) Push(x any)         { b.items = append(b.items, x.(sampleReq)) }
func (b *bottomK) Pop() any {
	x := b.items[len(b.items)-1]
	b.items = b.items[:len(b.items)-1]
	return x
}

func (b *bottomK) offer(s sampleReq) {
	if len(b.items) < b.k {
		heap.Push(b, s)
		return
	}
	if s.key < b.items[0].key {
		b.items[0] = s
		heap.Fix(b, 0)
	}
}

// sorted returns the sample in the order the timeline draws it: by sent time, then index.
func (b *bottomK) sorted() []sampleReq {
	out := slices.Clone(b.items)
	slices.SortFunc(out, func(x, y sampleReq) int {
		if x.Sent != y.Sent {
			if x.Sent < y.Sent {
				return -1
			}
			return 1
		}
		return x.Index - y.Index
	})
	return out
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
