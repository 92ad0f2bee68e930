package bench

import (
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// The notes here are the console's lines (its standard error) on how the run was shaped;
// those the user acts on through a setting are the caller's to word (it knows the flags):
// what they need is returned in their place, or told as a Note.

// Note is what a live run tells its caller of how it is shaped (Live.Note): a PortLimit,
// a ChatByText or a SourceFit.
type Note interface{ isNote() }

func (PortLimit) isNote()  {}
func (ChatByText) isNote() {}
func (SourceFit) isNote()  {}

// ChatByText is a live run whose chat prompts are sized by their message text: the server
// cannot count them as it formats them (Err says why), and adds its chat template's tokens.
type ChatByText struct{ Err error }

// UncountedChats are the chat prompts of a live run that could not be counted as Source (a
// chat template's file, or "server") formats them, so their input tokens count message
// text alone: N of them, First the first's reason.
type UncountedChats struct {
	N      int
	First  error
	Source string
}

// uncounted is what chat, the workload's chat counter, failed to count.
func uncounted(chat workload.ChatCounter) UncountedChats {
	w, ok := chat.(*workload.ChatWatch)
	if !ok {
		return UncountedChats{}
	}
	n, err := w.Failures()
	return UncountedChats{N: n, First: err, Source: w.Source()}
}

// loaded sets how the workload counts chat prompts once the run's tokenizer is loaded
// (UseChat) and tells note, before the first request, what the user should know: a level
// faster than the local ports sustain, chat prompts the server cannot count.
func (s *Spec) loaded(tok tokenizer.Tokenizer, note func(Note)) {
	err := s.UseChat(tok)
	if note == nil {
		return
	}
	if l, ok := s.PortLimited(); ok {
		note(l)
	}
	if err != nil {
		note(ChatByText{err})
	}
}

// Prepare builds a live run's workload once the tokenizer is loaded, shaped for the API
// (Source), and fits its ladder to it (FitToSource, whose findings it returns).
func (s *Spec) Prepare(tok tokenizer.Tokenizer) (*Sources, SourceFit, error) {
	src, err := s.Source(tok)
	if err != nil {
		return nil, SourceFit{}, &InvalidError{Err: err}
	}
	fit := s.FitToSource(workload.Describe(src))
	shape := func(src workload.Source) (workload.Source, error) { return s.WrapSource(src, tok) }
	return &Sources{Workload: s.Workload, Tokenizer: tok, First: src, Shape: shape}, fit, nil
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
