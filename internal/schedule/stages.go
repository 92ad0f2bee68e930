package schedule

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Stage kinds: what a Stages schedule sets over time.
const (
	StageRate        = "rate"        // open loop, requests/s
	StageConcurrency = "concurrency" // closed loop, requests in flight
)

// Stages is a load that changes within one level: stages one after another, each holding a
// rate (open loop) or a concurrency (closed loop) or ramping it linearly from one value to
// another. The zero value has no stages.
type Stages struct {
	Kind   string // StageRate or StageConcurrency
	Stages []Stage
}

// Stage is one stage: its length, and the value at its start (From) and at its end (To);
// a step holds From == To.
type Stage struct {
	Duration time.Duration
	From, To float64
}

// Staged reports whether s has any stage.
func (s Stages) Staged() bool { return len(s.Stages) > 0 }

// ParseStages reads "[rate:|concurrency:]D:V[->V2],...", e.g. "60s:2,120s:2->20,60s:20": D a
// Go duration, V a rate in requests/s (the default kind) or a concurrency, V->V2 a linear
// ramp from V to V2 over D.
func ParseStages(spec string) (Stages, error) {
	in := strings.TrimSpace(spec)
	st := Stages{Kind: StageRate}
	for _, k := range []string{StageRate, StageConcurrency} {
		if rest, ok := strings.CutPrefix(in, k+":"); ok {
			st.Kind, in = k, rest
			break
		}
	}
	if in == "" {
		return Stages{}, fmt.Errorf("stages %q: no stage given (want e.g. 30s:2,60s:2->16,30s:16)", spec)
	}
	for i, part := range strings.Split(in, ",") {
		part = strings.TrimSpace(part)
		d, v, ok := strings.Cut(part, ":")
		if !ok {
			return Stages{}, fmt.Errorf("stages %q: stage %d %q is not DURATION:VALUE or DURATION:FROM->TO (e.g. 60s:2->16)", spec, i+1, part)
		}
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil {
			return Stages{}, fmt.Errorf("stages %q: stage %d: duration %q is not a duration like 30s or 2m", spec, i+1, d)
		}
		from, to, ramp := strings.Cut(v, "->")
		a, err := strconv.ParseFloat(strings.TrimSpace(from), 64)
		if err != nil {
			return Stages{}, fmt.Errorf("stages %q: stage %d: %q is not a number", spec, i+1, from)
		}
		b := a
		if ramp {
			if b, err = strconv.ParseFloat(strings.TrimSpace(to), 64); err != nil {
				return Stages{}, fmt.Errorf("stages %q: stage %d: %q is not a number", spec, i+1, to)
			}
		}
		st.Stages = append(st.Stages, Stage{Duration: dur, From: a, To: b})
	}
	if err := st.Validate(); err != nil {
		return Stages{}, fmt.Errorf("stages %q: %w", spec, err)
	}
	return st, nil
}

