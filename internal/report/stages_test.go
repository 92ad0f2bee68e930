package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/schedule"
)

// A staged level is read by its stages: it is no point of the ladder's picks, the ladder
// names its peak as a staged one, and the level-wide "Not steady" advice (run longer) is
// not given for it; a held stage whose verdict failed as oversaturated fails the level.
func TestStagedLevelInTheSummary(t *testing.T) {
	s := ladderSummary(t, "tpot:p50<=1h", []int{4})
	st, err := schedule.ParseStages("concurrency:10s:1,10s:1->4,10s:4")
	if err != nil {
		t.Fatal(err)
	}
	l := &s.Levels[0]
	l.Stages = StagesOf(st)
	for k := range l.Stages {
		l.Stages[k].Level = l.Level
		l.Stages[k].SLO = &metrics.Verdict{Pass: true}
	}
	l.SteadyState = &metrics.SteadyState{Reason: levelVaries}
	s.Judge()
	if s.SweetSpot != nil || s.SLOLimit != nil || s.SLOLimitEstimate != nil {
		t.Errorf("picks on a staged level: %+v %+v %+v", s.SweetSpot, s.SLOLimit, s.SLOLimitEstimate)
	}
	var con bytes.Buffer
	if err := Console(&con, s, ConsoleOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ConsoleLadder(&con, s, ConsoleOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stages, peak c=4", "By Stage", "c=1→4", "a staged level has no one load to pick"} {
		if !strings.Contains(con.String(), want) {
			t.Errorf("console lacks %q:\n%s", want, con.String())
		}
	}
	if strings.Contains(con.String(), "Not steady:") {
		t.Errorf("console advises running the staged level longer:\n%s", con.String())
	}
	l.Stages[2].SLO = &metrics.Verdict{Reason: metrics.OversaturatedPrefix + "the backlog grew"}
	s.Judge()
	if l.SLO == nil || l.SLO.Pass || !strings.Contains(l.SLO.Reason, "stage 3 (c=4) could not keep up") {
		t.Errorf("level verdict %+v, want it failed by stage 3", l.SLO)
	}
}
