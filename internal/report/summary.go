// Package report writes a run's results: summary.json, summary.csv and the console summary
// (vLLM's layout per level, a ladder table across levels). Every writer takes a Summary, which
// the CLI builds from metrics.Aggregate of each level's records.
package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/rundesc"
	"github.com/llmbench/llmbench/internal/search"
	"github.com/llmbench/llmbench/internal/servermetrics"
)

// Schemas of summary.json. This llmbench writes SchemaV3; ReadJSON also reads SchemaV2 and
// SchemaV1, migrating them, and refuses other versions.
const (
	// SchemaV3: levels carry end_reason, steady_state, runs and across_runs (--repeat),
	// run_seeds; every interval says its method (ci_method) and means may have one; the
	// summary says where the ladder oversaturated.
	SchemaV3 = "llmbench/summary/v3"
	// SchemaV2: the run description (load, workload) and the end reason are typed
	// (rundesc.Load, rundesc.Workload, EndReason), with v1's keys and values.
	SchemaV2 = "llmbench/summary/v2"
	// SchemaV1: the same keys, written from untyped configuration (llmbench before v2).
	SchemaV1 = "llmbench/summary/v1"
)

// EndReason is why the run ended (summary.json end_reason).
type EndReason string

// End reasons of a run. A run stopped by an error ends with EndError; a merged run with
// JoinEndReasons of its shards'.
const (
	// EndRunning is written when the run starts; a summary that still says so after the run
	// belongs to a killed process.
	EndRunning     EndReason = "running"
	EndCompleted   EndReason = "completed"
	EndInterrupted EndReason = "interrupted"                           // SIGINT or SIGTERM
	EndKilled      EndReason = "killed: recomputed from records.jsonl" // llmbench report of a killed run
)

// EndError is the end reason of a run stopped by err.
func EndError(err error) EndReason { return EndReason("error: " + err.Error()) }

// JoinEndReasons is a merged run's end reason: the distinct reasons in order, joined by "; ".
func JoinEndReasons(rs []EndReason) EndReason {
	var distinct []string
	for _, r := range rs {
		if !slices.Contains(distinct, string(r)) {
			distinct = append(distinct, string(r))
		}
	}
	return EndReason(strings.Join(distinct, "; "))
}

// Summary is summary.json: the run described (config, version, seed, start, end reason) and
// its per-level figures. docs/metrics.md documents every field.
type Summary struct {
	Schema       string    `json:"schema"`
	Version      string    `json:"llmbench_version"`
	StartedAt    time.Time `json:"started_at"`     // wall clock at t = 0, UTC
	RunStartUnix float64   `json:"run_start_unix"` // the same instant as float Unix seconds
	// StartDelayMs is how long after its --start-at the run's t = 0 fell (ms): a shard that
	// woke late, or was scheduled after the instant and started at once, shows it here, and
	// merge judges the shards' spread from it. Absent without --start-at.
	StartDelayMs *float64  `json:"start_delay_ms,omitempty"`
	Seed         int64     `json:"seed"`
	EndReason    EndReason `json:"end_reason"`
	Target       Target    `json:"target"`
	// Workload and Load are the run's configuration (package rundesc).
	Workload    rundesc.Workload `json:"workload"`
	Load        rundesc.Load     `json:"load"`
	Percentiles []float64        `json:"percentiles"`
	SLO         string           `json:"slo,omitempty"` // the --slo terms as given
	// Price is what the endpoint costs (--gpu-price and --gpus, --price-in and --price-out,
	// or a simulator profile's GPU); absent when the run was not priced. Judge derives each
	// level's cost from it, so 'llmbench report' re-renders or re-prices it.
	Price *metrics.Price `json:"price,omitempty"`

	Levels    []Level       `json:"levels"`
	SweetSpot *metrics.Pick `json:"sweet_spot"`
	SLOLimit  *metrics.Pick `json:"slo_limit"`
	// SLOLimitEstimate is the limit estimated from every level run (a monotone fit of each
	// SLO term against load, with a 90% interval from the levels' sampling error); absent
	// without percentile or mean SLO terms, or for a ladder of mixed concurrencies and rates.
	SLOLimitEstimate *metrics.LimitEstimate `json:"slo_limit_estimate,omitempty"`
	// Oversaturated is the first level stopped as oversaturated (the server could not keep
	// up with its rate); absent when none was.
	Oversaturated *metrics.Pick `json:"oversaturated,omitempty"`
}

