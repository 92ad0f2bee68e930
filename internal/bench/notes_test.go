package bench

import (
	"testing"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
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
