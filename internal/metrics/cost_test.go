package metrics

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// costCase: two requests one after the other over 2 s, 100 input and 10 output tokens each;
// the first's TTFT is 100 ms, the second's 500 ms. Output 10 tok/s, all tokens 110 tok/s,
// 1 req/s; with ttft<=200ms only the first is good: 5 good tok/s.
func costCase() []record.Record {
	tokens := func(first time.Duration) []ev {
		evs := []ev{{first, 1}}
		for k := 1; k < 10; k++ {
			evs = append(evs, ev{first + time.Duration(k)*50*ms, 1})
		}
		return evs
	}
	return []record.Record{
		rec(0, 0, 1000*ms, 10, tokens(100*ms)...),
		rec(1000*ms, 1000*ms, 2000*ms, 10, tokens(1500*ms)...),
	}
}

func costOf(t *testing.T, p *Price, recs []record.Record, slo string) *Cost {
	t.Helper()
	slos, err := ParseSLOs(slo)
	if err != nil {
		t.Fatal(err)
	}
	return p.Cost(Aggregate(recs, Config{SLOs: slos}), slos)
}

func TestCostHandComputed(t *testing.T) {
	// 3.60 USD an hour is 0.001 USD a second.
	gpu := &Price{GPU: &GPUPrice{USDPerGPUHour: 1.8, GPUs: 2}}
	c := costOf(t, gpu, costCase(), "ttft<=200ms")
	near(t, "usd_per_hour", c.USDPerHour, 3.6)
	near(t, "per_million_output_tokens", *c.PerMillionOutputTokens, 0.001/10*1e6)
	near(t, "per_million_tokens", *c.PerMillionTokens, 0.001/110*1e6)
	near(t, "per_1k_requests", *c.Per1kRequests, 0.001/1*1e3)
	near(t, "per_million_good_output_tokens", *c.PerMillionGoodOutputTokens, 0.001/5*1e6)
	if c.GPUs != 2 {
		t.Errorf("gpus %d", c.GPUs)
	}

	// Per token: 200 input tokens at 1 USD and 20 output tokens at 10 USD per million were
	// billed 400e-6 USD over the 2 s.
	hosted := &Price{Tokens: &TokenPrice{USDPerMillionInput: 1, USDPerMillionOutput: 10}}
	c = costOf(t, hosted, costCase(), "ttft<=200ms")
	near(t, "hosted usd_per_hour", c.USDPerHour, 400e-6/2*3600)
	near(t, "hosted per_million_output_tokens", *c.PerMillionOutputTokens, 400e-6/20*1e6)
	near(t, "hosted per_million_tokens", *c.PerMillionTokens, 400e-6/220*1e6)
	near(t, "hosted per_1k_requests", *c.Per1kRequests, 400e-6/2*1e3)
	near(t, "hosted per_million_good_output_tokens", *c.PerMillionGoodOutputTokens, 400e-6/10*1e6)
	if c.GPUs != 0 {
		t.Errorf("hosted gpus %d, want 0", c.GPUs)
	}

	if (*Price)(nil).Cost(Aggregate(costCase(), Config{}), nil) != nil {
		t.Error("an unpriced run has a cost")
	}
}

// The good-token figure is null unless a per-request bound says which requests are good
// (a goodput or percentile verdict alone does not), and when no request was good.
func TestGoodCostNull(t *testing.T) {
	p := &Price{GPU: &GPUPrice{USDPerGPUHour: 3.5, GPUs: 1}}
	for _, slo := range []string{"", "goodput>=0.5", "ttft:p99<=1s", "error_rate<=1%"} {
		if c := costOf(t, p, costCase(), slo); c.PerMillionGoodOutputTokens != nil || c.PerMillionOutputTokens == nil {
			t.Errorf("--slo %q: good cost %v, output cost %v; want null and a figure", slo, c.PerMillionGoodOutputTokens, c.PerMillionOutputTokens)
		}
	}
	if c := costOf(t, p, costCase(), "ttft<=50ms"); c.PerMillionGoodOutputTokens != nil {
		t.Errorf("no request was good, yet a good cost of %v", *c.PerMillionGoodOutputTokens)
	}
	// Nothing completed: nothing to divide the hour by.
	failed := costCase()
	for i := range failed {
		failed[i].Error = &record.Error{Kind: record.KindHTTPStatus, Status: 503}
	}
	c := costOf(t, p, failed, "ttft<=1s")
	if c.PerMillionOutputTokens != nil || c.PerMillionTokens != nil || c.Per1kRequests != nil || c.PerMillionGoodOutputTokens != nil || c.USDPerHour != 3.5 {
		t.Errorf("all failed: %+v", c)
	}
}

// The good tokens cost more than the output tokens exactly when some completed request
// missed a per-request bound, and the same when none did — failures or not, since a failed
// request's tokens count in neither.
func TestGoodCostHigherExactlyWhenRequestsMiss(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	p := &Price{GPU: &GPUPrice{USDPerGPUHour: 3.5, GPUs: 1}}
	seen := map[bool]int{}
	for trial := range 150 {
		var recs []record.Record
		missed := 0
		at := time.Duration(0)
		n := 1 + rng.IntN(20)
		for i := range n {
			ttft := time.Duration(50+rng.IntN(200)) * ms
			r := rec(at, at, at+ttft+100*ms, 5, ev{at + ttft, 3}, ev{at + ttft + 100*ms, 2})
			r.Index = i
			switch {
			case rng.IntN(8) == 0:
				r.Error = &record.Error{Kind: record.KindDisconnect}
			case ttft > 200*ms:
				missed++
			}
			recs = append(recs, r)
			at += time.Duration(rng.IntN(300)) * ms
		}
		c := costOf(t, p, recs, "ttft<=200ms")
		if c.PerMillionOutputTokens == nil {
			continue // all failed
		}
		if c.PerMillionGoodOutputTokens == nil {
			if missed == 0 {
				t.Fatalf("trial %d: no request missed, yet no good cost", trial)
			}
			seen[true]++
			continue
		}
		good, out := *c.PerMillionGoodOutputTokens, *c.PerMillionOutputTokens
		if (good > out) != (missed > 0) || good < out {
			t.Fatalf("trial %d: %d of %d completed requests missed; good cost %v, output cost %v", trial, missed, n, good, out)
		}
		seen[missed > 0]++
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Fatalf("the trials did not cover both cases: %v", seen)
	}
}

func TestPriceValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Price
		want string // "" = valid
	}{
		{Price{GPU: &GPUPrice{USDPerGPUHour: 3.5, GPUs: 1}}, ""},
		{Price{Tokens: &TokenPrice{USDPerMillionInput: 0, USDPerMillionOutput: 0.6}}, ""},
		{Price{}, "neither"},
		{Price{GPU: &GPUPrice{USDPerGPUHour: 3.5, GPUs: 1}, Tokens: &TokenPrice{USDPerMillionOutput: 1}}, "exclude each other"},
		{Price{GPU: &GPUPrice{USDPerGPUHour: 0, GPUs: 1}}, "USD per GPU-hour"},
		{Price{GPU: &GPUPrice{USDPerGPUHour: 1, GPUs: 0}}, "GPUs must be"},
		{Price{Tokens: &TokenPrice{USDPerMillionInput: -1, USDPerMillionOutput: 1}}, "must each be"},
		{Price{Tokens: &TokenPrice{}}, "free"},
	} {
		err := tc.p.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.p, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one saying %q", tc.p, err, tc.want)
		}
	}
}
