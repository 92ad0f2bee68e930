package schedule

import (
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestParseArrival(t *testing.T) {
	ok := []struct {
		in   string
		want Arrival
	}{
		{"poisson", Arrival{Kind: Poisson}},
		{" Poisson ", Arrival{Kind: Poisson}},
		{"constant", Arrival{Kind: Constant}},
		{"gamma:0.5", Arrival{Kind: Gamma, Burstiness: 0.5}},
		{"gamma: 2", Arrival{Kind: Gamma, Burstiness: 2}},
		{"GAMMA:1e-1", Arrival{Kind: Gamma, Burstiness: 0.1}},
	}
	for _, c := range ok {
		got, err := ParseArrival(c.in)
		if err != nil {
			t.Errorf("ParseArrival(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseArrival(%q) = %+v, want %+v", c.in, got, c.want)
		}
		back, err := ParseArrival(got.String())
		if err != nil || back != got {
			t.Errorf("round trip of %q via %q = %+v, %v", c.in, got.String(), back, err)
		}
	}
	bad := []struct{ in, wantErr string }{
		{"", `unknown kind ""`},
		{"uniform", `unknown kind "uniform"`},
		{"gamma", "gamma needs a burstiness"},
		{"gamma:", "gamma needs a burstiness"},
		{"gamma:x", `burstiness "x" is not a number`},
		{"gamma:0", "positive finite"},
		{"gamma:-1", "positive finite"},
		{"gamma:inf", "positive finite"},
		{"gamma:NaN", "positive finite"},
		{"poisson:2", "takes no parameter"},
		{"constant:1", "takes no parameter"},
	}
	for _, c := range bad {
		_, err := ParseArrival(c.in)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("ParseArrival(%q) error = %v, want it to mention %q", c.in, err, c.wantErr)
		}
	}
}

func TestArrivalValidateAndText(t *testing.T) {
	if err := (Arrival{}).Validate(); err != nil {
		t.Errorf("zero Arrival (Poisson) invalid: %v", err)
	}
	if got := (Arrival{}).String(); got != "poisson" {
		t.Errorf("zero Arrival String = %q", got)
	}
	for _, a := range []Arrival{{Kind: "weibull"}, {Kind: Poisson, Burstiness: 2}, {Kind: Gamma}} {
		if a.Validate() == nil {
			t.Errorf("%+v validated", a)
		}
	}
	b, err := json.Marshal(struct{ A Arrival }{Arrival{Kind: Gamma, Burstiness: 0.25}})
	if err != nil || string(b) != `{"A":"gamma:0.25"}` {
		t.Fatalf("marshal = %s, %v", b, err)
	}
	var v struct{ A Arrival }
	if err := json.Unmarshal(b, &v); err != nil || v.A != (Arrival{Kind: Gamma, Burstiness: 0.25}) {
		t.Fatalf("unmarshal = %+v, %v", v, err)
	}
	if err := json.Unmarshal([]byte(`{"A":"gamma"}`), &v); err == nil {
		t.Fatal("unmarshal of bad arrival succeeded")
	}
}

// gaps draws n due times and returns their successive differences in seconds.
func gaps(p *Plan, n int) []float64 {
	out := make([]float64, 0, n)
	prev := p.Next()
	for range n {
		d := p.Next()
		if d < prev {
			panic("due times went backwards")
		}
		out = append(out, (d - prev).Seconds())
		prev = d
	}
	return out
}

func meanCV(xs []float64) (mean, cv float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(xs)-1)) / mean
}

