package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// Keys of the registry's metrics, for the places that name one metric (the ladder table's
// columns, the vLLM keys); lists of metrics come from Registry, never from literals.
const (
	KeyTTFT             = "ttft"
	KeyTPOT             = "tpot"
	KeyITL              = "itl"
	KeyChunkGap         = "chunk_gap"
	KeyE2EL             = "e2el"
	KeyScheduleLag      = "schedule_lag"
	KeyTTFTFromSchedule = "ttft_from_schedule"
	KeyE2ELFromSchedule = "e2el_from_schedule"
	KeyDNS              = "dns"
	KeyConnect          = "connect"
	KeyTLS              = "tls"
	KeyWrite            = "write"
	KeyHeaders          = "headers"
	KeyFirstContent     = "first_content"
	KeyReadLag          = "read_lag"
	KeyFirstToolCall    = "first_tool_call"
)

// Scope says which of a level's measured records a metric is derived from.
type Scope int

const (
	// ScopeCompleted: completed requests only (every latency figure, docs/design.md §2).
	ScopeCompleted Scope = iota
	// ScopeSent: every measured request that was sent, failed ones included.
	ScopeSent
)

// FigureKind says which way a figure improves, so verdicts (compare's regressions) follow
// from the figure's kind, never from its display name.
type FigureKind int

const (
	// KindLatency: lower is better. Every registry metric is one (the zero value).
	KindLatency FigureKind = iota
	// KindThroughput: higher is better (requests, tokens or good requests per second).
	KindThroughput
	// KindCount: a tally (failed requests), shown without a verdict.
	KindCount
)

// Metric is one per-request metric: its names, and how it is derived from a record. Every
// figure of it — summary.json, summary.csv, the console, vllm.json, report.html, compare,
// merge, SLOs — comes from this one entry. To add a metric, add an entry to Registry (see
// docs/architecture.md, "Where to add a metric").
type Metric struct {
	Key   string // "ttft": Dists, SLO terms (ttft<=500ms), compare
	JSON  string // "ttft_ms": summary.json key and CSV column prefix (without "_ms")
	Title string // the console section: "Time to First Token"
	Short string // short label: "TTFT" (console lines, compare, charts)
	// Description titles the metric's table on report.html.
	Description string
	Unit        string // "ms"

	// Optional metrics are absent from summary.json, the CSV's values and the console when
	// no record gave a sample (HTTP phases are measured only by some clients); the others
	// are always present, with count 0 and null figures when empty.
	Optional bool
	// PerToken metrics give a sample per token or per chunk, hundreds per request (ITL,
	// chunk gap): they are not kept per time bucket (window.go), which would cost their
	// distinct values in every bucket. So their intervals stay order-statistics ones
	// (batch.go) and a steady state's figures leave them out.
	PerToken bool
	// Present, when set, makes an Optional metric present only if it holds for some record
	// of its scope (besides having samples).
	Present func(r *record.Record) bool
	// OnLevel metrics are kept on the level (levels[i].read_lag_ms), not under "metrics".
	OnLevel bool
	// Streamed metrics time a stream's token events: a record without a stream
	// (record.Record.Unstreamed: --stream=false, embeddings, rerank) gives no sample, and a
	// level none of whose requests streamed has none of them (absent, not zero).
	Streamed bool
	Scope    Scope
	// Headline metrics are the console's default sections and summary.csv's leading
	// columns; the others are console sections under --verbose (or, when Optional, a
	// block of their own) and CSV columns after the original ones.
	Headline bool
	// Primary metrics lead report.html's tables and are compared by llmbench compare.
	Primary bool
	// Kind is the way the metric improves; the zero value, KindLatency, fits them all today.
	Kind FigureKind
	// CDF metrics are drawn as distributions on report.html, CDFAxis naming the x axis
	// (default: "Short (Unit)").
	CDF     bool
	CDFAxis string
	// Bound metrics may carry a per-request SLO bound (ttft<=500ms): a request meets it
	// when every one of its samples is within the bound.
	Bound bool
	// VLLM is the key vLLM's result JSON uses for this metric ("itl" for our chunk gap);
	// empty when vLLM has none.
	VLLM string

	// Samples derives the metric from one record of its scope: it calls add for each
	// sample, num/den microseconds (den >= 1, not necessarily reduced) weighing weight
	// samples, in event order. It is the only derivation of the metric anywhere.
	Samples func(r *record.Record, add func(num, den int64, weight uint64))

	index int // in Registry
}

