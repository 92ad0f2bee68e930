package bench

import (
	"errors"
	"testing"

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
