package load

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
)

// Stopping rules: besides its length, a level can be stopped early by what its requests
// show. They are written here once, clock-free, and consulted by Dispatch, so Run and
// RunVirtual (the live run and the simulation) honour them alike.
//
// Max error rate (Level.MaxErrorRate = F > 0): over a sliding window of the last
// ErrorWindow finished requests (warm-up ones included: a broken server fails them too),
// once at least ErrorMinimum have finished, the level stops when more than F of the window
// failed (any error, canceled included). End reason EndMaxErrorRate.
//
// Over-saturation (Level.DetectSaturation, an open loop at a rate; a replayed trace, whose
// own rate varies, is replayed whole, and so is a staged level, whose backlog grows on a
// ramp by design): a server that cannot keep up has a backlog —
// requests due and not finished: in flight, plus those waiting for a slot under
// MaxConcurrency — that grows without bound; one that keeps up has a backlog that
// wanders around a mean (a batching server's wanders widely and slowly: its batch follows
// the arrivals' bursts, and a bigger batch serves each request more slowly). The backlog is
// taken at every arrival (every other one dropped, repeatedly, past 4,096 kept, so memory
// stays bounded); every tenth kept value, once the level is long enough to judge (below),
// the second half of the level so far (from arrival A/2 to arrival A) is cut into 8
// consecutive batches and a least-squares line fitted through the 8 batch means. The
// level is oversaturated when all of these hold:
//
//  1. the slope is positive and significant: slope / its standard error > 5.208, the
//     one-sided 99.9% point of Student's t with 6 degrees of freedom (batch means are
//     nearly independent when batches are long against the backlog's correlation time,
//     which is why the level must be long enough);
//  2. the growth is material: the fitted line rises over the half by at least 10% of the
//     half's arrivals — the server finished less than 90% of what arrived — plus what a
//     server still filling could add (outlasting: the share of the first quarter's
//     requests that did not finish within A/2 arrivals of their own, times the half's
//     arrivals), plus twice the square root of the backlog the half began with
//     (excursion). A server that keeps up fills for as long as its longest requests take:
//     its backlog grows by the arrivals that outlast the time since the start, at most
//     that share of them over the half. A fleet of eight at 44-60 req/s (0.66-0.9 × its
//     capacity) whose requests decode up to 600 tokens for up to 30 s has had 1,000
//     arrivals after 17-23 s, still filling; before this term it was stopped there;
//  3. the backlog now holds at least 10% of every request that arrived in the level (a
//     wandering backlog is bounded; a growing one is not);
//  4. the level's first request finished before the half began (the ramp from an empty
//     server has begun to end);
//  5. where the pace is steady (below), the requests' waits grow too: those that finished
//     in the last quarter of the level so far spent longer in the system beyond their
//     service (ServiceOf) than those of the quarter before, by more than 10 % of that wait
//     and of their service. A backlog that grows at a steady pace is a queue, before the
//     first token or between tokens, and every request waits longer in it; a batching
//     server near its capacity admits each request at once, and while it fills its waits
//     stay flat and its pace slows by less than 10 % a quarter as its backlog climbs.
//
// Past capacity the first quarter's requests finish late by the queue that built
// meanwhile, or, where the batch has no slot cap, by every request's slowing as it grows,
// which delays the judgment: on the textbook profile at 5 × its capacity the level stops
// after about 240 s rather than 100-130 s. While the pace has not settled (the long wait,
// below) the test must hold at every check through a quarter more arrivals: a batch that
// is still growing wanders widely and slowly, and one excursion over a half passed it in 2
// of 20 seeds of the fleet above at 0.9 × its capacity.
//
// Long enough to judge: at least SaturationLongTime of arrivals at the level's rate, and
// at least SaturationLong arrivals, or SaturationMinimum while the server's pace is steady
// (without the time floor, 8 × H200 replicas of Llama-3.1-8B at 270 req/s, requests of
// 0.6 s, were stopped after 5 s in 3 of 8 seeds with flat latencies; with it, in none of
// 20). The pace is steady when the requests that finished in the last quarter of
// the level so far were served (ServiceOf: first token to end, less the request's longest
// wait between two tokens) at most 10% longer on average than those of the quarter before.
// The backlog's correlation time is what sets how long a
// level must be: a batching server filling from empty serves each request more slowly as
// its batch grows, so its backlog grows for a long while (the textbook profile's for minutes
// near capacity) without its falling behind, which only the long wait tells apart; past
// capacity a slot-bound server's batch is full and its pace steady at once, and its backlog
// grows by the difference, which the short wait sees within a minute. A server whose pace
// keeps slowing past capacity (preempting for KV blocks) is judged after the long wait. A
// queue past the first token (a disaggregated prefill whose requests then wait for a decode
// slot, a preempted sequence waiting to resume) is each request's longest wait between two
// tokens, which the pace leaves out: the backlog grows there while TTFT stays flat, and the
// pace of the decode itself is what tells a full server from a batch still filling.
//
// Measured (TestOversaturationLadder, TestOversaturationWithinAMinute,
// TestOversaturationNotWhileFilling; docs/metrics.md): on the textbook profile (capacity
// 10.23 req/s for 512/100-token requests) a Poisson ladder of 300 s levels in steps of 10%
// of capacity stops at 1.0, 1.1 or 1.2 × capacity (60 seeds: 9, 39, 12; never at 0.9);
// on a fleet of eight Llama-2-70B replicas (66 req/s for requests of up to 1,024 and 585
// tokens) 20 seeds each (100·k + 3): 0.66, 0.9 and 0.95 × capacity never (2, 1 and 2 of 20
// before condition 5), 1.3 × always, after 218-228 s (212-228 before);
// one of its replicas at 5 × its capacity after 220-243 s; on a 16-slot linear profile of 7.1 req/s
// (bench/linear16.yaml), 60 s levels at 10 and 14 req/s are stopped in all of 60 seeds, after
// 31 and 22 s on average, and 0.9 × capacity in none of 60; on its disaggregated twin, whose
// queue sits past the first token (bench/disagg16.yaml, 7.1 req/s), likewise in all of 60
// after 31 and 22 s, and 0.9 × capacity in 1 of 60. End reason EndOversaturated.
//
// Unreachable (always on): when the level's first UnreachableFirst finished requests all
// failed to connect, nothing listens where the requests go; the level stops at once
// (EndUnreachable) rather than fail thousands more in the same way.
//
// When a rule stops a level, nothing more is sent and requests waiting for a slot are
// dropped; the requests in flight finish as they would at the level's end.
const (
	ErrorWindow       = 50
	ErrorMinimum      = 20
	SaturationMinimum = 300
	SaturationLong    = 1000
	// SaturationLongTime is both waits' floor in time: at a high rate 1,000 arrivals are a
	// few seconds, shorter than a fast fleet's batches take to settle.
	SaturationLongTime = 10 * time.Second
	UnreachableFirst   = 10
)