// Registry is every per-request metric, in summary.json order.
var Registry = []*Metric{
	{Key: KeyTTFT, Title: "Time to First Token", Short: "TTFT", Description: "TTFT: time to first token",
		Headline: true, Primary: true, CDF: true, Bound: true, VLLM: "ttft", Streamed: true,
		Samples: tokenSince(false, sentAt)},
	{Key: KeyTPOT, Title: "Time per Output Token (excl. 1st token)", Short: "TPOT", Description: "TPOT: time per output token",
		Headline: true, Primary: true, CDF: true, Bound: true, VLLM: "tpot", Streamed: true,
		// (last - first) / (N - 1), only when N >= 2: one-token outputs have none.
		Samples: func(r *record.Record, add func(int64, int64, uint64)) {
			if f, l, ok := tokenSpan(r); ok {
				if n := outputTokensOf(r); n >= 2 {
					add(l-f, int64(n-1), 1)
				}
			}
		}},
	{Key: KeyITL, PerToken: true, Title: "Inter-token Latency", Short: "ITL", Description: "ITL: inter-token latency (per token)",
		Headline: true, Primary: true, CDF: true, CDFAxis: "ITL (ms, per token)", Bound: true, Streamed: true,
		// A gap g ending in an event of k tokens is k samples of g/k: a request's samples
		// sum to last - first.
		Samples: func(r *record.Record, add func(int64, int64, uint64)) {
			r.Events.EachGap(func(g int64, k int) { add(g, int64(k), uint64(k)) })
		}},
	{Key: KeyChunkGap, PerToken: true, Title: "Chunk Gap (raw inter-event)", Short: "chunk gap", Description: "Chunk gap: raw gap between stream events",
		Bound: true, VLLM: "itl", Streamed: true,
		Samples: func(r *record.Record, add func(int64, int64, uint64)) {
			r.Events.EachGap(func(g int64, _ int) { add(g, 1, 1) })
		}},
	{Key: KeyE2EL, Title: "End-to-end Latency", Short: "E2EL", Description: "E2EL: end-to-end latency",
		Headline: true, Primary: true, Bound: true, VLLM: "e2el",
		Samples: tokenSince(true, sentAt)},
	{Key: KeyScheduleLag, Title: "Schedule Lag", Short: "lag", Description: "Schedule lag: sent minus scheduled",
		Headline: true,
		Samples: func(r *record.Record, add func(int64, int64, uint64)) {
			add(us(r.Sent)-us(r.Scheduled), 1, 1)
		}},
	{Key: KeyTTFTFromSchedule, Title: "TTFT from Schedule", Short: "TTFT sched", Description: "TTFT from schedule",
		Bound: true, Streamed: true, Samples: tokenSince(false, scheduledAt)},
	{Key: KeyE2ELFromSchedule, Title: "E2EL from Schedule", Short: "E2EL sched", Description: "E2EL from schedule",
		Bound: true, Samples: tokenSince(true, scheduledAt)},
	phase(KeyDNS, "DNS", "DNS: name resolution (new connections)", record.PhaseDNS, func(p *record.Phases) time.Duration { return p.DNS }),
	phase(KeyConnect, "Connect", "Connect: TCP connect (new connections)", record.PhaseConnect, func(p *record.Phases) time.Duration { return p.Connect }),
	phase(KeyTLS, "TLS", "TLS: handshake (new connections)", record.PhaseTLS, func(p *record.Phases) time.Duration { return p.TLS }),
	phase(KeyWrite, "Write", "Write: sent to the whole request written", record.PhaseWrite, func(p *record.Phases) time.Duration { return p.Write }),
	phase(KeyHeaders, "Headers", "Headers: request written to the response's first byte", record.PhaseHeaders, func(p *record.Phases) time.Duration { return p.Headers }),
	{Key: KeyFirstContent, Title: "Time to First Content Token", Short: "TTFC",
		Description: "Time to first content token: the first answer text after any reasoning (reasoning models)",
		Optional:    true, OnLevel: true,
		// first_content - sent, over the same requests as TTFT: a request whose first token
		// was already content counts with its TTFT. Given only when some request's first
		// content came after its first token.
		Samples: func(r *record.Record, add func(int64, int64, uint64)) {
			if ft, ok := r.FirstToken(); ok {
				add(us(max(r.FirstContent, ft))-us(r.Sent), 1, 1)
			}
		},
		Present: func(r *record.Record) bool {
			ft, ok := r.FirstToken()
			return ok && r.FirstContent > ft
		}},
	{Key: KeyFirstToolCall, Title: "Time to First Tool-Call Token", Short: "TTFT tool",
		Description: "Time to first tool-call token: the first function name or argument text of an answer that called a tool",
		Optional:    true, Streamed: true, Bound: true,
		// first_tool_call - sent, over the completed requests answered with a tool call
		// (TTFT is the first output token of either kind: equal to this when the call came
		// first, earlier when text preceded it).
		Samples: func(r *record.Record, add func(int64, int64, uint64)) {
			if r.ToolCallTokens > 0 {
				add(us(r.FirstToolCall)-us(r.Sent), 1, 1)
			}
		}},
	{Key: KeyReadLag, Title: "Client Read Lag (longest per request)", Short: "read lag",
		Description: "Client read lag: longest wait of arrived bytes for the client, per request (kept out of the figures above by kernel stamps)",
		Optional:    true, OnLevel: true, Scope: ScopeSent,
		// The client's own lateness, failed requests included: only kernel-stamped
		// records have one.
		Samples: func(r *record.Record, add func(int64, int64, uint64)) {
			if r.KernelStamps {
				add(us(r.ReadLag), 1, 1)
			}
		}},
}

