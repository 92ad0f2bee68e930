package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/servermetrics"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// dialTarget, when a test sets it, connects run's requests to the target (an in-memory
// listener, for a run on a synctest bubble's fake clock); nil is TCP.
var dialTarget func(ctx context.Context, network, addr string) (net.Conn, error)

func newRunCmd(stdio Stdio) *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Benchmark a server (or, with no --url, the built-in simulator)",
		Long: `run sends a controlled load of streaming requests and measures TTFT, TPOT, ITL, E2EL,
throughput and goodput per load level. Each value of --concurrency or --rate is a level; the
levels run in turn. Results go to --output-dir: records.jsonl (one raw record per request),
summary.json, summary.csv and report.html.`,
		Example: `  llmbench run
  llmbench run --url http://127.0.0.1:8000 --concurrency 1,4,16,64 --requests 200
  llmbench run --url http://127.0.0.1:8000 --rate 2,4,8 --arrival gamma:0.5 --duration 60s --slo 'ttft:p99<=1s'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.resolve(true, time.Now())
			if err != nil {
				return err
			}
			return runLive(cmd.Context(), stdio, cfg)
		},
	}
	f.bind(cmd.Flags(), true)
	return cmd
}

// runLive benchmarks cfg.url, or an in-process simulator when there is none.
func runLive(ctx context.Context, stdio Stdio, cfg *benchConfig) error {
	var tok tokenizer.Tokenizer
	if cfg.url == "" {
		if cfg.tokenizer == "server" {
			return usageError(errors.New("--tokenizer server needs --url (the built-in simulator has no /tokenize)"))
		}
		var err error
		if tok, err = tokenizer.Load(cfg.tokenizer); err != nil {
			return usageError(fmt.Errorf("--tokenizer: %w", err))
		}
		// The simulator counts prompts with the run's tokenizer (and formats chat with its
		// chat template), as a real server counts them with the model's, so
		// usage.prompt_tokens matches the intended lengths.
		url, p, stop, err := startInProcessSim(ctx, cfg.simProfile, cfg.seed, func(s string) int { return len(tok.Encode(s)) }, cfg.chatTemplate)
		if err != nil {
			return err
		}
		defer stop()
		cfg.url, cfg.inProcess = url, true
		// The simulator is a deployment whose GPUs have a price, as simulate prices it.
		if cfg.price, err = cfg.pricing.price(profilePrice(p), p.GPUs()); err != nil {
			return err
		}
		if cfg.price == nil {
			fmt.Fprintln(stdio.Err, unpricedNote(p))
		}
		if !cfg.quiet {
			fmt.Fprintf(stdio.Out, "No --url given: benchmarking the built-in simulator (profile %s) at %s\n", cfg.simProfile, url)
		}
	}
	if cfg.insecure {
		fmt.Fprintln(stdio.Err, "warning: --insecure: TLS certificates are not verified")
	}
	maxConns := 0
	for _, l := range cfg.levels {
		maxConns = max(maxConns, l.Concurrency, l.MaxConcurrency)
	}
	ccfg := client.Config{
		BaseURL: cfg.url, API: cfg.api, Model: cfg.model, APIKey: cfg.apiKey, Headers: cfg.headers,
		ExtraBody: cfg.extraBody, IgnoreEOS: cfg.ignoreEOS, NoStream: cfg.noStream, Endpoint: cfg.endpoint, Timeout: cfg.timeout,
		Temperature: cfg.temperature, TopP: cfg.topP,
		IdleTimeout: cfg.idleTimeout, MaxConns: maxConns,
		CACert: cfg.caCert, Insecure: cfg.insecure, HTTP2: cfg.http2, ReadStamps: cfg.readStamps,
		DisableKeepAlive: !cfg.keepAlive, SaveText: cfg.saveText,
		OnServerCloses: func(n int) { fmt.Fprintln(stdio.Err, serverClosesNote(n)) },
		Dial:           dialTarget,
	}
	if err := ccfg.Validate(); err != nil {
		return usageError(err)
	}
	// The calls beside the benchmark (/tokenize, /metrics) go the same way as its requests.
	side, err := client.SideClient(ccfg)
	if err != nil {
		return usageError(err)
	}
	defer side.CloseIdleConnections()
	switch cfg.metricsURL {
	case "none":
		cfg.metricsURL = ""
	case "":
		// Scrape by default only a server whose /metrics is an inference server's.
		if u, err := servermetrics.DefaultURL(cfg.url); err == nil {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			if _, err := servermetrics.Probe(pctx, u, side); err == nil {
				cfg.metricsURL = u
			}
			cancel()
		}
	}
	if cfg.metricsURL != "" {
		if cfg.metricsClient, err = metricsClient(ccfg, cfg.metricsURL, side); err != nil {
			return usageError(err)
		}
	}
	if tok == nil {
		if tok, err = loadTokenizer(ctx, cfg.tokenizer, cfg.url, side, cfg.apiKey != ""); err != nil {
			return err
		}
	}
	if !cfg.keepAlive {
		warnPortLimit(stdio, cfg.levels)
	}
	ccfg.Tokenizer = tok
	cfg.useChat(stdio, tok)
	cl, err := client.New(ccfg)
	if err != nil {
		return usageError(err)
	}
	if cfg.model == "" {
		models, err := cl.ListModels(ctx)
		if err != nil {
			return withCode(ExitFailure, fmt.Errorf("no --model given, and the server's model list did not answer: %w", err))
		}
		if len(models) == 0 {
			return withCode(ExitFailure, errors.New("no --model given, and the server lists no model"))
		}
		cl.Close()
		cfg.model, ccfg.Model = models[0], models[0]
		if cl, err = client.New(ccfg); err != nil {
			return usageError(err)
		}
	}
	cfg.connStats = cl.ConnStats
	defer cl.Close()
	src, err := workload.New(cfg.workload, tok)
	if err == nil {
		src, err = cfg.wrapSource(src, tok)
	}
	if err != nil {
		return usageError(err)
	}
	cfg.adaptToSource(stdio, workload.Describe(src))
	sources := &runSources{cfg: cfg, tok: tok, first: src}
	if cfg.testRequest {
		lvl := cfg.base // a search has no level yet
		if len(cfg.levels) > 0 {
			lvl = cfg.levels[0]
		}
		first, err := sources.get(lvl)
		if err != nil {
			return err
		}
		if err := testRequest(ctx, stdio, cfg, cl, first.Request(lvl.Index, 0)); err != nil {
			return err
		}
	}
	start, err := waitForStart(ctx, cfg.startAt)
	if err != nil {
		return err
	}
	runLevel := func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error) {
		src, err := sources.get(lvl)
		if err != nil {
			return "", err
		}
		return load.Run(ctx, start, lvl, src, cl, sink)
	}
	return execute(ctx, stdio, cfg, start, runLevel)
}

// waitForStart returns the run's t = 0: now, or --start-at (so shards on several machines
// start together).
func waitForStart(ctx context.Context, at time.Time) (time.Time, error) {
	if at.IsZero() {
		return time.Now(), nil
	}
	wait := time.Until(at)
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return time.Time{}, withCode(ExitInterrupted, errors.New("interrupted before --start-at"))
		case <-t.C:
		}
	}
	return time.Now(), nil
}

// loadTokenizer loads --tokenizer; "server" asks the target's /tokenize through hc, once
// at once, so that a server that cannot tokenize stops the run before it starts, with a
// message that says what to do.
func loadTokenizer(ctx context.Context, spec, url string, hc *http.Client, keyGiven bool) (tokenizer.Tokenizer, error) {
	if spec != "server" {
		tok, err := tokenizer.Load(spec)
		if err != nil {
			return nil, usageError(fmt.Errorf("--tokenizer: %w", err))
		}
		return tok, nil
	}
	s := tokenizer.NewServer(url, hc)
	if _, err := s.(*tokenizer.Server).Tokenize(ctx, "Hello"); err != nil {
		msg := "--tokenizer server: " + err.Error()
		var he *tokenizer.HTTPError
		if errors.As(err, &he) {
			msg = fmt.Sprintf("--tokenizer server: %s: HTTP %d", he.Path, he.Status)
			if m := client.ErrorMessage(he.Body); m != "" {
				msg += " " + m
			}
			switch hint := client.HTTPHint(he.Status, keyGiven); {
			case hint != "":
				msg += ": " + hint
			case he.Status == http.StatusNotFound || he.Status == http.StatusMethodNotAllowed || he.Status == http.StatusNotImplemented:
				msg += ": this server has no /tokenize (vLLM, llama.cpp's server and llmbench serve have one; Ollama has none): give --tokenizer the model's HuggingFace id (from the local cache, e.g. meta-llama/Llama-3.1-8B), its tokenizer.json, or an encoding (o200k_base, cl100k_base)"
			}
		}
		return nil, withCode(ExitFailure, errors.New(msg))
	}
	return s, nil
}

// loadURLTokenizer is loadTokenizer for the commands whose only word on the target is
// --url (dataset, tokenize).
func loadURLTokenizer(ctx context.Context, spec, url string) (tokenizer.Tokenizer, error) {
	if spec != "server" {
		return loadTokenizer(ctx, spec, "", nil, false)
	}
	if url == "" {
		return nil, usageError(errors.New("--tokenizer server needs --url (the server whose /tokenize to ask)"))
	}
	hc, err := client.SideClient(client.Config{BaseURL: url, API: client.APIOpenAIChat})
	if err != nil {
		return nil, usageError(fmt.Errorf("--url: %w", err))
	}
	return loadTokenizer(ctx, spec, url, hc, false)
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

// serverClosesNote is said once when the client finds the server closing every connection.
func serverClosesNote(closed int) string {
	return fmt.Sprintf("note: the server closed each connection right after its response (%d so far), although it offers keep-alive; "+
		"llmbench re-sent each request that met a closed connection (levels[i].retried) and now opens a new connection for every request, "+
		"as --keep-alive=false does (docs/real-servers.md)", closed)
}

// warnPortLimit warns when the open-loop rate of new connections is more than the local
// ports can sustain (TIME_WAIT holds each port for a minute).
func warnPortLimit(stdio Stdio, levels []load.Level) {
	ports, perSecond, ok := client.EphemeralPorts()
	if !ok {
		return
	}
	for _, l := range levels {
		if l.Rate > perSecond*0.8 {
			fmt.Fprintf(stdio.Err, "warning: --keep-alive=false at %g req/s: each request opens a new connection, and %d local ports sustain about %.0f new connections/s to one server (each stays in TIME_WAIT for 60 s); connects may fail with EADDRNOTAVAIL (docs/real-servers.md)\n",
				l.Rate, ports, perSecond)
			return
		}
	}
}

// startInProcessSim serves the simulator of profile on a loopback port until stop is
// called.
func startInProcessSim(ctx context.Context, profile string, seed int64, countTokens func(string) int, chat *chattemplate.Template) (url string, p sim.Profile, stop func(), err error) {
	p, err = sim.LoadProfile(profile)
	if err != nil {
		return "", p, nil, usageError(fmt.Errorf("--sim: %w", err))
	}
	p.Seed = seed
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", p, nil, err
	}
	opts := simServerOptions(p, seed)
	opts.CountTokens, opts.ChatTemplate = countTokens, chat
	s, err := startSimServer(ctx, ln, p, opts, nil)
	if err != nil {
		return "", p, nil, err
	}
	return "http://" + ln.Addr().String(), p, func() { s.stop(2 * time.Second) }, nil
}

// simServerOptions are the HTTP options that match profile p.
func simServerOptions(p sim.Profile, seed int64) server.Options {
	o := server.Options{ModelName: p.ModelName(), Seed: seed}
	if p.Engine.PrefixCaching {
		o.BlockSize = p.Engine.BlockSize // the server hashes prompt blocks for the engine's prefix cache
	}
	return o
}

// simServer is a running simulator: its engine, HTTP handler and server.
type simServer struct {
	h      *server.Server
	srv    *http.Server
	cancel context.CancelFunc
	errc   chan error // Serve's result
}

// startSimServer runs profile p's engine and serves it on ln. The engine outlives ctx's
// cancellation until stop, so an interrupted run can still finish its requests' records.
// closeAfter, when set, closes each connection that long after every response (serve
// --close-after).
func startSimServer(ctx context.Context, ln net.Listener, p sim.Profile, opts server.Options, closeAfter *time.Duration) (*simServer, error) {
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	eng := sim.NewEngineFleet(p) // one engine per replica, behind the deployment's router
	go eng.Start(ectx)
	h, err := server.New(eng, opts)
	if err != nil {
		cancel()
		ln.Close()
		return nil, usageError(err)
	}
	s := &simServer{h: h, srv: server.HTTPServer("", h), cancel: cancel, errc: make(chan error, 1)}
	if closeAfter != nil {
		server.CloseAfterResponses(s.srv, *closeAfter)
	}
	go func() { s.errc <- s.srv.Serve(ln) }()
	return s, nil
}

// stop shuts the server down gracefully within grace, then stops the engine and flushes
// the ground truth.
func (s *simServer) stop(grace time.Duration) error {
	ctx, c := context.WithTimeout(context.Background(), grace)
	defer c()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
	s.cancel()
	return s.h.Close()
}
