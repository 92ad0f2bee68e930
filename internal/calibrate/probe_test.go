package calibrate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/figure"
)

// fakeServer is a made-up server's figures at a probe step: TTFT grows with the prompt,
// TPOT with the requests in flight, and TTFT jumps once they exceed its slots.
type fakeServer struct {
	slots      int
	tpotMs     float64 // at concurrency 1
	growth     float64 // TPOT's relative growth per request in flight beyond the first
	ttftMs     float64 // of a short prompt
	perTokenMs float64 // prefill per prompt token
}

func (s fakeServer) measure(st Step) Point {
	pt := Point{Name: "01-" + st.Name, Phase: st.Phase, Pass: st.Pass, Concurrency: st.Concurrency}
	c := max(st.Concurrency, 1)
	in := min(c, s.slots)
	pt.Measured[figure.TPOTP50] = s.tpotMs * (1 + s.growth*float64(in-1))
	pt.Measured[figure.TTFTP50] = s.ttftMs + s.perTokenMs*float64(st.InputTokens)
	if c > s.slots { // a request waits for one to end
		pt.Measured[figure.TTFTP50] += float64(decodeOutput) * pt.Measured[figure.TPOTP50]
	}
	for range st.Requests {
		pt.Requests = append(pt.Requests, Request{Prompt: st.InputTokens, Output: st.OutputTokens})
	}
	return pt
}

