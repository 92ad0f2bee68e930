package bench

import (
	"errors"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/sim"
)

// PricesGiven are a run's prices as given, each nil when not: a price per GPU-hour and a
// GPU count (GPUs rented by the hour), or per-token prices (a hosted API's).
type PricesGiven struct {
	USDPerGPUHour                           *float64
	GPUs                                    *int
	USDPerMillionInput, USDPerMillionOutput *float64
}

// Pricing is the run's Pricing of the prices given (its Source the caller's to say), and
// every problem with them, each a *fielderr.Error on Pricing's fields: the two ways to
// price exclude each other, and each price is a number a price may state
// (metrics.ValidUSD).
func (g PricesGiven) Pricing() (Pricing, error) {
	var p Pricing
	var errs []error
	gpu, tokens := g.USDPerGPUHour != nil || g.GPUs != nil, g.USDPerMillionInput != nil || g.USDPerMillionOutput != nil
	if gpu && tokens {
		errs = append(errs, fielderr.New("Pricing.Tokens,Pricing.USDPerGPUHour", "exclude each other: give one way to price the endpoint"))
	}
	if usd := g.USDPerGPUHour; usd != nil {
		if !metrics.ValidUSD(*usd) || *usd == 0 {
			errs = append(errs, fielderr.New("Pricing.USDPerGPUHour", "%v: must be a positive number of USD per GPU-hour, such as 3.5", *usd))
		}
		p.USDPerGPUHour = usd
	}
	if n := g.GPUs; n != nil {
		if *n < 1 || *n > metrics.MaxGPUs {
			errs = append(errs, fielderr.New("Pricing.GPUs", "%d: must be in 1..%d", *n, metrics.MaxGPUs))
		}
		p.GPUs = *n
	}
	if !tokens {
		return p, errors.Join(errs...)
	}
	if (g.USDPerMillionInput == nil) != (g.USDPerMillionOutput == nil) {
		errs = append(errs, fielderr.New("Pricing.Tokens", "give both (USD per million input and output tokens; 0 for a side that is free)"))
	}
	t := metrics.TokenPrice{}
	for _, side := range []struct {
		field string
		given *float64
		usd   *float64
	}{{"Pricing.Tokens.USDPerMillionInput", g.USDPerMillionInput, &t.USDPerMillionInput}, {"Pricing.Tokens.USDPerMillionOutput", g.USDPerMillionOutput, &t.USDPerMillionOutput}} {
		if side.given != nil {
			*side.usd = *side.given
		}
		if !metrics.ValidUSD(*side.usd) {
			errs = append(errs, fielderr.New(side.field, "%v: must be a number of USD per million tokens, 0 or more", *side.usd))
		}
	}
	if g.USDPerMillionInput != nil && g.USDPerMillionOutput != nil && t == (metrics.TokenPrice{}) {
		errs = append(errs, fielderr.New("Pricing.Tokens.USDPerMillionInput,Pricing.Tokens.USDPerMillionOutput", "everything would be free; leave both out for no cost figures"))
	}
	p.Tokens = &t
	return p, errors.Join(errs...)
}

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