// Target is what was benchmarked. It never holds an API key, and NewTarget strips
// credentials from the URL.
type Target struct {
	URL   string `json:"url"`
	API   string `json:"api"`
	Model string `json:"model"`
	// ClosesConnections says the server closed every connection after its response (while
	// offering keep-alive), so the client stopped reusing them; ClosedConnections counts the
	// kept-alive connections it closed after a response. Both zero for the simulator.
	ClosesConnections bool `json:"closes_connections"`
	ClosedConnections int  `json:"closed_connections"`
	// Endpoints are every --url of a run balanced over several (URL is the first), Balance
	// its policy and SessionHeader the header its session keys travel in; absent for one.
	Endpoints     []string `json:"endpoints,omitempty"`
	Balance       string   `json:"balance,omitempty"`
	SessionHeader string   `json:"session_header,omitempty"`
}

// NewTarget describes the target with any user:password removed from the URL and the values
// of query parameters that look like secrets (key, token, secret, signature) redacted.
func NewTarget(rawURL, api, model string) Target {
	return Target{URL: RedactURL(rawURL), API: api, Model: model}
}

// Balanced describes a target of several endpoints balanced by policy, their session keys
// in header (the session policy's; "" for none).
func (t Target) Balanced(urls []string, policy, header string) Target {
	t.Endpoints = make([]string, len(urls))
	for i, u := range urls {
		t.Endpoints[i] = RedactURL(u)
	}
	t.Balance, t.SessionHeader = policy, header
	return t
}