// More end reasons: the level was stopped by a rule.
const (
	EndOversaturated = EndReason("oversaturated")  // the server could not keep up (open loop)
	EndMaxErrorRate  = EndReason("max_error_rate") // its errors passed Level.MaxErrorRate
	EndUnreachable   = EndReason("unreachable")    // its first requests all failed to connect
)

// stopRules holds the rules' state for one level. The zero value applies the unreachable
// rule alone.
type stopRules struct {
	maxErr float64
	ring   [ErrorWindow]bool // the last finished requests: failed?
	n      int               // finished so far
	errs   int               // failures in ring
	reach  int               // the first finished requests, all unreachable so far; -1 once one was not

	sat       bool
	floor     int // SaturationLongTime's arrivals at the level's rate: no test before them
	arrivals  int
	firstDone int // arrivals when the first request finished; -1 before
	// risingSince is the arrivals when the test began to hold, at every check since, with
	// the pace not settled; 0 when it does not hold.
	risingSince int
	backlog     series
	served      time.Duration // service times of the succeeded requests, summed
	waited      time.Duration // their times in the system beyond their service, summed
	nServed     int
}

func newStopRules(l Level) stopRules {
	return stopRules{maxErr: l.MaxErrorRate, sat: l.DetectSaturation && !l.Closed() && !l.Stages.Staged(), firstDone: -1,
		floor: int(math.Ceil(l.Rate * SaturationLongTime.Seconds()))}
}

