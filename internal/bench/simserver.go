package bench

import (
	"context"
	"net"
	"time"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// StartSimulator serves SimProfile's simulator, seeded with Seed, for a live run that names
// no server, and makes it the run's target (URL, InProcess) until stop is called. It
// returns the run's tokenizer, which the simulator counts prompts with (formatting chat
// with ChatTemplate), as a real server counts them with its model's, so that
// usage.prompt_tokens matches the lengths the run intends. Each problem is an
// *InvalidError of the fields' (a *fielderr.Error): the "server" tokenizer, which the
// simulator cannot be (Tokenizer,URL), a tokenizer or a profile that does not load.
func (s *Spec) StartSimulator(ctx context.Context) (tok tokenizer.Tokenizer, p sim.Profile, stop func(), err error) {
	if s.Tokenizer == "server" {
		return nil, p, nil, &InvalidError{fielderr.New("Tokenizer,URL", "the built-in simulator has no /tokenize")}
	}
	if tok, err = LoadTokenizer(ctx, s.Tokenizer, "", nil); err != nil {
		return nil, p, nil, err
	}
	if p, err = sim.LoadProfile(s.SimProfile); err != nil {
		return nil, p, nil, &InvalidError{&fielderr.Error{Field: "SimProfile", Err: err}}
	}
	p.Seed = s.Seed
	url, stop, err := ServeSimulator(ctx, p, func(text string) int { return len(tok.Encode(text)) }, s.ChatTemplate)
	if err != nil {
		return nil, p, nil, err
	}
	s.URL, s.InProcess = url, true
	return tok, p, stop, nil
}

// ServeSimulator serves the simulator of profile p (seeded with p.Seed) on a free loopback
// port until stop is called. It counts prompts with countTokens and formats chat with
// chat. Options p does not allow are an *InvalidError.
func ServeSimulator(ctx context.Context, p sim.Profile, countTokens func(string) int, chat *chattemplate.Template) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	opts := server.ProfileOptions(p, p.Seed)
	opts.CountTokens, opts.ChatTemplate = countTokens, chat
	s, err := server.Start(ctx, ln, p, opts, nil)
	if err != nil {
		return "", nil, &InvalidError{err}
	}
	return "http://" + ln.Addr().String(), func() { s.Stop(2 * time.Second) }, nil
}
