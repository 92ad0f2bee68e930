// Package schedule computes open-loop arrival times: pure functions of (arrival process,
// rate, seed), with no clock and no I/O, so a plan can be replayed, tested, simulated on a
// virtual clock and split among shards identically.
package schedule

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Arrival kinds.
const (
	Poisson  = "poisson"
	Gamma    = "gamma"
	Constant = "constant"
)

// Arrival describes an arrival process. The zero value is Poisson.
type Arrival struct {
	Kind string // Poisson, Gamma or Constant; "" means Poisson
	// Burstiness is the gamma shape B (gamma only): gaps have coefficient of variation
	// 1/sqrt(B), so B = 1 is Poisson and B < 1 is burstier.
	Burstiness float64
}

// ParseArrival reads "poisson", "constant" or "gamma:B" with B > 0.
func ParseArrival(s string) (Arrival, error) {
	in := strings.ToLower(strings.TrimSpace(s))
	kind, arg, hasArg := strings.Cut(in, ":")
	switch kind {
	case Poisson, Constant:
		if hasArg {
			return Arrival{}, fmt.Errorf("arrival %q: %s takes no parameter (only gamma:B does)", s, kind)
		}
		return Arrival{Kind: kind}, nil
	case Gamma:
		if !hasArg || strings.TrimSpace(arg) == "" {
			return Arrival{}, fmt.Errorf("arrival %q: gamma needs a burstiness, e.g. gamma:0.5 (1 is Poisson, < 1 burstier)", s)
		}
		b, err := strconv.ParseFloat(strings.TrimSpace(arg), 64)
		if err != nil {
			return Arrival{}, fmt.Errorf("arrival %q: burstiness %q is not a number", s, arg)
		}
		a := Arrival{Kind: Gamma, Burstiness: b}
		if err := a.Validate(); err != nil {
			return Arrival{}, fmt.Errorf("arrival %q: %w", s, err)
		}
		return a, nil
	default:
		return Arrival{}, fmt.Errorf("arrival %q: unknown kind %q (want poisson, gamma:B or constant)", s, kind)
	}
}

// Validate reports what is wrong with a, if anything.
func (a Arrival) Validate() error {
	switch a.Kind {
	case "", Poisson, Constant:
		if a.Burstiness != 0 {
			return fmt.Errorf("burstiness %g given for %s arrivals (only gamma takes one)", a.Burstiness, a.kind())
		}
		return nil
	case Gamma:
		if !(a.Burstiness > 0) || math.IsInf(a.Burstiness, 0) {
			return fmt.Errorf("gamma burstiness must be a positive finite number, got %g", a.Burstiness)
		}
		return nil
	default:
		return fmt.Errorf("unknown arrival kind %q (want poisson, gamma or constant)", a.Kind)
	}
}

func (a Arrival) kind() string {
	if a.Kind == "" {
		return Poisson
	}
	return a.Kind
}

// String is the form ParseArrival reads.
func (a Arrival) String() string {
	if a.Kind == Gamma {
		return Gamma + ":" + strconv.FormatFloat(a.Burstiness, 'g', -1, 64)
	}
	return a.kind()
}

// MarshalText writes the ParseArrival form, so configs store "gamma:0.5".
func (a Arrival) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads the ParseArrival form.
func (a *Arrival) UnmarshalText(b []byte) error {
	v, err := ParseArrival(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Plan yields the due times of one level's arrivals, one at a time. The first request is
// due at 0; each later one after a random gap. Due times are computed in float64 seconds
// (constant: i/rate exactly; random: a compensated running sum of the gaps) and converted
// to a Duration once per call, so rounding never accumulates over a long run.
// A Plan is not safe for concurrent use.
type Plan struct {
	a    Arrival
	rate float64
	rng  *rand.Rand
	n    int     // due times handed out so far
	t    float64 // seconds: due time of the last request handed out
	comp float64 // Neumaier compensation: the low-order bits t has lost
}

// ErrRate is returned (wrapped) by CheckRate.
var ErrRate = errors.New("rate must be a positive finite number of requests per second")

// CheckRate reports whether rate can drive a Plan.
func CheckRate(rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("%w, got %g", ErrRate, rate)
	}
	return nil
}

// NewPlan returns the plan for arrivals a at rate requests/s, seeded by seed. The caller
// validates its inputs first (Arrival.Validate, CheckRate): invalid ones are a programming
// error and panic, since a plan that silently yields nonsense times would corrupt a run.
func NewPlan(a Arrival, rate float64, seed int64) *Plan {
	if err := a.Validate(); err != nil {
		panic("schedule.NewPlan: " + err.Error())
	}
	if err := CheckRate(rate); err != nil {
		panic("schedule.NewPlan: " + err.Error())
	}
	// PCG with the seed split across both words: distinct seeds give independent streams.
	src := rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15)
	return &Plan{a: a, rate: rate, rng: rand.New(src)}
}

// Next returns the due time of the next arrival as an offset from the level's start.
// Due times never decrease.
func (p *Plan) Next() time.Duration {
	switch {
	case p.n == 0:
	case p.a.kind() == Constant:
		p.t = float64(p.n) / p.rate
	default:
		p.add(p.gap())
	}
	p.n++
	return secondsToDuration(p.t + p.comp)
}

// add is Neumaier's compensated summation: a plain float sum of millions of gaps loses
// nanoseconds; this keeps the error at one rounding.
func (p *Plan) add(g float64) {
	s := p.t + g
	if math.Abs(p.t) >= math.Abs(g) {
		p.comp += (p.t - s) + g
	} else {
		p.comp += (g - s) + p.t
	}
	p.t = s
}

// gap draws one inter-arrival gap in seconds.
func (p *Plan) gap() float64 {
	switch p.a.kind() {
	case Gamma:
		b := p.a.Burstiness
		return gammaSample(p.rng, b) / (p.rate * b) // shape B, scale 1/(rate·B): mean 1/rate
	default:
		return p.rng.ExpFloat64() / p.rate
	}
}

// secondsToDuration converts, saturating rather than overflowing on absurd horizons.
func secondsToDuration(s float64) time.Duration {
	ns := math.Round(s * 1e9)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// gammaSample draws from Gamma(shape k, scale 1) by Marsaglia and Tsang (2000); for k < 1
// it uses Gamma(k+1)·U^(1/k), their suggested boost.
func gammaSample(r *rand.Rand, k float64) float64 {
	if k < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return gammaSample(r, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 {
			return d * v
		}
		if u > 0 && math.Log(u) < 0.5*x2+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
