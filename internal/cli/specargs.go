package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/route"
	"github.com/llmbench/llmbench/internal/rundesc"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// specFlag writes one flag back from a resolved run: the values that, given again, resolve
// to the same run; none where the flag is at its default or another flag carries it.
type specFlag struct {
	name string
	vals func(c *benchConfig) []string
}

// specFlags are every flag of run, simulate and plan that describes the run (plan's own:
// planSpaceFlags), in the order specArgs writes them, which plan's check command keeps. A
// flag bound without an entry here fails TestSpecArgsRoundTrip. The key and headers are
// written as they are: what prints a command line (the check command) keeps to the traffic.
var specFlags = []specFlag{
	{"url", func(c *benchConfig) []string { return append(str(c.URL), c.More...) }},
	{"api", func(c *benchConfig) []string { return str(c.API) }},
	{"model", func(c *benchConfig) []string { return str(c.Model) }},
	{"api-key", func(c *benchConfig) []string { return str(c.APIKey) }},
	{"api-key-file", nil}, // the key it read is written as --api-key
	{"header", func(c *benchConfig) []string { return headerArgs(c) }},
	{"extra-body", func(c *benchConfig) []string { return jsonArg(c.ExtraBody) }},
	{"endpoint", func(c *benchConfig) []string { return str(c.Endpoint) }},
	{"ignore-eos", func(c *benchConfig) []string { return off(c.IgnoreEOS) }},
	{"temperature", func(c *benchConfig) []string { return ptrArg(c.Temperature) }},
	{"top-p", func(c *benchConfig) []string { return ptrArg(c.TopP) }},
	{"timeout", func(c *benchConfig) []string { return dur(c.Timeout) }},
	{"idle-timeout", func(c *benchConfig) []string { return dur(c.IdleTimeout) }},
	{"ca-cert", func(c *benchConfig) []string { return str(c.CACert) }},
	{"insecure", func(c *benchConfig) []string { return on(c.Insecure) }},
	{"http2", func(c *benchConfig) []string { return on(c.HTTP2) }},
	{"keep-alive", func(c *benchConfig) []string { return off(c.KeepAlive) }},
	{"test-request", func(c *benchConfig) []string { return off(c.TestRequest) }},
	{"read-stamps", func(c *benchConfig) []string { return on(c.ReadStamps) }},
	{"save-text", func(c *benchConfig) []string { return on(c.SaveText) }},
	{"metrics-url", func(c *benchConfig) []string { return str(c.metricsURL) }},
	{"metrics-interval", func(c *benchConfig) []string { return dur(c.metricsInterval) }},
	{"gpu-metrics", func(c *benchConfig) []string { return gpuMetricsArgs(c) }},
	{"balance", func(c *benchConfig) []string { return str(c.Balance) }},
	{"session-header", func(c *benchConfig) []string { return sessionHeaderArgs(c) }},
	// Not the default profile, which plan's --model-shape and --model-config take as not given.
	{"sim", func(c *benchConfig) []string { return when(c.SimProfile != sim.DefaultProfile, c.SimProfile) }},
	{"model-config", func(c *benchConfig) []string { return str(c.modelConfig) }},
	{"stream", func(c *benchConfig) []string { return off(!c.NoStream) }},
	{"batch-size", func(c *benchConfig) []string { return num(c.BatchSize) }},
	{"documents", func(c *benchConfig) []string { return num(c.Documents) }},
	{"query-tokens", func(c *benchConfig) []string { return num(c.QueryTokens) }},
	{"images", func(c *benchConfig) []string { return num(c.Images.N) }},
	{"image-size", func(c *benchConfig) []string {
		return when(c.Images.N > 0, fmt.Sprintf("%dx%d", c.Images.Width, c.Images.Height))
	}},
	{"image-format", func(c *benchConfig) []string { return str(c.Images.Format) }},
	// Generated definitions as their count: the seed makes them again.
	{"tools", func(c *benchConfig) []string { return when(c.ToolsFile == "", num(len(c.Tools))...) }},
	{"tools-file", func(c *benchConfig) []string { return str(c.ToolsFile) }},
	{"tool-choice", func(c *benchConfig) []string { return str(string(c.ToolChoice)) }},
	{"concurrency", func(c *benchConfig) []string {
		return ladderArg(c, func(l load.Level) float64 { return float64(l.Concurrency) })
	}},
	{"rate", func(c *benchConfig) []string { return ladderArg(c, func(l load.Level) float64 { return l.Rate }) }},
	{"stages", func(c *benchConfig) []string { return stagesArg(c) }},
	{"arrival", func(c *benchConfig) []string { return str(c.Base.Arrival.String()) }},
	{"max-concurrency", func(c *benchConfig) []string { return num(c.Base.MaxConcurrency) }},
	{"requests", func(c *benchConfig) []string { return num(c.Requests) }},
	{"duration", func(c *benchConfig) []string { return dur(c.Base.Duration) }},
	{"warmup", func(c *benchConfig) []string { return append(num(c.Base.Warmup), dur(c.Base.WarmupTime)...) }},
	{"cooldown", func(c *benchConfig) []string { return dur(c.Base.Cooldown) }},
	{"max-error-rate", func(c *benchConfig) []string { return num(c.Base.MaxErrorRate) }},
	{"search", func(c *benchConfig) []string { return str(string(c.Search)) }},
	{"search-max", func(c *benchConfig) []string { return num(c.SearchMax) }},
	{"repeat", func(c *benchConfig) []string { return num(c.Repeat) }},
	{"stop-on-saturation", func(c *benchConfig) []string { return on(c.StopOnSaturation) }},
	{"shard", func(c *benchConfig) []string {
		return when(c.Base.Shards > 1, rundesc.ShardString(c.Base.Shard, c.Base.Shards))
	}},
	{"start-at", func(c *benchConfig) []string { return when(!c.StartAt.IsZero(), c.StartAt.Format(time.RFC3339Nano)) }},
	{"input-tokens", func(c *benchConfig) []string { return str(c.Workload.InputTokens.String()) }},
	{"output-tokens", func(c *benchConfig) []string { return str(c.Workload.OutputTokens.String()) }},
	{"tokenizer", func(c *benchConfig) []string { return str(c.Tokenizer) }},
	{"chat-template", func(c *benchConfig) []string { return chatTemplateArg(c) }},
	{"dataset", func(c *benchConfig) []string { return str(c.Workload.Dataset) }},
	{"prefix-tokens", func(c *benchConfig) []string { return num(c.Workload.PrefixTokens) }},
	{"prefix-groups", func(c *benchConfig) []string { return num(c.Workload.PrefixGroups) }},
	{"trace-speed", func(c *benchConfig) []string { return num(c.Workload.TraceSpeed) }},
	{"trace-offset", func(c *benchConfig) []string { return dur(c.Workload.TraceOffset) }},
	{"turns", func(c *benchConfig) []string { return num(c.Workload.Turns) }},
	{"think-time", func(c *benchConfig) []string { return dur(c.Workload.ThinkTime) }},
	{"seed", func(c *benchConfig) []string { return []string{strconv.FormatInt(c.Seed, 10)} }}, // 0 is a seed too
	{"percentiles", func(c *benchConfig) []string { return numList(c.metrics.Percentiles) }},
	{"slo", func(c *benchConfig) []string { return str(c.sloSpec) }},
	{"gpu-price", func(c *benchConfig) []string { return ptrArg(c.pricing.usdPerGPUHour) }},
	{"gpus", func(c *benchConfig) []string { return num(c.pricing.gpus) }},
	{"price-in", func(c *benchConfig) []string {
		return tokenPrice(c, func(p metrics.TokenPrice) float64 { return p.USDPerMillionInput })
	}},
	{"price-out", func(c *benchConfig) []string {
		return tokenPrice(c, func(p metrics.TokenPrice) float64 { return p.USDPerMillionOutput })
	}},
	{"workload", func(c *benchConfig) []string {
		return str(map[bool]string{false: "chat", true: "agentic"}[c.Workload.Agent.On()])
	}},
	{"calls-per-task", func(c *benchConfig) []string { return agentDist(c, c.Workload.Agent.Calls) }},
	{"tool-latency", func(c *benchConfig) []string { return agentDist(c, c.Workload.Agent.ToolLatency) }},
	{"tool-result-tokens", func(c *benchConfig) []string { return agentDist(c, c.Workload.Agent.ToolResultTokens) }},
	{"fan-out", func(c *benchConfig) []string { return num(c.Workload.Agent.FanOut) }},
	{"compact-at", func(c *benchConfig) []string { return num(c.Workload.Agent.CompactAt) }},
	{"compact-to", func(c *benchConfig) []string { return num(c.Workload.Agent.CompactTo) }},
	{"output-dir", func(c *benchConfig) []string { return str(c.output.Dir) }},
	{"overwrite", func(c *benchConfig) []string { return on(c.output.Overwrite) }},
	{"no-progress", func(c *benchConfig) []string { return on(c.noProgress) }},
	{"quiet", func(c *benchConfig) []string { return on(c.quiet) }},
	{"wide", func(c *benchConfig) []string { return on(c.wide) }},
	{"result-format", func(c *benchConfig) []string { return str(c.output.ResultFormat) }},
	{"records", func(c *benchConfig) []string { return str(string(c.output.Records)) }},
	{"config", nil}, // its settings are written as the flags they set
}

