package plan

import (
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/workload"
)

// traffic is a traffic of rate requests/s of fixed lengths, each level as plan's CLI
// makes it: the plan's horizon, over-saturation watched.
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
	return Traffic{Rate: rate, Load: predict.LoadKind(false, a), At: func(scale float64, h time.Duration) (load.Level, workload.Source, error) {
		return load.Level{Rate: rate * scale, Arrival: a, Seed: 1, DetectSaturation: true, Duration: h}, src, nil
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
