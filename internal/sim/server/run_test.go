package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/sim"
)

// The profile's model and tools name the options; the block size is set only for an engine
// that caches prefixes.
func TestProfileOptions(t *testing.T) {
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	p.Engine.PrefixCaching, p.Engine.BlockSize = false, 16
	if o := ProfileOptions(p, 7); o.ModelName != p.ModelName() || o.Seed != 7 || o.BlockSize != 0 {
		t.Fatalf("no caching: %+v", o)
	}
	p.Engine.PrefixCaching = true
	if o := ProfileOptions(p, 7); o.BlockSize != 16 {
		t.Fatalf("caching: block size %d", o.BlockSize)
	}
}

// Start serves the profile until ctx ends; Serve then stops it, and invalid options stop
// it before it serves.
func TestStartServe(t *testing.T) {
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	r, err := Start(ctx, ln, p, ProfileOptions(p, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), p.ModelName()) {
		t.Fatalf("/v1/models: %s", b)
	}
	cancel()
	if err := r.Serve(ctx, time.Second); err != nil {
		t.Fatalf("Serve: %v", err)
	}

	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(t.Context(), ln, p, Options{BlockSize: -1}, nil); err == nil {
		t.Fatal("Start with invalid options: no error")
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the listener is not closed: %v", err)
	}
}
