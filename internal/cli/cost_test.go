package cli

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/sim"
)

// consoleFigures are the values of every console line starting with label, in order (one
// per level block), as printed.
func consoleFigures(t *testing.T, stdout, label string) []string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + ` +(\S+)`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(stdout, -1) {
		out = append(out, m[1])
	}
	return out
}

// sameToPrintedDigit reports whether printed is want rounded to printed's decimals.
func sameToPrintedDigit(printed string, want float64) bool {
	v, err := strconv.ParseFloat(printed, 64)
	if err != nil {
		return false
	}
	decimals := 0
	if _, frac, ok := strings.Cut(printed, "."); ok {
		decimals = len(frac)
	}
	return math.Abs(v-want) <= 0.5*math.Pow(10, -float64(decimals))*(1+1e-9)
}

// The done-when of issue 14: run --gpu-price 3.5 --gpus 1 reports each level's cost as
// price × GPUs / (3,600 × tokens/s) × 10^6, the same in summary.json and to the printed
// digit on the console, and the good tokens cost more exactly when some requests missed.
func TestRunCostIsPriceOverThroughput(t *testing.T) {
	srv := pacedServer(t, 20*time.Millisecond, 5*time.Millisecond)
	dir := t.TempDir()
	// E2EL 20 + 5 (N - 1) ms for N of 4..20 tokens: the bound splits the requests.
	code, stdout, stderr := runCLI(t, context.Background(), "run", "--url", srv.URL, "--concurrency", "1,4",
		"--requests", "12", "--output-tokens", "uniform:4:20", "--input-tokens", "32", "--slo", "e2el<=70ms",
		"--gpu-price", "3.5", "--gpus", "1", "--no-progress", "--output-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	sum := readSummaryT(t, dir)
	if p := sum.Price; p == nil || p.GPU == nil || p.GPU.USDPerGPUHour != 3.5 || p.GPU.GPUs != 1 || p.Tokens != nil {
		t.Fatalf("price %+v", sum.Price)
	}
	const price, gpus = 3.5, 1.0
	want := func(perS, scale float64) float64 { return price * gpus / (3600 * perS) * scale }
	printed := map[string][]string{}
	for _, label := range []string{"Cost per 1M output tokens:", "Cost per 1M tokens (input + output):", "Cost per 1k requests:", "Cost per 1M good output tokens:"} {
		printed[label] = consoleFigures(t, stdout, label)
		if len(printed[label]) != len(sum.Levels) {
			t.Fatalf("%q printed %d times for %d levels:\n%s", label, len(printed[label]), len(sum.Levels), stdout)
		}
	}
	m := summaryMap(t, dir)
	for i, l := range sum.Levels {
		c := l.Cost
		if c == nil || c.USDPerHour != 3.5 || c.GPUs != 1 {
			t.Fatalf("level %d: cost %+v", i, c)
		}
		for _, f := range []struct {
			key, label string
			got        *float64
			want       float64
		}{
			{"per_million_output_tokens", "Cost per 1M output tokens:", c.PerMillionOutputTokens, want(l.OutputThroughput, 1e6)},
			{"per_million_tokens", "Cost per 1M tokens (input + output):", c.PerMillionTokens, want(l.TotalTokenThroughput, 1e6)},
			{"per_1k_requests", "Cost per 1k requests:", c.Per1kRequests, want(l.RequestThroughput, 1e3)},
		} {
			if f.got == nil || math.Abs(*f.got-f.want) > 1e-12*f.want {
				t.Errorf("level %d %s = %v, want %v", i, f.key, f.got, f.want)
			}
			if v, _ := path(m, "levels", i, "cost", f.key).(float64); math.Abs(v-f.want) > 1e-12*f.want {
				t.Errorf("level %d: summary.json cost.%s = %v, want %v", i, f.key, v, f.want)
			}
			if p := printed[f.label][i]; !sameToPrintedDigit(p, f.want) {
				t.Errorf("level %d: the console prints %s %s, want %v to that digit", i, f.label, p, f.want)
			}
		}
		missed := *l.GoodRequests < l.Completed
		switch good, out := c.PerMillionGoodOutputTokens, *c.PerMillionOutputTokens; {
		case *l.GoodRequests == 0:
			if good != nil || printed["Cost per 1M good output tokens:"][i] != "n/a" {
				t.Errorf("level %d: no good request, yet a good cost %v", i, good)
			}
		case good == nil || math.Abs(*good-want(*l.GoodputTokenThroughput, 1e6)) > 1e-12**good:
			t.Errorf("level %d: good cost %v, want %v", i, good, want(*l.GoodputTokenThroughput, 1e6))
		case (*good > out) != missed || *good < out:
			t.Errorf("level %d: %d of %d requests good; good cost %v against %v", i, *l.GoodRequests, l.Completed, *good, out)
		}
	}
	if p := sum.SweetSpot; p != nil && !reflect.DeepEqual(p.Cost, sum.Levels[p.Index].Cost) {
		t.Errorf("the sweet spot's cost %+v is not its level's %+v", p.Cost, sum.Levels[p.Index].Cost)
	}
	if !strings.Contains(stdout, "$/1M out") {
		t.Errorf("the ladder has no cost column:\n%s", stdout)
	}
	for _, f := range []string{"summary.csv", "report.html"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if !strings.Contains(string(b), "per_million_output_tokens") {
			t.Errorf("%s does not carry the cost", f)
		}
	}
}

// On the virtual clock both cases are certain: with every request within the bound the
// good tokens cost the same as all output tokens, with some beyond it more; a pick carries
// its level's cost.
func TestSimulateGoodCost(t *testing.T) {
	for _, tc := range []struct {
		slo    string
		higher bool
	}{{"e2el<=100s", false}, {"e2el<=1s", true}} {
		dir := t.TempDir()
		// c=1 on the textbook profile: E2EL about 8 ms per output token.
		code, _, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--concurrency", "1,2",
			"--requests", "40", "--output-tokens", "uniform:10:200", "--slo", tc.slo, "--output-dir", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		sum := readSummaryT(t, dir)
		for i, l := range sum.Levels {
			good, out := *l.Cost.PerMillionGoodOutputTokens, *l.Cost.PerMillionOutputTokens
			missed := *l.GoodRequests < l.Completed
			if missed != tc.higher || (good > out) != tc.higher || (!tc.higher && good != out) {
				t.Errorf("--slo %s level %d: %d of %d good; good cost %v, output cost %v", tc.slo, i, *l.GoodRequests, l.Completed, good, out)
			}
		}
	}
}

// simulate prices a preset GPU at its list price, a profile's own at gpu.usd_per_hour, and
// says when a GPU has no price; --gpu-price replaces either.
func TestSimulatePrice(t *testing.T) {
	var dir string
	simulate := func(t *testing.T, profile string, extra ...string) (*report.Summary, string) {
		dir = t.TempDir()
		args := append([]string{"simulate", "--sim", profile, "--concurrency", "2", "--requests", "8", "--output-dir", dir}, extra...)
		code, _, stderr := runCLI(t, context.Background(), args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		return readSummaryT(t, dir), stderr
	}
	h200, _ := sim.GPUListPrice("h200")
	s, _ := simulate(t, "textbook")
	if p := s.Price; p == nil || p.GPU == nil || p.GPU.USDPerGPUHour != h200.USDPerHour || p.GPU.GPUs != 1 || !strings.Contains(p.Source, "RunPod") || !strings.Contains(p.Source, h200.AsOf) {
		t.Errorf("textbook: price %+v, want h200's list price %v, dated", p, h200.USDPerHour)
	}
	if c := s.Levels[0].Cost; c == nil || c.USDPerHour != h200.USDPerHour {
		t.Errorf("textbook: cost %+v", c)
	}
	s, _ = simulate(t, "textbook", "--gpu-price", "2")
	if p := s.Price; p.GPU.USDPerGPUHour != 2 || p.Source != "--gpu-price over "+bench.ProfilePrice(mustProfile(t, "textbook")).Source {
		t.Errorf("--gpu-price 2: price %+v", p)
	}

	profiles := t.TempDir()
	own := filepath.Join(profiles, "own.yaml")
	os.WriteFile(own, []byte("gpu:\n  tflops: 500\n  bandwidth_gbps: 2000\n  memory_gb: 80\n  usd_per_hour: 1.25\n"), 0o644)
	s, _ = simulate(t, own)
	if p := s.Price; p == nil || p.GPU.USDPerGPUHour != 1.25 || !strings.Contains(p.Source, "gpu.usd_per_hour") {
		t.Errorf("gpu.usd_per_hour 1.25: price %+v", p)
	}
	unpriced := filepath.Join(profiles, "unpriced.yaml")
	os.WriteFile(unpriced, []byte("gpu:\n  tflops: 500\n  bandwidth_gbps: 2000\n  memory_gb: 80\n"), 0o644)
	s, stderr := simulate(t, unpriced)
	if s.Price != nil || s.Levels[0].Cost != nil || !strings.Contains(stderr, "has no list price") {
		t.Errorf("a GPU without a price: price %+v, cost %+v; stderr:\n%s", s.Price, s.Levels[0].Cost, stderr)
	}
	// Scripts read an unpriced level's cost as null, and find no price.
	m := summaryMap(t, dir)
	if c, ok := path(m, "levels", 0).(map[string]any)["cost"]; !ok || c != nil {
		t.Errorf("levels[0].cost = %v (present %v), want null", c, ok)
	}
	if _, ok := m["price"]; ok {
		t.Errorf("an unpriced run has a price: %v", m["price"])
	}
	// --gpu-price prices it, on the deployment's own GPUs.
	s, _ = simulate(t, unpriced, "--gpu-price", "2")
	if p := s.Price; p == nil || p.GPU.USDPerGPUHour != 2 || p.GPU.GPUs != mustProfile(t, unpriced).GPUs() || p.Source != "--gpu-price" {
		t.Errorf("--gpu-price 2 on a GPU without a price: %+v", p)
	}
}

func mustProfile(t *testing.T, name string) sim.Profile {
	t.Helper()
	p, err := sim.LoadProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// report DIR re-renders a run's cost from the price it stored; --gpu-price re-prices it,
// keeping the GPUs the run had; --price-in and --price-out price it per token instead.
func TestReportReprices(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--concurrency", "1,4",
		"--requests", "16", "--slo", "tpot<=9ms", "--output-dir", dir); code != 0 {
		t.Fatalf("simulate: %s", stderr)
	}
	orig := readSummaryT(t, dir)
	stored, _ := os.ReadFile(filepath.Join(dir, "summary.json"))

	same := t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), "report", dir, "--output-dir", same); code != 0 {
		t.Fatalf("report: %s", stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(same, "summary.json")); string(b) != string(stored) {
		t.Errorf("report DIR did not re-render the same summary.json")
	}

	repriced := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "report", dir, "--gpu-price", "7", "--output-dir", repriced)
	if code != 0 {
		t.Fatalf("report --gpu-price: %s", stderr)
	}
	s := readSummaryT(t, repriced)
	if p := s.Price; p.GPU.USDPerGPUHour != 7 || p.GPU.GPUs != orig.Price.GPU.GPUs || !strings.HasPrefix(p.Source, "--gpu-price over ") {
		t.Errorf("re-priced: %+v", p)
	}
	ratio := 7 / orig.Price.GPU.USDPerGPUHour
	for i, l := range s.Levels {
		o := orig.Levels[i].Cost
		for _, f := range []struct{ got, was *float64 }{{l.Cost.PerMillionOutputTokens, o.PerMillionOutputTokens},
			{l.Cost.PerMillionTokens, o.PerMillionTokens}, {l.Cost.Per1kRequests, o.Per1kRequests}} {
			if math.Abs(*f.got-*f.was*ratio) > 1e-9**f.got {
				t.Errorf("level %d: re-priced %v, want %v × %v", i, *f.got, *f.was, ratio)
			}
		}
		if (l.Cost.PerMillionGoodOutputTokens == nil) != (o.PerMillionGoodOutputTokens == nil) {
			t.Errorf("level %d: the good cost came or went: %v, %v", i, l.Cost.PerMillionGoodOutputTokens, o.PerMillionGoodOutputTokens)
		}
	}
	if !strings.Contains(stdout, "(1 GPU at 7.000 per GPU-hour)") {
		t.Errorf("the console does not show the new price:\n%s", stdout)
	}
	// And the re-priced run stays re-priced when reported again.
	again := t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), "report", repriced, "--gpus", "4", "--output-dir", again); code != 0 {
		t.Fatalf("report --gpus: %s", stderr)
	}
	if s := readSummaryT(t, again); s.Price.GPU.USDPerGPUHour != 7 || s.Levels[0].Cost.USDPerHour != 28 {
		t.Errorf("--gpus 4 over 7 USD: %+v, %v an hour", s.Price.GPU, s.Levels[0].Cost.USDPerHour)
	}

	hosted := t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), "report", dir, "--price-in", "0.5", "--price-out", "1.5", "--output-dir", hosted); code != 0 {
		t.Fatalf("report --price-in --price-out: %s", stderr)
	}
	s = readSummaryT(t, hosted)
	for i, l := range s.Levels {
		billed := (float64(l.TotalInputTokens)*0.5 + float64(l.TotalOutputTokens)*1.5) / 1e6
		c := l.Cost
		if s.Price.GPU != nil || c.GPUs != 0 || math.Abs(c.USDPerHour-billed/l.DurationS*3600) > 1e-9*c.USDPerHour ||
			math.Abs(*c.PerMillionOutputTokens-billed/float64(l.TotalOutputTokens)*1e6) > 1e-9 ||
			math.Abs(*c.Per1kRequests-billed/float64(l.Completed)*1e3) > 1e-9 {
			t.Errorf("level %d: hosted cost %+v for %v USD billed", i, c, billed)
		}
	}
}

