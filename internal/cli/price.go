package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/metrics"
)

// priceFlags price a run (summary.json "price", each level's cost): --gpu-price and --gpus
// for GPUs rented by the hour, --price-in and --price-out for a hosted API's per-token
// prices.
type priceFlags struct {
	fs                *pflag.FlagSet
	gpuPrice          float64
	gpus              int
	priceIn, priceOut float64
}

// bind adds the pricing flags: all four where the endpoint's price is the user's to say
// (run, report), --gpu-price alone where a simulated deployment says how many GPUs it has.
func (f *priceFlags) bind(fs specFlagSet, all bool) {
	f.fs = fs.FlagSet
	specVar(fs, fs.Float64Var, &f.gpuPrice, "gpu-price", 0, "USD per GPU-hour of the GPUs behind the endpoint: each level's cost per million output tokens, per 1,000 requests, ... (docs/metrics.md)", "Judge.Pricing.USDPerGPUHour",
		func(c specRun) []string { return ptrArg(c.Judge.Pricing.USDPerGPUHour) })
	if !all {
		return
	}
	specVar(fs, fs.IntVar, &f.gpus, "gpus", 1, "with --gpu-price: the GPUs behind the endpoint", "Judge.Pricing.GPUs",
		func(c specRun) []string { return num(c.Judge.Pricing.GPUs) })
	specVar(fs, fs.Float64Var, &f.priceIn, "price-in", 0, "a hosted API's price, USD per million input tokens (with --price-out; instead of --gpu-price)", "Judge.Pricing.Tokens",
		func(c specRun) []string {
			return tokenPrice(c, func(p metrics.TokenPrice) float64 { return p.USDPerMillionInput })
		})
	specVar(fs, fs.Float64Var, &f.priceOut, "price-out", 0, "a hosted API's price, USD per million output tokens (with --price-in)", "Judge.Pricing.Tokens",
		func(c specRun) []string {
			return tokenPrice(c, func(p metrics.TokenPrice) float64 { return p.USDPerMillionOutput })
		})
}

func (f *priceFlags) changed(name string) bool { return f.fs != nil && f.fs.Changed(name) }

// parse checks the pricing flags, reporting every problem.
func (f *priceFlags) parse() (bench.Pricing, error) {
	var p bench.Pricing
	var errs []error
	gpu, gpus := f.changed("gpu-price"), f.changed("gpus")
	in, out := f.changed("price-in"), f.changed("price-out")
	if (in || out) && (gpu || gpus) {
		errs = append(errs, errors.New("--price-in/--price-out (a hosted API's per-token prices) and --gpu-price/--gpus (GPUs rented by the hour) exclude each other: give one way to price the endpoint"))
	}
	var given []string // summary.json's price.source
	if gpu {
		given = append(given, "--gpu-price")
		if !metrics.ValidUSD(f.gpuPrice) || f.gpuPrice == 0 {
			errs = append(errs, fmt.Errorf("--gpu-price %v: must be a positive number of USD per GPU-hour, such as 3.5", f.gpuPrice))
		}
		p.USDPerGPUHour = &f.gpuPrice
	}
	if gpus {
		given = append(given, "--gpus")
		if f.gpus < 1 || f.gpus > metrics.MaxGPUs {
			errs = append(errs, fmt.Errorf("--gpus %d: must be in 1..%d", f.gpus, metrics.MaxGPUs))
		}
		p.GPUs = f.gpus
	}
	if in || out {
		given = append(given, "--price-in", "--price-out")
		if in != out {
			errs = append(errs, errors.New("--price-in and --price-out: give both (USD per million input and output tokens; 0 for a side that is free)"))
		}
		for _, v := range []struct {
			name string
			v    float64
		}{{"price-in", f.priceIn}, {"price-out", f.priceOut}} {
			if !metrics.ValidUSD(v.v) {
				errs = append(errs, fmt.Errorf("--%s %v: must be a number of USD per million tokens, 0 or more", v.name, v.v))
			}
		}
		if in && out && f.priceIn == 0 && f.priceOut == 0 {
			errs = append(errs, errors.New("--price-in 0 --price-out 0: everything would be free; leave both out for no cost figures"))
		}
		p.Tokens = &metrics.TokenPrice{USDPerMillionInput: f.priceIn, USDPerMillionOutput: f.priceOut}
	}
	p.Source = strings.Join(given, ", ")
	return p, errors.Join(errs...)
}

// price is bench.Pricing.Price, its invalid pricing a usage error.
func price(p bench.Pricing, def *metrics.Price, gpus int) (*metrics.Price, error) {
	pr, err := p.Price(def, gpus)
	return pr, invalidUsage(err)
}

// checkedPrice is pr as a summary.json may hold it, refused (naming the file) when it is
// not one llmbench writes.
func checkedPrice(pr *metrics.Price, file string) error {
	if pr == nil {
		return nil
	}
	if err := pr.Validate(); err != nil {
		return fmt.Errorf("%s: %w (give --gpu-price or --price-in and --price-out to re-price the run)", file, err)
	}
	return nil
}