// specArgs is the command line that resolves to c again: each flag of specFlags that keep
// accepts (one the command binds, say), in their order. true and false are joined to their
// flag with "=", which a bool flag needs and every flag takes.
func specArgs(c *benchConfig, keep func(name string) bool) []string {
	var args []string
	for _, f := range specFlags {
		if f.vals != nil && keep(f.name) {
			args = flagArgs(args, f.name, f.vals(c))
		}
	}
	return args
}

// flagArgs appends a flag given each of vals.
func flagArgs(args []string, name string, vals []string) []string {
	for _, v := range vals {
		if v == "true" || v == "false" {
			args = append(args, "--"+name+"="+v)
		} else {
			args = append(args, "--"+name, v)
		}
	}
	return args
}

// list writes a list flag's values, comma-separated.
func list[T any](vs []T, format func(T) string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, format(v))
	}
	return str(strings.Join(out, ","))
}

// when is v if ok, else nothing: a flag at its default, or unset.
func when(ok bool, v ...string) []string {
	if !ok || len(v) == 0 {
		return nil
	}
	return v
}

func str(s string) []string { return when(s != "", s) }

// num writes a number; 0 is every numeric flag's default or unset. An integer is written
// in full: an int flag does not parse 1e+06.
func num[T int | float64](v T) []string {
	if i, ok := any(v).(int); ok {
		return when(i != 0, strconv.Itoa(i))
	}
	return when(v != 0, strconv.FormatFloat(float64(v), 'g', -1, 64))
}

