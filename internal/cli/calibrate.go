package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/calibrate"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/progress"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/specflags"
)

// calibrateFlags are calibrate's flags as typed: the request, bound straight into it, and
// what becomes its key and headers.
type calibrateFlags struct {
	req        calibrate.Calibration
	apiKeyFile string
	headers    []string
	quiet      bool
	changed    func(name string) bool
}

func newCalibrateCmd(stdio Stdio) *cobra.Command {
	var f calibrateFlags
	cmd := &cobra.Command{
		Use:   "calibrate (--url URL | DIR...) --output FILE.yaml",
		Short: "Fit the simulator to a real server: a profile that predicts the loads nobody ran",
		Long: `calibrate fits a simulator profile to a server. With --url it runs a designed probe (prefill at
concurrency 1 over prompt lengths, decode over a ladder of concurrencies, and long prompts
arriving while others decode), each step an ordinary run folder under FILE.probe/; with run
folders instead it fits what they measured. The fit finds the cost model (linear, or with
--model-shape and --gpu the roofline's constants, which carry to other GPUs and tp), the batch
limit (max_num_seqs: from the server's /props or running-requests gauge, --max-num-seqs, or
where requests start to queue), the chunked-prefill budget, the prefill placement, the
network round trip (apart from the engine's steps) and the step-time noise (for P99s), by
replaying every probe point through the simulator. It writes FILE.yaml (a profile that
simulate, serve and plan accept), FILE.calibration.json and FILE.calibration.html, and
states the prediction error on probe points held out of the fit.`,
		Example: `  llmbench calibrate --url http://127.0.0.1:8080 --output llama.yaml
  llmbench calibrate --url http://127.0.0.1:11434 --max-num-seqs 2 --max-concurrency 2 \
    --output ollama.yaml
  llmbench calibrate llmbench-results/ladder-1 llmbench-results/ladder-2 --output fitted.yaml
  llmbench simulate --sim llama.yaml --concurrency 4,8 --input-tokens 512 --output-tokens 128`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, dirs []string) error {
			f.changed = func(name string) bool { return cmd.Flags().Changed(name) }
			return runCalibrate(cmd.Context(), stdio, &f, dirs)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.req.URL, "url", "", "probe this server (base URL, e.g. http://127.0.0.1:8080); without it, fit the run folders given")
	fs.StringVar(&f.req.API, "api", bench.DefaultSpec().API, "API to probe with: "+strings.Join(client.APIs(), ", "))
	fs.StringVar(&f.req.Model, "model", "", "model name (default: the first id from /v1/models)")
	fs.StringVar(&f.req.APIKey, "api-key", "", "API key sent as a bearer token (default: $OPENAI_API_KEY)")
	fs.StringVar(&f.apiKeyFile, "api-key-file", "", "read the API key from this file")
	fs.StringArrayVar(&f.headers, "header", nil, "extra HTTP header `K:V` (repeatable)")
	fs.StringVar(&f.req.Tokenizer, "tokenizer", calibrate.TokenizerAuto, "tokenizer for the probe's prompt lengths: auto is the server's own (its /tokenize: llama.cpp, vLLM) where it has one, else o200k_base with prompts kept to 70% of a slot's context (the fit uses the server's usage.prompt_tokens where it reports them)")
	fs.IntVar(&f.req.MaxConcurrency, "max-concurrency", 0, "cap on the probe's requests in flight (default: as high as seeing the batch limit needs, at most 256)")
	fs.IntVar(&f.req.MaxInputTokens, "max-input-tokens", 0, "longest prompt the probe sends (default 4096, or what the server's published context leaves)")
	fs.IntVar(&f.req.MaxNumSeqs, "max-num-seqs", 0, "the server's batch limit, when it publishes none and the probe may not reach it (Ollama: OLLAMA_NUM_PARALLEL)")
	fs.StringVar(&f.req.ModelShape, "model-shape", "", "the served model's shape, a preset ("+strings.Join(sim.ModelPresets(), ", ")+"): fit the roofline's constants instead of a linear model (with --gpu), so the profile carries to other GPUs and tp")
	fs.StringVar(&f.req.ModelConfig, "model-config", "", "the served model's Hugging Face config.json (`PATH`), instead of --model-shape: fit the roofline's constants to it (with --gpu)")
	fs.StringVar(&f.req.GPU, "gpu", "", "with --model-shape or --model-config: the server's GPU, a preset ("+strings.Join(sim.GPUPresets(), ", ")+")")
	fs.StringVar(&f.req.Profile, "output", "", "the profile to write, FILE.yaml (with FILE.calibration.json and FILE.calibration.html beside it)")
	fs.Int64Var(&f.req.Seed, "seed", 0, "seed for the probe's prompts, each step's its own (default: a new one each time, so that no prompt cache of the server has seen them)")
	fs.BoolVar(&f.req.Overwrite, "overwrite", false, "replace FILE.yaml, its reports and FILE.probe/ if they exist")
	fs.BoolVar(&f.quiet, "quiet", false, "print only the fit, not each probe step")
	return cmd
}

