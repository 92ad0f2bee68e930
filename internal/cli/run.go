package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/specflags"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// dialTarget, when a test sets it, connects run's requests to the target (an in-memory
// listener, for a run on a synctest bubble's fake clock); nil is TCP.
var dialTarget func(ctx context.Context, network, addr string) (net.Conn, error)

func newRunCmd(stdio Stdio) *cobra.Command {
	var f specflags.Flags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Benchmark a server (or, with no --url, the built-in simulator)",
		Long: `run sends a controlled load of streaming requests and measures TTFT, TPOT, ITL, E2EL,
throughput and goodput per load level. Each value of --concurrency or --rate is a level; the
levels run in turn. Results go to --output-dir: records.jsonl (one raw record per request),
summary.json, summary.csv and report.html.`,
		Example: `  llmbench run
  llmbench run --url http://127.0.0.1:8000 --concurrency 1,4,16,64 --requests 200
  llmbench run --url http://127.0.0.1:8000 --rate 2,4,8 --arrival gamma:0.5 --duration 60s \
    --slo 'ttft:p99<=1s'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, con, err := f.Resolve(true, time.Now())
			if err != nil {
				return usageError(err)
			}
			return runLive(cmd.Context(), stdio, spec, con)
		},
	}
	f.Bind(cmd.Flags(), true)
	cmd.Annotations = map[string]string{resolvesFlagErrors: "resolve"}
	return cmd
}

// runLive benchmarks cfg.URL, or an in-process simulator when there is none.
func runLive(ctx context.Context, stdio Stdio, cfg *bench.Spec, con specflags.Console) error {
	say(stdio.Err, undecidedNote(cfg))
	var tok tokenizer.Tokenizer
	if cfg.URL == "" {
		var stop func()
		var err error
		if tok, stop, err = startSim(ctx, stdio, cfg, con); err != nil {
			return err
		}
		defer stop()
	}
	if cfg.SeedDrawn && !con.Quiet {
		fmt.Fprintf(stdio.Out, "Seed %d, drawn for this run (--seed %d repeats it)\n", cfg.Seed, cfg.Seed)
	}
	if cfg.Insecure {
		fmt.Fprintln(stdio.Err, "warning: --insecure: TLS certificates are not verified")
	}
	cc := clientConfig(stdio, cfg)
	gpu := cfg.LocalGPU(lookPath)
	if !con.Quiet {
		say(stdio.Out, localGPUNote(gpu))
	}
	live := bench.Live{Client: cc, GPULocal: gpu, Tokenizer: tok,
		Warn: func(err error) { fmt.Fprintln(stdio.Err, warningLine(err)) },
		Note: func(n bench.Note) { say(stdio.Err, liveNotes(cfg, n)...) }}
	writingResults(cfg.Output.Dir)
	defer writingResults("")
	out, err := bench.RunLive(ctx, benchOf(stdio, cfg, con), live)
	if te := (*bench.TokenizerError)(nil); errors.As(err, &te) {
		err = tokenizerError(te.Err, cfg.APIKey != "")
	}
	return conclude(ctx, stdio, cfg, con, out, err)
}

// lookPath finds a local tool; a test sets it to find a fake one.
var lookPath = exec.LookPath

// startSim serves the simulator of --sim in-process for a run without --url
// (bench.Spec.StartSimulator), and returns the run's tokenizer, which it counts prompts with.
func startSim(ctx context.Context, stdio Stdio, c *bench.Spec, con specflags.Console) (tokenizer.Tokenizer, func(), error) {
	tok, p, stop, err := c.StartSimulator(ctx)
	if err != nil {
		return nil, nil, invalidUsage(err)
	}
	// The simulator is a deployment whose GPUs have a price, as simulate prices it.
	if err := priceProfile(stdio, c, p); err != nil {
		stop()
		return nil, nil, err
	}
	if !con.Quiet {
		fmt.Fprintf(stdio.Out, "No --url given: benchmarking the built-in simulator (%s) at %s\n", c.SimProfile, c.URL)
	}
	return tok, stop, nil
}

// clientConfig is the client the target flags configure, its notes said on stdio.
func clientConfig(stdio Stdio, c *bench.Spec) client.Config {
	cc := c.Client()
	cc.OnServerCloses = func(n int) { fmt.Fprintln(stdio.Err, serverClosesNote(n)) }
	cc.Dial = dialTarget
	return cc
}

// tokenizerError maps bench.LoadTokenizer's errors to exit codes: a spec that does not
// load is a usage error, a server that cannot tokenize a failure (keyGiven: an API key was
// sent, for the hint on an HTTP 401 or 403).
func tokenizerError(err error, keyGiven bool) error {
	var server *bench.ServerTokenizerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &server):
		return withCode(ExitFailure, errors.New(serverTokenizerMessage(server.Err, keyGiven)))
	case errors.As(err, new(*bench.InvalidError)):
		return invalidUsage(err)
	}
	return withCode(ExitFailure, err)
}

// serverTokenizerMessage says why the target could not tokenize for --tokenizer server, and
// what to do.
func serverTokenizerMessage(err error, keyGiven bool) string {
	var he *tokenizer.HTTPError
	if !errors.As(err, &he) {
		return "--tokenizer server: " + err.Error()
	}
	msg := fmt.Sprintf("--tokenizer server: %s: HTTP %d", he.Path, he.Status)
	if m := client.ErrorMessage(he.Body); m != "" {
		msg += " " + m
	}
	switch hint := client.HTTPHint(he.Status, keyGiven); {
	case hint != "":
		msg += ": " + hint
	case he.NoRoute():
		msg += ": this server has no /tokenize (vLLM, llama.cpp's server and llmbench serve have one; Ollama has none): give --tokenizer the model's HuggingFace id (from the local cache, e.g. meta-llama/Llama-3.1-8B), its tokenizer.json, or an encoding (o200k_base, cl100k_base)"
	}
	return msg
}

// loadURLTokenizer is bench.LoadURLTokenizer with its errors' exit codes.
func loadURLTokenizer(ctx context.Context, spec, url string) (tokenizer.Tokenizer, error) {
	tok, err := bench.LoadURLTokenizer(ctx, spec, url)
	return tok, tokenizerError(err, false)
}

// serverClosesNote is said once when the client finds the server closing every connection.
func serverClosesNote(closed int) string {
	return fmt.Sprintf("note: the server closed each connection right after its response (%d so far), although it offers keep-alive; "+
		"llmbench re-sent each request that met a closed connection (levels[i].retried) and now opens a new connection for every request, "+
		"as --keep-alive=false does (docs/real-servers.md)", closed)
}