// finished counts a finished request, served for service (ServiceOf) after waiting wait
// (its time from due to done, less service), the arrival-th
// the over-saturation rule counted (0: none); it returns the end reason when a rule now
// stops the level.
func (s *stopRules) finished(o Outcome, service, wait time.Duration, arrival int) EndReason {
	failed := o != Succeeded
	if s.sat && s.firstDone < 0 {
		s.firstDone = s.arrivals
	}
	if s.sat && arrival > 0 {
		s.backlog.finished(arrival, s.arrivals)
	}
	if s.sat && !failed {
		s.served += service
		s.waited += max(wait, 0)
		s.nServed++
	}
	if s.reach >= 0 {
		if o != Unreachable {
			s.reach = -1
		} else if s.reach++; s.reach >= UnreachableFirst {
			return EndUnreachable
		}
	}
	if s.maxErr <= 0 {
		return ""
	}
	i := s.n % ErrorWindow
	if s.n >= ErrorWindow && s.ring[i] {
		s.errs--
	}
	s.ring[i] = failed
	if failed {
		s.errs++
	}
	s.n++
	if w := min(s.n, ErrorWindow); s.n >= ErrorMinimum && float64(s.errs) > s.maxErr*float64(w) {
		return EndMaxErrorRate
	}
	return ""
}

// next is the number the over-saturation rule will give the next arrival (arrived counts
// it); 0 when the rule is off.
func (s *stopRules) next() int32 {
	if !s.sat {
		return 0
	}
	return int32(min(s.arrivals+1, math.MaxInt32))
}

// arrived counts an open-loop arrival with backlog requests unfinished (itself included);
// it returns the end reason when the level is now oversaturated.
func (s *stopRules) arrived(backlog int) EndReason {
	if !s.sat {
		return ""
	}
	s.arrivals++
	if s.backlog.add(mark{backlog: float64(backlog), served: s.served.Seconds(), waited: s.waited.Seconds(), nServed: s.nServed}) && s.rising(backlog) {
		return EndOversaturated
	}
	return ""
}

// rising is the over-saturation test, with backlog requests unfinished now.
func (s *stopRules) rising(backlog int) bool {
	settled := s.backlog.settled()
	if s.firstDone < 0 || s.firstDone > s.arrivals/2 || float64(backlog) < 0.1*float64(s.arrivals) || s.arrivals < SaturationLong && !settled || s.arrivals < s.floor {
		s.risingSince = 0
		return false
	}
	bg, ok := s.backlog.trend()
	if !ok || bg.growth < (0.1+s.backlog.outlasting())*float64(bg.n)+excursion*math.Sqrt(bg.start) {
		s.risingSince = 0
		return false
	}
	if settled {
		// A steady pace with a growing backlog is a queue — before the first token, or
		// between tokens past it — and each request waits longer in it; a batching server
		// near capacity, still filling, admits every request at once and its waits stay
		// flat while its backlog climbs.
		if !s.backlog.waitsGrow() {
			s.risingSince = 0
			return false
		}
		return true
	}
	// A batch still growing wanders widely and slowly: the test must hold through a quarter
	// more arrivals.
	if s.risingSince == 0 {
		s.risingSince = s.arrivals
	}
	return 4*s.arrivals >= 5*s.risingSince
}

// excursion is how many "standard deviations" of the backlog the half began with (about the
// square root of its size, as the number in flight of Poisson arrivals is) a rise must
// exceed besides the 10 % of arrivals: a fleet holding a hundred requests wanders by tens
// over a few seconds, which 10 % of a short level's arrivals does not cover.
const excursion = 2

// series is what the rule takes at each arrival, kept every stride-th so that its memory
// stays bounded: past maxMarks values, every other one is dropped and the stride doubles.
type series struct {
	n      int // values added
	stride int
	marks  []mark // every stride-th value
	pos    []int  // their positions (1-based)
}

// mark is the level at one arrival: its backlog, and the service times (ServiceOf) of the
// requests succeeded so far, summed (seconds) and counted; and the arrivals counted when
// the request that arrived then finished (0: not yet).
type mark struct {
	backlog float64
	served  float64
	waited  float64
	nServed int
	done    int
}

const maxMarks = 4096

// add appends v; it reports whether the series is due for a test.
func (s *series) add(v mark) bool {
	if s.stride == 0 {
		s.stride = 1
	}
	s.n++
	if s.n%s.stride == 0 {
		s.marks, s.pos = append(s.marks, v), append(s.pos, s.n)
		if len(s.marks) >= maxMarks {
			k := 0
			for i := 1; i < len(s.marks); i += 2 {
				s.marks[k], s.pos[k] = s.marks[i], s.pos[i]
				k++
			}
			s.marks, s.pos, s.stride = s.marks[:k], s.pos[:k], 2*s.stride
		}
	}
	return s.n >= SaturationMinimum && s.n%(10*s.stride) == 0
}

// finished notes that the request of the arrival-th value finished when at values had
// been added, if that value is kept.
func (s *series) finished(arrival, at int) {
	if j, ok := slices.BinarySearch(s.pos, arrival); ok {
		s.marks[j].done = at
	}
}

