package server

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// Config is a simulator served on its own (llmbench serve), as its operator gives it: the
// profile and the options Load reads from it, and where Serve listens and writes the
// ground truth.
type Config struct {
	Listen    string // the address to listen on (port 0 picks a free one)
	Truth     string // the ground truth's file; "" none
	Profile   string // sim.LoadProfile's: a preset or a YAML file
	Faults    string // ParseFaults'
	APIKey    string // "" none required
	ModelName string // "" the profile's model
	// Tokenizer is tokenizer.Load's; never "server" (the target's /tokenize), as this is
	// the server.
	Tokenizer    string
	ChatTemplate *chattemplate.Template
	Seed         int64
	ImagePatch   int // 0 is given as 0, not Options' default
	ImageMerge   int
	ImageEncode  time.Duration
	CloseAfter   *time.Duration // CloseAfterResponses', when set
}

// ErrServerTokenizer is Load's error, on Tokenizer, for a Tokenizer of "server": the
// server is this one.
var ErrServerTokenizer = errors.New("server: the target's /tokenize, and this is the server; give the tokenizer it should use")

// Load reads c: the profile to serve, seeded by c.Seed, and the server's options. Every
// problem is reported at once, each a *fielderr.Error on c's fields but for Options' own
// (Options.Validate).
func (c Config) Load() (sim.Profile, Options, error) {
	var errs []error
	p, err := sim.LoadProfile(c.Profile)
	if err != nil {
		errs = append(errs, &fielderr.Error{Field: "Profile", Err: err})
	}
	fs, err := ParseFaults(c.Faults)
	if err != nil {
		errs = append(errs, &fielderr.Error{Field: "Faults", Err: err})
	}
	var t tokenizer.Tokenizer
	if c.Tokenizer == "server" {
		errs = append(errs, &fielderr.Error{Field: "Tokenizer", Err: ErrServerTokenizer})
	} else if t, err = tokenizer.Load(c.Tokenizer); err != nil {
		errs = append(errs, &fielderr.Error{Field: "Tokenizer", Err: err})
	}
	if c.ImagePatch < 1 || c.ImageMerge < 1 || c.ImageEncode < 0 {
		errs = append(errs, fielderr.New("ImagePatch,ImageMerge,ImageEncode", "the patch and the merge must be at least 1, the encoder's time not negative"))
	}
	if c.CloseAfter != nil && *c.CloseAfter < 0 {
		errs = append(errs, fielderr.New("CloseAfter", "must not be negative"))
	}
	if len(errs) > 0 {
		return sim.Profile{}, Options{}, errors.Join(errs...)
	}
	p.Seed = c.Seed
	opts := ProfileOptions(p, c.Seed)
	opts.Faults, opts.APIKey, opts.Tokenizer, opts.ChatTemplate = fs, c.APIKey, t, c.ChatTemplate
	if c.ModelName != "" {
		opts.ModelName = c.ModelName
	}
	opts.ImagePatch, opts.ImageMerge, opts.ImageEncode = c.ImagePatch, c.ImageMerge, c.ImageEncode
	return p, opts, opts.Validate()
}

// serveGrace is how long Serve lets the requests in flight finish once its context ends.
const serveGrace = 5 * time.Second

// Serve serves profile p with opts (Load's) on c.Listen until ctx ends, writing the ground
// truth to c.Truth; listening is told the address, once it listens. An error of the truth
// file or the address is a *fielderr.Error on Truth or Listen.
func (c Config) Serve(ctx context.Context, p sim.Profile, opts Options, listening func(net.Addr)) error {
	if c.Truth != "" {
		f, err := os.Create(c.Truth)
		if err != nil {
			return &fielderr.Error{Field: "Truth", Err: err}
		}
		defer f.Close()
		opts.Truth = f
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return &fielderr.Error{Field: "Listen", Err: err}
	}
	s, err := Start(ctx, ln, p, opts, c.CloseAfter) // opts hold: Load validated them
	if err != nil {
		return err
	}
	listening(ln.Addr())
	return s.Serve(ctx, serveGrace)
}
