package specflags

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
)

// Prices are the flags that price a run (summary.json "price", each level's cost):
// --gpu-price and --gpus for GPUs rented by the hour, --price-in and --price-out for a
// hosted API's per-token prices.
type Prices struct {
	fs                *pflag.FlagSet
	gpuPrice          float64
	gpus              int
	priceIn, priceOut float64
}

// bind adds the pricing flags: all four where the endpoint's price is the user's to say
// (run, report), --gpu-price alone where a simulated deployment says how many GPUs it has.
func (f *Prices) bind(fs specFlagSet, all bool) {
	f.fs = fs.FlagSet
	specVar(fs, fs.Float64Var, &f.gpuPrice, "gpu-price", 0, "USD per GPU-hour of the GPUs behind the endpoint: each level's cost per million output tokens, per 1,000 requests, ... (docs/metrics.md)", "Judge.Pricing.USDPerGPUHour",
		func(c specRun) []string { return ptrArg(c.Judge.Pricing.USDPerGPUHour) })
	if !all {
		return
	}
	specVar(fs, fs.IntVar, &f.gpus, "gpus", 1, "with --gpu-price: the GPUs behind the endpoint", "Judge.Pricing.GPUs",
		func(c specRun) []string { return Num(c.Judge.Pricing.GPUs) })
	specVar(fs, fs.Float64Var, &f.priceIn, "price-in", 0, "a hosted API's price, USD per million input tokens (with --price-out; instead of --gpu-price)", "Judge.Pricing.Tokens",
		func(c specRun) []string {
			return tokenPrice(c, func(p metrics.TokenPrice) float64 { return p.USDPerMillionInput })
		})
	specVar(fs, fs.Float64Var, &f.priceOut, "price-out", 0, "a hosted API's price, USD per million output tokens (with --price-in)", "Judge.Pricing.Tokens",
		func(c specRun) []string {
			return tokenPrice(c, func(p metrics.TokenPrice) float64 { return p.USDPerMillionOutput })
		})
}

// Bind binds all four pricing flags, for a command that prices a run already made (report).
func (f *Prices) Bind(fs *pflag.FlagSet) { f.bind(newSpecFlagSet(fs), true) }

func (f *Prices) changed(name string) bool { return f.fs != nil && f.fs.Changed(name) }

// Parse reads the pricing flags given (bench.PricesGiven), reporting every problem.
func (f *Prices) Parse() (bench.Pricing, error) {
	p, err := bench.PricesGiven{USDPerGPUHour: given(f, "gpu-price", &f.gpuPrice), GPUs: given(f, "gpus", &f.gpus),
		USDPerMillionInput: given(f, "price-in", &f.priceIn), USDPerMillionOutput: given(f, "price-out", &f.priceOut)}.Pricing()
	var names []string // summary.json's price.source
	for _, name := range []string{"gpu-price", "gpus", "price-in", "price-out"} {
		if f.changed(name) {
			names = append(names, "--"+name)
		}
	}
	p.Source = strings.Join(names, ", ")
	var errs []error
	for _, e := range fielderr.Split(err) {
		var field *fielderr.Error
		if errors.As(e, &field) && priceMessages[field.Field] != "" {
			e = fmt.Errorf(priceMessages[field.Field], field.Err)
		}
		errs = append(errs, e)
	}
	return p, errors.Join(errs...)
}

// given is v when the flag name was given, else nil.
func given[T any](f *Prices, name string, v *T) *T {
	if f.changed(name) {
		return v
	}
	return nil
}

// priceMessages say bench.PricesGiven's problems, by field, as the flags that set those
// fields do (%v: bench's words).
var priceMessages = map[string]string{
	"Pricing.Tokens,Pricing.USDPerGPUHour": "--price-in/--price-out (a hosted API's per-token prices) and --gpu-price/--gpus (GPUs rented by the hour) %v",
	"Pricing.USDPerGPUHour":                "--gpu-price %v", "Pricing.GPUs": "--gpus %v",
	"Pricing.Tokens":                    "--price-in and --price-out: %v",
	"Pricing.Tokens.USDPerMillionInput": "--price-in %v", "Pricing.Tokens.USDPerMillionOutput": "--price-out %v",
	"Pricing.Tokens.USDPerMillionInput,Pricing.Tokens.USDPerMillionOutput": "--price-in 0 --price-out 0: %v",
}

// Price is bench.Pricing.Price, its invalid pricing said by the flags (Invalid).
func Price(p bench.Pricing, def *metrics.Price, gpus int) (*metrics.Price, error) {
	pr, err := p.Price(def, gpus)
	if invalid := Invalid(err); invalid != nil {
		return pr, invalid
	}
	return pr, err
}
