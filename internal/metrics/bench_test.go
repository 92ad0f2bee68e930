package metrics

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// synth builds n completed records of tokens tokens each: closed loop at concurrency 256,
// TTFT 50-150 ms, gaps 10-20 ms with µs jitter, every 16th event a 2-token chunk.
func synth(n, tokens int) []record.Record {
	rng := rand.New(rand.NewPCG(7, 7))
	recs := make([]record.Record, n)
	slot := make([]time.Duration, 256)
	for i := range recs {
		s := i % len(slot)
		r := &recs[i]
		r.Index, r.Scheduled, r.Sent = i, slot[s], slot[s]+time.Duration(rng.IntN(500))*time.Microsecond
		r.InputTokens, r.OutputTokens, r.OutputTokensSource = 512, tokens, record.SourceUsage
		r.Events.Base = r.Sent
		t := r.Sent + time.Duration(50_000+rng.IntN(100_000))*time.Microsecond
		for k := 0; k < tokens; {
			c := 1
			if k%16 == 15 && k+2 <= tokens {
				c = 2
			}
			r.Events.Append(t, c)
			k += c
			t += time.Duration(10_000+rng.IntN(10_000)) * time.Microsecond
		}
		r.Done = t
		slot[s] = t
	}
	return recs
}

func benchAggregate(b *testing.B, n int) {
	recs := synth(n, 128)
	slos, _ := ParseSLOs("ttft<=120ms,tpot<=16ms,tpot:p99<=20ms")
	cfg := Config{SLOs: slos}
	b.ReportAllocs()
	b.ResetTimer()
	var lv Level
	for b.Loop() {
		lv = Aggregate(recs, cfg)
	}
	b.ReportMetric(float64(lv.Metrics.Stat("itl").Count), "itl_samples")
	b.ReportMetric(float64(lv.Dists["itl"].Distinct()), "itl_distinct")
}

func BenchmarkAggregate10k(b *testing.B) { benchAggregate(b, 10_000) }

// BenchmarkAggregate1M: ~128M ITL samples. Needs ~0.7 GiB for the records themselves.
func BenchmarkAggregate1M(b *testing.B) { benchAggregate(b, 1_000_000) }
