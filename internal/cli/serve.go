package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// serveFlags are serve's flags as typed.
type serveFlags struct {
	listen, profile, truth, faults, apiKey, apiKeyFile, modelName, tok, chatTemplate string
	seed                                                                             int64
	closeAfter, imageEncode                                                          time.Duration
	imagePatch, imageMerge                                                           int
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
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8000", "address to listen on (port 0 picks a free one)")
	fl.StringVar(&f.profile, "sim", "h200-llama-3.1-8b", "simulator profile: textbook, h200-llama-3.1-8b, or a YAML file")
	fl.StringVar(&f.truth, "truth", "", "write one JSON line per finished request with the instant of each token event sent")
	fl.StringVar(&f.faults, "faults", "", "inject faults: http500=P,http429=P,disconnect=P,stall=P:D,malformed=P,error_event=P")
	fl.StringVar(&f.apiKey, "api-key", "", "require Authorization: Bearer KEY")
	fl.StringVar(&f.apiKeyFile, "api-key-file", "", "read the required API key from this file")
	fl.StringVar(&f.modelName, "model-name", "", "model id to serve (default: the profile's model)")
	fl.StringVar(&f.tok, "tokenizer", "o200k_base", "tokenizer for /tokenize, /detokenize and prompt_tokens: o200k_base, cl100k_base, a tokenizer.json path, or a HuggingFace model id in the local cache")
	fl.StringVar(&f.chatTemplate, "chat-template", "", "chat template that formats chat and Responses conversations before they are counted, as vLLM applies the model's: a .jinja file, a tokenizer_config.json or a model folder (default: the one beside --tokenizer's tokenizer.json, if any); none: count message text alone")
	fl.Int64Var(&f.seed, "seed", 1, "seed for the engine and fault injection")
	fl.IntVar(&f.imagePatch, "image-patch", 14, "images: the vision encoder's patch side in pixels (an image costs ceil(W/P)·ceil(H/P)/M² prompt tokens)")
	fl.IntVar(&f.imageMerge, "image-merge", 2, "images: patches merged M × M into one token")
	fl.DurationVar(&f.imageEncode, "image-encode", 0, "images: the vision encoder's time per image, before the prompt's prefill is queued")
	fl.DurationVar(&f.closeAfter, "close-after", 0, "close each connection this long after every response, while offering keep-alive, as llama.cpp's server does (0s: at once); for testing clients")
	return cmd
}

// run checks the flags and serves until ctx ends; closeAfterSet says --close-after was given.
func (f *serveFlags) run(ctx context.Context, stdio Stdio, closeAfterSet bool) error {
	var errs []error
	p, err := sim.LoadProfile(f.profile)
	if err != nil {
		errs = append(errs, fmt.Errorf("--sim: %w", err))
	}
	fs, err := server.ParseFaults(f.faults)
	if err != nil {
		errs = append(errs, fmt.Errorf("--faults: %w", err))
	}
	key := f.apiKey
	if f.apiKeyFile != "" { // run's rule for the file; neither flag is no key (not $OPENAI_API_KEY's)
		if key, err = resolveAPIKey(f.apiKey, f.apiKeyFile); err != nil {
			errs = append(errs, err)
		}
	}
	var t tokenizer.Tokenizer
	if f.tok == "server" {
		errs = append(errs, errors.New("--tokenizer server: serve is the server; give the tokenizer it should use (an encoding, a tokenizer.json, or a HuggingFace model id)"))
	} else if t, err = tokenizer.Load(f.tok); err != nil {
		errs = append(errs, fmt.Errorf("--tokenizer: %w", err))
	}
	tmpl, err := resolveChatTemplate(f.chatTemplate, f.tok, client.APIOpenAIChat)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return usageError(errors.Join(errs...))
	}
	p.Seed = f.seed
	opts := server.ProfileOptions(p, f.seed)
	opts.Faults, opts.APIKey, opts.Tokenizer, opts.ChatTemplate = fs, key, t, tmpl
	if f.modelName != "" {
		opts.ModelName = f.modelName
	}
	if f.imagePatch < 1 || f.imageMerge < 1 || f.imageEncode < 0 {
		return usageError(errors.New("--image-patch and --image-merge must be at least 1, --image-encode not negative"))
	}
	opts.ImagePatch, opts.ImageMerge, opts.ImageEncode = f.imagePatch, f.imageMerge, f.imageEncode
	var closing *time.Duration
	if closeAfterSet {
		if f.closeAfter < 0 {
			return usageError(errors.New("--close-after must not be negative"))
		}
		closing = &f.closeAfter
	}
	return serve(ctx, stdio, f.listen, p, f.truth, opts, closing)
}

func serve(ctx context.Context, stdio Stdio, listen string, p sim.Profile, truthPath string, opts server.Options, closeAfter *time.Duration) error {
	if truthPath != "" {
		f, err := os.Create(truthPath)
		if err != nil {
			return fmt.Errorf("--truth: %w", err)
		}
		defer f.Close()
		opts.Truth = f
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	s, err := server.Start(ctx, ln, p, opts, closeAfter)
	if err != nil {
		return usageError(err)
	}
	fmt.Fprintf(stdio.Out, "listening on http://%s\n", ln.Addr())
	return s.Serve(ctx, 5*time.Second)
}
