package calibrate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/figure"
)

// fittedPoint is a probe point measured at ttft/tpot and predicted at pttft/ptpot (by the held-out
// fit too where held).
func fittedPoint(name string, c, prompt int, open, held bool, ttft, tpot, pttft, ptpot float64) Fitted {
	pt := Point{Name: name, Concurrency: c, Open: open}
	for i := range 4 {
		q := Request{Prompt: prompt, Output: 64}
		if open {
			q.Arrival = time.Duration(i) * 500 * time.Millisecond
		}
		pt.Requests = append(pt.Requests, q)
	}
	pt.Measured = figure.Unmeasured()
	pt.Measured[figure.TTFTP50], pt.Measured[figure.TPOTP50] = ttft, tpot
	f := Fitted{Point: pt, HeldOut: held, Predicted: figure.Unmeasured(), Validation: figure.Unmeasured()}
	f.Predicted[figure.TTFTP50], f.Predicted[figure.TPOTP50] = pttft, ptpot
	if held {
		f.Validation = f.Predicted
	}
	return f
}

// The llama.cpp probe of issue 36: the closed loops up to 4 in flight fit, the 8 in flight
// held out and missed, the open loop fits and the mixed point is missed in sample. The verdict
// names what is trusted and what is not, and the miss of the point fitted on says that the
// stated error does not include it.
func TestTrustVerdictAndMisses(t *testing.T) {
	r := &Result{Points: []Fitted{
		fittedPoint("01-prefill-32", 1, 32, false, false, 10, 5, 10.5, 5.1),
		fittedPoint("02-prefill-512", 1, 512, false, false, 40, 5, 42, 5.2),
		fittedPoint("05-decode-c2", 2, 32, false, false, 12, 6, 12.2, 6.3),
		fittedPoint("06-decode-c4", 4, 32, false, false, 14, 8, 15, 8.4),
		fittedPoint("06-decode-c4-again", 4, 32, false, false, 14, 8, 14.5, 8.2),
		fittedPoint("07-decode-c8", 8, 32, false, true, 213, 8, 12.6, 8),
		fittedPoint("09-open-r2", 0, 384, true, true, 30, 7, 33, 7.7),
		fittedPoint("10-mixed", 0, 2048, true, false, 430, 9, 17300, 9),
		fittedPoint("03-prefill-1024", 1, 1024, false, false, 80, 5, 81, 5),
		fittedPoint("08-decode-c8-again", 8, 32, false, true, 200, 8, 12.6, 8),
	}}
	// The mixed phase: long prompts among short ones.
	r.Points[7].Requests[0].Prompt = 32
	r.HeldOut, r.ByLoad = noErrors(2), LoadErrors{noErrors(1), noErrors(1)}
	r.ByLoad.Closed.Pct[figure.TTFTP50], r.ByLoad.Closed.Pct[figure.TPOTP50] = 94.1, 0
	r.ByLoad.Open.Pct[figure.TTFTP50], r.ByLoad.Open.Pct[figure.TPOTP50] = 10, 10
	r.HeldOut.Pct[figure.TTFTP50], r.HeldOut.Pct[figure.TPOTP50] = 94.1, 10

	ms := r.misses()
	if len(ms) != 1 || ms[0].Point != "10-mixed" || ms[0].HeldOut || ms[0].Figure != figure.TTFTP50 {
		t.Fatalf("misses %+v, want the mixed point's TTFT, fitted on", ms)
	}
	if s := ms[0].String(); !strings.Contains(s, "430.00 ms") || !strings.Contains(s, "17300.00 ms") || !strings.Contains(s, "not in the stated error") {
		t.Errorf("miss in words %q: want measured, predicted and that the stated error leaves it out", s)
	}

	trusted, untrusted := r.trust()
	if len(trusted) != 3 {
		t.Fatalf("trusted %+v, want the closed loops at 1, at 2-4 and the open loop", trusted)
	}
	if c := trusted[0]; c.Load != "closed" || c.Concurrency != [2]int{1, 1} || c.PromptTokens != [2]int{32, 1024} || c.ErrorPct > 5.1 || c.ErrorPct < 4.9 {
		t.Errorf("closed verdict %+v, want concurrency 1, prompts 32-1024, within 5%%", c)
	}
	if c := trusted[1]; c.Load != "closed" || c.Concurrency != [2]int{2, 4} || c.PromptTokens != [2]int{32, 32} || c.ErrorPct > 7.2 || c.ErrorPct < 7.1 || len(c.Points) != 3 {
		t.Errorf("closed verdict %+v, want concurrency 2-4 at 32 tokens (the prefill sweep's long prompts do not join it), within 7.1%%", c)
	}
	if o := trusted[2]; o.Load != "open" || o.Rate != [2]float64{2, 2} || o.ErrorPct < 9.9 || o.ErrorPct > 10.1 {
		t.Errorf("open verdict %+v, want 2 req/s within 10%%", o)
	}
	if len(untrusted) != 2 || len(untrusted[0].Points) != 2 || untrusted[0].Points[0] != "07-decode-c8" || untrusted[1].Points[0] != "10-mixed" || untrusted[1].Load != "mixed" {
		t.Errorf("untrusted %+v, want c8 (both passes) and the mixed point", untrusted)
	}
	// A load whose second pass escaped the twin is not trusted, however close the first.
	r.Points[4].Predicted[figure.TTFTP50] = 30
	if trusted, untrusted := r.trust(); len(trusted) != 3 || trusted[1].Concurrency != [2]int{2, 2} || untrusted[0].Concurrency != [2]int{4, 8} {
		t.Errorf("with c4's second pass 114%% off: trusted %+v, not trusted %+v; want c2 trusted, c4-8 not", trusted, untrusted)
	}
	r.Points[4].Predicted[figure.TTFTP50] = 14.5

	var b bytes.Buffer
	r.Console(&b)
	for _, want := range []string{"Missed by more than 3 × the stated error", "10-mixed: TTFT P50 measured 430.00 ms",
		"trusted for closed loops at concurrency 2–4, prompts of 32 tokens: within 7.1%",
		"not trusted for closed loops at concurrency 8, prompts of 32 tokens: up to 94% off (07-decode-c8,",
		"not trusted for long prompts arriving while others decode, prompts of 32–2048 tokens",
		"not probed, so not trusted: closed loops of prompts over 32 tokens at more than 1 in flight"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("console lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := r.WriteJSON(&b, "test", "p.yaml"); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Trusted struct {
			Trusted []struct {
				Load        string
				Concurrency *[2]int
				ErrorPct    float64 `json:"error_pct"`
			}
			NotTrusted []struct{ Points []string } `json:"not_trusted"`
			NotProbed  *struct {
				PromptTokens int `json:"prompt_tokens"`
				Concurrency  int
			} `json:"not_probed"`
		} `json:"trusted_for"`
		Misses []struct {
			Point    string
			InStated bool `json:"in_stated_error"`
		}
	}
	if err := json.Unmarshal(b.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Trusted.Trusted) != 3 || js.Trusted.Trusted[1].Concurrency == nil || *js.Trusted.Trusted[1].Concurrency != [2]int{2, 4} ||
		len(js.Trusted.NotTrusted) != 2 || len(js.Misses) != 1 || js.Misses[0].InStated ||
		js.Trusted.NotProbed == nil || js.Trusted.NotProbed.PromptTokens != 32 || js.Trusted.NotProbed.Concurrency != 1 {
		t.Errorf("calibration.json trusted_for %+v, misses %+v", js.Trusted, js.Misses)
	}
	b.Reset()
	if err := r.WriteHTML(&b, "t"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"07-decode-c8 (held out)", "not trusted for closed loops at concurrency 8", "Missed by more than 3 × the stated error"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
