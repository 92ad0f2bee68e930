package calibrate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/servermetrics"
	"github.com/llmbench/llmbench/internal/sim"
)

// probeLoad is one synthetic probe point: a closed loop of concurrency c over requests of
// the given lengths (cycled).
type probeLoad struct {
	name      string
	c, n      int
	lengths   [][2]int  // prompt, output
	arrivalMs []float64 // open loop when set
}

// measure runs the loads on truth (virtual clock) and returns them as probe points, as if
// a server with that profile had been measured.
func measure(t *testing.T, truth sim.Profile, loads []probeLoad) []Point {
	t.Helper()
	var pts []Point
	for i, l := range loads {
		pt := Point{Concurrency: l.c, Open: l.arrivalMs != nil}
		for k := 0; k < l.n; k++ {
			q := l.lengths[k%len(l.lengths)]
			r := Request{Prompt: q[0], Output: q[1]}
			if pt.Open {
				r.Arrival = ms(l.arrivalMs[k])
			}
			pt.Requests = append(pt.Requests, r)
		}
		srv, err := bench.Deploy(truth)
		if err != nil {
			t.Fatal(err)
		}
		var recs []record.Record
		if _, _, err := load.RunVirtual(context.Background(), pt.level(), 0, replay{&pt}, srv,
			func(r *record.Record) { recs = append(recs, *r) }); err != nil {
			t.Fatal(err)
		}
		got, err := newPoint(l.name, "", i, report.Level{Concurrency: l.c}, recs)
		if err != nil {
			t.Fatal(err)
		}
		pts = append(pts, got)
	}
	return pts
}

func TestFitRecoversLinearProfile(t *testing.T) {
	truth, _ := sim.LoadProfile("textbook")
	truth.Engine.Prefill = sim.PrefillColocated
	truth.Engine.MaxNumSeqs = 8
	truth.Engine.MaxBatchedTokens = 1024
	truth.Cost = sim.CostConfig{Kind: sim.CostLinear, PrefillMsPerToken: 0.05, DecodeStepMs: 6, DecodeGrowth: 0.2}
	truth.Network.RTTMs = 0.5
	var loads []probeLoad
	for _, n := range []int{32, 256, 1024, 2048} {
		loads = append(loads, probeLoad{name: fmt.Sprintf("prefill-%d", n), c: 1, n: 6, lengths: [][2]int{{n, 16}}})
	}
	for _, c := range []int{1, 2, 4, 8, 16} {
		loads = append(loads, probeLoad{name: fmt.Sprintf("decode-c%d", c), c: c, n: 4 * c, lengths: [][2]int{{32, 64}}})
	}
	loads = append(loads, probeLoad{name: "mixed", c: 3, n: 12, lengths: [][2]int{{32, 200}, {32, 200}, {3000, 2}}})
	pts := measure(t, truth, loads)
	res, err := Fit(context.Background(), pts, Source{URL: "test"}, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("settings:\n%s", describe(res.Settings))
	for _, p := range res.Points {
		t.Logf("%-12s held=%v ttft %.2f/%.2f tpot %.2f/%.2f", p.Name, p.HeldOut, p.Measured[figure.TTFTP50], p.Predicted[figure.TTFTP50], p.Measured[figure.TPOTP50], p.Predicted[figure.TPOTP50])
	}
	t.Logf("held out: %+v", res.HeldOut)
	checkSettings(t, res)
	c := res.Profile.Cost
	if e := res.Profile.Engine; e.MaxNumSeqs != 8 || e.Prefill != sim.PrefillColocated {
		t.Errorf("engine %+v, want max_num_seqs 8, colocated", e)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{{"prefill", c.PrefillMsPerToken, 0.05}, {"decode", c.DecodeStepMs, 6}, {"growth", c.DecodeGrowth, 0.2}} {
		if math.Abs(f.got-f.want)/f.want > 0.03 {
			t.Errorf("%s = %g, want %g", f.name, f.got, f.want)
		}
	}
}

// checkSettings: a fit's settings are the profile written's, each key once, and the
// profile says how its batch limit was found.
func checkSettings(t *testing.T, res *Result) {
	t.Helper()
	got := map[string]Setting{}
	for _, s := range res.Settings {
		if _, ok := got[s.Key]; ok {
			t.Errorf("setting %s listed twice", s.Key)
		}
		got[s.Key] = s
	}
	p := res.Profile
	for key, want := range map[string]string{
		"engine.max_num_seqs":       fmt.Sprint(p.Engine.MaxNumSeqs),
		"engine.prefill":            p.Engine.Prefill,
		"engine.max_batched_tokens": fmt.Sprint(p.Engine.MaxBatchedTokens),
		"cost.decode_step_ms":       fmt.Sprintf("%.6g", p.Cost.DecodeStepMs),
		"cost.step_noise":           fmt.Sprintf("%.4f", p.Cost.StepNoise),
	} {
		if s, ok := got[key]; !ok || s.Value != want || s.How == "" {
			t.Errorf("setting %s = %+v, want value %s (the profile's) and how it was found", key, s, want)
		}
	}
	if h := p.Calibration.MaxNumSeqs; h != got["engine.max_num_seqs"].How {
		t.Errorf("the profile's calibration.max_num_seqs %q, want the setting's how %q", h, got["engine.max_num_seqs"].How)
	}
	// The verdict travels with the profile: what it did not trust, and the corner unprobed.
	_, untrusted := res.trust()
	var want []sim.LoadRange
	for _, u := range untrusted {
		want = append(want, u.LoadRange)
	}
	if !slices.Equal(p.Calibration.NotTrusted, want) {
		t.Errorf("the profile's calibration.not_trusted %+v, want the verdict's %+v", p.Calibration.NotTrusted, want)
	}
	if prompt, c := res.unprobedCorner(); p.Calibration.NotProbed != (sim.Corner{PromptTokens: prompt, Concurrency: c}) {
		t.Errorf("the profile's calibration.not_probed %+v, want %d tokens at %d", p.Calibration.NotProbed, prompt, c)
	}
}

// TestFitRoofline fits the roofline's constants of a profile whose constants are not the
// defaults, and predicts longer prompts and more requests than it probed.
func TestFitRoofline(t *testing.T) {
	truth, _ := sim.LoadProfile("h200-llama-3.1-8b")
	truth.Cost.Roofline.ComputeEfficiency, truth.Cost.Roofline.BandwidthEfficiency = 0.45, 0.7
	truth.Cost.Roofline.SeqOverheadUs = 8
	truth.Engine.MaxNumSeqs, truth.Engine.MaxBatchedTokens = 32, 2048
	truth.Network.RTTMs = 0.3
	var loads []probeLoad
	for _, n := range []int{32, 512, 2048} {
		loads = append(loads, probeLoad{name: fmt.Sprintf("prefill-%d", n), c: 1, n: 6, lengths: [][2]int{{n, 16}}})
	}
	for _, c := range []int{1, 4, 16} {
		loads = append(loads, probeLoad{name: fmt.Sprintf("decode-c%d", c), c: c, n: 4 * c, lengths: [][2]int{{32, 64}}})
	}
	loads = append(loads, probeLoad{name: "mixed", c: 3, n: 12, lengths: [][2]int{{32, 200}, {32, 200}, {3000, 2}}})
	pts := measure(t, truth, loads)
	m, g := truth.Model, truth.GPU
	res, err := Fit(context.Background(), pts, Source{URL: "test"}, Options{Seed: 1, MaxNumSeqs: 32, Model: &m, GPU: &g})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("settings:\n%s", describe(res.Settings))
	if res.Profile.Cost.Kind != sim.CostRoofline {
		t.Fatalf("kind %s, want roofline", res.Profile.Cost.Kind)
	}
	// Loads nobody probed: 8k prompts, 64 in flight (queueing beyond 32).
	beyond := measure(t, truth, []probeLoad{
		{name: "long", c: 2, n: 8, lengths: [][2]int{{8000, 64}}},
		{name: "wide", c: 64, n: 128, lengths: [][2]int{{512, 128}}},
	})
	for i := range beyond {
		got, err := predict(context.Background(), res.Profile, &beyond[i])
		if err != nil {
			t.Fatal(err)
		}
		m := beyond[i].Measured
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"TTFT P50", got[figure.TTFTP50], m[figure.TTFTP50]}, {"TPOT P50", got[figure.TPOTP50], m[figure.TPOTP50]}} {
			t.Logf("%s %s: predicted %.2f, truth %.2f", beyond[i].Name, f.name, f.got, f.want)
			if math.Abs(f.got-f.want)/f.want > 0.05 {
				t.Errorf("%s %s: predicted %.2f ms, truth %.2f ms: beyond 5%%", beyond[i].Name, f.name, f.got, f.want)
			}
		}
	}
}

