package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MaxTokens bounds every token count a workload may ask for: each parameter of a length
// distribution and each length a dataset or trace row gives. Ten million tokens is well
// beyond any model's context today, and keeps samples, sums and synthesised prompts far
// from integer overflow (uniform:1:1e19 would otherwise panic in rand.Int64N).
const MaxTokens = 10_000_000

// Dist is a token-length distribution: fixed N, uniform:A:B (inclusive), normal:MEAN:STD or
// lognormal:MEAN:STD. Samples are rounded and clamped to 1..MaxTokens. The zero Dist means
// "not given".
type Dist struct {
	Kind DistKind
	A, B float64 // fixed: A; uniform: A..B; normal, lognormal: mean A, std B
}

// DistKind is a distribution's shape, as ParseDist reads it.
type DistKind string

// Distribution kinds.
const (
	DistFixed   DistKind = "fixed"   // always A
	DistUniform DistKind = "uniform" // A..B
	DistNormal  DistKind = "normal"  // mean A, standard deviation B
	// DistLognormal is the lengths' mean A and standard deviation B, of a distribution whose
	// logarithm is normal: skewed right, as prompt and reply lengths of real traffic are.
	DistLognormal DistKind = "lognormal"
)

// distSyntax is every form ParseDist reads, for messages.
const distSyntax = "N, uniform:A:B, normal:MEAN:STD or lognormal:MEAN:STD"

// Fixed returns the distribution that always yields n.
func Fixed(n int) Dist { return Dist{Kind: DistFixed, A: float64(n)} }

// ParseDist parses "512", "uniform:A:B", "normal:MEAN:STD" or "lognormal:MEAN:STD"; errors
// name the bad part and the allowed range.
func ParseDist(s string) (Dist, error) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ":")
	num := func(i int, what string) (float64, error) {
		v, err := strconv.ParseFloat(parts[i], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%q: %s %q is not a number", s, what, parts[i])
		}
		return v, nil
	}
	var d Dist
	switch {
	case len(parts) == 1:
		// Whole numbers in float notation ("1e+06") are accepted too: summaries written
		// before String printed integers as integers hold them.
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Dist{}, fmt.Errorf("%q: want %s", s, distSyntax)
		}
		d = Dist{Kind: DistFixed, A: v}
	case parts[0] == string(DistUniform) && len(parts) == 3:
		a, errA := num(1, "low bound")
		b, errB := num(2, "high bound")
		if err := errors.Join(errA, errB); err != nil {
			return Dist{}, err
		}
		d = Dist{Kind: DistUniform, A: a, B: b}
	case (parts[0] == string(DistNormal) || parts[0] == string(DistLognormal)) && len(parts) == 3:
		m, errM := num(1, "mean")
		sd, errS := num(2, "standard deviation")
		if err := errors.Join(errM, errS); err != nil {
			return Dist{}, err
		}
		d = Dist{Kind: DistKind(parts[0]), A: m, B: sd}
	case parts[0] == string(DistUniform) || parts[0] == string(DistNormal) || parts[0] == string(DistLognormal):
		return Dist{}, fmt.Errorf("%q: %s takes two numbers (%s:A:B)", s, parts[0], parts[0])
	default:
		return Dist{}, fmt.Errorf("%q: unknown distribution %q (want %s)", s, parts[0], distSyntax)
	}
	if err := d.Validate(); err != nil {
		return Dist{}, fmt.Errorf("%q: %w", s, err)
	}
	return d, nil
}

// IsZero reports whether d was not given.
func (d Dist) IsZero() bool { return d.Kind == "" }

