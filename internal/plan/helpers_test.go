package plan

import (
	"math"
	"testing"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/workload"
)

// poisson is a traffic of rate requests/s of fixed lengths, each level as simulate's flags
// would make it (10 s of arrivals, at least 10 requests, over-saturation watched).
func traffic(t testing.TB, rate float64, arrival string, in, out int) Traffic {
	t.Helper()
	src, err := workload.New(workload.Config{Dataset: "random", InputTokens: workload.Fixed(in), OutputTokens: workload.Fixed(out), Seed: 1, LengthsOnly: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := schedule.ParseArrival(arrival)
	if err != nil {
		t.Fatal(err)
	}
	return Traffic{Rate: rate, At: func(scale float64) (load.Level, workload.Source, error) {
		r := rate * scale
		return load.Level{Rate: r, Arrival: a, Seed: 1, DetectSaturation: true, Requests: max(10, int(math.Ceil(r*10)))}, src, nil
	}}
}

func slos(t testing.TB, s string) metrics.Config {
	t.Helper()
	v, err := metrics.ParseSLOs(s)
	if err != nil {
		t.Fatal(err)
	}
	return metrics.Config{SLOs: v}
}