// phase is the registry entry of one HTTP phase: measured only where the record says so.
func phase(key, short, desc string, has record.PhaseSet, get func(*record.Phases) time.Duration) *Metric {
	return &Metric{Key: key, Title: "HTTP phase: " + short, Short: short, Description: desc, Optional: true,
		Samples: func(r *record.Record, add func(int64, int64, uint64)) {
			if p := r.Phases; p != nil && p.Has&has != 0 {
				add(us(get(p)), 1, 1)
			}
		}}
}

// mayBeAbsent says a level may lack the metric: an Optional one nobody measured, a
// Streamed one of a level without streams.
func (m *Metric) mayBeAbsent() bool { return m.Optional || m.Streamed }

// PhaseKeys are the HTTP phases' metrics in the order they happen.
var PhaseKeys = []string{KeyDNS, KeyConnect, KeyTLS, KeyWrite, KeyHeaders}

func init() {
	for i, m := range Registry {
		if m.JSON == "" {
			m.JSON = m.Key + "_ms"
		}
		if m.Unit == "" {
			m.Unit = "ms"
		}
		if m.CDFAxis == "" {
			m.CDFAxis = m.Short + " (" + m.Unit + ")"
		}
		m.index = i
		if m.Streamed {
			samples := m.Samples
			m.Samples = func(r *record.Record, add func(int64, int64, uint64)) {
				if !r.Unstreamed {
					samples(r, add)
				}
			}
		}
		if _, dup := registryIndex[m.Key]; dup {
			panic("metrics: registry key " + m.Key + " twice")
		}
		registryIndex[m.Key] = m
	}
}