// RedactURL removes credentials from a URL for reports and logs.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.User = nil
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			lk := strings.ToLower(k)
			for _, s := range []string{"key", "token", "secret", "sig", "password", "auth"} {
				if strings.Contains(lk, s) {
					q.Set(k, "REDACTED")
				}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Level is one entry of levels: the load description plus metrics.Level's figures, inline.
type Level struct {
	Name        string  `json:"name"`
	Concurrency int     `json:"concurrency,omitempty"` // closed loop
	Rate        float64 `json:"rate,omitempty"`        // open loop, req/s
	Partial     bool    `json:"partial"`               // the run ended before the level did
	// EndReason is why the level ended (load.EndReason): requests, duration, trace,
	// interrupted, or oversaturated / max_error_rate when a stopping rule ended it.
	EndReason string `json:"end_reason,omitempty"`
	// RunSeeds are the seeds of a repeated level's runs (arrivals, prompts, the simulator),
	// in run order; absent for a level run once.
	RunSeeds []int64 `json:"run_seeds,omitempty"`
	// ClientBehind says the client, not the server, was late in the level (ClientBehind:
	// its schedule or read lag); Judge sets it from the level's figures.
	ClientBehind bool `json:"client_behind"`
	// PrefixCacheHits is the level's measured requests with more than 10% of their prompt
	// beyond the shared prefix served from the server's prompt cache (Collector.
	// PrefixCacheHits); null when the server does not say per request.
	PrefixCacheHits *int `json:"prefix_cache_hits"`
	// Server is what the server's own /metrics said during the level; absent when it was
	// not scraped.
	Server *servermetrics.Summary `json:"server,omitempty"`
	// Endpoints are the level's figures by endpoint when the run balanced over several
	// (--url A --url B); absent for one.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// Stages are a staged level's figures by stage (--stages); absent for a level of one load.
	Stages []Stage `json:"stages,omitempty"`
	// PredictionInterval is, for a simulated level, the 90 % interval of each predicted
	// figure from how far the simulator was measured from real servers like the profile's
	// (predict); absent when nothing measured it.
	PredictionInterval *predict.Interval `json:"prediction_interval,omitempty"`
	// GPU is what the GPU exporters (--gpu-metrics) said during the level: power, energy,
	// energy per output token and per request, utilisation; absent when none was scraped.
	GPU *gpumetrics.Summary `json:"gpu,omitempty"`
	metrics.Level
	// Cost is what the level's work cost at the summary's price (Summary.Judge); null when
	// the run was not priced.
	Cost *metrics.Cost `json:"cost"`
}

// Endpoint is one endpoint's share of a balanced level: the figures of the requests sent to
// it, derived as a level's are.
type Endpoint struct {
	Endpoint int    `json:"endpoint"` // 1-based, in --url order (records' endpoint)
	URL      string `json:"url"`
	metrics.Level
}

// Load is the level's offered load.
func (l Level) Load() metrics.Load { return metrics.Load{Concurrency: l.Concurrency, Rate: l.Rate} }

// Level end reasons that stopping rules give (load.EndOversaturated, load.EndMaxErrorRate,
// load.EndUnreachable).
const (
	EndOversaturated = "oversaturated"
	EndMaxErrorRate  = "max_error_rate"
	EndUnreachable   = "unreachable"
)

// Judge fills Schema (when empty), each level's Cost, SweetSpot, SLOLimit and
// Oversaturated from the levels. Partial levels (cut short by the end of the run) and
// levels a stopping rule ended (oversaturated, max_error_rate) are left out of both picks,
// since their figures do not describe a steady state; indexes still refer to Levels.
func (s *Summary) Judge() {
	if s.Schema == "" {
		s.Schema = SchemaV3
	}
	slos, _ := metrics.ParseSLOs(s.SLO) // checked when given: a bad one has no bounds to say
	for i := range s.Levels {
		s.Levels[i].Cost = s.Price.Cost(s.Levels[i].Level, slos)
		if t, c := s.Levels[i].Tasks, s.Levels[i].Cost; t != nil {
			t.CostPerTask = nil
			if c != nil {
				t.CostPerTask = c.PerTask
			}
		}
		s.Levels[i].ClientBehind = ClientBehind(s.Levels[i].Level) != ""
		failByStage(&s.Levels[i])
		sizeAdvice(&s.Levels[i])
	}
	s.Oversaturated = nil
	for i := range s.Levels {
		l := &s.Levels[i]
		if l.EndReason != EndOversaturated {
			continue
		}
		if s.Oversaturated == nil {
			s.Oversaturated = &metrics.Pick{Index: i, Concurrency: l.Concurrency, Rate: l.Rate,
				Reason: "the server could not keep up with this rate (backlog growing: docs/metrics.md)"}
		}
		// The requests that finished may meet the SLOs; the level, whose backlog grew, does not.
		metrics.FailBehind(l.SLO, "the server could not keep up with the rate (backlog growing), so the level was stopped")
		// Whatever its length, an oversaturated level had no steady state to find.
		l.SteadyState = &metrics.SteadyState{Reason: "oversaturated: the server could not keep up with the rate, so the level was stopped",
			Advice: "lower the rate (this one is past the server's capacity)"}
	}
	var lv []metrics.Level
	var loads []metrics.Load
	var idx []int
	for i, l := range s.Levels {
		if l.Partial || l.EndReason == EndOversaturated || l.EndReason == EndMaxErrorRate || l.EndReason == EndUnreachable {
			continue // stopped early: not a steady state to pick
		}
		if len(l.Stages) > 0 {
			continue // a staged level's load is no one figure to place on the ladder
		}
		lv = append(lv, l.Level)
		loads = append(loads, l.Load())
		idx = append(idx, i)
	}
	remap := func(p *metrics.Pick) *metrics.Pick {
		if p != nil {
			p.Index = idx[p.Index]
		}
		return p
	}
	s.SLOLimit = remap(metrics.SLOLimit(lv, loads))
	s.SLOLimitEstimate = s.limitEstimate(slos)
	s.SweetSpot = remap(metrics.SweetSpot(lv, loads))
	for _, p := range []*metrics.Pick{s.SLOLimit, s.SweetSpot} {
		if p != nil {
			p.Cost = s.Levels[p.Index].Cost
		}
	}
}

// sizeAdvice sizes a closed loop's advice for too few requests per slot by its concurrency,
// not by what it held in flight: a level of fewer requests than its concurrency never filled
// its slots (--concurrency 64 --requests 1 held one), and needs 20 a slot it was given.
func sizeAdvice(l *Level) {
	ss := l.SteadyState
	if ss == nil || ss.Reached || l.Concurrency <= l.PeakConcurrency || !strings.HasPrefix(ss.Reason, "too few requests per slot") {
		return
	}
	n := 4 * metrics.MinRequestsPerSlot * l.Concurrency
	ss.Advice = fmt.Sprintf("give each level at least %d requests (--requests %d: %d per slot at concurrency %d)", n, n, 4*metrics.MinRequestsPerSlot, l.Concurrency)
}

// limitEstimate is metrics.EstimateLimit over the levels that ran to their end or were
// stopped because the server could not keep up (above the limit, whatever their finished
// requests measured, as are levels whose verdict is undecided); levels cut short otherwise
// say nothing of the limit.
func (s *Summary) limitEstimate(slos []metrics.SLO) *metrics.LimitEstimate {
	var (
		lv     []metrics.Level
		loads  []metrics.Load
		behind []bool
		placed []metrics.Placement
	)
	byVerdict := s.bisected()
	for i, l := range s.Levels {
		if l.Partial || l.EndReason == EndMaxErrorRate || l.EndReason == EndUnreachable || len(l.Stages) > 0 {
			continue
		}
		lv, loads = append(lv, l.Level), append(loads, l.Load())
		// Undecided counts as not met here too, as for the verdict: a level too short to judge
		// is no evidence that the SLOs hold there.
		behind = append(behind, l.EndReason == EndOversaturated || l.SLO != nil && (l.SLO.Undecided || metrics.Behind(l.SLO)))
		p := metrics.PlacedFixed
		if byVerdict[i] {
			p = metrics.PlacedByVerdict
		}
		placed = append(placed, p)
	}
	return metrics.EstimateLimitPlaced(lv, loads, behind, placed, slos)
}

// bisected marks the levels a search's bisection placed (by the verdicts of the levels
// before them), found by replaying the search (search.Largest) on the levels' verdicts in
// the order they ran: the probes after its first failing one. The search's doubling levels
// and the levels after it (its grid about the answer) are not marked. A run that was no
// search, or whose levels stop matching the replay, has the levels matched so far marked.
func (s *Summary) bisected() []bool {
	out := make([]bool, len(s.Levels))
	axis := search.Axis(s.Load.Search)
	if axis == "" {
		return out
	}
	stop := errors.New("the levels end or leave the search")
	k, failed := 0, false
	_, _ = search.Largest(context.Background(), axis, s.Load.SearchMax, func(load float64) (bool, error) {
		if k >= len(s.Levels) {
			return false, stop
		}
		l := s.Levels[k]
		if max(float64(l.Concurrency), l.Rate) != load {
			return false, stop
		}
		out[k] = failed
		pass := l.SLO != nil && l.SLO.Pass
		failed = failed || !pass
		k++
		return pass, nil
	})
	return out
}

// SLOPassed reports whether SLO verdicts were given (judged) and whether any level met them;
// judged && !passed is the CLI's exit code 3.
func (s *Summary) SLOPassed() (passed, judged bool) {
	lv := make([]metrics.Level, len(s.Levels))
	for i := range s.Levels {
		lv[i] = s.Levels[i].Level
	}
	return metrics.AnyPassed(lv)
}

// KernelStamped says whether any level has requests whose events the kernel stamped (its
// read lag is measured), or none completed (nothing to say then).
func (s *Summary) KernelStamped() bool {
	completed := 0
	for _, l := range s.Levels {
		if l.ReadLag != nil {
			return true
		}
		completed += l.Completed
	}
	return completed == 0
}

// WriteJSON writes s as indented JSON with a final newline.
func WriteJSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	return nil
}