// runProbe plans a probe within cfg against s and returns its steps.
func runProbe(t *testing.T, cfg ProbeConfig, s fakeServer) []Step {
	t.Helper()
	pr, err := NewProber(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var steps []Step
	for {
		st, ok := pr.Next()
		if !ok {
			return steps
		}
		steps = append(steps, st)
		if len(steps) > 40 {
			t.Fatal("the probe never ends")
		}
		pr.Done(s.measure(st))
	}
}

func names(steps []Step) string {
	var n []string
	for _, s := range steps {
		n = append(n, fmt.Sprintf("%s:%d", s.Name, s.Requests))
	}
	return strings.Join(n, " ")
}

func TestProbeWithinItsCaps(t *testing.T) {
	// Ollama-like: 2 ms steps, so a decode step needs more than 32 requests to last
	// decodeSeconds; the cap of 2 in flight stops the ladder.
	fast := fakeServer{slots: 2, tpotMs: 1.6, growth: 0.5, ttftMs: 16, perTokenMs: 0.1}
	steps := runProbe(t, ProbeConfig{MaxConcurrency: 2, MaxInputTokens: 512}, fast)
	// decode-c1 at prefill-32's pace: 2 s / (19.2 ms + 64 × 1.6 ms) = 16.4, so 17 requests;
	// decode-c2 at c1's, twice as many in flight: 32.9, so 33. The second pass runs the
	// same steps again.
	// The open step: 384-token prompts take prefill-128's TTFT (16 + 0.1 × 128 = 28.8 ms,
	// the nearest step not longer), 48 outputs at c2's TPOT (1.6 × 1.5 = 2.4 ms): two in
	// flight finish 2 × 1000 / (28.8 + 115.2) = 13.9 req/s, but the engine spends 28.8 +
	// 115.2 / 2 ms on each, so 11.6 req/s: half of it for 30 s is 173 requests.
	want := "prefill-32:8 prefill-128:8 prefill-512:8 decode-c1:17 decode-c2:33 decode-c1-again:17 decode-c2-again:33 open-r5.79:173 mixed:9"
	if got := names(steps); got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	open := steps[len(steps)-2]
	if span := open.Trace[len(open.Trace)-1].At.Seconds(); span < 0.8*30 || span > 1.2*30 {
		// 207 exponential gaps: their sum's relative standard deviation is 7 %.
		t.Errorf("open step's %d arrivals span %.1f s, want about 30 s at %.3g req/s", len(open.Trace), span, open.Rate)
	}
	mixed := steps[len(steps)-1]
	short, long := 0, 0
	for _, r := range mixed.Trace {
		if r.Input == decodePrompt {
			short++
		} else if r.Input == 512 && r.Output == 1 {
			long++
		}
	}
	if short != 1 || long != mixedLong {
		t.Errorf("mixed: %d short prompts decoding and %d long ones, want 1 (the cap less one) and %d", short, long, mixedLong)
	}

	// A slow server (30 ms steps): 16 requests already last longer than decodeSeconds.
	slow := fakeServer{slots: 2, tpotMs: 30, growth: 0.1, ttftMs: 50, perTokenMs: 0.5}
	if got := names(runProbe(t, ProbeConfig{MaxConcurrency: 2, MaxInputTokens: 128}, slow)); got != "prefill-32:8 prefill-128:8 decode-c1:16 decode-c2:16 decode-c1-again:16 decode-c2-again:16 open-r0.552:40 mixed:9" {
		t.Errorf("slow server: %s", got)
	}
}

func TestProbeLadderStopsWhereRequestsQueue(t *testing.T) {
	s := fakeServer{slots: 8, tpotMs: 10, growth: 0.05, ttftMs: 20, perTokenMs: 0.05}
	steps := runProbe(t, ProbeConfig{MaxInputTokens: 256}, s)
	var ladder []string
	for _, st := range steps {
		if strings.HasPrefix(st.Name, "decode-") {
			ladder = append(ladder, st.Name)
			if st.Requests < 4*st.Concurrency || st.Requests > max(4*st.Concurrency, maxDecodeRequests) {
				t.Errorf("%s: %d requests, want 4 per request in flight up to %d", st.Name, st.Requests, maxDecodeRequests)
			}
		}
	}
	// c = 16 is the first beyond the 8 slots: its TTFT jumps by a whole request's decoding.
	// The second pass repeats the first, not what its own TTFTs would say.
	if got := strings.Join(ladder, " "); got != "decode-c1 decode-c2 decode-c4 decode-c8 decode-c16 decode-c1-again decode-c2-again decode-c4-again decode-c8-again decode-c16-again" {
		t.Errorf("ladder %s, want it to stop at the first level that queues (16)", got)
	}
	// A published slot count caps the ladder at twice it, and the cap itself is probed.
	steps = runProbe(t, ProbeConfig{MaxInputTokens: 256, Server: Published{Slots: 3, ContextTokens: 3 * 4096}}, fakeServer{slots: 100, tpotMs: 10, ttftMs: 20})
	ladder = nil
	for _, st := range steps {
		if strings.HasPrefix(st.Name, "decode-") {
			ladder = append(ladder, st.Name)
		}
	}
	if got := strings.Join(ladder, " "); got != "decode-c1 decode-c2 decode-c4 decode-c6 decode-c1-again decode-c2-again decode-c4-again decode-c6-again" {
		t.Errorf("ladder with 3 published slots %s, want up to 6", got)
	}
}

func TestProbeConfigErrors(t *testing.T) {
	err := ProbeConfig{MaxConcurrency: -1, MaxInputTokens: 10}.Validate()
	for _, field := range []string{"MaxConcurrency", "MaxInputTokens"} {
		var fe *fielderr.Error
		found := false
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			found = found || (errors.As(e, &fe) && fe.Field == field)
		}
		if !found {
			t.Errorf("Validate: %v, want a field error of %s", err, field)
		}
	}
	if _, err := NewProber(ProbeConfig{Server: Published{Slots: 4, ContextTokens: 256}}); err == nil || !strings.Contains(err.Error(), "larger context") {
		t.Errorf("a context too small for any prompt: %v", err)
	}
}