var registryIndex = map[string]*Metric{}

// Lookup returns the registry's metric of a key ("ttft"); a JSON name ("ttft_ms") works too.
func Lookup(key string) (*Metric, bool) {
	m, ok := registryIndex[key]
	if !ok && len(key) > 3 && key[len(key)-3:] == "_ms" {
		m, ok = registryIndex[key[:len(key)-3]]
	}
	return m, ok
}

// MetricNames are the keys of the metrics kept under levels[i].metrics, in report order.
var MetricNames = func() []string {
	var out []string
	for _, m := range Registry {
		if !m.OnLevel {
			out = append(out, m.Key)
		}
	}
	return out
}()

// tokenSince derives the first (or last) token's arrival minus an instant of the request.
// The last token of a response without a stream is its end, done.
func tokenSince(last bool, from func(*record.Record) time.Duration) func(*record.Record, func(int64, int64, uint64)) {
	return func(r *record.Record, add func(int64, int64, uint64)) {
		if last && r.Unstreamed {
			add(us(r.Done)-us(from(r)), 1, 1)
			return
		}
		if f, l, ok := tokenSpan(r); ok {
			if last {
				f = l
			}
			add(f-us(from(r)), 1, 1)
		}
	}
}

func sentAt(r *record.Record) time.Duration      { return r.Sent }
func scheduledAt(r *record.Record) time.Duration { return r.Scheduled }

// tokenSpan is a record's first and last token arrival, whole µs.
func tokenSpan(r *record.Record) (first, last int64, ok bool) {
	ft, ok := r.FirstToken()
	if !ok {
		return 0, 0, false
	}
	lt, _ := r.LastToken()
	return us(ft), us(lt), true
}

// Metrics holds the statistics of each metric under levels[i].metrics, keyed by the
// registry. It marshals in registry order; an Optional metric without samples is absent.
type Metrics struct {
	stats []Stats // by registry index
	has   []bool
}

func (m *Metrics) slot(i int) {
	if m.stats == nil {
		m.stats, m.has = make([]Stats, len(Registry)), make([]bool, len(Registry))
	}
}

// Get returns the statistics of a metric by key (see Registry). A non-optional metric is
// always there (zero until set); an optional one only when it was measured.
func (m *Metrics) Get(key string) (*Stats, bool) {
	d, ok := Lookup(key)
	if !ok || (d.mayBeAbsent() && !m.Has(key)) {
		return nil, false
	}
	m.slot(d.index)
	return &m.stats[d.index], true
}

// Stat returns a metric's statistics, zero when absent.
func (m Metrics) Stat(key string) Stats {
	if st, ok := m.Get(key); ok {
		return *st
	}
	return Stats{}
}

// Has reports whether a metric was set.
func (m Metrics) Has(key string) bool {
	d, ok := Lookup(key)
	return ok && m.has != nil && m.has[d.index]
}

// Set stores a metric's statistics.
func (m *Metrics) Set(key string, s Stats) {
	d, ok := Lookup(key)
	if !ok {
		panic("metrics: unknown metric " + key)
	}
	m.slot(d.index)
	m.stats[d.index], m.has[d.index] = s, true
}

// MarshalJSON writes {"ttft_ms": {...}, ...} in registry order, leaving out Optional
// metrics that were not measured.
func (m Metrics) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, d := range Registry {
		if d.OnLevel || (d.mayBeAbsent() && !m.Has(d.Key)) {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		js, err := m.Stat(d.Key).MarshalJSON()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%q:", d.JSON)
		b.Write(js)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes; keys the registry does not know are ignored.
func (m *Metrics) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*m = Metrics{}
	for k, v := range raw {
		d, ok := Lookup(k)
		if !ok || d.OnLevel || d.JSON != k {
			continue
		}
		var st Stats
		if err := st.UnmarshalJSON(v); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		m.Set(d.Key, st)
	}
	return nil
}
