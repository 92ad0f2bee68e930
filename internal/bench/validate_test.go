package bench

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/schedule"
)

// TestSpecValidate: a Spec's problems come back all at once, in one list, each a
// *fielderr.Error keyed by the path of the fields at fault.
func TestSpecValidate(t *testing.T) {
	slos, err := metrics.ParseSLOs("e2el:p99<=2s,ttft:p99<=1s")
	if err != nil {
		t.Fatal(err)
	}
	minus, two := -1.0, 2.0
	s := Spec{Live: true, API: client.APIOpenAIEmbeddings, Repeat: 1, Requests: 10,
		Base:   load.Level{Duration: time.Minute},
		Server: Server{URL: "http://a", Balance: "session", Timeout: time.Minute, Temperature: &minus, TopP: &two},
		Judge:  Judge{Metrics: metrics.Config{SLOs: slos}}}
	fields := fielderr.Fields(s.Validate())
	want := []string{"IdleTimeout", "Telemetry.Interval", "Balance,More", "Requests,Base.Duration",
		"Judge.Metrics.SLOs[1],API", "Temperature", "TopP"}
	if !slices.Equal(fields, want) {
		t.Errorf("fields %q,\nwant %q", fields, want)
	}

	// Mended, it is valid; a simulation has no server to time out or ask.
	s.API, s.Requests, s.Balance, s.More, s.Temperature, s.TopP = client.APIOpenAIChat, 0, "session", []string{"http://b"}, nil, nil
	s.IdleTimeout, s.Telemetry.Interval = time.Minute, time.Second
	if err := s.Validate(); err != nil {
		t.Errorf("mended: %v", err)
	}
	sim := Spec{Repeat: 1, Tokenizer: "server", Search: "rate", SearchMax: 8}
	if err := sim.Validate(); fielderr.Split(err) == nil || len(fielderr.Split(err)) != 2 ||
		!slices.ContainsFunc(fielderr.Split(err), func(e error) bool { return fieldOf(e) == "Tokenizer" }) ||
		!slices.ContainsFunc(fielderr.Split(err), func(e error) bool { return fieldOf(e) == "Search,Judge.Metrics.SLOs" }) {
		t.Errorf("simulation with a server tokenizer and a search without SLOs: %v", err)
	}
}

// TestSearchWithLevels: a search finds the load itself, so a ladder beside it is refused;
// a staged level is left to its caller, which refuses stages with a search.
func TestSearchWithLevels(t *testing.T) {
	s := Spec{Repeat: 1, Search: "rate", SearchMax: 8, Judge: Judge{Metrics: metrics.Config{SLOs: mustSLOs(t, "ttft:p99<=1s")}}}
	if err := s.Validate(); err != nil {
		t.Fatalf("search alone: %v", err)
	}
	s.SetLadder(nil, []float64{2}, schedule.Stages{})
	if errs := fielderr.Split(s.Validate()); len(errs) != 1 || fieldOf(errs[0]) != "Search,Levels" {
		t.Errorf("search and a rate: %v: want Search,Levels", errs)
	}
	st, err := schedule.ParseStages("10s:2")
	if err != nil {
		t.Fatal(err)
	}
	if s.SetLadder(nil, nil, st); s.Validate() != nil {
		t.Errorf("search and stages: %v: want none here", s.Validate())
	}
}

func mustSLOs(t *testing.T, s string) []metrics.SLO {
	t.Helper()
	slos, err := metrics.ParseSLOs(s)
	if err != nil {
		t.Fatal(err)
	}
	return slos
}

func fieldOf(err error) string {
	var fe *fielderr.Error
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}
