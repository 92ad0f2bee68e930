package metrics

import (
	"math"
	"strings"
	"testing"
)

// FuzzParseSLOs: ParseSLOs never panics; every term it accepts is well-formed (a positive
// bound, a percentile in [0, 100] or the mean, a goodput fraction in [0, 1]) and prints
// back to a term that parses to the same SLO. Seed corpus: testdata/fuzz/FuzzParseSLOs.
//
//	go test ./internal/metrics -run '^$' -fuzz '^FuzzParseSLOs$' -fuzztime 30s
func FuzzParseSLOs(f *testing.F) {
	for _, s := range []string{
		"ttft<=500ms,tpot:p99<=50ms,goodput>=0.95",
		"ttft<=500ms, tpot<=50ms, itl<=100ms, e2el<=10s",
		"ttft:p99.9<=1s,e2el:mean<=5s,tpot:median<=30ms,ttft_ms:P50<=2ms",
		"schedule_lag:p99<=5ms", "goodput>=1", "goodput>=-0.1", "goodput<=0.5",
		"ttft<=500", "ttft<=0s", "ttft:p101<=1s", "latency<5", "ttft<=1h2m3.5s", ",", "",
		"ttft:pNaN<=1s", "ttft<=-1ms", "tpot : p90 <= 20us",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slos, err := ParseSLOs(s)
		if err != nil {
			if slos != nil || err.Error() == "" {
				t.Fatalf("%q: error %v with %d terms", s, err, len(slos))
			}
			return
		}
		if strings.TrimSpace(s) != "" && len(slos) != strings.Count(s, ",")+1 {
			t.Fatalf("%q: %d terms from %d comma-separated parts", s, len(slos), strings.Count(s, ",")+1)
		}
		texts := make([]string, len(slos))
		for i, o := range slos {
			switch o.Kind {
			case SLOBound, SLOPercentile:
				if o.Limit <= 0 {
					t.Fatalf("%q: term %d has a non-positive bound %v", s, i, o.Limit)
				}
				if o.Kind == SLOPercentile && !math.IsNaN(o.P) && !(o.P >= 0 && o.P <= 100) {
					t.Fatalf("%q: term %d has percentile %v", s, i, o.P)
				}
				if o.Metric == "" {
					t.Fatalf("%q: term %d names no metric", s, i)
				}
			case SLOGoodput:
				if !(o.Min >= 0 && o.Min <= 1) {
					t.Fatalf("%q: goodput fraction %v", s, o.Min)
				}
			default:
				t.Fatalf("%q: term %d has kind %d", s, i, o.Kind)
			}
			texts[i] = o.String()
			if strings.Contains(texts[i], ",") || texts[i] == "" {
				t.Fatalf("%q: term %d prints as %q", s, i, texts[i])
			}
		}
		back, err := ParseSLOs(strings.Join(texts, ","))
		if err != nil || len(back) != len(slos) {
			t.Fatalf("%q -> %q does not parse back: %v", s, texts, err)
		}
		for i := range slos {
			a, b := slos[i], back[i]
			samePct := a.P == b.P || (math.IsNaN(a.P) && math.IsNaN(b.P))
			if a.Kind != b.Kind || a.Metric != b.Metric || !samePct || a.Limit != b.Limit || a.Min != b.Min || b.String() != texts[i] {
				t.Fatalf("%q: term %d %+v printed %q parses to %+v", s, i, a, texts[i], b)
			}
		}
	})
}
