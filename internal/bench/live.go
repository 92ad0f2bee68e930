package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"slices"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/balance"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/servermetrics"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// Live is a server to benchmark in real time and how to reach it.
type Live struct {
	// Client is the requests' API and transport; MaxConns and Tokenizer are set from the
	// ladder and Tokenizer, and an empty Model is the first the server lists.
	Client client.Config
	// Tokenizer, when set, is the run's tokenizer (an in-process simulator's, which counts
	// prompts with it); nil loads the Spec's (LoadTokenizer), a server's /tokenize asked
	// the way the requests go.
	Tokenizer tokenizer.Tokenizer
	// GPULocal, when set, is this machine's nvidia-smi, read during each level as an
	// exporter is (the caller sets it only for a target on this machine); probed first, and
	// left out, with a warning, when it fails.
	GPULocal *gpumetrics.Local
	// Warn, when set, is told what the run found amiss before measuring: a Client.Model
	// the server's model list does not name (*UnlistedModel), unless the Spec's
	// ModelChecked says it was checked already.
	Warn func(error)
	// Note, when set, is told how the run is shaped, as it is shaped, for the caller to
	// say: a PortLimit and a ChatByText before the first request, once the tokenizer is
	// loaded, and the SourceFit of the workload once it is built.
	Note func(Note)
}

// TokenizerError is a live run's tokenizer that did not load (LoadTokenizer's error, Err)
// before anything was sent.
type TokenizerError struct{ Err error }

func (e *TokenizerError) Error() string { return e.Err.Error() }
func (e *TokenizerError) Unwrap() error { return e.Err }

// InvalidError is a configuration the client refused before anything was sent.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// ModelError is a run given no model whose server named none: Err is why (nil: its list
// was empty).
type ModelError struct{ Err error }

func (e *ModelError) Error() string {
	if e.Err == nil {
		return "the server lists no model"
	}
	return "the server's model list did not answer: " + e.Err.Error()
}
func (e *ModelError) Unwrap() error { return e.Err }

// TimedOut reports whether the model list went unanswered for a time limit running out (the
// client's Timeout, a context deadline): a server slower to answer than the limit allows.
func (e *ModelError) TimedOut() bool {
	var ne net.Error
	return e.Err != nil && (errors.Is(e.Err, context.DeadlineExceeded) || errors.As(e.Err, &ne) && ne.Timeout())
}

// TestRequestError is a failed test request: nothing was measured.
type TestRequestError struct{ Msg string }

func (e *TestRequestError) Error() string { return "the test request failed: " + e.Msg }

// InterruptedError is a run interrupted before it measured anything.
type InterruptedError struct {
	During string // DuringModelList, DuringTestRequest or DuringStartAt
}

// When an InterruptedError came.
const (
	DuringModelList   = "model list" // asking the server for its models (no Client.Model)
	DuringTestRequest = "test request"
	DuringStartAt     = "start-at" // waiting for Live.StartAt
)

func (e *InterruptedError) Error() string { return "interrupted before measuring (" + e.During + ")" }

// Target is an opened live server: its client, tokenizer, model and /metrics.
type Target struct {
	Client *client.Client // the first endpoint's
	// Others are the other endpoints' clients, and Send what sends the requests: the
	// balancer over them all, or Client alone.
	Others    []*client.Client
	Send      load.Target
	Tokenizer tokenizer.Tokenizer
	Model     string
	Scrape    Scrape
	side      *http.Client
}

// Close closes the target's connections.
func (t *Target) Close() {
	t.Client.Close()
	for _, c := range t.Others {
		c.Close()
	}
	t.side.CloseIdleConnections()
}

