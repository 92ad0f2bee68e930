package report

import (
	"fmt"
	"math"

	"github.com/llmbench/llmbench/internal/metrics"
)

// The client-behind rule (docs/metrics.md): a level's client fell behind when its schedule
// lag P99 is above the larger of behindLag and behindTTFTShare of its TTFT P50, or its read
// lag P99 is above behindLag.
const (
	behindLag       = 10.0 // ms
	behindTTFTShare = 0.10
)

// ClientBehind says why the level's client, not the server, was late: the schedule lag or
// read lag that broke the rule above; "" when neither did (or the level measured neither).
func ClientBehind(l metrics.Level) string {
	if st, ok := l.Metrics.Get(metrics.KeyScheduleLag); ok && st.Count > 0 {
		bound := behindLag
		if ttft, ok := l.Metrics.Get(metrics.KeyTTFT); ok && ttft.Count > 0 {
			if p, ok := ttft.Get(50); ok {
				bound = math.Max(bound, behindTTFTShare*p.Value)
			}
		}
		if lag := p99(*st); lag > bound {
			return fmt.Sprintf("schedule lag P99 %.1f ms, above %.1f ms (the larger of %.0f ms and %.0f%% of TTFT P50): requests were sent late",
				lag, bound, behindLag, behindTTFTShare*100)
		}
	}
	if st := l.ReadLag; st != nil && st.Count > 0 {
		if lag := p99(*st); lag > behindLag {
			return fmt.Sprintf("read lag P99 %.1f ms, above %.0f ms: arrived bytes waited for the client to read them", lag, behindLag)
		}
	}
	return ""
}

// ClientBehindAdvice is what to do about a level whose client fell behind.
const ClientBehindAdvice = "its latencies include the client's own lateness: send fewer streams per process, or split the load over shards (--shard I/N on several processes or machines, docs/sharding.md)"

// p99 is st's P99, or its maximum when P99 was not among the percentiles asked for.
func p99(st metrics.Stats) float64 {
	if p, ok := st.Get(99); ok {
		return p.Value
	}
	return st.Max
}
