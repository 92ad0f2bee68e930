package sim

import (
	"regexp"
	"strings"
	"testing"
)

// Every GPU preset has a dated list price, and a profile on a preset is priced at it.
func TestEveryPresetHasAListPrice(t *testing.T) {
	date := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	for _, name := range GPUPresets() {
		lp, ok := GPUListPrice(name)
		if unpricedGPUs[name] {
			if ok {
				t.Errorf("%s: listed unpriced, with a list price %+v", name, lp)
			}
			continue
		}
		if !ok || !(lp.USDPerHour > 0) || lp.Provider == "" || !date.MatchString(lp.AsOf) {
			t.Errorf("%s: list price %+v", name, lp)
			continue
		}
		p := writeProfile(t, "gpu: "+name+"\n")
		pr, err := LoadProfile(p)
		if err != nil {
			t.Fatalf("gpu: %s: %v", name, err)
		}
		if pr.USDPerGPUHour() != lp.USDPerHour || pr.GPUs() != 1 || !strings.Contains(pr.PriceSource(), lp.AsOf) {
			t.Errorf("gpu: %s: %v USD × %d GPUs (%s), want the list price %v", name, pr.USDPerGPUHour(), pr.GPUs(), pr.PriceSource(), lp.USDPerHour)
		}
	}
	if len(gpuListPrices)+len(unpricedGPUs) != len(gpuPresets) {
		t.Errorf("%d list prices for %d GPU presets", len(gpuListPrices), len(gpuPresets))
	}
}

// gpu.usd_per_hour prices a GPU of the profile's own figures, and overrides a preset's; a GPU
// of other figures under a preset's name has no list price; bad values name key and line.
func TestProfileGPUPrice(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		usd  float64
	}{
		{"gpu:\n  tflops: 500\n  bandwidth_gbps: 2000\n  memory_gb: 80\n  usd_per_hour: 1.25\n", 1.25},
		{"gpu:\n  tflops: 500\n  bandwidth_gbps: 2000\n  memory_gb: 80\n", 0},
		{"gpu:\n  name: h100\n  tflops: 500\n  bandwidth_gbps: 2000\n  memory_gb: 80\n", 0},
		{"gpu:\n  name: h100\n  tflops: 989\n  bandwidth_gbps: 3350\n  memory_gb: 85.520809984\n  sms: 132\n", gpuListPrices["h100"].USDPerHour},
		{"gpu:\n  name: h100\n  tflops: 989\n  bandwidth_gbps: 3350\n  memory_gb: 85.520809984\n  sms: 132\n  usd_per_hour: 2\n", 2},
	} {
		p, err := ParseProfile([]byte(tc.yaml), "")
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		if got := p.USDPerGPUHour(); got != tc.usd {
			t.Errorf("%s: %v USD per GPU-hour, want %v", tc.yaml, got, tc.usd)
		}
		if (p.PriceSource() == "") != (tc.usd == 0) {
			t.Errorf("%s: source %q", tc.yaml, p.PriceSource())
		}
	}
	for yaml, want := range map[string]string{
		"gpu:\n  tflops: 500\n  bandwidth_gbps: 2000\n  memory_gb: 80\n  usd_per_hour: cheap\n": `line 5: gpu.usd_per_hour: want a number, got "cheap"`,
		"gpu:\n  tflops: 500\n  bandwidth_gbps: 2000\n  memory_gb: 80\n  usd_per_hour: -1\n":    "gpu.usd_per_hour: must be a number in [0, 10000]",
		"gpu:\n  tflops: 500\n  bandwidth_gbps: 2000\n  memory_gb: 80\n  usd_per_hour: 1e9\n":   "gpu.usd_per_hour: must be a number in [0, 10000]",
	} {
		if _, err := ParseProfile([]byte(yaml), ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", yaml, err, want)
		}
	}
}
