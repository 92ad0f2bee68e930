package server

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/llmbench/llmbench/internal/sim"
)

// ProfileOptions are the HTTP options that match profile p.
func ProfileOptions(p sim.Profile, seed int64) Options {
	o := Options{ModelName: p.ModelName(), Seed: seed, Tools: p.Tools}
	if p.Engine.PrefixCaching {
		o.BlockSize = p.Engine.BlockSize // the server hashes prompt blocks for the engine's prefix cache
	}
	return o
}

// Running is a simulator served over HTTP: its engines, handler and server.
type Running struct {
	h      *Server
	srv    *http.Server
	cancel context.CancelFunc
	errc   chan error // Serve's result
}

// Start runs profile p's engines and serves them on ln. The engines outlive ctx's
// cancellation until Stop, so an interrupted run can still finish its requests' records.
// closeAfter, when set, closes each connection that long after every response
// (CloseAfterResponses). The error is New's: opts do not hold.
func Start(ctx context.Context, ln net.Listener, p sim.Profile, opts Options, closeAfter *time.Duration) (*Running, error) {
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	eng := sim.NewEngineFleet(p) // one engine per replica, behind the deployment's router
	go eng.Start(ectx)
	h, err := New(eng, opts)
	if err != nil {
		cancel()
		ln.Close()
		return nil, err
	}
	r := &Running{h: h, srv: HTTPServer("", h), cancel: cancel, errc: make(chan error, 1)}
	if closeAfter != nil {
		CloseAfterResponses(r.srv, *closeAfter)
	}
	go func() { r.errc <- r.srv.Serve(ln) }()
	return r, nil
}

// Stop shuts the server down gracefully within grace, then stops the engines and flushes
// the ground truth.
func (r *Running) Stop(grace time.Duration) error {
	ctx, c := context.WithTimeout(context.Background(), grace)
	defer c()
	if err := r.srv.Shutdown(ctx); err != nil {
		r.srv.Close()
	}
	r.cancel()
	return r.h.Close()
}

// Serve serves until ctx ends, then stops within grace. Should the server fail first, its
// error returns at once, with the engines stopped and nothing flushed.
func (r *Running) Serve(ctx context.Context, grace time.Duration) error {
	select {
	case err := <-r.errc:
		r.cancel()
		return err
	case <-ctx.Done():
	}
	return r.Stop(grace)
}
