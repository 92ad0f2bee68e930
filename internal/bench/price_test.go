package bench

import (
	"errors"
	"slices"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/sim"
)

// The given price wins over the default for what they give, the default's GPUs or price
// fill the rest, and a GPU count with no GPU price anywhere is invalid.
func TestPricingPrice(t *testing.T) {
	usd := 2.0
	def := &metrics.Price{GPU: &metrics.GPUPrice{USDPerGPUHour: 3, GPUs: 8}, Source: "profile x"}
	if pr, err := (Pricing{USDPerGPUHour: &usd, Source: "given"}).Price(def, 1); err != nil || pr.GPU.USDPerGPUHour != 2 || pr.GPU.GPUs != 8 || pr.Source != "given over profile x" {
		t.Errorf("a GPU price over a profile's: %+v, %v", pr, err)
	}
	if pr, err := (Pricing{}).Price(def, 1); err != nil || pr != def {
		t.Errorf("none given: %+v, %v", pr, err)
	}
	var invalid *InvalidError
	if _, err := (Pricing{GPUs: 4}).Price(nil, 1); !errors.As(err, &invalid) || !isField(err, "Pricing.GPUs,Pricing.USDPerGPUHour") {
		t.Errorf("a GPU count alone: %v", err)
	}
	tok := &metrics.TokenPrice{USDPerMillionInput: 1, USDPerMillionOutput: 2}
	if pr, err := (Pricing{Tokens: tok}).Price(def, 1); err != nil || *pr.Tokens != *tok || pr.GPU != nil {
		t.Errorf("per-token prices: %+v, %v", pr, err)
	}
}

// A profile takes its GPUs' list price, where it has one.
func TestPriceProfile(t *testing.T) {
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	var s Spec
	if err := s.PriceProfile(p); err != nil {
		t.Fatal(err)
	}
	if (s.Judge.Price == nil) != (ProfilePrice(p) == nil) {
		t.Errorf("price %+v, the profile's %+v", s.Judge.Price, ProfilePrice(p))
	}
}

// TestPricesGiven: the prices given become a Pricing, or each of their problems on the
// fields at fault: the two ways to price together, a price a price may not state, one
// per-token price without the other, both free.
func TestPricesGiven(t *testing.T) {
	usd, zero, neg, gpus, none := 3.5, 0.0, -1.0, 8, 0
	for _, c := range []struct {
		given  PricesGiven
		fields []string
	}{
		{PricesGiven{USDPerGPUHour: &usd, GPUs: &gpus}, nil},
		{PricesGiven{USDPerMillionInput: &zero, USDPerMillionOutput: &usd}, nil},
		{PricesGiven{USDPerGPUHour: &zero, GPUs: &none}, []string{"Pricing.USDPerGPUHour", "Pricing.GPUs"}},
		{PricesGiven{GPUs: &gpus, USDPerMillionInput: &neg}, []string{"Pricing.Tokens,Pricing.USDPerGPUHour", "Pricing.Tokens", "Pricing.Tokens.USDPerMillionInput"}},
		{PricesGiven{USDPerMillionInput: &zero, USDPerMillionOutput: &zero}, []string{"Pricing.Tokens.USDPerMillionInput,Pricing.Tokens.USDPerMillionOutput"}},
	} {
		p, err := c.given.Pricing()
		if fields := fielderr.Fields(err); !slices.Equal(fields, c.fields) {
			t.Errorf("%+v: fields %v, want %v (%v)", c.given, fields, c.fields, err)
		}
		if err == nil && (p.USDPerGPUHour != c.given.USDPerGPUHour || (c.given.GPUs != nil && p.GPUs != *c.given.GPUs) ||
			(c.given.USDPerMillionOutput != nil && (p.Tokens == nil || p.Tokens.USDPerMillionOutput != *c.given.USDPerMillionOutput))) {
			t.Errorf("%+v: pricing %+v", c.given, p)
		}
	}
}
