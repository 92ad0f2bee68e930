package sim

import (
	"math"
	"time"
)

// maxStepNoise bounds cost.step_noise: a coefficient of variation of 1 is already a step
// time that is as often half as twice its mean.
const maxStepNoise = 1.0

// stepNoise makes step times vary as a real engine's do (kernel timing, the host's
// scheduling, the allocator): each step's duration is the cost model's times an
// independent log-normal factor of mean 1 and coefficient of variation cv. The n-th factor
// depends only on the seed and n, so a run stays reproducible on either clock.
type stepNoise struct {
	sigma, mu float64 // of the factor's logarithm
	seed, n   uint64
}

// newStepNoise returns nil for cv 0: no noise, and not one instruction more per step.
func newStepNoise(cv float64, seed int64) *stepNoise {
	if cv <= 0 {
		return nil
	}
	s2 := math.Log1p(cv * cv)
	return &stepNoise{sigma: math.Sqrt(s2), mu: -s2 / 2, seed: splitmix64(uint64(seed) ^ 0x6e6f697365)}
}

// apply scales d by the next factor.
func (s *stepNoise) apply(d time.Duration) time.Duration {
	if s == nil || d <= 0 {
		return d
	}
	s.n++
	// Box–Muller from two uniforms in (0, 1].
	a := splitmix64(s.seed ^ splitmix64(2*s.n))
	b := splitmix64(s.seed ^ splitmix64(2*s.n+1))
	u1 := (float64(a>>11) + 1) / (1 << 53)
	u2 := float64(b>>11) / (1 << 53)
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	return nanos(float64(d) * math.Exp(s.mu+s.sigma*z))
}
