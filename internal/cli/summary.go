package cli

import (
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/rundesc"
)

// describe is what cfg asked for, for summary.json's load and workload.
func (c *benchConfig) describe() rundesc.Run {
	return rundesc.Run{Live: c.live, InProcess: c.inProcess, Levels: c.levels, Base: c.base,
		Requests: c.requests, Search: c.search, Repeat: c.repeat, StopOnSaturation: c.stopOnSaturation, SearchMax: c.searchMax, StartAt: c.startAt,
		SimProfile: c.simProfile, Timeout: c.timeout, IdleTimeout: c.idleTimeout, KeepAlive: c.keepAlive, TestRequest: c.testRequest,
		IgnoreEOS: c.ignoreEOS, Insecure: c.insecure, HTTP2: c.http2, ReadStamps: c.readStamps,
		Headers: c.headers, ExtraBody: c.extraBody, Temperature: c.temperature, TopP: c.topP,
		Workload: c.workload, Tokenizer: c.tokenizer,
		NoStream: c.noStream, BatchSize: c.batchSize, Documents: c.documents, QueryTokens: c.queryTokens}
}

// newSummary describes the run before it starts; execute fills the levels.
func newSummary(cfg *benchConfig, start time.Time) *report.Summary {
	load, wl := cfg.describe().Describe()
	pcts := cfg.metrics.Percentiles
	if len(pcts) == 0 {
		pcts = metrics.DefaultPercentiles
	}
	return &report.Summary{
		Schema:       report.SchemaV3,
		Version:      Version,
		StartedAt:    start.UTC(),
		RunStartUnix: float64(start.UnixMicro()) / 1e6,
		Seed:         cfg.seed,
		Target:       report.NewTarget(cfg.url, cfg.api, cfg.model),
		Workload:     wl,
		Load:         load,
		Percentiles:  pcts,
		SLO:          cfg.sloSpec,
		Price:        cfg.price,
	}
}

// newLevel names a level and attaches its figures.
func newLevel(l load.Level, m metrics.Level) report.Level {
	return report.Level{Name: loadName(l), Concurrency: l.Concurrency, Rate: l.Rate, Level: m}
}