func numList(vs []float64) []string {
	return list(vs, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
}

// ptrArg writes a value given, 0 included.
func ptrArg(v *float64) []string {
	if v == nil {
		return nil
	}
	return []string{strconv.FormatFloat(*v, 'g', -1, 64)}
}

func dur(d time.Duration) []string { return when(d != 0, d.String()) }

// on writes a flag that is off by default; off one that is on.
func on(b bool) []string  { return when(b, "true") }
func off(b bool) []string { return when(!b, "false") }

func headerArgs(c *benchConfig) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
		for _, v := range c.Headers[k] {
			out = append(out, k+": "+v)
		}
	}
	return out
}

func jsonArg(m map[string]any) []string {
	b, _ := json.Marshal(m) // read from JSON, so it writes
	return when(m != nil, string(b))
}

// gpuMetricsArgs writes the exporters scraped, or none where the local GPUs are not read either.
func gpuMetricsArgs(c *benchConfig) []string {
	if c.noGPU {
		return []string{"none"}
	}
	return c.gpuMetrics
}

// sessionHeaderArgs writes the header a session-balanced run sends its key in ("" none);
// otherwise a header given for a router in front of one --url.
func sessionHeaderArgs(c *benchConfig) []string {
	return when(c.Balance == route.Session || c.SessionHeader != "", c.SessionHeader)
}

// ladderArg writes the levels' loads of one loop (none for the default ladder, which no
// flag gave, or a staged level).
func ladderArg(c *benchConfig, of func(load.Level) float64) []string {
	if c.DefaultLoad || len(c.Levels) == 0 || c.Levels[0].Stages.Staged() {
		return nil
	}
	var vs []float64
	for _, l := range c.Levels {
		if v := of(l); v > 0 {
			vs = append(vs, v)
		}
	}
	return numList(vs)
}

func stagesArg(c *benchConfig) []string {
	if len(c.Levels) == 0 {
		return nil
	}
	return str(c.Levels[0].Stages.String())
}

// chatTemplateArg writes the template chat prompts are sized with, or none where they are
// sized by their text alone (not where the server counts them).
func chatTemplateArg(c *benchConfig) []string {
	switch {
	case c.ChatTemplate != nil:
		return []string{c.ChatTemplate.Path()}
	case c.ChatOnServer || !c.Live:
		return nil
	}
	return []string{"none"}
}

func tokenPrice(c *benchConfig, side func(metrics.TokenPrice) float64) []string {
	if p := c.pricing.tokens; p != nil {
		v := side(*p)
		return ptrArg(&v)
	}
	return nil
}

// agentDist writes one of an agentic workload's distributions (a zero one: none, "0").
func agentDist(c *benchConfig, d workload.Dist) []string {
	if s := d.String(); s != "" || !c.Workload.Agent.On() {
		return when(c.Workload.Agent.On(), s)
	}
	return []string{"0"}
}
