package metrics

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/suggest"
)

// SLOKind says what an SLO term constrains.
type SLOKind int

const (
	// SLOBound is a per-request bound (ttft<=500ms): it defines which requests are good.
	SLOBound SLOKind = iota + 1
	// SLOPercentile is a level verdict on a percentile (ttft:p99<=500ms) or mean (ttft:mean<=…).
	SLOPercentile
	// SLOGoodput is a level verdict on the fraction of good requests (goodput>=0.95).
	SLOGoodput
	// SLOErrorRate is a level verdict on the fraction of failed requests (error_rate<=1%).
	SLOErrorRate
)

// SLO is one parsed term of --slo.
type SLO struct {
	Kind   SLOKind
	Metric string        // a registry key: Bound metrics for bounds, any for percentile terms
	P      float64       // SLOPercentile: the percentile, 0..100; NaN for the mean
	Limit  time.Duration // SLOBound, SLOPercentile: the inclusive upper bound
	Min    float64       // SLOGoodput: the inclusive lower bound on the good fraction
	Max    float64       // SLOErrorRate: the inclusive upper bound on the failed fraction
	text   string
}

// String is the term as written, normalised (e.g. "ttft:p99<=500ms").
func (s SLO) String() string {
	if s.text != "" {
		return s.text
	}
	switch s.Kind {
	case SLOBound:
		return s.Metric + "<=" + s.Limit.String()
	case SLOPercentile:
		if math.IsNaN(s.P) {
			return s.Metric + ":mean<=" + s.Limit.String()
		}
		return s.Metric + ":" + Key(s.P) + "<=" + s.Limit.String()
	case SLOGoodput:
		return "goodput>=" + strconv.FormatFloat(s.Min, 'f', -1, 64)
	case SLOErrorRate:
		return "error_rate<=" + strconv.FormatFloat(s.Max, 'f', -1, 64)
	}
	return "?"
}

// Verdict reports whether a level meets its percentile and goodput SLOs. It passes only
// when the server kept up with the load and every term was judged on enough samples and
// passed (Judged); otherwise Pass is false and Reason says why when the terms alone do not:
// "oversaturated: …" (FailBehind) or "undecided: …". Undecided says no term failed but some
// were judged on too few samples to say: not met either.
type Verdict struct {
	Pass      bool        `json:"pass"`
	Undecided bool        `json:"undecided,omitempty"`
	Reason    string      `json:"reason,omitempty"`
	Terms     []TermCheck `json:"terms"`
}

// TermCheck is one verdict term: its measured value (ms, or a fraction for goodput; null when
// there was nothing to measure) and whether it passed. Undecided says it was judged on too
// few samples (MinSamples), Reason how many; such a term does not pass.
type TermCheck struct {
	Term      string   `json:"term"`
	Value     *float64 `json:"value"`
	Pass      bool     `json:"pass"`
	Undecided bool     `json:"undecided,omitempty"`
	Reason    string   `json:"reason,omitempty"`
}

// Result is the verdict in a word, as the console prints it: pass, fail or undecided.
func (v *Verdict) Result() string {
	switch {
	case v.Pass:
		return "pass"
	case v.Undecided:
		return "undecided"
	}
	return "fail"
}

// OversaturatedPrefix begins the reason of a verdict FailBehind failed.
const OversaturatedPrefix = "oversaturated: "

// FailBehind fails the verdict of a level whose server did not keep up with the load: one
// stopped as oversaturated, or whose backlog grew through it (SteadyState.Growing). Its
// figures describe only the requests that finished, while the rest waited; whatever they
// say, the level did not meet its SLOs. why says how it fell behind; the verdict's reason
// is "oversaturated: " + why. A nil verdict (no verdict terms) stays nil; applying it twice
// changes nothing.
func FailBehind(v *Verdict, why string) {
	if v == nil {
		return
	}
	v.Pass, v.Undecided, v.Reason = false, false, OversaturatedPrefix+why
}

// Behind says whether FailBehind failed v: its level's server did not keep up.
func Behind(v *Verdict) bool {
	return v != nil && !v.Pass && strings.HasPrefix(v.Reason, OversaturatedPrefix)
}

// boundMetrics are the registry's metrics that may carry a per-request bound: a request
// meets one when each of its samples of the metric is within it.
var boundMetrics = func() []string {
	var out []string
	for _, m := range Registry {
		if m.Bound {
			out = append(out, m.Key)
		}
	}
	for _, m := range TaskRegistry { // per-task bounds (task<=60s): good tasks
		if m.Bound {
			out = append(out, m.Key)
		}
	}
	return out
}()

// verdictMetrics are every registry metric: any may carry a percentile or mean verdict.
var verdictMetrics = func() []string {
	out := make([]string, len(Registry))
	for i, m := range Registry {
		out[i] = m.Key
	}
	for _, m := range TaskRegistry { // an agentic level's task figures (task:p99<=60s)
		out = append(out, m.Key)
	}
	return out
}()