func TestPlanStatistics(t *testing.T) {
	const n = 200000
	cases := []struct {
		arrival string
		rate    float64
		wantCV  float64
	}{
		{"poisson", 10, 1},
		{"gamma:1", 10, 1},
		{"gamma:0.5", 4, 1 / math.Sqrt(0.5)},
		{"gamma:0.1", 50, 1 / math.Sqrt(0.1)},
		{"gamma:4", 2.5, 0.5},
		{"constant", 7, 0},
	}
	for _, c := range cases {
		t.Run(c.arrival, func(t *testing.T) {
			a, err := ParseArrival(c.arrival)
			if err != nil {
				t.Fatal(err)
			}
			for _, seed := range []int64{1, 42} {
				mean, cv := meanCV(gaps(NewPlan(a, c.rate, seed), n))
				// Standard error of the mean gap is cv/sqrt(n) relative: < 1% here; 3% is safe.
				if rel := math.Abs(mean*c.rate - 1); rel > 0.03 {
					t.Errorf("seed %d: mean rate %.4f/s, want %.4f/s (off by %.1f%%)", seed, 1/mean, c.rate, 100*rel)
				}
				if math.Abs(cv-c.wantCV) > 0.05*math.Max(c.wantCV, 1) {
					t.Errorf("seed %d: gap CV %.4f, want %.4f", seed, cv, c.wantCV)
				}
			}
		})
	}
}

func TestConstantExactAndNoDrift(t *testing.T) {
	// 1/3 s is not a whole number of nanoseconds: summing rounded gaps would drift by ~1 ns
	// per request; due times from the float sum stay at round(i/3 s).
	p := NewPlan(Arrival{Kind: Constant}, 3, 0)
	for i := range 1_000_000 {
		got := p.Next()
		want := time.Duration(math.Round(float64(i) / 3 * 1e9))
		if d := got - want; d < -1 || d > 1 {
			t.Fatalf("request %d due at %v, want %v", i, got, want)
		}
	}
}

func TestFirstDueAtZero(t *testing.T) {
	for _, a := range []Arrival{{Kind: Poisson}, {Kind: Constant}, {Kind: Gamma, Burstiness: 0.3}} {
		if got := NewPlan(a, 5, 9).Next(); got != 0 {
			t.Errorf("%v: first due time %v, want 0", a, got)
		}
	}
}

func TestDeterminism(t *testing.T) {
	for _, a := range []Arrival{{Kind: Poisson}, {Kind: Gamma, Burstiness: 0.5}, {Kind: Gamma, Burstiness: 3}} {
		p1, p2, p3 := NewPlan(a, 20, 7), NewPlan(a, 20, 7), NewPlan(a, 20, 8)
		same := true
		for i := range 1000 {
			x, y, z := p1.Next(), p2.Next(), p3.Next()
			if x != y {
				t.Fatalf("%v: same seed differs at %d: %v vs %v", a, i, x, y)
			}
			if i > 0 && x != z {
				same = false
			}
		}
		if same {
			t.Errorf("%v: seeds 7 and 8 gave the same plan", a)
		}
	}
}

func TestNewPlanPanicsOnBadInput(t *testing.T) {
	for _, c := range []struct {
		a    Arrival
		rate float64
	}{
		{Arrival{}, 0}, {Arrival{}, -1}, {Arrival{}, math.Inf(1)}, {Arrival{}, math.NaN()},
		{Arrival{Kind: "x"}, 1}, {Arrival{Kind: Gamma}, 1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewPlan(%+v, %g) did not panic", c.a, c.rate)
				}
			}()
			NewPlan(c.a, c.rate, 1)
		}()
	}
	if CheckRate(2) != nil || CheckRate(0) == nil {
		t.Error("CheckRate")
	}
}

func BenchmarkPlanGamma(b *testing.B) {
	p := NewPlan(Arrival{Kind: Gamma, Burstiness: 0.5}, 100, 1)
	for b.Loop() {
		p.Next()
	}
}

func TestRandomPlanNoDrift(t *testing.T) {
	// A twin plan draws the same gaps; summed exactly in big.Float they give the true due
	// times, which the plan's compensated float sum must match to the nanosecond.
	a := Arrival{Kind: Gamma, Burstiness: 0.7}
	p, twin := NewPlan(a, 1000, 3), NewPlan(a, 1000, 3)
	exact := new(big.Float).SetPrec(200)
	for i := range 1_000_000 {
		if i > 0 {
			exact.Add(exact, new(big.Float).SetFloat64(twin.gap()))
		}
		secs, _ := exact.Float64()
		want := time.Duration(math.Round(secs * 1e9))
		if got := p.Next(); got-want < -1 || got-want > 1 {
			t.Fatalf("request %d due at %v, exact sum %v", i, got, want)
		}
	}
}