// Open reaches s's server: the client for up to maxConns requests in flight, the
// tokenizer (live's, or s's loaded), the /metrics to scrape (s.Telemetry) and, when none
// is given, the model. With s.More it balances over those endpoints too by s.Balance, each
// reached as live.Client says; the model list, the tokenizer and /metrics are the first
// endpoint's. The tokenizer sets how s's workload counts chat prompts (Spec.UseChat).
func Open(ctx context.Context, s *Spec, live Live, maxConns int) (*Target, error) {
	ccfg := live.Client
	ccfg.MaxConns = maxConns
	if err := ccfg.Validate(); err != nil {
		return nil, &InvalidError{err}
	}
	// The calls beside the benchmark (/tokenize, /metrics) go the same way as its requests.
	side, err := client.SideClient(ccfg)
	if err != nil {
		return nil, &InvalidError{err}
	}
	t := &Target{side: side, Model: ccfg.Model}
	if t.Scrape, err = scrape(ctx, ccfg, s.Telemetry.MetricsURL, s.Telemetry.Interval, side); err != nil {
		side.CloseIdleConnections()
		return nil, &InvalidError{err}
	}
	if t.Tokenizer = live.Tokenizer; t.Tokenizer == nil {
		if t.Tokenizer, err = LoadTokenizer(ctx, s.Tokenizer, s.URL, side); err != nil {
			side.CloseIdleConnections()
			return nil, &TokenizerError{err}
		}
	}
	s.loaded(t.Tokenizer, live.Note)
	ccfg.Tokenizer = t.Tokenizer
	if t.Client, err = client.New(ccfg); err != nil {
		side.CloseIdleConnections()
		return nil, &InvalidError{err}
	}
	if t.Model == "" {
		if err := t.findModel(ctx, ccfg); err != nil {
			t.Close()
			return nil, err
		}
	} else if live.Warn != nil && !s.ModelChecked {
		t.checkModel(ctx, live.Warn)
	}
	t.Send = t.Client
	if len(s.More) > 0 {
		targets := []load.Target{t.Client}
		for _, u := range s.More {
			ocfg := ccfg
			ocfg.BaseURL, ocfg.Model = u, t.Model
			c, err := client.New(ocfg)
			if err != nil {
				t.Close()
				return nil, &InvalidError{err}
			}
			t.Others = append(t.Others, c)
			targets = append(targets, c)
		}
		t.Send = balance.New(targets, s.Balance)
	}
	return t, nil
}

// checkModel asks the server for its models and warns when the list has some, none of
// them t.Model: servers that ignore the request's model (llama.cpp) answer a mistyped one
// in silence. A server with no list, or one that fails, is not checked.
func (t *Target) checkModel(ctx context.Context, warn func(error)) {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if models, err := t.Client.ListModels(lctx); err == nil && len(models) > 0 && !slices.Contains(models, t.Model) {
		warn(&UnlistedModel{Model: t.Model, Listed: models})
	}
}

// UnlistedModel is a Client.Model that the server's model list, which names others, does
// not name: a server that serves one model whatever the request names (llama.cpp) answers
// it anyway, and the run records the name given.
type UnlistedModel struct {
	Model  string
	Listed []string
}

func (u *UnlistedModel) Error() string {
	return fmt.Sprintf("model %q is not among the %d models the server lists", u.Model, len(u.Listed))
}

// GPUProbeError is a GPU exporter (URL), or this machine's nvidia-smi (URL ""), that did
// not answer its probe before the run.
type GPUProbeError struct {
	URL string
	Err error
}

func (e *GPUProbeError) Error() string {
	if e.URL == "" {
		return "nvidia-smi: " + e.Err.Error()
	}
	return e.URL + ": " + e.Err.Error()
}
func (e *GPUProbeError) Unwrap() error { return e.Err }

// findModel asks the server for its models and reopens the client with the first.
func (t *Target) findModel(ctx context.Context, ccfg client.Config) error {
	models, err := t.Client.ListModels(ctx)
	if err != nil && ctx.Err() != nil { // an interrupt, not the server's answer
		return &InterruptedError{During: DuringModelList}
	}
	if err != nil {
		return &ModelError{err}
	}
	if len(models) == 0 {
		return &ModelError{}
	}
	t.Client.Close()
	t.Model, ccfg.Model = models[0], models[0]
	if t.Client, err = client.New(ccfg); err != nil {
		return &InvalidError{err}
	}
	return nil
}

