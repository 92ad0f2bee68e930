package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

// A step's load is its compute-bound share plus MemoryBoundDraw of its memory-bound share:
// a big prefill (compute-bound) draws nearly the board's limit, a one-sequence decode
// (weights read from memory) about halfway, and launch overheads nothing.
func TestStepLoad(t *testing.T) {
	p, err := LoadProfile("h200-llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := p.NewCostModel()
	if err != nil {
		t.Fatal(err)
	}
	prefill := StepWork{PrefillSeqs: 1, PrefillTokens: 8192, PrefillAttn: 8192 * 8192 / 2}
	d, share, gpu := stepAndShare(cm, prefill)
	if !gpu || d != cm.Step(prefill) || !(share > 0.9 && share <= 1) {
		t.Errorf("8k prefill: %v (Step %v), load %.3f, want above 0.9", d, cm.Step(prefill), share)
	}
	decode := StepWork{DecodeSeqs: 1, DecodeContext: 512}
	d, share, _ = stepAndShare(cm, decode)
	// Memory-bound: about MemoryBoundDraw, a little above it for the small share of the
	// step its compute does not hide (RooflineParams.Overlap).
	if d != cm.Step(decode) || !(share > 0.3 && share <= MemoryBoundDraw*1.05) {
		t.Errorf("one decode: load %.3f, want memory-bound, at most %g", share, MemoryBoundDraw*1.05)
	}
	lin, _ := LoadProfile("textbook")
	lm, _ := lin.NewCostModel()
	if _, _, gpu := stepAndShare(lm, decode); gpu {
		t.Error("the linear model was taken for a GPU")
	}
	// Tensor parallel: the shard's load over the step with its all-reduces.
	p.Deployment.TP = 2
	tm, err := p.NewCostModel()
	if err != nil {
		t.Fatal(err)
	}
	tp := tm.(*TensorParallel)
	d, share, gpu = stepAndShare(tm, decode)
	sd, sshare, _ := stepAndShare(tp.Shard, decode)
	if !gpu || d != tm.Step(decode) || math.Abs(share-sshare*float64(sd)/float64(d)) > 1e-12 {
		t.Errorf("tp 2: %v load %.3f, shard %v load %.3f", d, share, sd, sshare)
	}
}

// Energy is idle power over the span on every GPU plus the dynamic power over the busy
// time on each replica's GPUs: an idle deployment draws its idle power, and one busy all the
// time its limit.
func TestEstimateEnergy(t *testing.T) {
	p, _ := LoadProfile("h200-llama-3.1-8b")
	p.Deployment.TP, p.Deployment.Replicas = 2, 3
	span := 10 * time.Second
	idle, ok := EstimateEnergy(p, 0, 0, span)
	if !ok || idle.GPUs != 6 || math.Abs(idle.PowerW-6*p.GPU.IdlePowerW) > 1e-9 {
		t.Errorf("idle: %+v, want 6 GPUs at %g W", idle, p.GPU.IdlePowerW)
	}
	full, _ := EstimateEnergy(p, 3*span.Seconds(), 1000, span) // every replica busy throughout
	if math.Abs(full.PowerW-6*p.GPU.PowerW) > 1e-6 || math.Abs(full.Joules-6*p.GPU.PowerW*10) > 1e-6 || full.Tokens != 1000 {
		t.Errorf("busy: %+v, want 6 GPUs at %g W", full, p.GPU.PowerW)
	}
	p.GPU.PowerW = 0
	if _, ok := EstimateEnergy(p, 1, 1, span); ok {
		t.Error("a GPU of no stated power got an estimate")
	}
}

// The engine adds up its steps' busy time: a virtual run's BusySeconds is each step's
// load times its length, at most its StepSeconds.
func TestEngineCountsBusyTime(t *testing.T) {
	p, _ := LoadProfile("h200-llama-3.1-8b")
	v, err := NewVirtual(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := v.Submit(uint64(i), 1024, nil, 64, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	v.Kick(0)
	for {
		at, ok := v.Next()
		if !ok {
			break
		}
		v.Process(at, func(uint64, time.Duration, int, bool) {})
		v.Kick(at)
	}
	st := v.Stats()
	busy, tokens := v.Busy()
	if !(st.StepSeconds > 0 && st.BusySeconds > 0 && st.BusySeconds < st.StepSeconds) || busy != st.BusySeconds || tokens != 4*64 {
		t.Errorf("stats %+v, busy %g, tokens %d", st, busy, tokens)
	}
}

func TestGPUPowerValidated(t *testing.T) {
	g, _ := GPUPreset("h100")
	if g.PowerW != 700 || !(g.IdlePowerW > 0 && g.IdlePowerW < g.PowerW) {
		t.Errorf("h100 preset power %g / idle %g", g.PowerW, g.IdlePowerW)
	}
	g.IdlePowerW = 800
	if err := g.validate(); err == nil {
		t.Error("idle above the limit accepted")
	}
	g.PowerW, g.IdlePowerW = -1, 0
	if err := g.validate(); err == nil {
		t.Error("negative power accepted")
	}
}

// A profile carrying its calibration's measured power uses it, on any cost model, and writes
// it back.
func TestMeasuredPowerProfile(t *testing.T) {
	p, err := ParseProfile([]byte("cost: {kind: linear, prefill_ms_per_token: 0.02, decode_step_ms: 8, decode_growth: 0.1}\npower: {watts_per_gpu: 450, gpus: 4, source: probe}\ndeployment: {replicas: 2}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	en, ok := EstimateEnergy(p, 0, 100, 10*time.Second)
	if !ok || !en.Measured || en.GPUs != 8 || math.Abs(en.PowerW-8*450) > 1e-9 {
		t.Errorf("measured: %+v %v, want 8 GPUs at 450 W", en, ok)
	}
	back, err := ParseProfile(p.YAML(""), ".")
	if err != nil || back.Power != p.Power {
		t.Errorf("written and read back: %+v (%v), want %+v", back.Power, err, p.Power)
	}
	if _, err := ParseProfile([]byte("power: {watts_per_gpu: -1}\n"), "."); err == nil || !strings.Contains(err.Error(), "power.watts_per_gpu") {
		t.Errorf("a negative power: %v", err)
	}
}
