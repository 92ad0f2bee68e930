package sim

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/figure"
)

func TestProfileYAMLRoundTrip(t *testing.T) {
	tb, _ := LoadProfile("textbook")
	rf, _ := LoadProfile("h200-llama-3.1-8b")
	custom := tb
	custom.Model = ModelShape{Name: "tiny \"q\"", Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, Intermediate: 128, Vocab: 1000, TiedEmbeddings: true, BytesPerParam: 1}
	custom.GPU = GPU{Name: "cpu", TFLOPS: 0.5, BandwidthGBps: 40, MemoryGB: 16}
	custom.Cost = CostConfig{Kind: CostLinear, PrefillMsPerToken: 0.123456789, DecodeStepMs: 17.5, DecodeGrowth: 0.31, StepMs: 0.9, ContextMsPer1k: 0.25, PrefillAttnMsPer1M: 3.5, PrefillSeqMs: 0.75, StepNoise: 0.07}
	custom.Engine.MaxNumSeqs, custom.Engine.KVCacheTokens, custom.Engine.PrefillWorkers = 4, 4096, 2
	custom.Network.RTTMs, custom.Network.JitterMs, custom.Network.FrontEndMs, custom.Network.PromptUsPerToken = 0.42, 0.05, 1.25, 2.5
	custom.Calibration = &Calibration{Source: "http://127.0.0.1:8080/v1 (llama.cpp)", Date: "2026-12-01",
		PromptTokens: [2]int{16, 2048}, OutputTokens: [2]int{8, 64}, Concurrency: [2]int{1, 2}, MaxNumSeqs: "server: /props total_slots",
		Error:       fitError(3.2, math.NaN(), 1.5, math.NaN()),
		ErrorClosed: fitError(3.2, 7.5, 1.5, 2.5),
		ErrorOpen:   figure.Unmeasured(), OpenRates: [2]float64{0.5, 2.25},
		NotTrusted: []LoadRange{{Load: LoadClosed, Concurrency: [2]int{1, 1}, PromptTokens: [2]int{128, 984}, ErrorPct: 78.9},
			{Load: LoadOpen, Rate: [2]float64{2.25, 2.25}, PromptTokens: [2]int{384, 384}, ErrorPct: 38.6},
			{Load: LoadMixed, PromptTokens: [2]int{32, 2048}, ErrorPct: 26}},
		NotProbed: Corner{PromptTokens: 32, Concurrency: 1}}
	tuned := rf
	tuned.Cost.Roofline = DefaultRooflineParams()
	tuned.Cost.Roofline.ComputeEfficiency, tuned.Cost.Roofline.SeqOverheadUs = 0.4321, 7.25
	fleet := rf
	fleet.Model, _ = ModelPreset("llama-3.1-70b")
	fleet.GPU, _ = GPUPreset("h100")
	fleet.Deployment = Deployment{Replicas: 3, TP: 4, Router: RouterRoundRobin, WeightDtype: DtypeFP8, KVDtype: DtypeFP8, MaxModelLen: 8192}
	cut := tb
	cut.Deployment = Deployment{Replicas: 1, TP: 1, Router: RouterLeastOutstanding, MaxModelLen: 2048, TruncatePrompts: true}
	for _, p := range []Profile{tb, rf, tuned, custom, fleet, cut} {
		y := p.YAML("fitted by a test\nsecond line")
		got, err := ParseProfile(y, "")
		if err != nil {
			t.Fatalf("%s: %v\n%s", p.Name, err, y)
		}
		got.Name, got.table = p.Name, p.table
		// The zero RooflineParams means the defaults, which a parsed profile holds.
		got.Cost.Roofline, p.Cost.Roofline = got.Cost.rooflineParams(), p.Cost.rooflineParams()
		if p.Calibration != nil {
			// NaN != NaN: compare the calibration apart.
			gc, pc := *got.Calibration, *p.Calibration
			for _, e := range [][2]figure.Values{{gc.Error, pc.Error}, {gc.ErrorClosed, pc.ErrorClosed}, {gc.ErrorOpen, pc.ErrorOpen}} {
				if fmt.Sprint(e[0]) != fmt.Sprint(e[1]) { // NaN prints as NaN
					t.Errorf("an error_pct read back as %+v, want %+v\n%s", e[0], e[1], y)
				}
			}
			gc.Error, pc.Error, gc.ErrorClosed, pc.ErrorClosed, gc.ErrorOpen, pc.ErrorOpen = figure.Values{}, figure.Values{}, figure.Values{}, figure.Values{}, figure.Values{}, figure.Values{}
			if !reflect.DeepEqual(gc, pc) {
				t.Errorf("calibration read back as %+v, want %+v", gc, pc)
			}
			got.Calibration, p.Calibration = nil, nil
		}
		if !reflect.DeepEqual(got, p) {
			t.Errorf("%s: read back as\n%+v\nwant\n%+v\n%s", p.Name, got, p, y)
		}
		if !strings.HasPrefix(string(y), "# fitted by a test\n# second line\n") {
			t.Errorf("header not written as comments:\n%s", y)
		}
	}
}

// fitError is a calibration's error on the judged figures, in their order (the others
// unmeasured).
func fitError(judged ...float64) figure.Values {
	e := figure.Unmeasured()
	for i, k := range figure.Judged {
		e[k] = judged[i]
	}
	return e
}

func TestCalibrationOutside(t *testing.T) {
	c := &Calibration{PromptTokens: [2]int{64, 2048}, OutputTokens: [2]int{16, 128}, Concurrency: [2]int{1, 8}}
	if got := c.Outside([2]int{128, 4096}, [2]int{16, 256}, 16); len(got) != 0 {
		t.Errorf("within 2x: %q", got)
	}
	got := c.Outside([2]int{16, 8192}, [2]int{0, 0}, 64)
	if len(got) != 2 || !strings.Contains(got[0], "8192") || !strings.Contains(got[1], "64 requests") {
		t.Errorf("far outside: %q", got)
	}
	if got := c.Outside([2]int{16, 512}, [2]int{}, 0); len(got) != 1 || !strings.Contains(got[0], "down to 16") {
		t.Errorf("short prompts: %q", got)
	}
}

func TestStepNoise(t *testing.T) {
	n := newStepNoise(0.1, 7)
	if newStepNoise(0, 7) != nil {
		t.Fatal("cv 0 must be no noise")
	}
	var sum, sum2 float64
	const k = 20000
	for range k {
		f := float64(n.apply(time.Millisecond)) / float64(time.Millisecond)
		sum += f
		sum2 += f * f
	}
	mean := sum / k
	cv := math.Sqrt(sum2/k-mean*mean) / mean
	if math.Abs(mean-1) > 0.005 || math.Abs(cv-0.1) > 0.005 {
		t.Errorf("factor mean %.4f cv %.4f, want 1 and 0.1", mean, cv)
	}
	a, b := newStepNoise(0.1, 7), newStepNoise(0.1, 7)
	for range 100 {
		if a.apply(time.Second) != b.apply(time.Second) {
			t.Fatal("the same seed must give the same factors")
		}
	}
}
