package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// A simulation's missing kernel timestamps are not noted.
func TestStampNote(t *testing.T) {
	if n := (&Spec{}).StampNote(nil); n != "" {
		t.Errorf("a simulation's stamp note: %q", n)
	}
}

// PortLimited finds an open-loop rate beyond the local ports only where connections are
// not kept alive.
func TestPortLimited(t *testing.T) {
	s := Spec{Levels: []load.Level{{Index: 0, Rate: 1e9}}}
	s.KeepAlive = true
	if l, ok := s.PortLimited(); ok {
		t.Errorf("kept alive: %+v", l)
	}
	s.KeepAlive = false
	if _, _, ok := client.EphemeralPorts(); ok {
		if l, ok := s.PortLimited(); !ok || l.Rate != 1e9 {
			t.Errorf("1e9 req/s: %+v, %v", l, ok)
		}
	}
}

// Once the tokenizer is loaded, the run tells a level beyond the local ports, then chat
// prompts the server cannot count (a server with no /tokenize).
func TestLoadedNotes(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	s := Spec{Levels: []load.Level{{Index: 0, Rate: 1e9}}, ChatOnServer: true}
	var notes []Note
	s.loaded(tokenizer.NewServer(ts.URL, nil), func(n Note) { notes = append(notes, n) })
	var want []string
	if _, _, ok := client.EphemeralPorts(); ok {
		want = append(want, "bench.PortLimit")
	}
	want = append(want, "bench.ChatByText")
	var got []string
	for _, n := range notes {
		got = append(got, fmt.Sprintf("%T", n))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("notes %v, want %v", got, want)
	}
}
