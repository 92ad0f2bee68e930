package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/sim"
)

// The notes here are the console's lines (its standard error) on how bench shaped the run,
// naming the flags behind each setting, as report's console text does. Each says nothing
// ("" or none) when there is nothing to know.

// adaptNotes say what the user should know of how the ladder met the workload
// (bench.Spec.FitToSource): rows a dataset skipped, rows reused or sampled, a trace
// replayed as one level.
func adaptNotes(c *bench.Spec, fit bench.SourceFit) []string {
	info := fit.Info
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
		notes = append(notes, sampledNote(c, fit))
	}
	if fit.Replayed {
		notes = append(notes, fmt.Sprintf("replaying the trace's %d arrivals over %s (no --concurrency or --rate given)", info.Rows, info.Span.Round(time.Millisecond)))
	}
	return notes
}

// sampledNote names the levels that send a seeded sample of the dataset's rows.
func sampledNote(c *bench.Spec, fit bench.SourceFit) string {
	var fewer []string
	for _, l := range fit.Sampled {
		fewer = append(fewer, fmt.Sprintf("level %d sends %d", l.Index, l.Requests))
	}
	how := "its --requests"
	if c.Requests == 0 {
		how = "its default from the load, as no --requests was given"
	}
	return fmt.Sprintf("note: dataset %s has %d usable rows; %s (each level's request count, %s): a seeded sample of the rows; --requests %d sends every row",
		c.Workload.Dataset, fit.Info.Rows, strings.Join(fewer, ", "), how, fit.Info.Rows)
}

// undecidedNote says, before the run, which levels are too short for --slo's percentile
// terms to be decided (bench.Spec.Undecided): their verdict will be undecided, which is not
// met.
func undecidedNote(c *bench.Spec) string {
	var short []string
	for _, l := range c.Undecided() {
		short = append(short, fmt.Sprintf("%d (%d)", l.Index, l.Requests))
	}
	if len(short) == 0 {
		return ""
	}
	levels, verdicts := "levels", "their verdicts will be"
	if len(short) == 1 {
		levels, verdicts = "level", "its verdict will be"
	}
	need := c.Decide()
	return fmt.Sprintf("note: --slo's percentile terms need %d requests a level to be decided (to bound the percentile's 95%% interval); %s %s (requests), so %s undecided, which is not met: give --requests %d (or a longer --duration)",
		need, levels, strings.Join(short, ", "), verdicts, need)
}

// liveNotes say what a live run of c told of how it is shaped (bench.Live.Note).
func liveNotes(c *bench.Spec, n bench.Note) []string {
	switch n := n.(type) {
	case bench.PortLimit:
		return []string{portNote(n)}
	case bench.ChatByText:
		return []string{chatNote(n)}
	case bench.SourceFit:
		return adaptNotes(c, n)
	}
	return nil
}

// chatNote says that the server cannot count chat prompts as it formats them, and why.
func chatNote(n bench.ChatByText) string {
	return fmt.Sprintf("note: chat prompts are sized by their message text: %v; the server adds its chat template's tokens (give --chat-template the model's template for exact lengths)", n.Err)
}

// concludingNotes are said after a run's ladder: the chat prompts the workload could not
// count as the server formats them (so sized by their message text), with the first
// reason; SLOs that judge no level, so never fail the run.
func concludingNotes(c *bench.Spec, chats bench.UncountedChats) []string {
	var notes []string
	if chats.N > 0 {
		notes = append(notes, fmt.Sprintf("warning: %d chat prompts could not be counted as %s formats them, so their input tokens count message text alone (first: %v)", chats.N, chats.Source, chats.First))
	}
	if slos := c.Judge.Metrics.SLOs; len(slos) > 0 && !metrics.HasVerdict(slos) {
		notes = append(notes, "note: --slo's per-request bounds define goodput but judge no level, so they never fail the run: add goodput>=0.95 (or a percentile term such as ttft:p99<=1s) to make them a gate (exit 3)")
	}
	return notes
}

// portNote warns, once the run is under way, that connections are not kept alive and an
// open-loop level opens new ones faster than the local ports can sustain
// (bench.Spec.PortLimited).
func portNote(l bench.PortLimit) string {
	return fmt.Sprintf("warning: --keep-alive=false at %g req/s: each request opens a new connection, and %d local ports sustain about %.0f new connections/s to one server (each stays in TIME_WAIT for 60 s); connects may fail with EADDRNOTAVAIL (docs/real-servers.md)",
		l.Rate, l.Ports, l.PerSecond)
}

// localGPUNote says which local nvidia-smi a run reads (bench.Spec.LocalGPU), if any.
func localGPUNote(l *gpumetrics.Local) string {
	if l == nil {
		return ""
	}
	return fmt.Sprintf("GPU metrics: the local %s (the target runs on this machine; --gpu-metrics URL reads an exporter, --gpu-metrics none nothing)", l.Path)
}

// unpricedNote says why a simulation of p has no cost figures, and what would give them.
func unpricedNote(p sim.Profile) string {
	return fmt.Sprintf("note: profile %s's GPU (%s) has no list price, so no cost is reported: give gpu.usd_per_hour in the profile, or --gpu-price", p.Name, p.GPU.Name)
}

// priceProfile is bench.Spec.PriceProfile, its invalid pricing a usage error, with the note
// that p leaves the run unpriced.
func priceProfile(stdio Stdio, c *bench.Spec, p sim.Profile) error {
	if err := c.PriceProfile(p); err != nil {
		return invalidUsage(err)
	}
	if c.Judge.Price == nil {
		say(stdio.Err, unpricedNote(p))
	}
	return nil
}
