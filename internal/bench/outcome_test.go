package bench

import (
	"testing"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/report"
)

// A level's failure comes before the SLO verdicts, the first failed level named; missing
// the SLOs is every level run and none meeting them.
func TestFailed(t *testing.T) {
	level := func(name, end string, completed, failed int, pass *bool) report.Level {
		l := report.Level{Name: name, EndReason: end}
		l.Completed, l.Failed = completed, failed
		if pass != nil {
			l.SLO = &metrics.Verdict{Pass: *pass}
		}
		return l
	}
	no, yes := false, true
	for _, c := range []struct {
		levels []report.Level
		want   Failure
		level  string
	}{
		{[]report.Level{level("a", "", 5, 0, nil)}, Passed, ""},
		{[]report.Level{level("a", "", 5, 0, &no), level("b", "", 5, 1, &yes)}, Passed, ""},
		{[]report.Level{level("a", "", 5, 0, &no), level("b", "", 5, 0, &no)}, SLOsMissed, ""},
		{[]report.Level{level("a", "", 5, 0, &no), level("b", report.EndMaxErrorRate, 1, 9, &no)}, LevelErrors, "b"},
		{[]report.Level{level("a", report.EndUnreachable, 0, 8, nil)}, LevelUnreachable, "a"},
		{[]report.Level{level("a", "", 0, 3, &yes), level("b", report.EndMaxErrorRate, 0, 3, nil)}, LevelNoSuccess, "a"},
	} {
		got, l := Failed(&report.Summary{Levels: c.levels})
		name := ""
		if l != nil {
			name = l.Name
		}
		if got != c.want || name != c.level {
			t.Errorf("%+v: got %v at %q, want %v at %q", c.levels, got, name, c.want, c.level)
		}
	}
}
