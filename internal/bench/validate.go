package bench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/route"
	"github.com/llmbench/llmbench/internal/search"
)

// Validate reports every problem with the Spec's settings at once, each a *fielderr.Error
// keyed by the field's path (Timeout, Judge.Metrics.SLOs[1],API; several fields joined by
// commas), which the caller names as its users know it. The levels are load's to validate
// (load.Run and load.RunVirtual refuse a level that is not valid).
func (r Spec) Validate() error {
	var errs []error
	add := func(field, format string, a ...any) { errs = append(errs, fielderr.New(field, format, a...)) }
	if r.Live {
		for _, d := range []struct {
			field string
			v     time.Duration
		}{{"Timeout", r.Timeout}, {"IdleTimeout", r.IdleTimeout}, {"Telemetry.Interval", r.Telemetry.Interval}} {
			if d.v <= 0 {
				add(d.field, "must be positive")
			}
		}
	}
	if r.Balance != "" {
		if err := route.Check(r.Balance, route.RoundRobin, route.LeastOutstanding, route.Session); err != nil {
			errs = append(errs, &fielderr.Error{Field: "Balance", Err: err})
		} else if r.Live && len(r.More) == 0 {
			add("Balance,More", "%s: spreads requests over several endpoints", r.Balance)
		}
	}
	if r.Requests != 0 && r.Base.Duration != 0 {
		// A level may have both, but a timed level takes no request count (FinishLevel).
		add("Requests,Base.Duration", "give one, not both")
	}
	if r.SessionHeader != "" {
		if err := client.CheckHeaderName(r.SessionHeader); err != nil {
			errs = append(errs, &fielderr.Error{Field: "SessionHeader", Err: err})
		}
	}
	if r.Repeat < 1 {
		add("Repeat", "%d must be at least 1", r.Repeat)
	}
	switch r.Search {
	case "": // a bound given without a search is ignored, but must still read as one
		if r.SearchMax < 0 {
			add("SearchMax", "%g must be positive", r.SearchMax)
		}
	case search.Concurrency, search.Rate:
		if !(r.SearchMax > 0) {
			add("SearchMax", "%g must be positive", r.SearchMax)
		}
		if !metrics.HasVerdict(r.Judge.Metrics.SLOs) {
			add("Search,Judge.Metrics.SLOs", "needs percentile SLOs to decide on")
		}
		if len(r.Levels) > 0 && !r.Levels[0].Stages.Staged() { // stages with a search: their caller says so, with the stages
			add("Search,Levels", "finds the load itself")
		}
	default:
		add("Search", "%q is not concurrency or rate", r.Search)
	}
	whole := client.Embeddings(r.API) || r.API == client.APIRerank // one document, no stream
	if whole && r.NoStream {
		add("NoStream,API", "%s never streams", r.API)
	}
	if whole && r.Workload.Turns > 1 {
		add("Workload.Turns,API", "is for chat APIs, not %s", r.API)
	}
	if r.Images.N != 0 {
		if err := r.Images.Validate(); err != nil {
			errs = append(errs, &fielderr.Error{Field: "Images", Err: err})
		}
		if r.API != client.APIOpenAIChat && r.API != client.APIOpenAIResponses {
			add("Images,API", "is for %s and %s, not %s", client.APIOpenAIChat, client.APIOpenAIResponses, r.API)
		}
	}
	errs = append(errs, r.unmeasurable()...)
	if t := r.Temperature; t != nil && (*t < 0 || math.IsNaN(*t)) {
		add("Temperature", "%v: must be 0 or more", *t)
	}
	if p := r.TopP; p != nil && !(*p > 0 && *p <= 1) {
		add("TopP", "%v: must be in (0, 1]", *p)
	}
	if !r.Live && r.API != "" && !slices.Contains(SimAPIs, r.API) {
		add("API", "simulate speaks %s, not %q", strings.Join(SimAPIs, ", "), r.API)
	}
	if !r.Live && r.Tokenizer == "server" {
		add("Tokenizer", "server: simulate has no server to ask (it needs lengths only)")
	}
	return errors.Join(errs...)
}

// unmeasurable refuses SLO terms on figures timed from the stream's token events (TTFT,
// TPOT, ITL, chunk gaps) where the responses come whole: they would be judged on nothing,
// after the run, as not met. The field says why they come whole: the API, or NoStream.
func (r Spec) unmeasurable() []error {
	why := "NoStream"
	switch {
	case client.Embeddings(r.API) || r.API == client.APIRerank:
		why = "API"
	case !r.NoStream:
		return nil
	}
	var errs []error
	for i, s := range r.Judge.Metrics.SLOs {
		if m, ok := metrics.Lookup(s.Metric); ok && m.Streamed {
			errs = append(errs, fielderr.New(fmt.Sprintf("Judge.Metrics.SLOs[%d],%s", i, why), "%s: %s is timed from the stream's token events", s, m.Short))
		}
	}
	return errs
}