// TestPaceDrift pairs the ladder's passes at the lowest concurrency both ran, and holds out
// both passes of the furthest level.
func TestPaceDrift(t *testing.T) {
	pt := func(name string, c int, tpot float64) Point {
		p := Point{Name: name, Concurrency: c, Requests: []Request{{Prompt: 32, Output: 64}}}
		p.Phase, p.Pass = stepOf(name) // as loading its folder sets them
		p.Measured[figure.TPOTP50] = tpot
		return p
	}
	pts := []Point{pt("05-decode-c1", 1, 1.0), pt("06-decode-c2", 2, 1.8), pt("07-decode-c4", 4, 3.0), pt("08-decode-c8", 8, 5.0),
		pt("09-decode-c1-again", 1, 1.25), pt("10-decode-c2-again", 2, 1.9), pt("11-decode-c4-again", 4, 3.1), pt("12-decode-c8-again", 8, 5.2)}
	d := paceDrift(pts)
	if d.Concurrency != 1 || d.First != 1.0 || d.Again != 1.25 || math.Abs(d.Pct()-25) > 1e-9 {
		t.Errorf("drift %+v (%.1f%%), want concurrency 1, 1.00 → 1.25 ms, +25%%", d, d.Pct())
	}
	if s := d.String(); !strings.Contains(s, "+25.0%") || !strings.Contains(s, "calibrate again") {
		t.Errorf("a 25%% drift says %q: want the figure and what to do", s)
	}
	if s := (Drift{Concurrency: 1, First: 1, Again: 1.05}).String(); strings.Contains(s, "calibrate again") {
		t.Errorf("a 5%% drift says %q: within the tolerance, no advice", s)
	}
	if w, ok := d.Widest(); !ok || w.Concurrency != 1 || len(d.Pairs) != 4 {
		t.Errorf("widest %+v of %d pairs, want concurrency 1 of 4", w, len(d.Pairs))
	}
	// Steady at one in flight, moved at two: the headline pair alone would say nothing.
	steady := slices.Clone(pts)
	steady[4].Measured[figure.TPOTP50], steady[5].Measured[figure.TPOTP50] = 1.02, 3.26
	d = paceDrift(steady)
	if w, _ := d.Widest(); w.Concurrency != 2 || math.Abs(w.Pct()-81.1) > 0.1 {
		t.Errorf("widest %+v (%.1f%%), want concurrency 2, +81.1%%", w, w.Pct())
	}
	if s := d.String(); !strings.Contains(s, "at concurrency 2 1.80 and 3.26 ms (+81.1%)") || !strings.Contains(s, "calibrate again") {
		t.Errorf("a pair that moved 81%% beside a steady headline says %q: want that pair and what to do", s)
	}
	if s := paceDrift(pts[:4]).String(); !strings.Contains(s, "not measured") {
		t.Errorf("one pass: %q", s)
	}
	held := holdOut(pts)
	for i, p := range pts {
		if want := p.Concurrency == 8; held[i] != want {
			t.Errorf("%s held out %v, want %v (both passes of the highest level)", p.Name, held[i], want)
		}
	}
}

// TestRepeatable trusts a figure no better than its two passes agree, and leaves the
// caller's points and the unpaired ones as they were.
func TestRepeatable(t *testing.T) {
	pt := func(name string, c int, ttft float64) Point {
		p := Point{Name: name, Concurrency: c, Requests: []Request{{Prompt: 32, Output: 64}}}
		p.Phase, p.Pass = stepOf(name)
		p.Measured[figure.TTFTP50], p.Measured[figure.TPOTP50] = ttft, 5
		for _, k := range figure.All {
			p.SE[k] = seFloor
		}
		return p
	}
	pts := []Point{pt("01-prefill-512", 1, 15), pt("02-decode-c16", 16, 11.5), pt("03-decode-c16-again", 16, 17.3)}
	got := repeatable(pts)
	want := math.Log(17.3/11.5) / math.Sqrt2
	for _, i := range []int{1, 2} {
		if se := got[i].SE[figure.TTFTP50]; math.Abs(se-want) > 1e-12 {
			t.Errorf("%s: TTFT P50 trusted to %.4f, want %.4f (its passes' disagreement)", got[i].Name, se, want)
		}
		if se := got[i].SE[figure.TPOTP50]; se != seFloor {
			t.Errorf("%s: TPOT P50, which both passes agree on, trusted to %.4f, want the floor", got[i].Name, se)
		}
	}
	if got[0].SE != pts[0].SE || pts[1].SE[figure.TTFTP50] != seFloor {
		t.Error("an unpaired point's errors changed, or the caller's points were written")
	}
}

