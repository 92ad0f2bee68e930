package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/testproc"
	"github.com/llmbench/llmbench/internal/testtier"
)

// twinTolerance is how far a profile fitted to `llmbench serve --sim P` may predict the
// loads its probe did not run from what a live run against P measures (issue 13: 5 %).
const twinTolerance = 0.05

// TestCalibrateTwinOfServe fits profiles to the simulator's own server for profiles P
// nobody tuned the fit to — a linear cost with disaggregated prefill and a roofline with
// colocated, chunked prefill, batch limits 12 and 16 — and holds each fit's predictions of
// loads outside its probe (more requests in flight, an open loop near capacity, prompts
// longer than any probed) to a live run against P.
func TestCalibrateTwinOfServe(t *testing.T) {
	testtier.Accuracy(t, "two calibrations' predictions of live runs to 5 %, on the real clock (about 2.5 minutes)")
	bin := llmbenchBinary(t)
	for _, tc := range []struct {
		name, profile string
		fit           []string // calibrate's flags beyond --url and --output
		limit         int      // P's max_num_seqs
		inFlight      int      // the probe's cap: 1.5 × the limit, below the loads predicted
	}{
		{"linear-disaggregated", "cost: {kind: linear, prefill_ms_per_token: 0.04, decode_step_ms: 6, decode_growth: 0.05}\n" +
			"engine: {prefill: disaggregated, max_num_seqs: 12}\n", nil, 12, 18},
		{"roofline-colocated", "model: llama-3.1-8b\ngpu: h200\ncost: {kind: roofline}\nengine: {max_num_seqs: 16, max_batched_tokens: 2048}\n",
			[]string{"--model-shape", "llama-3.1-8b", "--gpu", "h200"}, 16, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "p.yaml")
			if err := os.WriteFile(p, []byte(tc.profile), 0o644); err != nil {
				t.Fatal(err)
			}
			url := startServe(t, bin, p)
			check := predictCheck{bin: bin, target: []string{"--url", url}, tolerance: map[string]float64{"ttft_ms": twinTolerance, "tpot_ms": twinTolerance}}
			check.untilMet(t, dir, func(at string) (string, []predictLoad) {
				fit := twinCalibrate(t, bin, url, at, tc.fit, tc.inFlight)
				return fit, twinLoads(t, bin, fit, at, tc.limit)
			})
		})
	}
}

// twinCalibrate calibrates the server at url into dir and returns the fitted profile.
func twinCalibrate(t *testing.T, bin, url, dir string, fitFlags []string, inFlight int) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fit := filepath.Join(dir, "fit.yaml")
	out := llmbenchCmd(t, bin, append([]string{"calibrate", "--url", url, "--output", fit, "--quiet",
		"--max-concurrency", fmt.Sprint(inFlight), "--max-input-tokens", "2048"}, fitFlags...)...)
	t.Logf("calibrate:\n%s", out)
	return fit
}

// twinLoads are the loads outside the probe: twice the batch limit in flight, an open loop
// at about 70 % of the capacity the fit gives at the limit, prompts twice the longest probed.
// The loads in flight send prompts as long as the longest probed, so that their TTFT is the
// engine's prefill and queue, which the fit predicts, more than the milliseconds a busy
// machine adds to two dozen streams (a core kept busy beside the test added 1–3 ms to a
// 256-token prompt's 11 ms: CI missed by 11–19 % there three times over). The longer
// prompts go one at a time: two of them at once under chunked prefill lock into one of two
// schedules (with a core kept busy, the roofline P's live runs of one load read TTFT P50
// 134 or 188 ms, TPOT 10.1 or 8.3 ms; its simulation, with any round trip or jitter, 134
// and 10.1), a request waiting out the other's 65 ms chunk or not, likely by a few ms of
// the client's turnaround: the machine's chance, not the fit. The loads in flight hold
// the fit to chunks beside decodes.
func twinLoads(t *testing.T, bin, fit, dir string, limit int) []predictLoad {
	t.Helper()
	capDir := filepath.Join(dir, "capacity")
	llmbenchCmd(t, bin, "simulate", "--sim", fit, "--output-dir", capDir, "--quiet", "--no-progress",
		"--concurrency", fmt.Sprint(limit), "--requests", fmt.Sprint(8*limit), "--input-tokens", "512", "--output-tokens", "64")
	rate := 0.7 * levelFigure(t, capDir, "request_throughput")
	return []predictLoad{
		{"more in flight", []string{"--concurrency", fmt.Sprint(2 * limit), "--requests", fmt.Sprint(8 * limit), "--input-tokens", "2048", "--output-tokens", "64"}},
		{fmt.Sprintf("open loop at %.1f req/s", rate), []string{"--rate", fmt.Sprintf("%.2f", rate), "--requests", "400", "--input-tokens", "512", "--output-tokens", "64"}},
		{"longer prompts", []string{"--concurrency", "1", "--requests", "16", "--input-tokens", "4096", "--output-tokens", "32"}},
	}
}

// startServe starts `llmbench serve --sim profile` on a free port and returns its URL; the
// server stops with the test.
func startServe(t *testing.T, bin, profile string) string {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--sim", profile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := testproc.Start(t, cmd); err != nil { // stopped, its group killed, with the test
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				lines <- u
			}
		}
	}()
	select {
	case u := <-lines:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("llmbench serve did not say where it listens within 30 s")
	}
	return ""
}

// levelFigure reads a number of levels[0] from a run folder's summary.json.
func levelFigure(t *testing.T, dir, key string) float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Levels []map[string]any `json:"levels"`
	}
	if err := json.Unmarshal(b, &sum); err != nil || len(sum.Levels) == 0 {
		t.Fatalf("%s/summary.json: %v", dir, err)
	}
	v, ok := sum.Levels[0][key].(float64)
	if !ok || v <= 0 {
		t.Fatalf("%s: levels[0].%s is %v", dir, key, sum.Levels[0][key])
	}
	return v
}
