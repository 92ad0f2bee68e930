package sim

import "time"

// The power estimate. A GPU draws IdlePowerW plus (PowerW − IdlePowerW) times its load: each
// engine step's time bound by compute counts whole, its time bound by memory bandwidth
// MemoryBoundDraw of it, and its launch and scheduling overheads (and the time between steps)
// nothing; so a step all compute-bound draws the board's limit, and an idle GPU its idle
// draw. It is an estimate from the cost model, not a measurement: what it leaves out (clocks
// below the limit under a memory-bound load, the host, fans, networking) is in
// docs/simulator.md, "Energy". A disaggregated prefill pool's GPUs are not counted.

// MemoryBoundDraw is the share of the dynamic power (PowerW − IdlePowerW) a GPU draws while
// its work is bound by memory bandwidth: an assumption, stated (docs/simulator.md#energy),
// that HBM-bound decode at full bandwidth draws about half the way from idle to the limit.
const MemoryBoundDraw = 0.5

// stepAndShare is step w's duration under cost model c (c.Step(w)) and its load (the share
// of the dynamic power it draws), computed once; gpu is false for a model of no GPU (linear,
// table), whose share is 0.
func stepAndShare(c CostModel, w StepWork) (d time.Duration, share float64, gpu bool) {
	switch m := c.(type) {
	case *Roofline:
		over, work, comp := m.parts(w)
		if over+work > 0 {
			share = (comp + MemoryBoundDraw*(work-comp)) / (over + work)
		}
		return nanos(over + work), share, true
	case paced:
		d, share, gpu = stepAndShare(m.CostModel, w)
		return nanos(float64(d) * m.f), share, gpu
	case *TensorParallel:
		// Each GPU runs its shard's step, then waits on the all-reduces, which count as
		// no load (TensorParallel.Step's sum, as it makes it).
		sd, sshare, sgpu := stepAndShare(m.Shard, w)
		if sd == 0 {
			return 0, 0, sgpu
		}
		d = nanos(float64(sd) + float64(m.AllReduce(w.DecodeSeqs+w.PrefillTokens)))
		return d, sshare * float64(sd) / float64(d), sgpu
	}
	return c.Step(w), 0, false
}

// PowerConfig is the power a calibration's probe measured (run --gpu-metrics): each GPU's
// mean power over the probe's levels, the probed server's GPUs (one replica's; 0: the
// deployment's TP × DP), and where it came from. It replaces the cost model's estimate.
type PowerConfig struct {
	WattsPerGPU float64
	GPUs        int
	Source      string
}

// maxGPUsMeasured bounds power.gpus: a replica of a thousand GPUs is none we measure.
const maxGPUsMeasured = 1000

// Energy is a deployment's estimated GPU energy over a span.
type Energy struct {
	GPUs     int           // every GPU of the deployment
	Measured bool          // from the profile's measured power, not the cost model
	Span     time.Duration // the span it is over
	Joules   float64
	PowerW   float64 // Joules / Span: the GPUs' mean power together
	Tokens   uint64  // output tokens generated in the span
	PerGPUW  float64
}

// EstimateEnergy is profile p's GPU energy over span whose engines were busy for busy
// roofline-seconds in all (EngineStats.BusySeconds, summed over replicas) and generated
// tokens; false when p's GPU states no power (or models none).
func EstimateEnergy(p Profile, busy float64, tokens uint64, span time.Duration) (Energy, bool) {
	if w := p.Power; w.WattsPerGPU > 0 && span > 0 {
		// The probe's measured mean, busy and idle together, on each replica's GPUs.
		per := w.GPUs
		if per == 0 {
			per = p.Deployment.tp() * p.Deployment.dp()
		}
		gpus := per * p.Deployment.replicas()
		j := float64(gpus) * w.WattsPerGPU * span.Seconds()
		return Energy{GPUs: gpus, Measured: true, Span: span, Joules: j, PowerW: j / span.Seconds(), Tokens: tokens, PerGPUW: w.WattsPerGPU}, true
	}
	g := p.GPU
	if g.PowerW <= 0 || span <= 0 || p.Cost.Kind != CostRoofline {
		return Energy{}, false
	}
	perReplica := p.Deployment.tp() * p.Deployment.dp()
	gpus := p.GPUs()
	j := float64(gpus)*g.IdlePowerW*span.Seconds() + float64(perReplica)*(g.PowerW-g.IdlePowerW)*busy
	e := Energy{GPUs: gpus, Span: span, Joules: j, PowerW: j / span.Seconds(), Tokens: tokens}
	e.PerGPUW = e.PowerW / float64(gpus)
	return e, true
}
