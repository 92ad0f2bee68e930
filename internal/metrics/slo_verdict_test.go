package metrics

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestMinSamples: the fewest samples for a verdict on a percentile is where the console's
// "low n" flag goes away: the order-statistics interval (CI95) bounds both sides.
func TestMinSamples(t *testing.T) {
	for _, p := range []float64{50, 75, 90, 99, 99.9} {
		n := MinSamples(p)
		d := NewDist()
		for i := range n - 1 {
			d.AddMicros(int64(1000 * (i + 1)))
		}
		if lo, hi := d.CI95(p); !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
			t.Errorf("P%v on %d samples (MinSamples %d - 1): interval bounded", p, n-1, n)
		}
		d.AddMicros(int64(1000 * n))
		if lo, hi := d.CI95(p); math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			t.Errorf("P%v on %d samples (MinSamples): interval unbounded", p, n)
		}
	}
	if got := [3]int{MinSamples(50), MinSamples(90), MinSamples(99)}; got != [3]int{6, 36, 368} {
		t.Errorf("MinSamples(50, 90, 99) = %v, want 6, 36, 368", got)
	}
	if MinSamples(100) != 1 || MinSamples(0) != 1 {
		t.Error("the maximum or minimum needs more than one sample")
	}
}

// TestVerdictUndecided: a percentile term judged on fewer samples than MinSamples is
// undecided and not met, the verdict with it unless another term failed; the mean and the
// maximum are judged on any sample.
func TestVerdictUndecided(t *testing.T) {
	dist := func(n int, ms float64) *Dist {
		d := NewDist()
		for range n {
			d.AddMicros(int64(ms * 1000))
		}
		return d
	}
	judge := func(terms string, n int, ms float64) *Verdict {
		slos, err := ParseSLOs(terms)
		if err != nil {
			t.Fatal(err)
		}
		return evaluate(slos, map[string]*Dist{KeyTTFT: dist(n, ms), KeyTPOT: dist(n, ms)}, nil, ptr(0.0))
	}
	v := judge("ttft:p99<=1s", 1, 100)
	if v.Pass || !v.Undecided || v.Result() != "undecided" || !v.Terms[0].Undecided ||
		!strings.Contains(v.Reason, "ttft on 1 sample; p99 needs at least 368") {
		t.Errorf("P99 on 1 sample: %+v, want undecided (1 sample of 368)", v)
	}
	if v := judge("ttft:p99<=1s", 368, 100); !v.Pass || v.Undecided || v.Reason != "" {
		t.Errorf("P99 on 368 samples within its bound: %+v, want pass", v)
	}
	if v := judge("ttft:p99<=1s,tpot:p50<=10ms", 10, 100); v.Pass || v.Undecided || v.Result() != "fail" {
		t.Errorf("an undecided P99 beside a failed P50: %+v, want fail", v)
	}
	if v := judge("ttft:mean<=1s,ttft:p100<=1s,error_rate<=0", 1, 100); !v.Pass {
		t.Errorf("the mean and the maximum of 1 sample: %+v, want pass", v)
	}
}

// TestFailBehind: a level whose server fell behind fails, whatever its terms say, with
// the reason; twice is once; no verdict stays none.
func TestFailBehind(t *testing.T) {
	slos, _ := ParseSLOs("ttft:p50<=1s")
	d := NewDist()
	for range 10 {
		d.AddMicros(1000)
	}
	v := evaluate(slos, map[string]*Dist{KeyTTFT: d}, nil, nil)
	if !v.Pass {
		t.Fatalf("verdict %+v, want pass before", v)
	}
	FailBehind(v, "the backlog grew")
	FailBehind(v, "the backlog grew")
	if v.Pass || v.Undecided || v.Reason != "oversaturated: the backlog grew" || v.Result() != "fail" || !v.Terms[0].Pass {
		t.Errorf("after FailBehind: %+v, want fail (oversaturated: the backlog grew), the term still passing", v)
	}
	FailBehind(nil, "x")
}

// TestGrowingBacklogFails: a level whose in-flight requests keep growing through it (an
// open loop past capacity that no rule stopped) has a failed verdict, though each request
// that finished was quick.
func TestGrowingBacklogFails(t *testing.T) {
	slos, _ := ParseSLOs("e2el:p50<=1h")
	a := NewAggregator(Config{SLOs: slos})
	// One arrival every 100 ms for 200 s, each taking 2 ms longer than the one before
	// (1 s to 5 s): the in-flight count grows from 10 to 50.
	for i := range 2000 {
		at := time.Duration(i) * 100 * time.Millisecond
		done := at + time.Second + time.Duration(i)*2*time.Millisecond
		r := rec(at, at, done, 10)
		a.Add(&r)
	}
	lv := a.Level()
	if ss := lv.SteadyState; ss == nil || !ss.Growing {
		t.Fatalf("steady state %+v, want in-flight requests growing", lv.SteadyState)
	}
	if lv.SLO == nil || lv.SLO.Pass || !strings.HasPrefix(lv.SLO.Reason, "oversaturated: in-flight requests keep growing") {
		t.Errorf("verdict %+v, want fail: oversaturated", lv.SLO)
	}
}

// TestGrowingBacklogTooShortFails: a level too short for a steady state (fewer than
// MinRequestsPerSlot requests per request in flight) whose in-flight requests still grow
// through its second half fails as fallen behind, whatever its finished requests say; one
// whose backlog levelled off in its second half does not.
func TestGrowingBacklogTooShortFails(t *testing.T) {
	slos, _ := ParseSLOs("e2el:p50<=1h")
	for _, tc := range []struct {
		name    string
		life    func(i int) time.Duration
		growing bool
	}{
		// One arrival every 10 ms for 60 s, each living 30 ms longer than the one before:
		// in flight grows from 0 to about 1,800 (1 per slot).
		{"growing", func(i int) time.Duration { return time.Duration(i) * 30 * time.Millisecond }, true},
		// Each living 10-25 s: filled after 25 s, level in the second half (2.4 per slot).
		{"filled", func(i int) time.Duration { return 10*time.Second + time.Duration(i%16)*time.Second }, false},
	} {
		a := NewAggregator(Config{SLOs: slos})
		for i := range 6000 {
			at := time.Duration(i) * 10 * time.Millisecond
			r := rec(at, at, at+time.Millisecond+tc.life(i), 10)
			a.Add(&r)
		}
		lv := a.Level()
		ss := lv.SteadyState
		if ss == nil || ss.Reached {
			t.Fatalf("%s: steady state %+v, want too few requests per slot", tc.name, ss)
		}
		behind := lv.SLO != nil && strings.HasPrefix(lv.SLO.Reason, OversaturatedPrefix)
		if ss.Growing != tc.growing || behind != tc.growing {
			t.Errorf("%s: steady state %q growing %v, verdict %+v; want growing %v", tc.name, ss.Reason, ss.Growing, lv.SLO, tc.growing)
		}
	}
}