// ReadDir reads run folder dir's summary.json (as ReadJSON); a file that is not there is
// the open's error, which names it, and any other error is prefixed with dir.
func ReadDir(dir string) (*Summary, error) {
	f, err := os.Open(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sum, err := ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return sum, nil
}

// ReadJSON reads a summary.json of any schema this llmbench knows, migrated to SchemaV3,
// and refuses others.
func ReadJSON(r io.Reader) (*Summary, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("summary.json: %w", err)
	}
	var head struct{ Schema string }
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("summary.json: %w", err)
	}
	migrate, ok := migrations[head.Schema]
	if !ok {
		if strings.HasPrefix(head.Schema, "llmbench/summary/") {
			return nil, fmt.Errorf("summary.json: schema %q is not supported by this llmbench (it reads %s, %s and %s)", head.Schema, SchemaV3, SchemaV2, SchemaV1)
		}
		return nil, errors.New("summary.json: not an llmbench summary (schema " + fmt.Sprintf("%q", head.Schema) + ")")
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("summary.json (%s): %w", head.Schema, err)
	}
	migrate(&s)
	return &s, nil
}

// migrations bring a summary read as its own schema up to SchemaV3, by schema.
var migrations = map[string]func(*Summary){
	SchemaV3: func(*Summary) {},
	SchemaV2: fromV2,
	// v1 has v2's keys and values: what it wrote from untyped configuration is what v2's
	// types hold (rundesc's tests check that against summaries v1 wrote), and its end
	// reasons are v2's. From there, as v2.
	SchemaV1: fromV2,
}

