package metrics

import (
	"errors"
	"fmt"
	"math"
)

// Price is what the capacity behind the endpoint costs (summary.json "price"): GPUs rented
// by the hour, or a hosted API's prices per token. Exactly one of GPU and Tokens is set.
type Price struct {
	GPU    *GPUPrice   `json:"gpu,omitempty"`
	Tokens *TokenPrice `json:"tokens,omitempty"`
	// Source says where the price came from ("--gpu-price", a profile's GPU list price and
	// its date), for the reader of a report.
	Source string `json:"source"`
}

// GPUPrice is GPUs rented by the hour: the endpoint costs USDPerGPUHour × GPUs an hour,
// whatever it serves.
type GPUPrice struct {
	USDPerGPUHour float64 `json:"usd_per_gpu_hour"`
	GPUs          int     `json:"gpus"`
}

// TokenPrice is a hosted API's list price, USD per million input and output tokens: the
// endpoint costs what its completed requests' tokens are billed.
type TokenPrice struct {
	USDPerMillionInput  float64 `json:"usd_per_million_input_tokens"`
	USDPerMillionOutput float64 `json:"usd_per_million_output_tokens"`
}

// MaxGPUs bounds a price's GPU count: far beyond any deployment, and a count whose price
// stays finite.
const MaxGPUs = 1_000_000

// Validate reports every problem with the price at once.
func (p Price) Validate() error {
	var errs []error
	switch {
	case p.GPU != nil && p.Tokens != nil:
		errs = append(errs, errors.New("price: a GPU price and per-token prices exclude each other (give one)"))
	case p.GPU == nil && p.Tokens == nil:
		errs = append(errs, errors.New("price: neither a GPU price nor per-token prices"))
	}
	if g := p.GPU; g != nil {
		if !ValidUSD(g.USDPerGPUHour) || g.USDPerGPUHour == 0 {
			errs = append(errs, fmt.Errorf("price: %v USD per GPU-hour must be a positive number of at most 1e9", g.USDPerGPUHour))
		}
		if g.GPUs < 1 || g.GPUs > MaxGPUs {
			errs = append(errs, fmt.Errorf("price: %d GPUs must be in 1..%d", g.GPUs, MaxGPUs))
		}
	}
	if t := p.Tokens; t != nil {
		if !ValidUSD(t.USDPerMillionInput) || !ValidUSD(t.USDPerMillionOutput) {
			errs = append(errs, fmt.Errorf("price: %v and %v USD per million input and output tokens must each be a number in [0, 1e9]", t.USDPerMillionInput, t.USDPerMillionOutput))
		} else if t.USDPerMillionInput == 0 && t.USDPerMillionOutput == 0 {
			errs = append(errs, errors.New("price: per-token prices of 0 for input and output make everything free"))
		}
	}
	return errors.Join(errs...)
}

// ValidUSD says whether v is an amount a price may state: a finite number in [0, 1e9].
func ValidUSD(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v <= 1e9 }

// Cost is what one level's work cost at a Price (summary.json levels[i].cost), in USD. Each
// figure is the level's cost rate over its throughput of that unit: USDPerHour / (3,600 ×
// units per second) × units priced. The throughputs are the level's own, over its measured
// window (docs/metrics.md). A figure is null when the level produced none of its unit (no
// price buys one): no output tokens, no completed request, or no good one — and the good
// figure also when no per-request SLO bound was given (nothing then sets a good request
// apart from a completed one).
type Cost struct {
	PerMillionOutputTokens *float64 `json:"per_million_output_tokens"`
	PerMillionTokens       *float64 `json:"per_million_tokens"` // input and output
	Per1kRequests          *float64 `json:"per_1k_requests"`
	// PerMillionGoodOutputTokens counts only the output tokens of requests that met every
	// per-request SLO (goodput_token_throughput): the cost of meeting the SLA.
	PerMillionGoodOutputTokens *float64 `json:"per_million_good_output_tokens"`
	// PerTask is an agentic level's cost per completed task (also levels[i].tasks.cost_per_task);
	// absent for other levels.
	PerTask *float64 `json:"per_task,omitempty"`
	// USDPerHour is what the endpoint cost an hour: GPUs × their price, or with per-token
	// prices the rate the level's tokens were billed at over its window.
	USDPerHour float64 `json:"usd_per_hour"`
	GPUs       int     `json:"gpus"` // 0 with per-token prices
}

// Cost is lv's cost at p, lv aggregated with slos; nil when p is nil (the run was not
// priced).
func (p *Price) Cost(lv Level, slos []SLO) *Cost {
	if p == nil {
		return nil
	}
	c := &Cost{}
	switch {
	case p.GPU != nil:
		c.USDPerHour, c.GPUs = p.GPU.USDPerGPUHour*float64(p.GPU.GPUs), p.GPU.GPUs
	case p.Tokens != nil && lv.DurationS > 0:
		billed := (float64(lv.TotalInputTokens)*p.Tokens.USDPerMillionInput + float64(lv.TotalOutputTokens)*p.Tokens.USDPerMillionOutput) / 1e6
		c.USDPerHour = billed / lv.DurationS * 3600
	}
	per := func(unitsPerS float64, scale float64) *float64 {
		if !(unitsPerS > 0) {
			return nil
		}
		return ptr(c.USDPerHour / (3600 * unitsPerS) * scale)
	}
	c.PerMillionOutputTokens = per(lv.OutputThroughput, 1e6)
	c.PerMillionTokens = per(lv.TotalTokenThroughput, 1e6)
	c.Per1kRequests = per(lv.RequestThroughput, 1e3)
	if lv.GoodputTokenThroughput != nil && HasBound(slos) {
		c.PerMillionGoodOutputTokens = per(*lv.GoodputTokenThroughput, 1e6)
	}
	if lv.Tasks != nil {
		c.PerTask = per(lv.Tasks.TasksPerS, 1)
	}
	return c
}