// TestTwoSpeeds: a decode level whose requests each ran steady at one of two paces far
// apart (llama.cpp's server on a core of its own here: 1.0 or 1.45 ms a token) is told
// apart from one whose requests spread about one pace, or that had one slow request.
func TestTwoSpeeds(t *testing.T) {
	steady := []float64{0.98, 1.0, 1.02, 0.99, 1.05, 1.01, 1.08, 0.97, 1.03, 1.0, 1.02, 0.99, 1.04, 1.0, 1.01, 1.06}
	broad := []float64{1.27, 1.30, 1.31, 1.33, 1.35, 1.38, 1.41, 1.44, 1.48, 1.52, 1.58, 1.62, 1.68, 1.75, 1.83, 1.35}
	for _, tc := range []struct {
		name         string
		paces        []float64
		found        bool
		nFast, nSlow int
	}{
		{"one speed", steady, false, 0, 0},
		{"one speed, spread", broad, false, 0, 0},
		{"a hiccup", append(slices.Clone(steady), 1.87), false, 0, 0},
		{"two speeds", append(slices.Clone(steady), 1.48, 1.47, 1.46, 1.46, 1.44, 1.46), true, 16, 6},
		{"a pass each", append(slices.Clone(steady), 1.67, 1.69, 1.62, 1.65, 1.59, 1.71, 1.73, 1.81), true, 16, 8},
		{"too few", []float64{1, 1.5, 1, 1.5}, false, 0, 0},
	} {
		got := twoSpeeds(tc.paces)
		if got.Found() != tc.found || got.NFast != tc.nFast || got.NSlow != tc.nSlow {
			t.Errorf("%s: %+v, want found %v with %d fast and %d slow", tc.name, got, tc.found, tc.nFast, tc.nSlow)
		}
		if got.Found() && !(got.Fast >= 0.97 && got.Fast <= 1.08 && got.Slow >= 1.44 && got.Slow <= 1.81) {
			t.Errorf("%s: speeds %.2f and %.2f, outside the groups", tc.name, got.Fast, got.Slow)
		}
	}
	d := Drift{Concurrency: 1, First: 1.0, Again: 1.02, Speeds: twoSpeeds(append(slices.Clone(steady), 1.48, 1.47, 1.46, 1.46, 1.44, 1.46))}
	if s := d.String(); !strings.Contains(s, "Two speeds: there, 16 requests ran at 1.01 ms a token and 6 at 1.46 ms (+45%)") {
		t.Errorf("the drift's words do not say the two speeds: %s", s)
	}
}

// A failed step may have run into the server's context (a prefill or mixed step's longest
// prompt) or its requests in flight (a decode step's), never both.
func TestStepLimit(t *testing.T) {
	for _, tc := range []struct {
		step    Step
		in, con int
	}{
		{Step{Phase: PhasePrefill, Concurrency: 1, InputTokens: 2048}, 2048, 0},
		{Step{Phase: PhaseMixed, Concurrency: 4, InputTokens: 32, Trace: []TraceRow{{Input: 32}, {Input: 3000}, {Input: 64}}}, 3000, 0},
		{Step{Phase: PhaseDecode, Concurrency: 16, InputTokens: 32}, 0, 16},
		{Step{Phase: PhaseOpen, Concurrency: 0, InputTokens: 512, Rate: 3}, 0, 0},
	} {
		if in, con := tc.step.Limit(); in != tc.in || con != tc.con {
			t.Errorf("%s step: limit %d tokens, %d in flight; want %d, %d", tc.step.Phase, in, con, tc.in, tc.con)
		}
	}
}