// ParseSLOs parses a comma list of terms:
//
//	ttft<=500ms, tpot<=50ms, itl<=100ms, e2el<=10s  per-request bounds (define goodput)
//	ttft:p99<=500ms, tpot:p50<=30ms, e2el:mean<=5s  level verdicts on a percentile or the mean
//	goodput>=0.95, goodput>=95%                     level verdict on the fraction of good requests
//	error_rate<=1%, error_rate<=0.01                 level verdict on the fraction of failed requests
//	task<=60s, task:p99<=60s, tool:mean<=5s          agentic tasks: a per-task bound (good tasks)
//	                                                 and verdicts on task, tool and model time
//
// Durations use Go syntax with a unit (500ms, 1.5s, 800us); metric names are
// case-insensitive (TTFT:P99). Every bad term is reported, a misspelt name with the one
// probably meant.
func ParseSLOs(s string) ([]SLO, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []SLO
	var errs []error
	for _, term := range strings.Split(s, ",") {
		slo, err := parseTerm(strings.TrimSpace(term))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, slo)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func parseTerm(term string) (SLO, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("slo term %q: %s", term, fmt.Sprintf(format, a...))
	}
	if term == "" {
		return SLO{}, bad("empty term (stray comma?)")
	}
	if lhs, rhs, ok := strings.Cut(term, ">="); ok {
		if l := strings.ToLower(strings.TrimSpace(lhs)); l != "goodput" {
			if suggest.Nearest(l, []string{"goodput"}) != "" {
				return SLO{}, bad("unknown metric %q: did you mean goodput?", strings.TrimSpace(lhs))
			}
			return SLO{}, bad("only goodput takes >= (a minimum fraction of good requests); latencies take <=")
		}
		rhs = strings.TrimSpace(rhs)
		f, err := ParseFraction(rhs)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return SLO{}, bad("goodput needs a fraction between 0 and 1 or a percentage, e.g. goodput>=0.95 or goodput>=95%%")
		}
		return SLO{Kind: SLOGoodput, Min: f, text: "goodput>=" + rhs}, nil
	}
	lhs, rhs, ok := strings.Cut(term, "<=")
	if !ok {
		return SLO{}, bad("expected METRIC<=DURATION, METRIC:pNN<=DURATION, goodput>=FRACTION or error_rate<=FRACTION")
	}
	lhs, rhs = strings.ToLower(strings.TrimSpace(lhs)), strings.TrimSpace(rhs) // names are case-insensitive
	if lhs == "error_rate" {
		f, err := ParseFraction(rhs)
		if err != nil || f < 0 || f > 1 {
			return SLO{}, bad("error_rate needs a fraction between 0 and 1 or a percentage, e.g. error_rate<=0.01 or error_rate<=1%%")
		}
		return SLO{Kind: SLOErrorRate, Max: f, text: "error_rate<=" + rhs}, nil
	}
	d, err := time.ParseDuration(rhs)
	if err != nil {
		if _, nerr := strconv.ParseFloat(rhs, 64); nerr == nil {
			return SLO{}, bad("duration %q has no unit (write e.g. %sms)", rhs, rhs)
		}
		return SLO{}, bad("bad duration %q (write e.g. 500ms or 1.5s)", rhs)
	}
	if d <= 0 {
		return SLO{}, bad("the bound must be positive")
	}
	metric, stat, isVerdict := strings.Cut(lhs, ":")
	metric = strings.TrimSuffix(strings.TrimSpace(metric), "_ms")
	if !isVerdict {
		if !contains(boundMetrics, metric) {
			if metric == "goodput" {
				return SLO{}, bad("goodput takes >= and a fraction, e.g. goodput>=0.95")
			}
			return SLO{}, bad("unknown per-request metric %q%s (want one of %s)", metric, didYouMean(metric, boundMetrics), strings.Join(boundMetrics, ", "))
		}
		return SLO{Kind: SLOBound, Metric: metric, Limit: d, text: metric + "<=" + rhs}, nil
	}
	if !contains(verdictMetrics, metric) {
		return SLO{}, bad("unknown metric %q%s (want one of %s)", metric, didYouMean(metric, verdictMetrics), strings.Join(verdictMetrics, ", "))
	}
	stat = strings.TrimSpace(stat)
	p := math.NaN()
	switch {
	case stat == "mean":
	case stat == "median":
		p = 50
	case strings.HasPrefix(stat, "p") || strings.HasPrefix(stat, "P"):
		v, err := strconv.ParseFloat(stat[1:], 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 100 {
			return SLO{}, bad("bad percentile %q (write p50, p99 or p99.9)", stat)
		}
		p = v
	default:
		return SLO{}, bad("bad statistic %q (want pNN, median or mean)", stat)
	}
	return SLO{Kind: SLOPercentile, Metric: metric, P: p, Limit: d, text: metric + ":" + stat + "<=" + rhs}, nil
}

