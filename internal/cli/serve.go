package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/sim/server"
	"github.com/llmbench/llmbench/internal/specflags"
)

// serveFlags are serve's flags as typed: the server's, bound straight into its Config, and
// what becomes its key, chat template and connection closing.
type serveFlags struct {
	cfg                      server.Config
	apiKeyFile, chatTemplate string
	closeAfter               time.Duration
}

func newServeCmd(stdio Stdio) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the simulated inference engine over an OpenAI-compatible HTTP API",
		Long: `serve runs the simulated continuous-batching engine behind /v1/chat/completions,
/v1/completions, /v1/responses, /v1/embeddings, /v1/rerank, /v1/models, /health and /metrics
(vLLM's metric names), and POST /tokenize and /detokenize as vLLM answers them (llama.cpp's
field names too) with --tokenizer, which also counts usage.prompt_tokens; images in chat and
Responses content parts cost prompt tokens by --image-patch and --image-merge. --truth writes
the instant of every token event it sent, the ground truth for 'llmbench fidelity'.`,
		Example: `  llmbench serve --listen 127.0.0.1:8000 --sim textbook
  llmbench serve --listen 127.0.0.1:0 --truth truth.jsonl --faults http500=0.01,stall=0.01:5s
  llmbench serve --listen 127.0.0.1:8000 --close-after 0s    # a server that closes every connection
  llmbench serve --tokenizer meta-llama/Llama-2-7b-hf        # from the local HuggingFace cache`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), stdio, cmd.Flags().Changed("close-after"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.cfg.Listen, "listen", "127.0.0.1:8000", "address to listen on (port 0 picks a free one)")
	fl.StringVar(&f.cfg.Profile, "sim", "h200-llama-3.1-8b", "simulator profile: textbook, h200-llama-3.1-8b, or a YAML file")
	fl.StringVar(&f.cfg.Truth, "truth", "", "write one JSON line per finished request with the instant of each token event sent")
	fl.StringVar(&f.cfg.Faults, "faults", "", "inject faults: http500=P,http429=P,disconnect=P,stall=P:D,malformed=P,error_event=P")
	fl.StringVar(&f.cfg.APIKey, "api-key", "", "require Authorization: Bearer KEY")
	fl.StringVar(&f.apiKeyFile, "api-key-file", "", "read the required API key from this file")
	fl.StringVar(&f.cfg.ModelName, "model-name", "", "model id to serve (default: the profile's model)")
	fl.StringVar(&f.cfg.Tokenizer, "tokenizer", "o200k_base", "tokenizer for /tokenize, /detokenize and prompt_tokens: o200k_base, cl100k_base, a tokenizer.json path, or a HuggingFace model id in the local cache")
	fl.StringVar(&f.chatTemplate, "chat-template", "", "chat template that formats chat and Responses conversations before they are counted, as vLLM applies the model's: a .jinja file, a tokenizer_config.json or a model folder (default: the one beside --tokenizer's tokenizer.json, if any); none: count message text alone")
	fl.Int64Var(&f.cfg.Seed, "seed", 1, "seed for the engine and fault injection")
	fl.IntVar(&f.cfg.ImagePatch, "image-patch", 14, "images: the vision encoder's patch side in pixels (an image costs ceil(W/P)·ceil(H/P)/M² prompt tokens)")
	fl.IntVar(&f.cfg.ImageMerge, "image-merge", 2, "images: patches merged M × M into one token")
	fl.DurationVar(&f.cfg.ImageEncode, "image-encode", 0, "images: the vision encoder's time per image, before the prompt's prefill is queued")
	fl.DurationVar(&f.closeAfter, "close-after", 0, "close each connection this long after every response, while offering keep-alive, as llama.cpp's server does (0s: at once); for testing clients")
	return cmd
}

// run checks the flags and serves until ctx ends; closeAfterSet says --close-after was given.
func (f *serveFlags) run(ctx context.Context, stdio Stdio, closeAfterSet bool) error {
	c := f.cfg
	var errs []error
	if f.apiKeyFile != "" { // run's rule for the file; neither flag is no key (not $OPENAI_API_KEY's)
		var err error
		if c.APIKey, err = specflags.APIKey(c.APIKey, f.apiKeyFile); err != nil {
			errs = append(errs, err)
		}
	}
	tmpl, err := specflags.ChatTemplate(f.chatTemplate, c.Tokenizer, client.APIOpenAIChat)
	if err != nil {
		errs = append(errs, err)
	}
	c.ChatTemplate = tmpl
	if closeAfterSet {
		c.CloseAfter = &f.closeAfter
	}
	p, opts, err := c.Load()
	if errs = append(serveErrors(err), errs...); len(errs) > 0 {
		return usageError(errors.Join(errs...))
	}
	return specflags.NamedFlags(c.Serve(ctx, p, opts, func(addr net.Addr) { fmt.Fprintf(stdio.Out, "listening on http://%s\n", addr) }), serveFlagNames)
}

// serveFlagNames are the flags that set server.Config's fields, for its errors.
var serveFlagNames = map[string]string{"Profile": "sim", "Faults": "faults", "Tokenizer": "tokenizer", "Truth": "truth", "Listen": "listen"}

// serveErrors say server.Config.Load's problems as the flags behind them.
func serveErrors(err error) []error {
	var errs []error
	for _, e := range fielderr.Split(err) {
		var field *fielderr.Error
		switch {
		case errors.Is(e, server.ErrServerTokenizer):
			e = errors.New("--tokenizer server: serve is the server; give the tokenizer it should use (an encoding, a tokenizer.json, or a HuggingFace model id)")
		case errors.As(e, &field) && field.Field == "ImagePatch,ImageMerge,ImageEncode":
			e = errors.New("--image-patch and --image-merge must be at least 1, --image-encode not negative")
		case errors.As(e, &field) && field.Field == "CloseAfter":
			e = fmt.Errorf("--close-after %w", field.Err)
		default:
			e = specflags.NamedFlags(e, serveFlagNames)
		}
		errs = append(errs, e)
	}
	return errs
}