// resolve reads the flags into the calibration's files and the fit's options, reporting
// every problem at once in the words of the flags behind it.
func (f *calibrateFlags) resolve(dirs []string) (calibrate.Files, calibrate.Options, error) {
	f.req.Dirs = dirs
	files, err := f.req.Files()
	errs := append(f.requestErrors(err), f.probeOnly()...)
	opts, err := f.req.Options()
	opts.MaxNumSeqsHow = "given (--max-num-seqs)"
	return files, opts, errors.Join(append(errs, f.requestErrors(err)...)...)
}

// probeOnly are the flags given that apply to probing a server, when fitting run folders.
func (f *calibrateFlags) probeOnly() []error {
	var errs []error
	if f.req.URL == "" {
		for _, name := range []string{"max-concurrency", "max-input-tokens", "api", "model", "api-key", "api-key-file", "header", "tokenizer"} {
			if f.changed != nil && f.changed(name) {
				errs = append(errs, fmt.Errorf("--%s applies to probing a server (--url), not to fitting run folders", name))
			}
		}
	}
	return errs
}

// calibrateMessages say calibrate.Calibration's problems, by field, as the flags that set
// those fields do (%v: calibrate's words); a field not here is said as "--flag: problem"
// (calibrateFlagNames).
var calibrateMessages = map[string]string{
	"Profile":                    "--output %v",
	"ModelShape,ModelConfig":     "--model-shape and --model-config: %v",
	"ModelShape,ModelConfig,GPU": "--model-shape and --gpu go together (or --model-config and --gpu): %v",
	"ModelShape":                 "--model-shape %v", "GPU": "--gpu %v", "MaxNumSeqs": "--max-num-seqs %v",
}

// requestErrors say calibrate.Calibration's problems as the flags behind them.
func (f *calibrateFlags) requestErrors(err error) []error {
	var errs []error
	for _, e := range fielderr.Split(err) {
		var field *fielderr.Error
		switch {
		case errors.Is(e, calibrate.ErrNoSource):
			e = errors.New("give --url URL to probe a server, or run folders to fit")
		case errors.Is(e, calibrate.ErrTwoSources):
			e = fmt.Errorf("give --url or run folders, not both (got --url and %d folders)", len(f.req.Dirs))
		case errors.As(e, &field) && calibrateMessages[field.Field] != "":
			e = fmt.Errorf(calibrateMessages[field.Field], field.Err)
		default:
			e = specflags.NamedFlags(e, calibrateFlagNames)
		}
		errs = append(errs, e)
	}
	return errs
}

