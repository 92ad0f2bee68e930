// Package memnet is an in-memory network for tests: a net.Listener whose connections are
// net.Pipe pairs, so an http.Server and a client talk with no socket at all. Pipes block
// on channels, which a testing/synctest bubble sees as durably blocked: a whole run over
// HTTP can go on the bubble's fake clock.
package memnet

import (
	"context"
	"errors"
	"net"
	"net/http/httptrace"
	"sync"
)

// Listener accepts the connections its Dial makes.
type Listener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// NewListener returns a listener with nothing dialed yet.
func NewListener() *Listener {
	return &Listener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *Listener) Addr() net.Addr { return addr{} }

// ErrRefused is Dial's error once the listener is closed.
var ErrRefused = errors.New("dial llm.test: connection refused")

// Dial connects through a pipe, whatever the address, telling the request's trace of it as
// net.Dialer does.
func (l *Listener) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	a, b := net.Pipe()
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.ConnectStart != nil {
		trace.ConnectStart(network, address)
	}
	select {
	case l.conns <- b:
		if trace != nil && trace.ConnectDone != nil {
			trace.ConnectDone(network, address, nil)
		}
		return a, nil
	case <-l.closed:
		return nil, ErrRefused
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// URL is a base URL for the listener's server (Dial ignores the address).
const URL = "http://llm.test"

type addr struct{}

func (addr) Network() string { return "mem" }
func (addr) String() string  { return "llm.test:80" }