// fromV2 brings a v2 summary to v3. v2 had no stopping rules, so a level ended by its
// length (duration when the load had one, else requests) or, partial, by the run's
// interruption; every interval it wrote was from order statistics. v2 found no steady
// state and had no repeats: those stay absent until 'llmbench report' recomputes them.
func fromV2(s *Summary) {
	s.Schema = SchemaV3
	for i := range s.Levels {
		l := &s.Levels[i]
		switch {
		case l.EndReason != "":
		case l.Partial:
			l.EndReason = "interrupted"
		case s.Load.Duration != "":
			l.EndReason = "duration"
		default:
			l.EndReason = "requests"
		}
		each := func(st *metrics.Stats) {
			for k := range st.Percentiles {
				if st.Percentiles[k].Method == "" && st.Count > 0 {
					st.Percentiles[k].Method = metrics.MethodOrderStatistics
				}
			}
		}
		for _, m := range metrics.Registry {
			if st, ok := l.Metrics.Get(m.Key); ok && !m.OnLevel {
				each(st)
			}
		}
		for _, st := range []*metrics.Stats{l.ReadLag, l.FirstContent} {
			if st != nil {
				each(st)
			}
		}
	}
}

// Save writes summary.json and summary.csv into dir, each atomically.
func Save(dir string, s *Summary) error {
	return errors.Join(
		atomicfile.Write(filepath.Join(dir, "summary.json"), func(w io.Writer) error { return WriteJSON(w, s) }),
		atomicfile.Write(filepath.Join(dir, "summary.csv"), func(w io.Writer) error { return WriteCSV(w, s) }),
	)
}
