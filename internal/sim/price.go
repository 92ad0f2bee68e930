package sim

import "fmt"

// ListPrice is one GPU's on-demand list price for an hour, as a provider published it.
type ListPrice struct {
	USDPerHour float64
	Provider   string // who lists it, and which offer
	AsOf       string // when it was read, YYYY-MM-DD
}

// gpuListPrices are the GPU presets' on-demand prices, all from one provider so that the
// presets compare with one another: RunPod's Serverless "flex" rates, USD per second with no
// commitment (docs.runpod.io/serverless/pricing: A100 80 GB, H100 PRO, H200 PRO, B200,
// L40S, L4), times 3,600. They are at the high end of the GPU clouds' hourly rates and at or
// below the hyperscalers'; docs/simulator.md gives the range and why. A profile's
// gpu.usd_per_hour or --gpu-price replaces them.
var gpuListPrices = map[string]ListPrice{
	"a100": {USDPerHour: 0.00076 * 3600, Provider: "RunPod Serverless flex", AsOf: "2026-12-01"},
	"h100": {USDPerHour: 0.00116 * 3600, Provider: "RunPod Serverless flex", AsOf: "2026-12-01"},
	"h200": {USDPerHour: 0.00155 * 3600, Provider: "RunPod Serverless flex", AsOf: "2026-12-01"},
	"b200": {USDPerHour: 0.00240 * 3600, Provider: "RunPod Serverless flex", AsOf: "2026-12-01"},
	"l40s": {USDPerHour: 0.00053 * 3600, Provider: "RunPod Serverless flex", AsOf: "2026-12-01"},
	"l4":   {USDPerHour: 0.00019 * 3600, Provider: "RunPod Serverless flex", AsOf: "2026-12-02"},
}

// unpricedGPUs are the GPU presets the list prices' provider does not offer (on
// 2026-12-01): a plan prices them by --gpu-price or gpu.usd_per_hour, or ranks them by GPUs.
var unpricedGPUs = map[string]bool{"h200-nvl": true, "mi300x": true, "mi325x": true, "mi355x": true, "b300": true, "gb200": true, "h20": true, "a10g": true, "rtx-pro-6000": true}

// GPUListPrice returns a GPU preset's list price by name.
func GPUListPrice(name string) (ListPrice, bool) { lp, ok := gpuListPrices[name]; return lp, ok }

// USDPerGPUHour is what one of the profile's GPUs costs an hour: its gpu.usd_per_hour, else
// its preset's list price; 0 for a GPU of its own figures without a price.
func (p Profile) USDPerGPUHour() float64 {
	usd, _ := p.gpuPrice()
	return usd
}

// PriceSource says where USDPerGPUHour comes from, for the summary's price; "" without one.
func (p Profile) PriceSource() string {
	_, src := p.gpuPrice()
	return src
}

func (p Profile) gpuPrice() (usd float64, source string) {
	if p.GPU.USDPerHour > 0 {
		return p.GPU.USDPerHour, fmt.Sprintf("gpu.usd_per_hour of profile %s", p.Name)
	}
	// Only the preset itself has its list price: a GPU of other figures that took its name
	// is another part.
	if pg, ok := gpuPresets[p.GPU.Name]; ok && pg.samePart(p.GPU) {
		lp := gpuListPrices[p.GPU.Name]
		return lp.USDPerHour, fmt.Sprintf("%s list price (%s, %s), profile %s", p.GPU.Name, lp.Provider, lp.AsOf, p.Name)
	}
	return 0, ""
}