// scrape is the /metrics to read during each level: url's, or by default the target's
// own when its /metrics is an inference server's; none for "none".
func scrape(ctx context.Context, target client.Config, url string, every time.Duration, side *http.Client) (Scrape, error) {
	switch url {
	case "none":
		return Scrape{}, nil
	case "":
		u, err := servermetrics.DefaultURL(target.BaseURL)
		if err != nil {
			return Scrape{}, nil
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = servermetrics.Probe(pctx, u, side)
		cancel()
		if err != nil {
			return Scrape{}, nil
		}
		url = u
	}
	hc, err := metricsClient(target, url, side)
	if err != nil {
		return Scrape{}, err
	}
	return Scrape{URL: url, Interval: every, Client: hc}, nil
}

// gpuScrape is the GPU exporters to read during each level, probed once: one that does not
// answer with GPU metrics is told to warn now, not after the first level, and scraped all
// the same.
func gpuScrape(ctx context.Context, tel Telemetry, target client.Config, live Live, warn func(error)) (GPUScrape, error) {
	var local *gpumetrics.Local
	if l := live.GPULocal; l != nil {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := l.Probe(pctx)
		cancel()
		switch {
		case err == nil:
			local = l
		case ctx.Err() == nil && warn != nil:
			warn(&GPUProbeError{Err: err})
		}
	}
	if len(tel.GPUs) == 0 {
		return GPUScrape{Local: local, Interval: tel.Interval}, nil
	}
	// The exporters are not the target: its TLS and proxy settings, not its credentials.
	target.APIKey, target.Headers = "", nil
	hc, err := client.SideClient(target)
	if err != nil {
		return GPUScrape{}, err
	}
	g := GPUScrape{URLs: tel.GPUs, Local: local, Interval: tel.Interval, Client: hc, Warned: map[string]bool{}}
	for _, u := range tel.GPUs {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := gpumetrics.Probe(pctx, u, hc)
		cancel()
		if err != nil && ctx.Err() == nil && warn != nil {
			warn(&GPUProbeError{URL: u, Err: err})
			g.Warned[u] = true
		}
	}
	return g, nil
}

// metricsClient is the client for the /metrics scrape: the target's own (key and headers
// included) when the endpoint is on the target's host, else one with the same TLS and proxy
// settings but no credentials, which are the target's alone.
func metricsClient(target client.Config, metricsURL string, side *http.Client) (*http.Client, error) {
	tu, err1 := neturl.Parse(target.BaseURL)
	mu, err2 := neturl.Parse(metricsURL)
	if err1 == nil && err2 == nil && tu.Host == mu.Host {
		return side, nil
	}
	target.APIKey, target.Headers = "", nil
	return client.SideClient(target)
}

// Levels runs each level against the target in real time from start, the run's t = 0.
func (t *Target) Levels(start time.Time, sources *Sources) LevelRunner {
	return func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error) {
		src, err := sources.Get(lvl)
		if err != nil {
			return "", err
		}
		return load.Run(ctx, start, lvl, src, t.Send, sink)
	}
}

// Test sends req once to each endpoint, unrecorded, before the run measures anything
// (Live.TestRequest), and returns the first endpoint's record.
func (t *Target) Test(ctx context.Context, req workload.Request) (record.Record, error) {
	var first record.Record
	for i, c := range append([]*client.Client{t.Client}, t.Others...) {
		rec, err := testOne(ctx, c, req)
		if err != nil {
			if te, ok := err.(*TestRequestError); ok && len(t.Others) > 0 {
				te.Msg = fmt.Sprintf("endpoint %d (%s): %s", i+1, report.RedactURL(c.BaseURL()), te.Msg)
			}
			return rec, err
		}
		if i == 0 {
			first = rec
		}
	}
	return first, nil
}

// testOne is Test's request to one endpoint.
func testOne(ctx context.Context, c *client.Client, req workload.Request) (record.Record, error) {
	var rec record.Record
	c.Do(ctx, time.Now(), req, &rec)
	if ctx.Err() != nil {
		return rec, &InterruptedError{During: DuringTestRequest}
	}
	if e := rec.Error; e != nil {
		msg := e.Kind
		if e.Status != 0 {
			msg = fmt.Sprintf("%s %d", e.Kind, e.Status)
		}
		if e.Message != "" {
			msg += ": " + e.Message
		}
		if h := e.Hint(); h != "" {
			msg += "\n  hint: " + h
		}
		return rec, &TestRequestError{Msg: msg}
	}
	return rec, nil
}