// Validate checks every parameter against its allowed range, naming it; ParseDist uses
// it, so a Dist built in code is held to the same bounds as one parsed from a flag.
func (d Dist) Validate() error {
	// whole checks a token count: a whole number in lo..MaxTokens.
	whole := func(what string, v, lo float64) error {
		if math.IsNaN(v) || v != math.Trunc(v) || v < lo || v > MaxTokens {
			return fmt.Errorf("%s %s must be a whole number in %s..%d", what, fmtNum(v), fmtNum(lo), MaxTokens)
		}
		return nil
	}
	switch d.Kind {
	case DistFixed:
		return whole("length", d.A, 1)
	case DistUniform:
		err := errors.Join(whole("low bound", d.A, 1), whole("high bound", d.B, 1))
		if err == nil && d.B < d.A {
			err = fmt.Errorf("high bound %s is below low bound %s", fmtNum(d.B), fmtNum(d.A))
		}
		return err
	case DistNormal, DistLognormal:
		var errs []error
		if !(d.A >= 1 && d.A <= MaxTokens) {
			errs = append(errs, fmt.Errorf("mean %s must be in 1..%d", fmtNum(d.A), MaxTokens))
		}
		if !(d.B >= 0 && d.B <= MaxTokens) {
			errs = append(errs, fmt.Errorf("standard deviation %s must be in 0..%d", fmtNum(d.B), MaxTokens))
		}
		return errors.Join(errs...)
	case "":
		return errors.New("no length distribution given")
	default:
		return fmt.Errorf("unknown distribution kind %q", d.Kind)
	}
}

// Sample draws one length (>= 1).
func (d Dist) Sample(r *rand.Rand) int {
	var v float64
	switch d.Kind {
	case DistUniform:
		v = d.A + float64(r.Int64N(int64(d.B-d.A)+1))
	case DistNormal:
		v = math.Round(d.A + d.B*r.NormFloat64())
	case DistLognormal:
		mu, sigma := d.logParams()
		v = math.Round(math.Exp(mu + sigma*r.NormFloat64()))
	default:
		v = d.A
	}
	// A normal's tails reach past both ends; the bound keeps every sample a sane length.
	return int(min(max(1, v), MaxTokens))
}

// logParams are a lognormal's μ and σ (its logarithm's mean and standard deviation), from
// the lengths' mean m and standard deviation s: σ² = ln(1 + s²/m²), μ = ln m − σ²/2.
func (d Dist) logParams() (mu, sigma float64) {
	v := math.Log1p(d.B * d.B / (d.A * d.A))
	return math.Log(d.A) - v/2, math.Sqrt(v)
}

// Clamped says whether d's tail reaches below 1 and is clamped there (normal, lognormal),
// so that Min says nothing of its typical lengths.
func (d Dist) Clamped() bool { return d.Kind == DistNormal || d.Kind == DistLognormal }

// Spread is d's [shortest, longest] likely length: a normal's mean ± 3 standard deviations,
// a lognormal's exp(μ ± 3σ); zero for the zero Dist (a dataset that brings its own lengths).
func (d Dist) Spread() [2]int {
	switch d.Kind {
	case DistFixed:
		return [2]int{int(d.A), int(d.A)}
	case DistUniform:
		return [2]int{int(d.A), int(d.B)}
	case DistNormal:
		return [2]int{max(1, int(d.A-3*d.B)), int(d.A + 3*d.B)}
	case DistLognormal:
		mu, sigma := d.logParams()
		return [2]int{max(1, int(math.Exp(mu-3*sigma))), int(min(math.Exp(mu+3*sigma), MaxTokens))}
	}
	return [2]int{}
}

// Min is the smallest length d can yield (1 for a normal, whose tail is clamped).
func (d Dist) Min() int {
	switch d.Kind {
	case DistFixed, DistUniform:
		return max(1, int(d.A))
	}
	return 1
}

// Mean is the distribution's nominal mean.
func (d Dist) Mean() float64 {
	if d.Kind == DistUniform {
		return (d.A + d.B) / 2
	}
	return d.A
}

// String gives the flag syntax back, which ParseDist reads as d again.
func (d Dist) String() string {
	switch d.Kind {
	case DistFixed:
		return fmtNum(d.A)
	case DistUniform, DistNormal, DistLognormal:
		return string(d.Kind) + ":" + fmtNum(d.A) + ":" + fmtNum(d.B)
	}
	return ""
}

// fmtNum prints whole numbers as integers ("1000000", not "1e+06": a fixed length must
// read back as one) and others in the shortest form that parses back to the same float.
func fmtNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// MarshalText writes the flag syntax, so summaries show "uniform:128:1024".
func (d Dist) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses the flag syntax; empty text is the zero Dist.
func (d *Dist) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*d = Dist{}
		return nil
	}
	v, err := ParseDist(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
