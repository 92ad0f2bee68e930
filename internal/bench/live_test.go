package bench

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/sim/server"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// simServer serves the textbook simulator over HTTP for the test.
func simServer(t *testing.T) string {
	t.Helper()
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	eng := sim.NewEngineFleet(p)
	go eng.Start(ctx)
	h, err := server.New(eng, server.Options{ModelName: p.ModelName(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); cancel(); h.Close() })
	return srv.URL
}

// TestRunLive: a benchmark of a live server from Go, no command line: the library opens
// the target, finds its model, sends the test request and runs the ladder.
func TestRunLive(t *testing.T) {
	url := simServer(t)
	tok, err := tokenizer.Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	wl := workload.Config{Dataset: "random", InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(8), PrefixGroups: 1, Seed: 1, TraceSpeed: 1, Turns: 1}
	cfg := Config{Spec: Spec{Live: true, API: client.APIOpenAIChat, Workload: wl, Levels: []load.Level{FinishLevel(load.Level{Concurrency: 2}, 0, 4, 1, 1)}, Repeat: 1, Seed: 1,
		Server:    Server{URL: url, TestRequest: true, Timeout: time.Minute, IdleTimeout: time.Minute, KeepAlive: true},
		Telemetry: Telemetry{MetricsURL: "none", Interval: time.Second},
		Output:    Output{Dir: filepath.Join(t.TempDir(), "run"), Records: record.FormatJSONL}},
		Console: Console{Out: io.Discard, Quiet: true}}
	var notes []Note
	live := Live{Client: cfg.Spec.Client(), Tokenizer: tok, Note: func(n Note) { notes = append(notes, n) }}
	out, err := RunLive(context.Background(), cfg, live)
	if err != nil || out.Err != nil {
		t.Fatalf("RunLive: %v, %v", err, out.Err)
	}
	sum := out.Summary
	if len(sum.Levels) != 1 || sum.Levels[0].Completed != 4 || sum.Target.Model == "" || sum.Target.URL != url {
		t.Errorf("summary: %d levels, target %+v, levels %+v", len(sum.Levels), sum.Target, sum.Levels)
	}
	if len(notes) != 1 {
		t.Errorf("notes: %+v, want the workload's SourceFit alone", notes)
	} else if _, fit := notes[0].(SourceFit); !fit {
		t.Errorf("note: %T, want the workload's SourceFit", notes[0])
	}

	// A target that does not answer: the test request says so, typed, before anything is measured.
	live.Client.BaseURL, live.Client.Model = "http://127.0.0.1:1", "m"
	cfg.Output.Dir = filepath.Join(t.TempDir(), "down")
	var te *TestRequestError
	if _, err := RunLive(context.Background(), cfg, live); !errors.As(err, &te) {
		t.Errorf("an unreachable server: %v, want a TestRequestError", err)
	}

	// No tokenizer given: the Spec's is loaded, and one that does not load says so, typed.
	live.Tokenizer, cfg.Tokenizer = nil, "no-such-encoding"
	var tokErr *TokenizerError
	if _, err := RunLive(context.Background(), cfg, live); !errors.As(err, &tokErr) || !errors.As(err, new(*InvalidError)) {
		t.Errorf("a tokenizer that does not load: %v, want a TokenizerError", err)
	}
}