// outlasting is the share of the kept requests that arrived in the first quarter that did
// not finish within n/2 arrivals of their own: an estimate of the share of a request's
// lifetimes that outlast the second half's start. A server that keeps up fills for as long
// as its longest requests take, and over the half its backlog grows by at most this share
// of the half's arrivals; past capacity the backlog grows by the arrivals it cannot serve.
// The first quarter's lifetimes were served while the server filled and include any queue
// that built meanwhile.
func (s *series) outlasting() float64 {
	var in, done int
	for j, p := range s.pos {
		if p > s.n/4 {
			break
		}
		in++
		if d := s.marks[j].done; d > 0 && d-p <= s.n/2 {
			done++
		}
	}
	if in == 0 {
		return 1
	}
	return 1 - float64(done)/float64(in)
}

// trendResult is the trend of a series' second half: its values (n) and the growth of the
// fitted line over them.
type trendResult struct {
	n      int
	growth float64
	start  float64 // the first batch's mean: the backlog the half began with
}

// trend fits a line through the batch means of the second half; ok says the slope is
// positive and significant.
func (s *series) trend() (trendResult, bool) {
	half := s.n / 2
	j := 0
	for j < len(s.pos) && s.pos[j] <= half {
		j++
	}
	pts := s.marks[j:]
	if s.n < SaturationMinimum || len(pts) < 4*metrics.TrendBatches {
		return trendResult{}, false
	}
	var m [metrics.TrendBatches]float64
	for k := range m {
		lo, hi := k*len(pts)/metrics.TrendBatches, (k+1)*len(pts)/metrics.TrendBatches
		for _, v := range pts[lo:hi] {
			m[k] += v.backlog
		}
		m[k] /= float64(hi - lo)
	}
	slope, se := metrics.LineFit(m[:])
	r := trendResult{n: s.n - half, growth: slope * metrics.TrendBatches, start: m[0]}
	return r, slope > 0 && (se == 0 || slope/se > metrics.TrendT)
}

// settled says whether the server's pace has stopped slowing: the requests that finished in
// the last quarter of the level so far (by arrival) were served at most paceSlack longer, on
// average, than those of the quarter before. A batching server filling from empty serves
// each request more slowly as its batch grows, and its backlog grows meanwhile without it
// falling behind; past its capacity, its batch is full and its pace steady.
func (s *series) settled() bool {
	a, b, c, ok := s.quarters()
	if !ok {
		return false
	}
	before := (b.served - a.served) / float64(b.nServed-a.nServed)
	last := (c.served - b.served) / float64(c.nServed-b.nServed)
	return last <= (1+paceSlack)*before
}

// quarters are the marks at the level's half, three quarters and last arrival so far; ok
// when requests finished in both quarters between them.
func (s *series) quarters() (a, b, c mark, ok bool) {
	at := func(p int) mark {
		j := 0
		for j < len(s.pos)-1 && s.pos[j] < p {
			j++
		}
		return s.marks[j]
	}
	if len(s.marks) == 0 {
		return mark{}, mark{}, mark{}, false
	}
	a, b, c = at(s.n/2), at(3*s.n/4), s.marks[len(s.marks)-1]
	return a, b, c, b.nServed > a.nServed && c.nServed > b.nServed
}

// waitsGrow says whether the requests that finished in the last quarter of the level so far
// waited in the system beyond their service longer than those of the quarter before, by
// more than paceSlack of that wait and of their service: a queue that grows lengthens each
// wait by the arrivals ahead of it.
func (s *series) waitsGrow() bool {
	a, b, c, ok := s.quarters()
	if !ok {
		return false
	}
	n1, n2 := float64(b.nServed-a.nServed), float64(c.nServed-b.nServed)
	before, last := (b.waited-a.waited)/n1, (c.waited-b.waited)/n2
	pace := (b.served - a.served) / n1
	return last > (1+paceSlack)*before+paceSlack*pace
}

// paceSlack is how much slower the last quarter's requests may be served than the quarter
// before's for the pace to count as steady.
const paceSlack = 0.1

// ParseMaxErrorRate reads a max error rate: a fraction in (0, 1) as 0.3 or 30%; "" is 0
// (off).
func ParseMaxErrorRate(s string) (float64, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	v, err := metrics.ParseFraction(s)
	if err != nil {
		return 0, err
	}
	if v <= 0 || v >= 1 {
		return 0, fmt.Errorf("%q must be above 0 and below 1 (100%%)", s)
	}
	return v, nil
}
