package gpumetrics

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/console"
)

var sourceNames = map[string]string{SourceDCGM: "DCGM", SourceAMD: "AMD", SourceEstimate: "estimated", SourceCalibrated: "calibrated"}

// SourceEstimate is a simulated level's source: the simulator's estimate from its cost
// model (sim/power.go), not an exporter's reading.
const SourceEstimate = "simulator estimate"

// Estimated is whether source is the simulator's (its cost model's estimate, or a
// calibration's measured power) rather than an exporter's or a tool's on the GPUs measured.
func Estimated(source string) bool { return source == SourceEstimate || source == SourceCalibrated }

// SourceCalibrated is a simulated level's source when its profile carries the power its
// calibration measured (sim.PowerConfig): the measured mean power, applied to the level.
const SourceCalibrated = "calibrated power"

// WriteConsole prints a level's "GPU Metrics" section in the console summary's style (the
// 50-column rule and "{:<40} {:<10}" rows of servermetrics.WriteConsole). Figures without a
// basis are left out, and the note says why the energy is missing; nothing for nil.
func WriteConsole(w io.Writer, s *Summary) error {
	if s == nil {
		return nil
	}
	var b strings.Builder
	var names []string
	for _, src := range strings.Split(s.Source, "+") {
		if n, ok := sourceNames[src]; ok {
			names = append(names, n)
		}
	}
	title := "GPU Metrics"
	if s.GPUs > 0 {
		title += fmt.Sprintf(" (%d GPU%s", s.GPUs, map[bool]string{true: "s"}[s.GPUs != 1])
		if len(names) > 0 {
			title += ", " + strings.Join(names, "+")
		}
		title += ")"
	}
	pad := max(50-len(title), 0)
	b.WriteString(strings.Repeat("-", pad/2) + title + strings.Repeat("-", pad-pad/2) + "\n")
	line := func(label, value string) {
		b.WriteString(strings.TrimRight(fmt.Sprintf("%-40s %-10s", label, value), " ") + "\n")
	}
	num := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	estimate := Estimated(s.Source)
	if !estimate {
		line("Scrapes (failed):", fmt.Sprintf("%d (%d)", s.Scrapes, s.FailedScrapes))
	}
	if s.FailedScrapes > 0 && s.LastError != "" {
		line("Last scrape error:", console.Wrap(s.LastError, 41, 41, console.Width)) // an error can be long: it fits the console too
	}
	if s.EnergyJ != nil {
		line("GPU energy (J, from "+s.EnergyFrom+"):", num(*s.EnergyJ, 1))
	}
	if s.PowerW != nil {
		line("Mean GPU power, all GPUs (W):", num(*s.PowerW, 1))
	}
	if s.PowerPerGPUW != nil {
		line("Mean power per GPU (W):", num(*s.PowerPerGPUW, 1))
	}
	if s.JoulesPerOutputToken != nil {
		line("GPU energy per output token (J):", num(*s.JoulesPerOutputToken, 4))
	}
	if s.JoulesPerRequest != nil {
		line("GPU energy per request (J):", num(*s.JoulesPerRequest, 2))
	}
	if s.OutputTokensPerJoule != nil {
		line("Output tokens per joule:", num(*s.OutputTokensPerJoule, 3))
	}
	if s.Note != "" && (s.Scrapes > s.FailedScrapes || estimate) {
		line("GPU energy:", s.Note)
	}
	gauge := func(name string, st *Stat, unit string) {
		if st != nil {
			line("Mean "+name+" ("+unit+"):", num(st.Mean, 1))
			line("Max "+name+" ("+unit+"):", num(st.Max, 1))
		}
	}
	gauge("GPU utilization", s.Utilization, "%")
	gauge("memory utilization", s.MemoryUtilization, "%")
	gauge("SM clock", s.SMClockMHz, "MHz")
	gauge("memory used", s.MemoryUsedMiB, "MiB")
	gauge("temperature", s.TemperatureC, "C")
	if len(s.ThrottleReasons) > 0 {
		line("Throttle reasons seen:", strings.Join(s.ThrottleReasons, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Warning is what to say of an exporter whose scrapes failed during a level; "" when none
// did.
func (s Series) Warning(level string) string {
	if s.Failed == 0 {
		return ""
	}
	what := fmt.Sprintf("%d of %d scrapes failed during %s", s.Failed, s.Scrapes, level)
	if s.Failed == s.Scrapes {
		what = "every scrape failed during " + level
	}
	who := "--gpu-metrics " + s.URL
	if s.URL == SourceNvidiaSMI {
		who = "the local nvidia-smi"
	}
	return fmt.Sprintf("warning: %s: %s (last: %s); the run goes on without its readings", who, what, s.LastError)
}