// didYouMean is ": did you mean X?" for the name in list nearest to s, "" when none is near.
func didYouMean(s string, list []string) string {
	if n := suggest.Nearest(s, list); n != "" {
		return ": did you mean " + n + "?"
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// HasVerdict reports whether any term judges a whole level (percentile or goodput terms).
// Per-request bounds alone define goodput but give no verdict.
func HasVerdict(slos []SLO) bool {
	for _, s := range slos {
		if s.Kind != SLOBound {
			return true
		}
	}
	return false
}

// JudgesQueueing reports whether some term bounds a metric that includes the time a request
// waits to be scheduled (TTFT, E2EL): without one, a deployment too small for its traffic
// can meet the others while its queue grows.
func JudgesQueueing(slos []SLO) bool {
	for _, s := range slos {
		switch s.Metric {
		case KeyTTFT, KeyTTFTFromSchedule, KeyE2EL:
			return true
		}
	}
	return false
}

// DecidingSamples is the fewest samples a level needs for every percentile term of slos to
// be decided rather than undecided (MinSamples of the highest percentile judged): a level
// left to its default length is made at least this long. It counts a term's samples as one
// a request, as TTFT, TPOT and E2EL have (ITL has more, an agentic task's figures fewer).
func DecidingSamples(slos []SLO) int {
	n := 1
	for _, s := range slos {
		if s.Kind == SLOPercentile {
			n = max(n, MinSamples(s.P))
		}
	}
	return n
}

// HasBound reports whether any term is a per-request bound (ttft<=500ms): only bounds set
// good requests apart from completed ones.
func HasBound(slos []SLO) bool {
	for _, s := range slos {
		if s.Kind == SLOBound {
			return true
		}
	}
	return false
}

// evaluate judges a level on its verdict terms; nil when there are none.
func evaluate(slos []SLO, dists map[string]*Dist, goodFraction, errorRate *float64) *Verdict {
	if !HasVerdict(slos) {
		return nil
	}
	v := &Verdict{Pass: true}
	var undecided []string
	for _, s := range slos {
		var val *float64
		pass, und, why := false, false, ""
		switch s.Kind {
		case SLOBound:
			continue
		case SLOGoodput:
			if goodFraction != nil {
				val = ptr(*goodFraction)
				pass = *goodFraction >= s.Min
			}
		case SLOErrorRate:
			if errorRate != nil {
				val = ptr(*errorRate)
				pass = *errorRate <= s.Max
			}
		case SLOPercentile:
			d := dists[s.Metric]
			if d.Count() > 0 {
				var x float64
				if math.IsNaN(s.P) {
					x, _ = d.MeanStd()
				} else {
					x, _ = d.Percentile(s.P)
				}
				val = ptr(x)
				pass = x <= float64(s.Limit)/float64(time.Millisecond)
				if n, need := d.Count(), MinSamples(s.P); n < uint64(need) {
					pass, und = false, true
					why = fmt.Sprintf("%s on %d %s; %s needs at least %d to bound its 95%% confidence interval", s.Metric, n, console.Plural(int(n), "sample", "samples"), Key(s.P), need)
					undecided = append(undecided, why)
				}
			}
		}
		v.Terms = append(v.Terms, TermCheck{Term: s.String(), Value: val, Pass: pass, Undecided: und, Reason: why})
		v.Pass = v.Pass && pass
	}
	if !v.Pass && len(undecided) > 0 && !slices.ContainsFunc(v.Terms, func(t TermCheck) bool { return !t.Pass && !t.Undecided }) {
		v.Undecided, v.Reason = true, "undecided: "+strings.Join(undecided, "; ")
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// definesGoodput reports whether slos say which requests are good: a per-request bound, or
// a goodput verdict term (then every completed request is). Percentile terms alone judge
// levels, not requests: goodput is then null, not a 100% that means nothing.
func definesGoodput(slos []SLO) bool {
	for _, s := range slos {
		if s.Kind == SLOBound && !isTaskMetric(s.Metric) || s.Kind == SLOGoodput {
			return true
		}
	}
	return false
}

// ParseFraction reads a fraction written as one (0.3) or as a percentage (30%); the caller
// checks its range.
func ParseFraction(s string) (float64, error) {
	s = strings.TrimSpace(s)
	scale := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = strings.TrimSpace(t), 0.01
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is neither a fraction like 0.3 nor a percentage like 30%%", s)
	}
	return v * scale, nil
}

// Bound is a verdict term's bound in its value's unit (TermCheck.Value): ms for a
// percentile or mean term, a fraction for goodput and error_rate; 0 for a per-request bound.
func (s SLO) Bound() float64 {
	switch s.Kind {
	case SLOPercentile:
		return float64(s.Limit) / float64(time.Millisecond)
	case SLOGoodput:
		return s.Min
	case SLOErrorRate:
		return s.Max
	}
	return 0
}

// Margin is how far a verdict term's measured value lies inside its bound, as a fraction
// of the bound: (bound − value) / bound for the upper bounds (latencies, error_rate),
// (value − bound) / bound for goodput's lower bound; negative when the term fails. A bound
// of 0 (error_rate<=0, goodput>=0) has no scale, so its margin is the difference itself.
func (s SLO) Margin(value float64) float64 {
	b := s.Bound()
	d := b - value
	if s.Kind == SLOGoodput {
		d = value - b
	}
	if b == 0 {
		return d
	}
	return d / b
}
