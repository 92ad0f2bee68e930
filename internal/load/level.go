package load

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/schedule"
)

// Level is one load level of a run.
//
// Length: a level sends until Requests measured requests have been sent, or until Duration
// has elapsed since the level's start, whichever comes first (at least one must be set);
// then it waits for the requests in flight to finish.
//
// Exclusion from metrics (record.Warmup = true): the first Warmup requests (by index), every
// request scheduled within the first WarmupTime of the level, and, in a Duration-bounded
// level, every request scheduled within its last Cooldown. WarmupTime and Cooldown lie
// inside Duration: --duration 60s --warmup 10s --cooldown 5s sends for 60 s and measures the
// requests scheduled in [10 s, 55 s). Excluded requests do not count towards Requests.
// "Scheduled" is the due time in an open loop (so the split is deterministic and identical
// on every shard and in the simulator) and the moment the slot freed in a closed loop.
type Level struct {
	Index          int
	Concurrency    int              // closed loop when > 0
	Rate           float64          // open loop when > 0, requests/s
	Arrival        schedule.Arrival // open loop only
	MaxConcurrency int              // open-loop in-flight cap (0 = none)
	Requests       int              // measured requests (0 = until Duration)
	Duration       time.Duration    // level length, warm-up and cool-down included (0 = until Requests)
	Warmup         int              // requests before the measured ones, excluded from metrics
	WarmupTime     time.Duration    // requests scheduled this early in the level are excluded
	Cooldown       time.Duration    // requests scheduled this late in a Duration level are excluded
	Seed           int64            // seeds the arrival plan
	// Stages, when set, change the load within the level (schedule.Stages): a rate stage
	// schedule drives an open loop whose Rate is the stages' peak, a concurrency one a closed
	// loop whose Concurrency is; the stages set Duration, and each request's record carries
	// the stage it was scheduled in.
	Stages schedule.Stages

	// Stopping rules (stop.go): MaxErrorRate > 0 stops the level when more than that
	// fraction of the last ErrorWindow finished requests failed; DetectSaturation stops an
	// open-loop level whose backlog grows significantly (the server cannot keep up).
	MaxErrorRate     float64
	DetectSaturation bool

	// Repeat is the 1-based run of a level repeated (--repeat), set on its records; 0 for
	// a level run once. Each run has a Seed (and a workload) of its own.
	Repeat int

	// Shard I of Shards (0 or 1 = unsharded) runs a disjoint, deterministic slice of the
	// level so that the union of all shards is the unsharded level: in an open loop, the
	// requests i with i % Shards == Shard of the full plan, at the full plan's due times (so
	// the rate divides among shards); in a closed loop, the workers w % Shards == Shard of
	// Concurrency, sending the indices i % Shards == Shard. MaxConcurrency divides likewise.
	Shard, Shards int

	// Progress, when set, is updated live as requests are sent and finish.
	Progress *Progress `json:"-"`
}

// Closed reports whether the level is a closed loop.
func (l Level) Closed() bool { return l.Concurrency > 0 }

// sharded returns the shard and shard count, with 1 meaning unsharded.
func (l Level) sharded() (shard, n int) {
	if l.Shards <= 1 {
		return 0, 1
	}
	return l.Shard, l.Shards
}

// shareOf is how many of 0..n-1 fall to this shard (w % Shards == Shard).
func (l Level) shareOf(n int) int {
	s, k := l.sharded()
	if n <= s {
		return 0
	}
	return (n-s-1)/k + 1
}

// ShardConcurrency is the number of closed-loop workers this shard runs.
func (l Level) ShardConcurrency() int { return l.shareOf(l.Concurrency) }

// ShardMaxConcurrency is this shard's open-loop in-flight cap (0 = none).
func (l Level) ShardMaxConcurrency() int { return l.shareOf(l.MaxConcurrency) }

// ShardRequests is the number of measured requests this shard sends when the level is
// bounded by Requests (its indices in the unsharded level's measured range).
func (l Level) ShardRequests() int {
	if l.Requests == 0 {
		return 0
	}
	return l.shareOf(l.Warmup+l.Requests) - l.shareOf(l.Warmup)
}

// Total is the number of requests this shard will send, or 0 when that is not known in
// advance (a Duration level, or one with WarmupTime). For a progress bar.
func (l Level) Total() int {
	if l.Requests == 0 || l.Duration > 0 || l.WarmupTime > 0 {
		return 0
	}
	return l.shareOf(l.Warmup + l.Requests)
}

// problems collects a level's problems, each a *fielderr.Error keyed by the field at fault
// (the one whose value the message quotes first: Concurrency, Rate, Arrival, ...), so that
// a caller can name that field as its users know it (a flag); its Err is complete in
// load's words.
type problems []error

func (p *problems) add(field, format string, a ...any) {
	*p = append(*p, fielderr.New(field, format, a...))
}

