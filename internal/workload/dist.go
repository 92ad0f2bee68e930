package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Dist is a token-length distribution: fixed N, uniform:A:B (inclusive) or normal:MEAN:STD.
// Samples are rounded and clamped to >= 1. The zero Dist means "not given".
type Dist struct {
	Kind string  // "fixed", "uniform" or "normal"
	A, B float64 // fixed: A; uniform: A..B; normal: mean A, std B
}

// Fixed returns the distribution that always yields n.
func Fixed(n int) Dist { return Dist{Kind: "fixed", A: float64(n)} }

// ParseDist parses "512", "uniform:A:B" or "normal:MEAN:STD"; errors name the bad part.
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
	switch {
	case len(parts) == 1:
		n, err := strconv.Atoi(s)
		if err != nil {
			return Dist{}, fmt.Errorf("%q: want N, uniform:A:B or normal:MEAN:STD", s)
		}
		if n < 1 {
			return Dist{}, fmt.Errorf("%q: length must be >= 1", s)
		}
		return Fixed(n), nil
	case parts[0] == "uniform" && len(parts) == 3:
		a, errA := num(1, "low bound")
		b, errB := num(2, "high bound")
		if err := errors.Join(errA, errB); err != nil {
			return Dist{}, err
		}
		if a < 1 || a != math.Trunc(a) || b != math.Trunc(b) {
			return Dist{}, fmt.Errorf("%q: bounds must be whole numbers >= 1", s)
		}
		if b < a {
			return Dist{}, fmt.Errorf("%q: high bound %v is below low bound %v", s, b, a)
		}
		return Dist{Kind: "uniform", A: a, B: b}, nil
	case parts[0] == "normal" && len(parts) == 3:
		m, errM := num(1, "mean")
		sd, errS := num(2, "standard deviation")
		if err := errors.Join(errM, errS); err != nil {
			return Dist{}, err
		}
		if m < 1 {
			return Dist{}, fmt.Errorf("%q: mean %v must be >= 1", s, m)
		}
		if sd < 0 {
			return Dist{}, fmt.Errorf("%q: standard deviation %v must be >= 0", s, sd)
		}
		return Dist{Kind: "normal", A: m, B: sd}, nil
	case parts[0] == "uniform" || parts[0] == "normal":
		return Dist{}, fmt.Errorf("%q: %s takes two numbers (%s:A:B)", s, parts[0], parts[0])
	}
	return Dist{}, fmt.Errorf("%q: unknown distribution %q (want N, uniform:A:B or normal:MEAN:STD)", s, parts[0])
}

// IsZero reports whether d was not given.
func (d Dist) IsZero() bool { return d.Kind == "" }

// Validate checks a Dist built in code rather than parsed.
func (d Dist) Validate() error {
	switch d.Kind {
	case "fixed":
		if d.A < 1 {
			return fmt.Errorf("fixed length %v must be >= 1", d.A)
		}
	case "uniform":
		if d.A < 1 || d.B < d.A {
			return fmt.Errorf("uniform:%v:%v: want 1 <= A <= B", d.A, d.B)
		}
	case "normal":
		if d.A < 1 || d.B < 0 {
			return fmt.Errorf("normal:%v:%v: want mean >= 1 and std >= 0", d.A, d.B)
		}
	case "":
		return errors.New("no length distribution given")
	default:
		return fmt.Errorf("unknown distribution kind %q", d.Kind)
	}
	return nil
}

// Sample draws one length (>= 1).
func (d Dist) Sample(r *rand.Rand) int {
	var v float64
	switch d.Kind {
	case "uniform":
		v = d.A + float64(r.Int64N(int64(d.B-d.A)+1))
	case "normal":
		v = math.Round(d.A + d.B*r.NormFloat64())
	default:
		v = d.A
	}
	return max(1, int(v))
}

// Min is the smallest length d can yield (1 for a normal, whose tail is clamped).
func (d Dist) Min() int {
	switch d.Kind {
	case "fixed", "uniform":
		return max(1, int(d.A))
	}
	return 1
}

// Mean is the distribution's nominal mean.
func (d Dist) Mean() float64 {
	if d.Kind == "uniform" {
		return (d.A + d.B) / 2
	}
	return d.A
}

// String gives the flag syntax back.
func (d Dist) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch d.Kind {
	case "fixed":
		return f(d.A)
	case "uniform", "normal":
		return d.Kind + ":" + f(d.A) + ":" + f(d.B)
	}
	return ""
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
