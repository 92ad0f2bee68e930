package plan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// The traffic a Spec describes is one arrival rate (a level of the Spec's), or a trace
// replayed at its own arrivals; a Spec that gives neither is refused with one of these.
var (
	// ErrTraceRate is a rate given with a trace, which brings its own arrivals.
	ErrTraceRate = errors.New("the trace brings its own arrivals")
	// ErrOneRate is traffic that is not a trace without exactly one arrival rate.
	ErrOneRate = errors.New("the traffic needs the one arrival rate to plan for")
)

// Given says which of a Spec's settings its user gave, which the Spec's values alone do
// not tell from their defaults.
type Given struct {
	Rate   bool // the levels' arrival rate
	Length bool // the levels' length (their duration or requests): the plan then keeps it
}

// ForSpec fills c's base, traffic, metrics and price from what simulate would run with
// spec's settings, so that best.yaml re-simulates to the plan's figures: base seeded by the
// spec, the traffic (SpecTraffic), the spec's metrics and SLOs, and each deployment priced
// by the spec's pricing over its profile's own. The SourceFit is for the caller to say how
// the levels met the workload; the error is SpecTraffic's.
func (c *Config) ForSpec(spec *bench.Spec, base sim.Profile, given Given) (bench.SourceFit, error) {
	c.Base, c.Base.Seed = base, spec.Seed
	c.Metrics = spec.Judge.Metrics
	c.Price = func(p sim.Profile) *metrics.Price {
		// Its one error is a GPU count given without a GPU price: a simulated deployment's
		// pricing gives no count, the deployment has its own.
		pr, _ := spec.Judge.Pricing.Price(bench.ProfilePrice(p), p.GPUs())
		return pr
	}
	t, fit, err := SpecTraffic(spec, given)
	c.Traffic = t
	return fit, err
}

// SpecTraffic is the traffic spec describes: its one level's rate, or a trace's own
// arrivals (the spec's levels then fitted to it), each scaled as Traffic asks. Scale 1 is
// exactly the level simulate runs with the same settings. Its errors are the workload's
// (bench.Spec.VirtualSource: *bench.InvalidError), ErrTraceRate or ErrOneRate.
func SpecTraffic(spec *bench.Spec, given Given) (Traffic, bench.SourceFit, error) {
	src, err := spec.VirtualSource()
	if err != nil {
		return Traffic{}, bench.SourceFit{}, err
	}
	info := workload.Describe(src)
	switch {
	case info.Trace && given.Rate:
		return Traffic{}, bench.SourceFit{}, ErrTraceRate
	case !info.Trace && (!given.Rate || len(spec.Levels) != 1):
		return Traffic{}, bench.SourceFit{}, ErrOneRate
	}
	fit := spec.FitToSource(info) // a trace: one level of its own arrivals
	lvl := spec.Levels[0]
	if info.Trace {
		return Traffic{Rate: lvl.Rate, Fixed: true, Trace: true, Load: predict.LoadKind(false, lvl.Arrival), At: func(scale float64, _ time.Duration) (load.Level, workload.Source, error) {
			l := lvl
			l.Rate *= scale
			return l, workload.Faster(src, scale), nil
		}}, fit, nil
	}
	unit := ""
	if spec.Workload.Agent.On() || strings.HasPrefix(spec.Workload.Dataset, workload.DatasetAgent+":") {
		unit = "tasks/s" // the rate is of task arrivals
	}
	return Traffic{Rate: lvl.Rate, Fixed: given.Length, Unit: unit, Load: predict.LoadKind(false, spec.Base.Arrival), At: func(scale float64, horizon time.Duration) (load.Level, workload.Source, error) {
		l := spec.Base
		l.Rate = lvl.Rate * scale
		if !given.Length {
			l.Duration, l.Requests = horizon, 0
		}
		return spec.Finish(l, 0, spec.Requests), src, nil
	}}, fit, nil
}

// Describe records on pl what it was planned for: c's model and profile, spec's load,
// workload and SLOs (bench.Spec.Describe), and the version of llmbench that planned it.
func (c Config) Describe(pl *Plan, spec *bench.Spec, version string) {
	pl.Schema, pl.Version, pl.Model, pl.Profile = Schema, version, c.Base.ModelName(), c.Base.Name
	pl.Load, pl.Workload = spec.Describe()
	pl.SLO = spec.Judge.SLO
}

// Headline is the line a plan's console starts with: the model, the traffic and the SLOs,
// and how many candidates it tries.
func (c Config) Headline(spec *bench.Spec) string {
	n := c.Configurations()
	return fmt.Sprintf("Planning %s for %s %s (%s) to meet %s: %d %s, fleets of up to %d replicas",
		c.Base.ModelName(), strconv.FormatFloat(c.Traffic.Rate, 'g', 4, 64), c.Traffic.unit(), describeTraffic(spec), spec.Judge.SLO,
		n, console.Plural(n, "candidate", "candidates"), c.MaxReplicas)
}

// describeTraffic names the traffic: its arrivals and lengths, or its dataset.
func describeTraffic(spec *bench.Spec) string {
	if w := spec.Workload; w.Dataset != "" && w.Dataset != "random" {
		return w.Dataset
	}
	return fmt.Sprintf("%s, %s → %s tokens", spec.Base.Arrival.Kind, spec.Workload.InputTokens, spec.Workload.OutputTokens)
}