func runCalibrate(ctx context.Context, stdio Stdio, f *calibrateFlags, dirs []string) error {
	files, opts, err := f.resolve(dirs)
	if err != nil {
		return usageError(err)
	}
	if exists := (*calibrate.ExistsError)(nil); errors.As(f.req.InTheWay(), &exists) {
		if exists.Probe {
			return usageError(fmt.Errorf("%s exists (an earlier probe): choose another --output, fit it with 'llmbench calibrate %s/* --output ...', or --overwrite", exists.Path, exists.Path))
		}
		return usageError(fmt.Errorf("%s exists: choose another --output, or --overwrite to replace it", exists.Path))
	}
	// Made before the probe and the fit, so that minutes of them are not lost to a folder
	// the profile cannot be written into (a refit from run folders made none).
	if err := os.MkdirAll(filepath.Dir(files.Profile), 0o755); err != nil {
		return withCode(ExitFailure, fmt.Errorf("--output: %w", err))
	}
	var (
		pts []calibrate.Point
		src calibrate.Source
	)
	if f.req.URL != "" {
		var set *calibrate.Points
		if set, opts.Server, err = probe(ctx, stdio, f, files.Probe); err != nil {
			return err
		}
		pts, src, err = set.All()
		dirs = src.Dirs
	} else {
		pts, src, err = calibrate.Load(dirs)
	}
	if err != nil {
		return withCode(ExitFailure, pointsError(err))
	}
	if !f.quiet {
		fmt.Fprintf(stdio.Out, "Fitting %d probe points from %d run folders\n", len(pts), len(dirs))
	}
	res, err := fit(ctx, stdio, f.quiet, pts, src, opts)
	if err != nil {
		return withCode(ExitFailure, err)
	}
	header := fmt.Sprintf("Fitted by llmbench %s calibrate to %s (model %s) on %s.\nllmbench simulate --sim %s ... predicts it; %s says how well.",
		Version, src.URL, src.Model, time.Now().UTC().Format(time.DateOnly), files.Profile, filepath.Base(files.JSON))
	if err := files.Write(res, header, Version); err != nil {
		return withCode(ExitFailure, err)
	}
	res.Console(stdio.Out)
	fmt.Fprintf(stdio.Out, "\n%s\n", console.Wrap(fmt.Sprintf("Profile: %s (report: %s, %s)", files.Profile, files.JSON, files.HTML), 0, 2, console.Width))
	return nil
}

// pointsError says what to do about each problem calibrate found with the points given.
func pointsError(err error) error {
	var out []error
	for _, e := range fielderr.Split(err) {
		var simulated *calibrate.SimulatedRunError
		switch {
		case errors.Is(e, calibrate.ErrNoPoints):
			e = fmt.Errorf("%w: name run folders (llmbench run --output-dir DIR) or give --url", e)
		case errors.As(e, &simulated):
			e = fmt.Errorf("%w (llmbench run --url)", e)
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// fit fits the points, saying what it does and, on a terminal, how far it has got (a fit
// replays every point through the simulator for each profile it tries, for a minute or more).
func fit(ctx context.Context, stdio Stdio, quiet bool, pts []calibrate.Point, src calibrate.Source, opts calibrate.Options) (*calibrate.Result, error) {
	start, watch := time.Now(), calibrate.NewWatch(fmt.Sprintf("fitting %d probe points", len(pts)))
	bar := progress.NewLine(stdio.Err, quiet, func() string {
		doing, tried := watch.Now()
		return fitProgressLine(doing, tried, time.Since(start))
	})
	defer bar.Finish()
	if !quiet {
		watch.Follow(&opts, func(s string) { bar.Say(stdio.Out, "  "+s) })
	}
	res, err := calibrate.Fit(ctx, pts, src, opts)
	return res, specflags.NamedFlags(err, calibrateFlagNames)
}

// calibrateFlagNames are the flags that set calibrate's ProbeConfig, ProbeRun, Request and Options fields,
// for their errors.
var calibrateFlagNames = map[string]string{"MaxConcurrency": "max-concurrency", "MaxInputTokens": "max-input-tokens",
	"MaxNumSeqs": "max-num-seqs", "Model": "model-shape", "GPU": "gpu", "Tokenizer": "tokenizer", "ModelConfig": "model-config"}

// fitProgressLine is what the fit's progress line says: pure, for tests.
func fitProgressLine(doing string, tried int, elapsed time.Duration) string {
	return fmt.Sprintf("calibrate: %s, %d %s simulated, %s", doing, tried, console.Plural(tried, "profile", "profiles"), elapsed.Round(time.Second))
}
