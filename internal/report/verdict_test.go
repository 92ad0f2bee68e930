package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/metrics"
)

// TestVerdictKeptUp: a level stopped as oversaturated fails its SLO verdict whatever its
// figures, in the console, summary.json and the exit code's test, and drops out of the
// SLO limit.
func TestVerdictKeptUp(t *testing.T) {
	s := ladderSummary(t, "tpot:p90<=100ms", []int{1, 4})
	if passed, _ := s.SLOPassed(); !passed || s.SLOLimit == nil || s.SLOLimit.Index != 1 {
		t.Fatalf("before: passed %v, limit %+v; want both levels passing", passed, s.SLOLimit)
	}
	s.Levels[1].EndReason = EndOversaturated
	s.Judge()
	s.Judge() // judging twice says the same
	if l := s.Levels[1]; l.SLO.Pass || l.SLO.Result() != "fail" || !strings.HasPrefix(l.SLO.Reason, "oversaturated: the server could not keep up") {
		t.Errorf("oversaturated level's verdict %+v, want fail (oversaturated)", l.SLO)
	}
	if s.SLOLimit == nil || s.SLOLimit.Index != 0 {
		t.Errorf("SLO limit %+v, want level 0", s.SLOLimit)
	}
	var con bytes.Buffer
	ConsoleLevel(&con, s, 1, ConsoleOptions{})
	if !strings.Contains(con.String(), "Verdict:                                 fail (oversaturated: the server could not") {
		t.Errorf("console:\n%s\nwant Verdict: fail (oversaturated: …)", con.String())
	}
	if c, _ := verdictCell(s.Levels[1].SLO); c.Text != "fail" || !strings.HasPrefix(c.Title, "oversaturated: ") {
		t.Errorf("report.html's verdict cell %+v, want fail with the reason", c)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Levels []struct {
			EndReason string `json:"end_reason"`
			SLO       struct {
				Pass   bool   `json:"pass"`
				Reason string `json:"reason"`
			} `json:"slo"`
		} `json:"levels"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if l := back.Levels[1]; l.EndReason != "oversaturated" || l.SLO.Pass || !strings.HasPrefix(l.SLO.Reason, "oversaturated: ") {
		t.Errorf("summary.json level 1: %+v, want end_reason oversaturated, slo.pass false and its reason", l)
	}
	s.Levels = s.Levels[1:]
	if passed, judged := s.SLOPassed(); passed || !judged {
		t.Errorf("SLOPassed = %v, %v with the oversaturated level alone, want false, true (exit code 3)", passed, judged)
	}
}

// TestVerdictUndecidedConsole: a P99 judged on 60 samples is undecided, and the console
// says so with the reason, on the term and the verdict.
func TestVerdictUndecidedConsole(t *testing.T) {
	s := ladderSummary(t, "tpot:p99<=100ms", []int{1})
	if passed, judged := s.SLOPassed(); passed || !judged {
		t.Errorf("SLOPassed = %v, %v, want false, true: an undecided verdict is not met", passed, judged)
	}
	var con bytes.Buffer
	ConsoleLevel(&con, s, 0, ConsoleOptions{})
	for _, want := range []string{"Verdict:                                 undecided (tpot on 60 samples; p99 needs at",
		"tpot:p99<=100ms", "undecided (tpot on 60 samples; p99"} {
		if !strings.Contains(con.String(), want) {
			t.Errorf("console lacks %q:\n%s", want, con.String())
		}
	}
	if c, _ := verdictCell(s.Levels[0].SLO); c.Text != "undecided" || !strings.HasPrefix(c.Title, "undecided: ") {
		t.Errorf("report.html's verdict cell %+v, want undecided with the reason", c)
	}
	var ladder bytes.Buffer
	Console(&ladder, s, ConsoleOptions{})
	if !strings.Contains(ladder.String(), "undecided") {
		t.Errorf("ladder table lacks the undecided verdict:\n%s", ladder.String())
	}
}

// TestAdviceSizedByConcurrency: a closed loop that never filled its slots is told to send 20
// requests a slot of its concurrency, not of the one request it held.
func TestAdviceSizedByConcurrency(t *testing.T) {
	l := Level{Concurrency: 64}
	l.PeakConcurrency = 1
	l.SteadyState = &metrics.SteadyState{Reason: "too few requests per slot: 1 requests over 1 in flight", Advice: "give each level at least 20 requests"}
	sizeAdvice(&l)
	if !strings.Contains(l.SteadyState.Advice, "--requests 1280") {
		t.Errorf("advice %q, want --requests 1280 (20 per slot at concurrency 64)", l.SteadyState.Advice)
	}
}
