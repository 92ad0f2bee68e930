package record

import "time"

// Since is the offset of t from the run start on the monotonic clock, truncated to the
// microsecond: records hold µs, so figures computed in memory equal those recomputed
// from records.jsonl.
func Since(start, t time.Time) time.Duration {
	return t.Sub(start).Truncate(time.Microsecond)
}