// Validate reports every problem with the level at once, each a *fielderr.Error.
func (l Level) Validate() error {
	var p problems
	add := p.add
	if l.Index < 0 {
		add("Index", "level index %d is negative", l.Index)
	}
	switch {
	case l.Concurrency < 0:
		add("Concurrency", "concurrency %d is negative", l.Concurrency)
	case l.Rate < 0 || math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0):
		add("Rate", "rate %g is not a positive finite number of requests/s", l.Rate)
	case l.Concurrency > 0 && l.Rate > 0:
		add("Concurrency", "both concurrency %d and rate %g given: a level is a closed loop (concurrency) or an open loop (rate), not both", l.Concurrency, l.Rate)
	case l.Concurrency == 0 && l.Rate == 0:
		add("Concurrency", "neither concurrency nor rate given: a level needs one")
	}
	if l.Rate > 0 {
		if err := l.Arrival.Validate(); err != nil {
			add("Arrival", "arrival: %w", err)
		}
	}
	if l.MaxConcurrency < 0 {
		add("MaxConcurrency", "max concurrency %d is negative", l.MaxConcurrency)
	} else if l.MaxConcurrency > 0 && l.Concurrency > 0 {
		add("MaxConcurrency", "max concurrency applies to an open loop (rate); a closed loop is capped by its concurrency")
	}
	if !(l.MaxErrorRate >= 0 && l.MaxErrorRate < 1) {
		add("MaxErrorRate", "max error rate %g is not a fraction in [0, 1)", l.MaxErrorRate)
	}
	if l.Repeat < 0 {
		add("Repeat", "repeat %d is negative", l.Repeat)
	}
	l.validateLength(&p)
	l.validateStages(&p)
	l.validateShards(&p)
	return errors.Join(p...)
}

// validateStages checks that a staged level's load and length are its stages'.
func (l Level) validateStages(p *problems) {
	st := l.Stages
	if !st.Staged() {
		return
	}
	add := p.add
	if err := st.Validate(); err != nil {
		add("Stages", "stages: %w", err)
		return
	}
	switch peak := st.Max(); st.Kind {
	case schedule.StageRate:
		if l.Rate != peak {
			add("Rate", "rate %g is not the rate stages' peak %g (an open loop's rate is its stages')", l.Rate, peak)
		}
	case schedule.StageConcurrency:
		if l.Concurrency != int(peak) {
			add("Concurrency", "concurrency %d is not the concurrency stages' peak %g (a closed loop's concurrency is its stages')", l.Concurrency, peak)
		}
	}
	if l.Requests > 0 {
		add("Requests", "requests %d given with stages: the stages set the level's length", l.Requests)
	}
	if l.Duration != st.Total() {
		add("Duration", "duration %s is not the stages' total %s", l.Duration, st.Total())
	}
}

// validateLength checks how long the level runs and what of it is measured.
func (l Level) validateLength(p *problems) {
	add := p.add
	if l.Requests < 0 {
		add("Requests", "requests %d is negative", l.Requests)
	}
	if l.Duration < 0 {
		add("Duration", "duration %s is negative", l.Duration)
	}
	if l.Requests == 0 && l.Duration == 0 {
		add("Requests", "neither requests nor duration given: a level ends after one of them")
	}
	if l.Warmup < 0 {
		add("Warmup", "warm-up %d requests is negative", l.Warmup)
	}
	if l.WarmupTime < 0 {
		add("WarmupTime", "warm-up time %s is negative", l.WarmupTime)
	}
	if l.Cooldown < 0 {
		add("Cooldown", "cool-down %s is negative", l.Cooldown)
	}
	if l.Cooldown > 0 && l.Duration == 0 {
		add("Cooldown", "cool-down %s needs a duration (it excludes the end of a timed level)", l.Cooldown)
	}
	if l.Duration > 0 && (l.WarmupTime > 0 || l.Cooldown > 0) && max(l.WarmupTime, 0)+max(l.Cooldown, 0) >= l.Duration {
		add("Duration", "warm-up %s plus cool-down %s leave nothing of duration %s to measure", l.WarmupTime, l.Cooldown, l.Duration)
	}
}

// validateShards checks the level's shard and that its load splits among the shards.
func (l Level) validateShards(p *problems) {
	add := p.add
	switch {
	case l.Shards < 0:
		add("Shards", "shard count %d is negative", l.Shards)
	case l.Shards <= 1 && l.Shard != 0:
		add("Shard", "shard %d given without a shard count above 1", l.Shard)
	case l.Shards > 1:
		if l.Shard < 0 || l.Shard >= l.Shards {
			add("Shard", "shard %d is outside 0..%d", l.Shard, l.Shards-1)
		}
		if l.Concurrency > 0 && l.Concurrency < l.Shards {
			add("Concurrency", "concurrency %d cannot be split among %d shards (each needs at least one worker)", l.Concurrency, l.Shards)
		}
		if l.MaxConcurrency > 0 && l.MaxConcurrency < l.Shards {
			add("MaxConcurrency", "max concurrency %d cannot be split among %d shards (each needs at least one slot)", l.MaxConcurrency, l.Shards)
		}
		if l.Concurrency > 0 && l.Requests > 0 && l.Requests < l.Shards {
			add("Requests", "requests %d cannot be split among %d shards (each needs at least one)", l.Requests, l.Shards)
		}
	}
}

// Progress counts a level's requests while it runs; safe to read from any goroutine.
type Progress struct {
	sent, done atomic.Int64
}

// Sent is the number of requests handed to the target so far.
func (p *Progress) Sent() int { return int(p.sent.Load()) }

// Done is the number of requests finished (reported to the sink) so far.
func (p *Progress) Done() int { return int(p.done.Load()) }

// InFlight is Sent minus Done.
func (p *Progress) InFlight() int { return p.Sent() - p.Done() }

// ParseWarmup reads a level's warm-up as a request count (Warmup) or a duration like 10s
// (WarmupTime); "" is none.
func ParseWarmup(s string) (n int, d time.Duration, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return 0, 0, fmt.Errorf("%d must not be negative", n)
		}
		return n, 0, nil
	}
	d, err = time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, 0, fmt.Errorf("%q is neither a request count nor a duration like 10s", s)
	}
	return 0, d, nil
}
