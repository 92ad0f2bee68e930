package workload

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestParseDist(t *testing.T) {
	tests := []struct {
		in      string
		want    Dist
		wantErr string // substring naming the bad part
	}{
		{"512", Fixed(512), ""},
		{" 7 ", Fixed(7), ""},
		{"uniform:100:200", Dist{Kind: "uniform", A: 100, B: 200}, ""},
		{"uniform:5:5", Dist{Kind: "uniform", A: 5, B: 5}, ""},
		{"normal:300:50.5", Dist{Kind: "normal", A: 300, B: 50.5}, ""},
		{"normal:10:0", Dist{Kind: "normal", A: 10, B: 0}, ""},
		{"0", Dist{}, "length 0 must be a whole number in 1..10000000"},
		{"-3", Dist{}, "length -3 must be"},
		{"abc", Dist{}, "want N"},
		{"1.5", Dist{}, "length 1.5 must be a whole number"},
		{"uniform:10", Dist{}, "two numbers"},
		{"uniform:a:20", Dist{}, `low bound "a"`},
		{"uniform:10:x", Dist{}, `high bound "x"`},
		{"uniform:20:10", Dist{}, "below low bound"},
		{"uniform:0:10", Dist{}, "low bound 0 must be a whole number in 1..10000000"},
		{"uniform:1.5:10", Dist{}, "low bound 1.5 must be a whole number"},
		{"normal:100:-1", Dist{}, "standard deviation -1"},
		{"normal:abc:1", Dist{}, `mean "abc"`},
		{"normal:NaN:1", Dist{}, `mean "NaN"`},
		{"normal:0:1", Dist{}, "mean 0"},
		{"lognormal:222.3:171.5", Dist{Kind: "lognormal", A: 222.3, B: 171.5}, ""},
		{"lognormal:100:0", Dist{Kind: "lognormal", A: 100, B: 0}, ""},
		{"lognormal:0.5:1", Dist{}, "mean 0.5 must be in 1..10000000"},
		{"lognormal:100:-2", Dist{}, "standard deviation -2"},
		{"lognormal:100", Dist{}, "lognormal takes two numbers"},
		{"poisson:3:4", Dist{}, `unknown distribution "poisson"`},
	}
	for _, tt := range tests {
		got, err := ParseDist(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseDist(%q) error %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDist(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		// The flag syntax round-trips.
		back, err := ParseDist(got.String())
		if err != nil || back != got {
			t.Errorf("round trip of %q via %q: %+v, %v", tt.in, got.String(), back, err)
		}
	}
}

func TestDistSample(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	u := Dist{Kind: "uniform", A: 10, B: 13}
	seen := map[int]int{}
	for range 4000 {
		v := u.Sample(r)
		if v < 10 || v > 13 {
			t.Fatalf("uniform sample %d outside 10..13", v)
		}
		seen[v]++
	}
	if len(seen) != 4 {
		t.Errorf("uniform:10:13 should reach every value, got %v", seen)
	}
	// A wide normal near 1 is clamped, never below 1; its mean is still near the nominal.
	n := Dist{Kind: "normal", A: 2, B: 10}
	for range 2000 {
		if v := n.Sample(r); v < 1 {
			t.Fatalf("normal sample %d < 1", v)
		}
	}
	m := Dist{Kind: "normal", A: 500, B: 50}
	sum := 0.0
	const k = 20000
	for range k {
		sum += float64(m.Sample(r))
	}
	if mean := sum / k; math.Abs(mean-500) > 2 {
		t.Errorf("normal:500:50 sample mean %.1f", mean)
	}
	if Fixed(42).Sample(r) != 42 {
		t.Error("fixed")
	}
}

// A lognormal has the mean and standard deviation it was given, and the right skew: its
// median below its mean. The MLPerf Llama-2-70B prompts' moments (validation/README.md): mean
// 222.3, standard deviation 171.5, median 152; a lognormal of those moments has median 176.
func TestDistLognormal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	d := Dist{Kind: DistLognormal, A: 222.3, B: 171.5}
	const k = 200_000
	xs := make([]float64, k)
	var sum, sq float64
	for i := range xs {
		v := float64(d.Sample(r))
		if v < 1 {
			t.Fatalf("sample %g < 1", v)
		}
		xs[i], sum, sq = v, sum+v, sq+v*v
	}
	mean := sum / k
	sd := math.Sqrt(sq/k - mean*mean)
	slices.Sort(xs)
	median := xs[k/2]
	if math.Abs(mean-222.3) > 2 || math.Abs(sd-171.5) > 5 || math.Abs(median-176) > 3 {
		t.Errorf("lognormal:222.3:171.5: mean %.1f, sd %.1f, median %.0f; want 222.3, 171.5, 176", mean, sd, median)
	}
	if got := d.Spread(); got[0] != 22 || got[1] != 1367 {
		t.Errorf("spread %v, want [22 1367] (exp(μ ± 3σ))", got)
	}
	if !d.Clamped() || d.Min() != 1 || d.Mean() != 222.3 {
		t.Errorf("clamped %v, min %d, mean %g", d.Clamped(), d.Min(), d.Mean())
	}
	if v := (Dist{Kind: DistLognormal, A: 100}).Sample(r); v != 100 {
		t.Errorf("lognormal:100:0 sampled %d, want 100", v)
	}
}

func TestDistJSON(t *testing.T) {
	var v struct{ D Dist }
	if err := json.Unmarshal([]byte(`{"D":"uniform:1:9"}`), &v); err != nil || v.D != (Dist{Kind: "uniform", A: 1, B: 9}) {
		t.Fatalf("%+v %v", v, err)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"D":"uniform:1:9"}` {
		t.Errorf("marshal: %s", b)
	}
	if err := json.Unmarshal([]byte(`{"D":"uniform:9:1"}`), &v); err == nil {
		t.Error("bad text should fail")
	}
}

func TestPermute(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 16, 17, 1000} {
		seen := make([]bool, n)
		for i := range n {
			p := permute(i, n, 99)
			if p < 0 || p >= n || seen[p] {
				t.Fatalf("n=%d: permute(%d) = %d repeats or is out of range", n, i, p)
			}
			seen[p] = true
		}
	}
	// Different keys give different orders.
	same := 0
	for i := range 1000 {
		if permute(i, 1000, 1) == permute(i, 1000, 2) {
			same++
		}
	}
	if same > 20 {
		t.Errorf("keys 1 and 2 agree on %d of 1000 positions", same)
	}
}

// TestDistBounds: every parameter of every kind is held to 1..MaxTokens (a std to
// 0..MaxTokens), naming the parameter and the range; a fuzzed "uniform:1:1e19" used to be
// accepted and then panic in rand.Int64N.
func TestDistBounds(t *testing.T) {
	tests := []struct{ in, wantErr string }{
		{"10000000", ""},
		{"10000001", "length 10000001 must be a whole number in 1..10000000"},
		{"1e19", "length 1e+19 must be a whole number in 1..10000000"},
		{"uniform:1:10000000", ""},
		{"uniform:1:1e19", "high bound 1e+19 must be a whole number in 1..10000000"},
		{"uniform:1e19:1e20", "low bound 1e+19 must be"},
		{"normal:10000000:10000000", ""},
		{"normal:1e8:5", "mean 100000000 must be in 1..10000000"},
		{"normal:5:1e300", "standard deviation 1e+300 must be in 0..10000000"},
		{"normal:0:-1", "mean 0 must be in 1..10000000"},
	}
	for _, tt := range tests {
		d, err := ParseDist(tt.in)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("ParseDist(%q): %v", tt.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !d.IsZero() {
			t.Errorf("ParseDist(%q) = %+v, %v; want an error containing %q", tt.in, d, err, tt.wantErr)
		}
	}
	// Both of normal's problems are reported at once.
	if _, err := ParseDist("normal:0:-1"); err == nil || !strings.Contains(err.Error(), "standard deviation -1") {
		t.Errorf("normal:0:-1: %v, want the std's problem too", err)
	}
	// Dists built in code meet the same bounds.
	for _, d := range []Dist{{Kind: "fixed", A: 1.5}, {Kind: "uniform", A: 1, B: math.NaN()}, {Kind: "normal", A: 5, B: math.Inf(1)}, Fixed(MaxTokens + 1)} {
		if d.Validate() == nil {
			t.Errorf("%+v validates", d)
		}
	}
	// Samples stay within 1..MaxTokens even in a normal's tails.
	r := rand.New(rand.NewPCG(3, 4))
	wide := Dist{Kind: "normal", A: MaxTokens, B: MaxTokens}
	for range 1000 {
		if v := wide.Sample(r); v < 1 || v > MaxTokens {
			t.Fatalf("normal sample %d outside 1..%d", v, MaxTokens)
		}
	}
	u := Dist{Kind: "uniform", A: 1, B: MaxTokens}
	for range 1000 {
		if v := u.Sample(r); v < 1 || v > MaxTokens {
			t.Fatalf("uniform sample %d outside 1..%d", v, MaxTokens)
		}
	}
}

// TestDistStringRoundTrip: String prints whole numbers as integers, so a fixed length of a
// million or more reads back (it printed as "1e+06", which ParseDist rejected); the old
// float form is still read, for summaries written before.
func TestDistStringRoundTrip(t *testing.T) {
	for _, c := range []struct {
		d    Dist
		want string
	}{
		{Fixed(1_000_000), "1000000"},
		{Fixed(MaxTokens), "10000000"},
		{Dist{Kind: "uniform", A: 1_000_000, B: 2_000_000}, "uniform:1000000:2000000"},
		{Dist{Kind: "normal", A: 1_500_000, B: 0.1}, "normal:1500000:0.1"},
		{Dist{Kind: "normal", A: 300.25, B: 1e-7}, "normal:300.25:1e-07"},
	} {
		if got := c.d.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.d, got, c.want)
		}
		b, _ := c.d.MarshalText()
		var back Dist
		if err := back.UnmarshalText(b); err != nil || back != c.d {
			t.Errorf("%q reads back as %+v, %v; want %+v", b, back, err, c.d)
		}
	}
	if d, err := ParseDist("1e+06"); err != nil || d != Fixed(1_000_000) {
		t.Errorf(`ParseDist("1e+06") = %+v, %v; want Fixed(1000000)`, d, err)
	}
}