// A hosted API is priced per token: the cost per million output tokens is what its tokens
// were billed over the output tokens, and usd_per_hour the rate they were billed at.
func TestRunHostedPricing(t *testing.T) {
	srv := pacedServer(t, 5*time.Millisecond, time.Millisecond)
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "run", "--url", srv.URL, "--concurrency", "2", "--requests", "6",
		"--output-tokens", "10", "--input-tokens", "32", "--price-in", "0.15", "--price-out", "0.6", "--no-progress", "--output-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := readSummaryT(t, dir)
	l := s.Levels[0]
	billed := (float64(l.TotalInputTokens)*0.15 + float64(l.TotalOutputTokens)*0.6) / 1e6
	if c := l.Cost; s.Price.Tokens == nil || c.GPUs != 0 || math.Abs(*c.PerMillionOutputTokens-billed/float64(l.TotalOutputTokens)*1e6) > 1e-9 ||
		math.Abs(*c.PerMillionTokens-billed/float64(l.TotalInputTokens+l.TotalOutputTokens)*1e6) > 1e-9 {
		t.Errorf("hosted cost %+v, price %+v, for %v USD billed", c, s.Price, billed)
	}
	if !strings.Contains(stdout, "(tokens billed at 0.1500 / 0.6000 per 1M input / output)") {
		t.Errorf("console:\n%s", stdout)
	}
}

