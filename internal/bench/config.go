// Package bench runs benchmarks: a ladder of load levels (or a search for the largest load
// that meets the SLOs) against a target, live or on a virtual clock, with each level's
// repeats, stop rules and /metrics scrape, the records written as they finish and the
// summary and reports written after every level. It is the one run pipeline under run,
// simulate and calibrate; the commands map their flags to a Config.
package bench

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
)

// Config is one benchmark: its ladder, how it is judged and described, and where its
// results go.
type Config struct {
	// Spec is the run: its ladder (Levels, in order; a search starts with none and adds a
	// level per probe, each Base at that load, FinishLevel'd with Requests), its repeats
	// (run r of a level seeded by RunSeed(Seed, r)), its stops, its target's settings and its
	// workload, as summary.json describes them.
	Spec

	Describe Describe
	Scrape   Scrape
	GPU      GPUScrape
	Console  Console
	// ConnStats, when set, says what the client saw of the server's connections.
	ConnStats func() client.ConnStats
	// Predict, for a simulation, is how far the profile's figures were measured from real
	// servers: each level's prediction interval (nil: none is stated).
	Predict *predict.Spread
	// Estimates, for a simulation, are its GPUs' estimated energy (Virtual's), reported as
	// levels[].gpu where no exporter was scraped.
	Estimates *Estimates
}

// Describe is what summary.json says of the run before its first level beside the Spec.
type Describe struct {
	Version string
	Target  report.Target
}

// Output is where a run's files go.
type Output struct {
	Dir          string
	Overwrite    bool          // replace the run already in Dir
	Records      record.Format // records.jsonl or records.bin
	ResultFormat string        // "" or "vllm": vLLM's result files too
}

// Scrape is the server's /metrics, read during each level; no URL: none.
type Scrape struct {
	URL      string
	Interval time.Duration
	Client   *http.Client
}

// GPUScrape is the GPU exporters (dcgm-exporter, AMD device-metrics-exporter) read during
// each level; no URLs: none.
type GPUScrape struct {
	URLs     []string
	Local    *gpumetrics.Local // this machine's nvidia-smi, read beside (or without) URLs
	Interval time.Duration
	Client   *http.Client
	// Warned are the URLs already warned of (their probe failed): a run warns once a URL.
	Warned map[string]bool
}

// Console is where a run says how it goes.
type Console struct {
	Out   io.Writer // each level's figures as it ends
	Quiet bool      // no per-level blocks
	// Warn, when set, is told what goes amiss beside the benchmark (*GPUProbeError, an
	// exporter that stops answering), as it happens; the run goes on.
	Warn func(error)
	// Stopped, when set, is told of the level that ended the ladder (StopOnSaturation), as
	// it ends.
	Stopped func(level string)
	// Progress, when set, shows a level's (or one run's) progress: total requests or its
	// duration.
	Progress func(name string, total int, d time.Duration) Progress
}

// Progress is a level's progress shown as its records finish.
type Progress interface {
	Add(*record.Record)
	Finish()
}

// CheckResultFormat is nil for the result files that may be written beside a run's own
// (Output.ResultFormat, Rewrite's resultFormat): "" for none, or "vllm".
func CheckResultFormat(f string) error {
	if f != "" && f != "vllm" {
		return fmt.Errorf("%q is not vllm", f)
	}
	return nil
}

// Validate reports every problem with c at once, each a *fielderr.Error (Output.Dir,
// Output.Overwrite, ...) the caller names as its users know it (a flag). The levels are load's to validate
// (load.Run and load.RunVirtual refuse a level that is not valid).
func (c *Config) Validate() error {
	var errs []error
	field := func(name string, err error) { errs = append(errs, &fielderr.Error{Field: name, Err: err}) }
	if c.Output.Dir == "" {
		field("Output.Dir", errors.New("no folder"))
	}
	switch c.Output.Records {
	case record.FormatJSONL, record.FormatCompact:
	default:
		field("Output.Records", fmt.Errorf("%q is not jsonl or compact", c.Output.Records))
	}
	if err := CheckResultFormat(c.Output.ResultFormat); err != nil {
		field("Output.ResultFormat", err)
	}
	if err := c.Spec.Validate(); err != nil { // its problems beside Config's own, one list
		errs = append(errs, fielderr.Split(err)...)
	}
	if c.Console.Out == nil {
		field("Console.Out", errors.New("no writer"))
	}
	return errors.Join(errs...)
}
