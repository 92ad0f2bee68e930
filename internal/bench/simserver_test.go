package bench

import (
	"errors"
	"net/http"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/sim"
)

// The simulator a run without a target gets answers on loopback until stopped; a profile
// its server refuses is an *InvalidError.
func TestServeSimulator(t *testing.T) {
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := ServeSimulator(t.Context(), p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stop()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/v1/models: HTTP %d", resp.StatusCode)
	}
	p.Name = "bad\nname" // textbook's model is named after the profile
	if _, _, err := ServeSimulator(t.Context(), p, nil, nil); !errors.As(err, new(*InvalidError)) {
		t.Errorf("a model name with a newline: %v, want an *InvalidError", err)
	}
}

// A run without a server gets the simulator of its profile as its target, and its own
// tokenizer back; a spec the simulator cannot serve says which fields are at fault.
func TestStartSimulator(t *testing.T) {
	s := DefaultSpec()
	s.SimProfile = "textbook"
	tok, p, stop, err := s.StartSimulator(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !s.InProcess || s.URL == "" || tok == nil || p.Name != "textbook" || p.Seed != s.Seed {
		t.Errorf("InProcess %v, URL %q, tokenizer %v, profile %q seeded %d (want %d)", s.InProcess, s.URL, tok, p.Name, p.Seed, s.Seed)
	}
	resp, err := http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range []struct{ tokenizer, profile, field string }{
		{"server", "textbook", "Tokenizer,URL"},
		{"no-such-encoding", "textbook", "Tokenizer"},
		{DefaultTokenizer, "no-such-profile", "SimProfile"},
	} {
		s := DefaultSpec()
		s.Tokenizer, s.SimProfile = c.tokenizer, c.profile
		_, _, _, err := s.StartSimulator(t.Context())
		var field *fielderr.Error
		if !errors.As(err, new(*InvalidError)) || !errors.As(err, &field) || field.Field != c.field {
			t.Errorf("tokenizer %q, profile %q: %v, want an *InvalidError of %s", c.tokenizer, c.profile, err, c.field)
		}
		if s.URL != "" || s.InProcess {
			t.Errorf("tokenizer %q, profile %q: the spec points at %q", c.tokenizer, c.profile, s.URL)
		}
	}
}