// TestRunningLimitReadsMostScrapes: the batch limit is what most scrapes of a queueing
// level saw; scrapes that caught a request between states (a busy machine's serve twin
// read 13 and 15 beside a limit of 12) do not raise it.
func TestRunningLimitReadsMostScrapes(t *testing.T) {
	level := func(name string, conc int, running, waiting []float64) Point {
		ts := make([]float64, len(running))
		for i := range ts {
			ts[i] = float64(i)
		}
		return Point{Name: name, Concurrency: conc, Server: &servermetrics.Summary{Family: "vllm",
			Series: servermetrics.Columns{TS: ts, Running: running, Waiting: waiting}}}
	}
	pts := []Point{
		level("decode-c8", 8, []float64{8, 8, 8, 9, 8}, []float64{0, 0, 0, 0, 0}),
		level("decode-c16", 16, []float64{16, 12, 12, 15, 12, 11, 13, 12}, []float64{0, 4, 4, 1, 4, 5, 3, 4}),
	}
	n, how := runningLimit(pts)
	if n != 12 {
		t.Errorf("runningLimit = %d (%s), want 12", n, how)
	}
	if !strings.Contains(how, "decode-c16") {
		t.Errorf("runningLimit says %q, want the level it read", how)
	}
	// serve's twin of a 256-sequence server at 64 in flight on a busy machine: 41 ran in
	// most scrapes, the rest between the client and the server, and a few scrapes caught a
	// burst arriving (waiting mean 1.5, median 0): no batch limit, and no queueing to stop
	// the ladder at.
	busy := level("decode-c64", 64, []float64{60, 41, 41, 38, 44, 41, 41, 40, 41, 43}, []float64{0, 0, 0, 9, 0, 0, 5, 0, 0, 0})
	if n, how := runningLimit([]Point{busy}); n != 0 {
		t.Errorf("runningLimit = %d (%s) where none waited in most scrapes, want 0", n, how)
	}
	if (&Prober{}).queueing(&busy) {
		t.Errorf("a level none waited at in most scrapes, TTFT not grown, is taken as queueing")
	}
	// The same server at 256 in flight: 256 ran in most scrapes, so no limit below it is
	// tried, however its TTFT grew.
	full := level("decode-c256", 256, []float64{40, 256, 256, 248, 256, 256}, []float64{150, 0, 0, 0, 0, 0})
	if got := (batch{}).candidates([]Point{busy, full}); len(got) != 1 || got[0] != 256 {
		t.Errorf("batch limits tried %v, want only 256 (the gauge saw 256 run at once)", got)
	}
}