// Pricing flags that cannot be meant are usage errors, every one at once, each saying what
// to give instead.
func TestPriceFlagErrors(t *testing.T) {
	srv := pacedServer(t, time.Millisecond, time.Millisecond)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--url", srv.URL, "--gpu-price", "0", "--gpus", "0"}, []string{"--gpu-price 0: must be a positive number", "--gpus 0: must be in 1..1000000"}},
		{[]string{"run", "--url", srv.URL, "--gpu-price", "NaN"}, []string{"--gpu-price NaN"}},
		{[]string{"run", "--url", srv.URL, "--gpus", "2"}, []string{"--gpus needs --gpu-price"}},
		{[]string{"run", "--url", srv.URL, "--price-in", "1"}, []string{"--price-in and --price-out: give both"}},
		{[]string{"run", "--url", srv.URL, "--price-in", "0", "--price-out", "0"}, []string{"everything would be free"}},
		{[]string{"run", "--url", srv.URL, "--price-in", "-1", "--price-out", "2"}, []string{"--price-in -1: must be a number of USD per million tokens"}},
		{[]string{"run", "--url", srv.URL, "--gpu-price", "3", "--price-in", "1", "--price-out", "2"}, []string{"exclude each other"}},
		{[]string{"simulate", "--gpus", "2"}, []string{"unknown flag: --gpus"}},
	} {
		code, _, stderr := runCLI(t, context.Background(), append(tc.args, "--output-dir", t.TempDir())...)
		if code != ExitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", tc.args, code, ExitUsage, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: stderr lacks %q:\n%s", tc.args, w, stderr)
			}
		}
	}

	// report --gpus alone re-prices only a run that had a GPU price.
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), "run", "--url", srv.URL, "--concurrency", "1", "--requests", "2",
		"--output-tokens", "2", "--no-progress", "--output-dir", dir); code != 0 {
		t.Fatalf("run: %s", stderr)
	}
	if s := readSummaryT(t, dir); s.Price != nil || s.Levels[0].Cost != nil {
		t.Errorf("a run against a server without price flags is priced: %+v", s.Price)
	}
	if code, _, stderr := runCLI(t, context.Background(), "report", dir, "--gpus", "2"); code != ExitUsage || !strings.Contains(stderr, "--gpus needs --gpu-price") {
		t.Errorf("report --gpus of an unpriced run: exit %d\n%s", code, stderr)
	}
}
