package sim

import (
	"fmt"
	"math"
	"strings"
)

// Kinds of load a calibration's verdict judges.
const (
	LoadClosed = "closed" // a closed loop: requests in flight held at a concurrency
	LoadOpen   = "open"   // an open loop: arrivals at a rate
	LoadMixed  = "mixed"  // long prompts arriving while short ones decode
)

// LoadRange is one range of probed loads a calibration's verdict judged: the points of
// one kind of load over these concurrencies (closed loops) or rates (open ones) and prompt
// lengths, and the largest error of their TTFT and TPOT P50, percent (held-out points by
// the fit made without them).
type LoadRange struct {
	Load         string     // LoadClosed, LoadOpen or LoadMixed
	Concurrency  [2]int     // closed loops: requests in flight
	Rate         [2]float64 // open loops: arrivals a second (0: a burst, the mixed phase)
	PromptTokens [2]int
	ErrorPct     float64
}

// String is the range in words: "closed loops at concurrency 1–4, prompts of 32–1638 tokens".
func (t LoadRange) String() string {
	var b strings.Builder
	span := func(lo, hi string) string {
		if lo == hi {
			return lo
		}
		return lo + "–" + hi
	}
	switch t.Load {
	case LoadMixed:
		b.WriteString("long prompts arriving while others decode")
	case LoadOpen:
		b.WriteString("open loops")
		if t.Rate[1] > 0 {
			fmt.Fprintf(&b, " at %s req/s", span(fmt.Sprintf("%.3g", t.Rate[0]), fmt.Sprintf("%.3g", t.Rate[1])))
		}
	default:
		fmt.Fprintf(&b, "closed loops at concurrency %s", span(fmt.Sprint(t.Concurrency[0]), fmt.Sprint(t.Concurrency[1])))
	}
	fmt.Fprintf(&b, ", prompts of %s tokens", span(fmt.Sprint(t.PromptTokens[0]), fmt.Sprint(t.PromptTokens[1])))
	return b.String()
}

// Corner is the closed loops a probe left between its prefill sweep (long prompts one at a
// time) and its decode ladder (short prompts, many in flight): prompts over PromptTokens
// at more than Concurrency in flight. Zero: none.
type Corner struct {
	PromptTokens, Concurrency int
}

// Untrusted lists, in words, why a level's predictions are not ones the calibration
// vouches for: the level's load (prompts of the given [shortest, longest] lengths, at
// concurrency in flight for a closed loop, else at rate req/s) falls in a range its
// verdict did not trust, or in the corner it never probed. None when neither.
func (c *Calibration) Untrusted(prompt [2]int, concurrency int, rate float64) []string {
	var out []string
	overlaps := func(r [2]int) bool { return prompt[1] == 0 || prompt[0] <= r[1] && r[0] <= prompt[1] }
	for _, t := range c.NotTrusted {
		var in bool
		switch t.Load {
		case LoadClosed:
			in = concurrency > 0 && t.Concurrency[0] <= concurrency && concurrency <= t.Concurrency[1] && overlaps(t.PromptTokens)
		case LoadOpen:
			// An open loop near a probed rate: queueing moves too fast with the rate for
			// one probed rate to vouch for another far from it, nor to condemn it.
			in = rate > 0 && rate >= t.Rate[0]/openNear && rate <= t.Rate[1]*openNear && overlaps(t.PromptTokens)
		case LoadMixed:
			in = prompt[1] > MixedSpan*max(prompt[0], 1) && overlaps(t.PromptTokens)
		}
		if in {
			out = append(out, fmt.Sprintf("calibrate found this profile up to %.0f%% off for %s, and did not trust it there", t.ErrorPct, t))
		}
	}
	if k := c.NotProbed; k.PromptTokens > 0 && concurrency > k.Concurrency && prompt[1] > k.PromptTokens {
		out = append(out, fmt.Sprintf("calibrate probed no closed loop of prompts over %d tokens at more than %d in flight (its prefill sweep ran long prompts one at a time, its decode ladder short ones), so nothing checked this profile there", k.PromptTokens, k.Concurrency))
	}
	return out
}

// openNear is how far from a probed open loop's rate another is judged by it.
const openNear = 1.5

// MixedSpan is how widely a load's prompts must differ in length to be the mixed kind: a
// long one arriving while short ones decode.
const MixedSpan = 4

// validTrust checks a range read from a profile.
func validTrust(t LoadRange) error {
	switch {
	case t.Load != LoadClosed && t.Load != LoadOpen && t.Load != LoadMixed:
		return fmt.Errorf("load %q is not one of %s, %s, %s", t.Load, LoadClosed, LoadOpen, LoadMixed)
	case math.IsNaN(t.ErrorPct) || t.ErrorPct < 0:
		return fmt.Errorf("error_pct must be a percentage, at least 0")
	}
	return nil
}
