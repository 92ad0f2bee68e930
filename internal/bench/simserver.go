package bench

import (
	"context"
	"net"
	"time"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
)

// ServeSimulator serves the simulator of profile p (seeded with p.Seed) on a free loopback
// port until stop is called: the target of a live run given none. It counts prompts with
// countTokens and formats chat with chat, as a real server counts them with its model's, so
// that usage.prompt_tokens matches the lengths the run intends. Options p does not allow are
// an *InvalidError.
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
