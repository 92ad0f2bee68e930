package bench

import (
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/sim"
)

// Price is the run's price: p's, over def (the profile's, or the price a past run stored)
// for what p leaves out; nil when neither gives one. gpus is the GPU count when neither p
// nor def gives one (a simulated deployment's own). A GPU count alone needs a GPU price from
// def: without one it is an *InvalidError of the fields' (a *fielderr.Error). The price's
// Source is p's over def's, for the part def gives.
func (p Pricing) Price(def *metrics.Price, gpus int) (*metrics.Price, error) {
	switch {
	case p.Tokens != nil:
		t := *p.Tokens
		return &metrics.Price{Tokens: &t, Source: p.Source}, nil
	case p.USDPerGPUHour == nil && p.GPUs == 0:
		return def, nil
	}
	g := metrics.GPUPrice{GPUs: gpus}
	if def != nil && def.GPU != nil {
		g = *def.GPU
	}
	if p.USDPerGPUHour != nil {
		g.USDPerGPUHour = *p.USDPerGPUHour
	} else if g.USDPerGPUHour == 0 {
		return nil, &InvalidError{fielderr.New("Pricing.GPUs,Pricing.USDPerGPUHour", "the USD one of the GPUs costs an hour")}
	}
	if p.GPUs > 0 {
		g.GPUs = p.GPUs
	}
	src := p.Source
	if def != nil && def.GPU != nil && (p.USDPerGPUHour == nil || p.GPUs == 0) {
		src += " over " + def.Source
	}
	return &metrics.Price{GPU: &g, Source: src}, nil
}

// ProfilePrice is a simulated deployment's price: its GPUs at their price per GPU-hour (the
// profile's gpu.usd_per_hour or the preset's list price); nil for a GPU without a price.
func ProfilePrice(p sim.Profile) *metrics.Price {
	usd := p.USDPerGPUHour()
	if usd <= 0 {
		return nil
	}
	return &metrics.Price{GPU: &metrics.GPUPrice{USDPerGPUHour: usd, GPUs: p.GPUs()}, Source: p.PriceSource()}
}

// PriceProfile prices a run on simulated deployment p (Judge.Price): Pricing over the
// profile's own price; nil when neither gives one.
func (s *Spec) PriceProfile(p sim.Profile) (err error) {
	s.Judge.Price, err = s.Judge.Pricing.Price(ProfilePrice(p), p.GPUs())
	return err
}
