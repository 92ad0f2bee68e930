package calibrate

import (
	"context"
	"fmt"
	"testing"

	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/sim"
)

// A held-out fit knows what the server published: the closed loop of 8 held out of a
// ladder on 4 slots queues in its prediction as it did on the server.
func TestHeldOutFitKeepsPublishedSlots(t *testing.T) {
	truth, _ := sim.LoadProfile("textbook")
	truth.Engine.Prefill = sim.PrefillColocated
	truth.Engine.MaxNumSeqs = 4
	truth.Engine.MaxBatchedTokens = 2048
	truth.Engine.KVCacheTokens = 8192
	truth.Cost = sim.CostConfig{Kind: sim.CostLinear, PrefillMsPerToken: 0.05, DecodeStepMs: 3, DecodeGrowth: 0.3}
	truth.Network.RTTMs = 0.5
	var loads []probeLoad
	for _, n := range []int{32, 128, 512, 1024} {
		loads = append(loads, probeLoad{name: fmt.Sprintf("prefill-%d", n), c: 1, n: 8, lengths: [][2]int{{n, 16}}})
	}
	for _, c := range []int{1, 2, 4, 8} {
		loads = append(loads, probeLoad{name: fmt.Sprintf("decode-c%d", c), c: c, n: 4 * c, lengths: [][2]int{{32, 64}}})
	}
	pts := measure(t, truth, loads)
	res, err := Fit(context.Background(), pts, Source{URL: "test"}, Options{Seed: 1,
		Server: Published{Slots: 4, SeqTokens: 2048, ContextTokens: 8192, How: "test /props"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Points {
		t.Logf("%-12s held=%v ttft %.2f/%.2f/%.2f", p.Name, p.HeldOut, p.Measured[figure.TTFTP50], p.Predicted[figure.TTFTP50], p.Validation[figure.TTFTP50])
		if p.Name == "decode-c8" && p.HeldOut {
			if m, v := p.Measured[figure.TTFTP50], p.Validation[figure.TTFTP50]; v < m/2 {
				t.Errorf("held-out c8 TTFT P50 predicted %.1f ms, measured %.1f: the held-out fit ignored the 4 published slots", v, m)
			}
		}
	}
	if got := res.Profile.Engine.MaxNumSeqs; got != 4 {
		t.Errorf("max_num_seqs %d, want the published 4", got)
	}
	if got := res.Profile.Engine.KVCacheTokens; got != 8192 {
		t.Errorf("kv_cache_tokens %d, want 8192", got)
	}
}

// A server that publishes its slots prefills in the batch its slots decode in: no fit of
// it, held-out or full, takes it for a disaggregated one, which would prefill a request
// queued for a slot at once.
func TestPublishedSlotsAreColocated(t *testing.T) {
	truth, _ := sim.LoadProfile("textbook")
	truth.Engine.Prefill = sim.PrefillDisaggregated
	truth.Engine.MaxNumSeqs = 4
	truth.Cost = sim.CostConfig{Kind: sim.CostLinear, PrefillMsPerToken: 0.2, DecodeStepMs: 3, DecodeGrowth: 0.3}
	truth.Network.RTTMs = 0.5
	var loads []probeLoad
	for _, n := range []int{32, 128, 512, 1024} {
		loads = append(loads, probeLoad{name: fmt.Sprintf("prefill-%d", n), c: 1, n: 6, lengths: [][2]int{{n, 16}}})
	}
	for _, c := range []int{1, 2, 4} {
		loads = append(loads, probeLoad{name: fmt.Sprintf("decode-c%d", c), c: c, n: 4 * c, lengths: [][2]int{{32, 64}}})
	}
	loads = append(loads, probeLoad{name: "mixed", c: 4, n: 12, lengths: [][2]int{{32, 200}, {32, 200}, {32, 200}, {2000, 1}}})
	pts := measure(t, truth, loads)
	for _, pub := range []Published{{}, {Slots: 4, SeqTokens: 4096, ContextTokens: 16384, How: "test /props"}} {
		res, err := Fit(context.Background(), pts, Source{URL: "test"}, Options{Seed: 1, Server: pub})
		if err != nil {
			t.Fatal(err)
		}
		got := res.Profile.Engine.Prefill
		t.Logf("published %d slots: prefill %s (%s)", pub.Slots, got, howOf(res.Settings, "engine.prefill"))
		if pub.Slots > 0 && got != sim.PrefillColocated {
			t.Errorf("published slots: engine.prefill %s, want colocated", got)
		}
	}
}