// WaitForStart returns the run's t = 0: now, or at (so shards on several machines start
// together).
func WaitForStart(ctx context.Context, at time.Time) (time.Time, error) {
	if at.IsZero() {
		return time.Now(), nil
	}
	if wait := time.Until(at); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return time.Time{}, &InterruptedError{During: DuringStartAt}
		case <-t.C:
		}
	}
	return time.Now(), nil
}

// RunLive benchmarks a live server: it opens the target, builds the workload of cfg's Spec
// with the run's tokenizer (Spec.Prepare), sends the test request, waits for the start and
// runs cfg's ladder (Run). cfg's target, scrape and connection counts are the opened
// target's.
func RunLive(ctx context.Context, cfg Config, live Live) (Outcome, error) {
	maxConns := 0
	for _, l := range cfg.Levels {
		maxConns = max(maxConns, l.Concurrency, l.MaxConcurrency)
	}
	if cfg.Workload.Agent.On() || strings.HasPrefix(cfg.Workload.Dataset, workload.DatasetAgent+":") {
		// A task's fan-out has several calls in flight: a connection for each, none waiting
		// for one (the tasks in flight bound them).
		maxConns = 0
	}
	t, err := Open(ctx, &cfg.Spec, live, maxConns)
	if err != nil {
		return Outcome{}, err
	}
	defer t.Close()
	sources, fit, err := cfg.Prepare(t.Tokenizer)
	if err != nil {
		return Outcome{}, err
	}
	if live.Note != nil {
		live.Note(fit)
	}
	cfg.Describe.Target = report.NewTarget(live.Client.BaseURL, live.Client.API, t.Model)
	if len(cfg.More) > 0 {
		urls := append([]string{live.Client.BaseURL}, cfg.More...)
		cfg.Describe.Target = cfg.Describe.Target.Balanced(urls, cfg.Balance, live.Client.SessionHeader)
	}
	cfg.Scrape, cfg.ConnStats = t.Scrape, t.Client.ConnStats
	if cfg.GPU, err = gpuScrape(ctx, cfg.Telemetry, live.Client, live, cfg.Console.Warn); err != nil {
		return Outcome{}, &InvalidError{err}
	}
	if cfg.TestRequest {
		if err := testFirst(ctx, cfg, t, sources); err != nil {
			return Outcome{}, err
		}
	}
	start, err := WaitForStart(ctx, cfg.StartAt)
	if err != nil {
		return Outcome{}, err
	}
	out, err := Run(ctx, cfg, start, t.Levels(start, sources))
	out.Uncounted = uncounted(cfg.Workload.Chat)
	return out, err
}

// TestRequestLevel is the level whose request 0 the test request sends: a prompt stream of
// its own (workload.Source is deterministic in level and index), so no measured or warm-up
// request repeats the test request's prompt, which a server's prompt cache would answer.
const TestRequestLevel = -1

// testFirst sends a request shaped as the first level's (a search's base level: it has none
// yet), from its own prompt stream (TestRequestLevel), and says how it went.
func testFirst(ctx context.Context, cfg Config, t *Target, sources *Sources) error {
	lvl := cfg.Base
	if len(cfg.Levels) > 0 {
		lvl = cfg.Levels[0]
	}
	src, err := sources.Get(lvl)
	if err != nil {
		return err
	}
	rec, err := t.Test(ctx, src.Request(TestRequestLevel, 0))
	if err != nil || cfg.Console.Quiet {
		return err
	}
	line := fmt.Sprintf("Test request: ok in %s", roundMS(rec.Done-rec.Sent))
	if ft, ok := rec.FirstToken(); ok && !rec.Unstreamed {
		line += fmt.Sprintf(", first token after %s", roundMS(ft-rec.Sent))
	}
	if rec.OutputTokens > 0 {
		line += fmt.Sprintf(", %d output tokens", rec.OutputTokens)
	}
	fmt.Fprintln(cfg.Console.Out, line+" (not measured)")
	return nil
}

// roundMS shows a duration in milliseconds to a tenth.
func roundMS(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", d.Seconds()*1e3)
}
