package server

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// FaultKind is one kind of injected failure.
type FaultKind int

// The fault kinds, in the order their probability intervals are laid out.
const (
	FaultNone       FaultKind = iota
	FaultHTTP500              // 500 with an error object, before any generation
	FaultHTTP429              // 429 with Retry-After, before any generation
	FaultDisconnect           // the connection is cut mid-stream
	FaultStall                // the stream stops sending for Faults.StallFor, then resumes
	FaultMalformed            // a data line that is not JSON, mid-stream
	FaultErrorEvent           // data: {"error": …} mid-stream, then [DONE]
	numFaultKinds
)

var faultNames = [numFaultKinds]string{"none", "http500", "http429", "disconnect", "stall", "malformed", "error_event"}

func (k FaultKind) String() string {
	if k < 0 || k >= numFaultKinds {
		return "FaultKind(" + strconv.Itoa(int(k)) + ")"
	}
	return faultNames[k]
}

// FaultKinds lists the injectable kinds (FaultNone excluded).
func FaultKinds() []FaultKind {
	out := make([]FaultKind, 0, numFaultKinds-1)
	for k := FaultHTTP500; k < numFaultKinds; k++ {
		out = append(out, k)
	}
	return out
}

// Faults are per-request fault probabilities. The kinds are mutually exclusive: a request
// gets at most one, so the probabilities must sum to at most 1.
type Faults struct {
	Prob       [numFaultKinds]float64 // indexed by FaultKind; Prob[FaultNone] is unused
	StallFor   time.Duration          // how long a stall lasts
	RetryAfter time.Duration          // the Retry-After of a 429 (whole seconds, at least 1)
}

// Enabled reports whether any fault has a non-zero probability.
func (f Faults) Enabled() bool {
	for k := FaultHTTP500; k < numFaultKinds; k++ {
		if f.Prob[k] > 0 {
			return true
		}
	}
	return false
}

// ParseFaults parses a spec such as
// "http500=0.01,http429=0.02:2s,disconnect=0.01,stall=0.01:5s,malformed=0.01,error_event=0.01".
// Each item is KIND=P with P in [0, 1]; stall needs a duration (KIND=P:D), http429 takes an
// optional Retry-After (default 1s). Every problem is reported at once.
func ParseFaults(spec string) (Faults, error) {
	var f Faults
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return f, nil
	}
	var errs []error
	seen := map[FaultKind]bool{}
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		name, val, ok := strings.Cut(item, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("fault %q: want KIND=PROBABILITY", item))
			continue
		}
		name = strings.TrimSpace(name)
		kind := FaultNone
		for k := FaultHTTP500; k < numFaultKinds; k++ {
			if faultNames[k] == name {
				kind = k
			}
		}
		if kind == FaultNone {
			errs = append(errs, fmt.Errorf("fault %q: unknown kind %q (want one of %s)", item, name, strings.Join(faultNames[1:], ", ")))
			continue
		}
		if seen[kind] {
			errs = append(errs, fmt.Errorf("fault %q: %s given twice", item, name))
			continue
		}
		seen[kind] = true
		pstr, dstr, hasD := strings.Cut(val, ":")
		p, err := strconv.ParseFloat(strings.TrimSpace(pstr), 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("fault %q: probability %q is not a number", item, pstr))
		case math.IsNaN(p) || p < 0 || p > 1:
			errs = append(errs, fmt.Errorf("fault %q: probability %v is outside [0, 1]", item, p))
		default:
			f.Prob[kind] = p
		}
		switch {
		case hasD && kind != FaultStall && kind != FaultHTTP429:
			errs = append(errs, fmt.Errorf("fault %q: %s takes no duration", item, name))
		case hasD:
			d, err := time.ParseDuration(strings.TrimSpace(dstr))
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("fault %q: duration %q is not a positive duration like 5s", item, dstr))
			} else if kind == FaultStall {
				f.StallFor = d
			} else {
				f.RetryAfter = d
			}
		case kind == FaultStall:
			errs = append(errs, fmt.Errorf("fault %q: stall needs a duration, e.g. stall=%s:5s", item, strings.TrimSpace(pstr)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Faults{}, err
	}
	return f, f.Validate()
}

// Validate reports every problem with f.
func (f Faults) Validate() error {
	var errs []error
	sum := 0.0
	for k := FaultHTTP500; k < numFaultKinds; k++ {
		p := f.Prob[k]
		if math.IsNaN(p) || p < 0 || p > 1 {
			errs = append(errs, fmt.Errorf("faults: %s probability %v is outside [0, 1]", k, p))
		}
		sum += p
	}
	if sum > 1+1e-9 {
		errs = append(errs, fmt.Errorf("faults: probabilities sum to %v; a request gets at most one fault, so the sum must be at most 1", sum))
	}
	if f.Prob[FaultStall] > 0 && f.StallFor <= 0 {
		errs = append(errs, errors.New("faults: stall has a probability but no positive duration"))
	}
	if f.StallFor < 0 || f.RetryAfter < 0 {
		errs = append(errs, errors.New("faults: durations must not be negative"))
	}
	return errors.Join(errs...)
}

// String formats f in ParseFaults' syntax (only the non-zero kinds).
func (f Faults) String() string {
	var b strings.Builder
	for k := FaultHTTP500; k < numFaultKinds; k++ {
		if f.Prob[k] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k.String())
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(f.Prob[k], 'g', -1, 64))
		switch {
		case k == FaultStall:
			b.WriteString(":" + f.StallFor.String())
		case k == FaultHTTP429 && f.RetryAfter > 0:
			b.WriteString(":" + f.RetryAfter.String())
		}
	}
	return b.String()
}

// choose picks request n's fault from the seed alone, so a run with the same seed injects
// the same faults into the same request numbers. at is the token event after which a
// mid-stream fault strikes: uniform in [1, maxTokens-1], so the client has seen part of the
// stream (a sequence that ends earlier gets the fault just before its last event).
func (f Faults) choose(seed int64, n uint64, maxTokens int) (kind FaultKind, at int) {
	h := splitmix64(uint64(seed) ^ splitmix64(n))
	u := float64(h>>11) / (1 << 53)
	acc := 0.0
	for k := FaultHTTP500; k < numFaultKinds; k++ {
		acc += f.Prob[k]
		if f.Prob[k] > 0 && u < acc {
			kind = k
			break
		}
	}
	if kind == FaultNone {
		return FaultNone, 0
	}
	at = 1
	if maxTokens > 2 {
		at = 1 + int(splitmix64(h)%uint64(maxTokens-1))
	}
	return kind, at
}

// splitmix64 is a fast, well-mixed hash of x (Steele et al.'s SplitMix64 finaliser).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
