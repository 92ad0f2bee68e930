package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// The notes here are the console's lines (its standard error) on how the run was shaped;
// they name the flags behind each setting, as report's console text does. Each says
// nothing ("" or none) when there is nothing to know.

// Prepare builds a live run's workload once the tokenizer is loaded, shaped for the API
// (Source) and its ladder fitted to it (Adapt, whose notes it returns).
func (s *Spec) Prepare(tok tokenizer.Tokenizer) (Prepared, []string, error) {
	src, err := s.Source(tok)
	if err != nil {
		return Prepared{}, nil, &InvalidError{Err: err}
	}
	notes := s.Adapt(workload.Describe(src))
	shape := func(src workload.Source) (workload.Source, error) { return s.WrapSource(src, tok) }
	return Prepared{Config: s.Workload, Source: src, Levels: s.Levels, Shape: shape}, notes, nil
}

// Adapt fits the ladder to the workload once it is loaded (FitToSource) and says what the
// user should know of it: rows a dataset skipped, rows reused or sampled, a trace replayed
// as one level.
func (s *Spec) Adapt(info workload.Info) []string {
	fit := s.FitToSource(info)
	var notes []string
	if len(info.Skipped) > 0 || info.Clamped > 0 {
		var skipped []string
		for reason, n := range info.Skipped {
			skipped = append(skipped, fmt.Sprintf("%d %s", n, reason))
		}
		slices.Sort(skipped)
		notes = append(notes, fmt.Sprintf("dataset %s: %d usable rows; skipped: %s; %d rows with a zero length raised to 1",
			info.Dataset, info.Rows, strings.Join(append(skipped, "none")[:max(1, len(skipped))], ", "), info.Clamped))
	}
	if fit.Reused > 0 {
		notes = append(notes, fmt.Sprintf("warning: dataset %s has %d usable rows for levels of up to %d requests: rows are reused (each about %.1f times; a server's prefix cache may then serve repeats)",
			info.Dataset, info.Rows, fit.Reused, float64(fit.Reused)/float64(info.Rows)))
	}
	if len(fit.Sampled) > 0 {
		var fewer []string
		for _, l := range fit.Sampled {
			fewer = append(fewer, fmt.Sprintf("level %d sends %d", l.Index, l.Requests))
		}
		how := "its --requests"
		if s.Requests == 0 {
			how = "its default from the load, as no --requests was given"
		}
		notes = append(notes, fmt.Sprintf("note: dataset %s has %d usable rows; %s (each level's request count, %s): a seeded sample of the rows; --requests %d sends every row",
			s.Workload.Dataset, info.Rows, strings.Join(fewer, ", "), how, info.Rows))
	}
	if fit.Replayed {
		notes = append(notes, fmt.Sprintf("replaying the trace's %d arrivals over %s (no --concurrency or --rate given)", info.Rows, info.Span.Round(time.Millisecond)))
	}
	return notes
}

// UndecidedNote says, before the run, which levels are too short for --slo's percentile
// terms to be decided (metrics.MinSamples): their verdict will be undecided, which is not
// met.
func (s *Spec) UndecidedNote() string {
	var short []string
	for _, l := range s.Undecided() {
		short = append(short, fmt.Sprintf("%d (%d)", l.Index, l.Requests))
	}
	if len(short) == 0 {
		return ""
	}
	levels, verdicts := "levels", "their verdicts will be"
	if len(short) == 1 {
		levels, verdicts = "level", "its verdict will be"
	}
	need := s.Decide()
	return fmt.Sprintf("note: --slo's percentile terms need %d requests a level to be decided (to bound the percentile's 95%% interval); %s %s (requests), so %s undecided, which is not met: give --requests %d (or a longer --duration)",
		need, levels, strings.Join(short, ", "), verdicts, need)
}

// ChatNote sets how the workload counts chat prompts, once the tokenizer is loaded
// (UseChat), and says where the server cannot count them.
func (s *Spec) ChatNote(tok tokenizer.Tokenizer) string {
	if err := s.UseChat(tok); err != nil {
		return fmt.Sprintf("note: chat prompts are sized by their message text: %v; the server adds its chat template's tokens (give --chat-template the model's template for exact lengths)", err)
	}
	return ""
}

// StampNote says, after a live run, that the kernel timed no token event (where this build
// asks it to), so llmbench's reads did.
func (s *Spec) StampNote(sum *report.Summary) string {
	if s.Live && !s.ReadStamps && !s.HTTP2 && client.KernelStampsSupported() && !sum.KernelStamped() {
		return "note: the kernel gave no receive timestamps (SO_TIMESTAMPNS), so token events were timed when llmbench read them (docs/metrics.md)"
	}
	return ""
}

// ConcludingNotes are said after a run's ladder: the chat prompts the workload could not
// count as the server formats them (so sized by their message text), with the first
// reason; SLOs that judge no level, so never fail the run.
func (s *Spec) ConcludingNotes() []string {
	var notes []string
	if w, ok := s.Workload.Chat.(*workload.ChatWatch); ok {
		if n, err := w.Failures(); n > 0 {
			notes = append(notes, fmt.Sprintf("warning: %d chat prompts could not be counted as %s formats them, so their input tokens count message text alone (first: %v)", n, w.Source(), err))
		}
	}
	if slos := s.Judge.Metrics.SLOs; len(slos) > 0 && !metrics.HasVerdict(slos) {
		notes = append(notes, "note: --slo's per-request bounds define goodput but judge no level, so they never fail the run: add goodput>=0.95 (or a percentile term such as ttft:p99<=1s) to make them a gate (exit 3)")
	}
	return notes
}

// PortNote warns, once the run is under way, when connections are not kept alive and an
// open-loop level opens new ones faster than the local ports can sustain (TIME_WAIT holds
// each port for a minute).
func (s *Spec) PortNote() string {
	if s.KeepAlive {
		return ""
	}
	ports, perSecond, ok := client.EphemeralPorts()
	if !ok {
		return ""
	}
	for _, l := range s.Levels {
		if l.Rate > perSecond*0.8 {
			return fmt.Sprintf("warning: --keep-alive=false at %g req/s: each request opens a new connection, and %d local ports sustain about %.0f new connections/s to one server (each stays in TIME_WAIT for 60 s); connects may fail with EADDRNOTAVAIL (docs/real-servers.md)",
				l.Rate, ports, perSecond)
		}
	}
	return ""
}
