package bench

import (
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// The notes here are the console's lines (its standard error) on how the run was shaped;
// those the user acts on through a setting are the caller's to word (it knows the flags):
// what they need is returned in their place.

// Prepare builds a live run's workload once the tokenizer is loaded, shaped for the API
// (Source) and its ladder fitted to it (FitToSource, whose findings it returns).
func (s *Spec) Prepare(tok tokenizer.Tokenizer) (Prepared, SourceFit, error) {
	src, err := s.Source(tok)
	if err != nil {
		return Prepared{}, SourceFit{}, &InvalidError{Err: err}
	}
	fit := s.FitToSource(workload.Describe(src))
	shape := func(src workload.Source) (workload.Source, error) { return s.WrapSource(src, tok) }
	return Prepared{Config: s.Workload, Source: src, Levels: s.Levels, Shape: shape}, fit, nil
}

// StampNote says, after a live run, that the kernel timed no token event (where this build
// asks it to), so llmbench's reads did.
func (s *Spec) StampNote(sum *report.Summary) string {
	if s.Live && !s.ReadStamps && !s.HTTP2 && client.KernelStampsSupported() && !sum.KernelStamped() {
		return "note: the kernel gave no receive timestamps (SO_TIMESTAMPNS), so token events were timed when llmbench read them (docs/metrics.md)"
	}
	return ""
}

// PortLimit is an open-loop level's Rate beyond what Ports local ports sustain when each
// request opens a connection: about PerSecond new connections a second to one server.
type PortLimit struct {
	Rate      float64
	Ports     int
	PerSecond float64
}

// PortLimited finds, when connections are not kept alive, the first open-loop level that
// opens new ones faster than the local ports can sustain (TIME_WAIT holds each port for a
// minute); false when none does.
func (s *Spec) PortLimited() (PortLimit, bool) {
	if s.KeepAlive {
		return PortLimit{}, false
	}
	ports, perSecond, ok := client.EphemeralPorts()
	if !ok {
		return PortLimit{}, false
	}
	for _, l := range s.Levels {
		if l.Rate > perSecond*0.8 {
			return PortLimit{l.Rate, ports, perSecond}, true
		}
	}
	return PortLimit{}, false
}