// Validate reports every problem with s at once.
func (s Stages) Validate() error {
	var errs []string
	if s.Kind != StageRate && s.Kind != StageConcurrency {
		errs = append(errs, fmt.Sprintf("kind %q is neither %s nor %s", s.Kind, StageRate, StageConcurrency))
	}
	if len(s.Stages) == 0 {
		errs = append(errs, "no stage given")
	}
	for i, st := range s.Stages {
		if st.Duration <= 0 {
			errs = append(errs, fmt.Sprintf("stage %d lasts %v: a stage needs a positive duration", i+1, st.Duration))
		}
		for _, v := range []float64{st.From, st.To} {
			switch {
			case !(v >= 0) || math.IsInf(v, 0):
				errs = append(errs, fmt.Sprintf("stage %d: %g is not a finite number >= 0", i+1, v))
			case s.Kind == StageConcurrency && v != math.Trunc(v):
				errs = append(errs, fmt.Sprintf("stage %d: concurrency %g is not a whole number of requests", i+1, v))
			}
		}
	}
	if len(errs) == 0 && !(s.Max() > 0) {
		errs = append(errs, "every stage is 0: no load would be sent")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// String is the form ParseStages reads.
func (s Stages) String() string {
	if !s.Staged() {
		return ""
	}
	var b strings.Builder
	if s.Kind == StageConcurrency {
		b.WriteString(StageConcurrency + ":")
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for i, st := range s.Stages {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(st.Duration.String() + ":" + num(st.From))
		if st.To != st.From {
			b.WriteString("->" + num(st.To))
		}
	}
	return b.String()
}

// MarshalText writes the ParseStages form, so configs store "60s:2,60s:2->16".
func (s Stages) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the ParseStages form.
func (s *Stages) UnmarshalText(b []byte) error {
	v, err := ParseStages(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Total is the stages' whole length.
func (s Stages) Total() time.Duration {
	var t time.Duration
	for _, st := range s.Stages {
		t += st.Duration
	}
	return t
}

// Max is the highest value the stages reach.
func (s Stages) Max() float64 {
	m := 0.0
	for _, st := range s.Stages {
		m = max(m, st.From, st.To)
	}
	return m
}

// Bounds are stage i's (1-based) start and end, as offsets from the level's start.
func (s Stages) Bounds(i int) (start, end time.Duration) {
	for k, st := range s.Stages {
		if k+1 == i {
			return start, start + st.Duration
		}
		start += st.Duration
	}
	return start, start
}

// Index is the 1-based stage that offset t falls in (a stage holds [start, end)); 0 before
// the first, len(Stages) at or after the end, so that a request due exactly at the end is
// the last stage's.
func (s Stages) Index(t time.Duration) int {
	if !s.Staged() || t < 0 {
		return 0
	}
	var end time.Duration
	for i, st := range s.Stages {
		end += st.Duration
		if t < end {
			return i + 1
		}
	}
	return len(s.Stages)
}

// At is the value at offset t (0 outside the stages).
func (s Stages) At(t time.Duration) float64 {
	var start time.Duration
	for _, st := range s.Stages {
		if t >= start && t < start+st.Duration {
			x := float64(t-start) / float64(st.Duration)
			return st.From + (st.To-st.From)*x
		}
		start += st.Duration
	}
	return 0
}

// eps absorbs the rounding of a ramp's value at the instant Rise computed for it.
const eps = 1e-9

// Count is the whole number of requests a concurrency schedule holds in flight at offset t:
// a ramp adds a slot each time it passes a whole number.
func (s Stages) Count(t time.Duration) int { return int(math.Floor(s.At(t) + eps)) }

// Rise is the earliest offset at or after now at which Count reaches n; ok is false when it
// never does before the stages end.
func (s Stages) Rise(now time.Duration, n int) (at time.Duration, ok bool) {
	var start time.Duration
	target := float64(n) - eps
	for _, st := range s.Stages {
		end := start + st.Duration
		if end <= now {
			start = end
			continue
		}
		from := max(now, start)
		if v := s.valueIn(st, start, from); v >= target {
			return from, true
		}
		if st.To > st.From {
			// The ramp's value reaches n at start + (n-From)/(To-From) of its length; rounded
			// up so that Count there is n.
			x := (float64(n) - st.From) / (st.To - st.From)
			t := start + time.Duration(math.Ceil(x*float64(st.Duration)))
			if t < end {
				return max(t, from), true
			}
		}
		start = end
	}
	return 0, false
}

func (s Stages) valueIn(st Stage, start, t time.Duration) float64 {
	return st.From + (st.To-st.From)*float64(t-start)/float64(st.Duration)
}

// Warp maps u, a due time of a plan at one request per second, onto a rate schedule: the
// offset t at which the schedule's expected arrivals (its rate's integral from 0) reach u
// seconds' worth. Arrivals of any process (Poisson, gamma, constant) at unit rate become
// that process with the schedule's rate at every instant (time rescaling); ok is false
// when u lies past the schedule's end.
func (s Stages) Warp(u time.Duration) (t time.Duration, ok bool) {
	left := u.Seconds() // arrivals' worth still to pass
	var start time.Duration
	for _, st := range s.Stages {
		d := st.Duration.Seconds()
		a, b := st.From, st.To
		area := (a + b) / 2 * d
		if left <= area && area > 0 {
			// Solve a·x + (b-a)/(2d)·x² = left for x in [0, d], in the form that keeps its
			// precision when b-a is small against a.
			k := (b - a) / d
			x := 2 * left / (a + math.Sqrt(max(a*a+2*k*left, 0)))
			if math.IsNaN(x) || x > d {
				x = d
			}
			return start + secondsToDuration(x), true
		}
		left -= area
		start += st.Duration
	}
	return 0, false
}
