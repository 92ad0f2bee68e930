package load

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// fixedSource is a stand-in workload: every request has the same lengths.
type fixedSource struct{ in, out int }

func (f fixedSource) Request(level, i int) workload.Request {
	return workload.Request{InputTokens: f.in, OutputTokens: f.out}
}
func (fixedSource) Len() int { return 0 }

// funcSource builds each request with a function of its index.
type funcSource func(i int) workload.Request

func (f funcSource) Request(level, i int) workload.Request { return f(i) }
func (funcSource) Len() int                                { return 0 }

func simProfile(t testing.TB, name string) sim.Profile {
	t.Helper()
	p, err := sim.LoadProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// simulateLevel runs one level on profile p's engine on a virtual clock, as simulate does.
func simulateLevel(ctx context.Context, p sim.Profile, lvl Level, levelStart time.Duration, src workload.Source, sink func(*record.Record)) (time.Duration, EndReason, error) {
	srv, err := sim.NewVirtual(p)
	if err != nil {
		return levelStart, "", err
	}
	return RunVirtual(ctx, lvl, levelStart, src, srv, sink)
}

// simulate runs one level and returns its records in index order.
func simulate(t testing.TB, p sim.Profile, lvl Level, src workload.Source) ([]*record.Record, time.Duration) {
	t.Helper()
	var recs []*record.Record
	end, _, err := simulateLevel(context.Background(), p, lvl, 0, src, func(r *record.Record) { recs = append(recs, r) })
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Index < recs[j].Index })
	return recs, end
}

// percentile by linear interpolation between order statistics (numpy's default).
func percentile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	pos := q / 100 * float64(len(s)-1)
	i := int(pos)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (s[i+1]-s[i])*(pos-float64(i))
}

// tpotMs is a record's time per output token after the first.
func tpotMs(r *record.Record) float64 {
	f, _ := r.FirstToken()
	l, _ := r.LastToken()
	return float64(l-f) / float64(time.Millisecond) / float64(r.OutputTokens-1)
}

// outputThroughput is measured output tokens over first Sent to last Done (docs/design.md §2).
func outputThroughput(recs []*record.Record) float64 {
	var first, last time.Duration = -1, 0
	tokens := 0
	for _, r := range recs {
		if r.Warmup || !r.OK() {
			continue
		}
		if first < 0 || r.Sent < first {
			first = r.Sent
		}
		if r.Done > last {
			last = r.Done
		}
		tokens += r.OutputTokens
	}
	return float64(tokens) / (last - first).Seconds()
}
