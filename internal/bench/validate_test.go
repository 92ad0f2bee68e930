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
	var fields []string
	for _, e := range fielderr.Split(s.Validate()) {
		var fe *fielderr.Error
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a *fielderr.Error", e)
		}
		fields = append(fields, fe.Field)
	}
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

func fieldOf(err error) string {
	var fe *fielderr.Error
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}
