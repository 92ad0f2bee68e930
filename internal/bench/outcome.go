package bench

import "github.com/llmbench/llmbench/internal/report"

// Failure is how a finished run failed, in the order a run is judged: a level stopped for
// its errors, or without one successful request, fails it before the SLO verdicts do, so
// that failing the SLOs means every level ran and none met them.
type Failure int

const (
	Passed           Failure = iota // nothing failed: every level ran, and one met the SLOs or none were given
	LevelErrors                     // a level was stopped for its error rate (its MaxErrorRate)
	LevelUnreachable                // a level's first load.UnreachableFirst requests all failed to connect
	LevelNoSuccess                  // a level had no successful request
	SLOsMissed                      // no level met the SLOs
)

// Failed is how the run sum summarizes failed, with the level that failed it (nil when no
// one level did).
func Failed(sum *report.Summary) (Failure, *report.Level) {
	for i := range sum.Levels {
		l := &sum.Levels[i]
		switch {
		case l.EndReason == report.EndMaxErrorRate:
			return LevelErrors, l
		case l.EndReason == report.EndUnreachable:
			return LevelUnreachable, l
		case l.Completed == 0 && l.Failed > 0:
			return LevelNoSuccess, l
		}
	}
	if passed, judged := sum.SLOPassed(); judged && !passed {
		return SLOsMissed, nil
	}
	return Passed, nil
}
