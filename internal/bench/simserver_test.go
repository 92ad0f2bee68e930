package bench

import (
	"errors"
	"net/http"
	"testing"

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
