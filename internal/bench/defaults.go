package bench

import (
	"slices"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/search"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// Defaults of a run's settings where nothing says otherwise.
const (
	DefaultTimeout     = 10 * time.Minute
	DefaultIdleTimeout = 60 * time.Second
	DefaultInterval    = time.Second // telemetry's scrapes
	DefaultTokenizer   = "o200k_base"
	DefaultInputTokens = 512
	DefaultOutput      = 128 // tokens per response
	DefaultDocuments   = 8   // rerank's documents per request
	DefaultQueryTokens = 32  // rerank's query
	DefaultSeed        = 1
)

// DefaultPercentiles are the percentiles a run reports unless told others.
var DefaultPercentiles = []float64{50, 90, 95, 99, 99.9}

// DefaultSearchMax is a search's upper bound on its axis unless told another (0: no search).
func DefaultSearchMax(axis search.Axis) float64 {
	return map[search.Axis]float64{search.Concurrency: 1024, search.Rate: 1000}[axis]
}

// DefaultSpec is a live run with every setting at its default and no target, load or
// output folder yet: what a caller that builds a run as data (calibrate's probe steps)
// starts from, so that it runs as run would with only those given.
func DefaultSpec() Spec {
	return Spec{Live: true, API: client.APIOpenAIChat, SimProfile: sim.DefaultProfile,
		Server: Server{Timeout: DefaultTimeout, IdleTimeout: DefaultIdleTimeout, KeepAlive: true, TestRequest: true, IgnoreEOS: true},
		Base:   load.Level{Arrival: schedule.Arrival{Kind: schedule.Poisson}, Shards: 1},
		Repeat: 1, Tokenizer: DefaultTokenizer, Seed: DefaultSeed,
		Workload: workload.Config{Dataset: "random", InputTokens: workload.Fixed(DefaultInputTokens), OutputTokens: workload.Fixed(DefaultOutput),
			PrefixGroups: 1, Seed: DefaultSeed, TraceSpeed: 1, Turns: 1},
		Judge:     Judge{Metrics: metrics.Config{Percentiles: slices.Clone(DefaultPercentiles)}},
		Telemetry: Telemetry{Interval: DefaultInterval},
		Output:    Output{Records: record.FormatJSONL}}
}
