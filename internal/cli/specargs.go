package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
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
	// field is the Spec's fields the flag sets, comma-separated as fielderr keys them (fieldKey),
	// whose problems are said as the flag's (specFlagNames).
	field string
	vals  func(c specRun) []string // nil: written as other flags
}

// specRun is what specArgs writes: the run, and how the console shows it.
type specRun struct {
	*bench.Spec
	consoleOpts
}

// specFlags are every flag of run, simulate and plan that describes the run (plan's own:
// planSpaceFlags), in the order specArgs writes them, which plan's check command keeps. A
// flag bound without an entry here fails TestSpecArgsRoundTrip. The key and headers are
// written as they are: what prints a command line (the check command) keeps to the traffic.
var specFlags = []specFlag{
	{"url", "URL,More", func(c specRun) []string { return append(str(c.URL), c.More...) }},
	{"api", "API", func(c specRun) []string { return str(c.API) }},
	{"model", "Model", func(c specRun) []string { return str(c.Model) }},
	{"api-key", "APIKey", func(c specRun) []string { return str(c.APIKey) }},
	{"api-key-file", "APIKey", nil}, // the key it read is written as --api-key
	{"header", "Headers", func(c specRun) []string { return headerArgs(c) }},
	{"extra-body", "ExtraBody", func(c specRun) []string { return jsonArg(c.ExtraBody) }},
	{"endpoint", "Endpoint", func(c specRun) []string { return str(c.Endpoint) }},
	{"ignore-eos", "IgnoreEOS", func(c specRun) []string { return off(c.IgnoreEOS) }},
	{"temperature", "Temperature", func(c specRun) []string { return ptrArg(c.Temperature) }},
	{"top-p", "TopP", func(c specRun) []string { return ptrArg(c.TopP) }},
	{"timeout", "Timeout", func(c specRun) []string { return dur(c.Timeout) }},
	{"idle-timeout", "IdleTimeout", func(c specRun) []string { return dur(c.IdleTimeout) }},
	{"ca-cert", "CACert", func(c specRun) []string { return str(c.CACert) }},
	{"insecure", "Insecure", func(c specRun) []string { return on(c.Insecure) }},
	{"http2", "HTTP2", func(c specRun) []string { return on(c.HTTP2) }},
	{"keep-alive", "KeepAlive", func(c specRun) []string { return off(c.KeepAlive) }},
	{"test-request", "TestRequest", func(c specRun) []string { return off(c.TestRequest) }},
	{"read-stamps", "ReadStamps", func(c specRun) []string { return on(c.ReadStamps) }},
	{"save-text", "SaveText", func(c specRun) []string { return on(c.SaveText) }},
	{"metrics-url", "Telemetry.MetricsURL", func(c specRun) []string { return str(c.Telemetry.MetricsURL) }},
	{"metrics-interval", "Telemetry.Interval", func(c specRun) []string { return dur(c.Telemetry.Interval) }},
	{"gpu-metrics", "Telemetry.GPUs,Telemetry.NoGPU", func(c specRun) []string { return append(when(c.Telemetry.NoGPU, "none"), c.Telemetry.GPUs...) }}, // none: not the local GPUs either
	{"balance", "Balance", func(c specRun) []string { return str(c.Balance) }},
	{"session-header", "SessionHeader", func(c specRun) []string { return sessionHeaderArgs(c) }},
	// Not the default profile, which plan's --model-shape and --model-config take as not given.
	{"sim", "SimProfile", func(c specRun) []string { return when(c.SimProfile != sim.DefaultProfile, c.SimProfile) }},
	{"model-config", "ModelConfig", func(c specRun) []string { return str(c.ModelConfig) }},
	{"stream", "NoStream", func(c specRun) []string { return off(!c.NoStream) }},
	{"batch-size", "BatchSize", func(c specRun) []string { return num(c.BatchSize) }},
	{"documents", "Documents", func(c specRun) []string { return num(c.Documents) }},
	{"query-tokens", "QueryTokens", func(c specRun) []string { return num(c.QueryTokens) }},
	{"images", "Images.N", func(c specRun) []string { return num(c.Images.N) }},
	{"image-size", "Images.Width,Images.Height", func(c specRun) []string {
		return when(c.Images.N > 0, fmt.Sprintf("%dx%d", c.Images.Width, c.Images.Height))
	}},
	{"image-format", "Images.Format", func(c specRun) []string { return str(c.Images.Format) }},
	// Generated definitions as their count: the seed makes them again.
	{"tools", "Tools", func(c specRun) []string { return when(c.ToolsFile == "", num(len(c.Tools))...) }},
	{"tools-file", "Tools,ToolsFile", func(c specRun) []string { return str(c.ToolsFile) }},
	{"tool-choice", "ToolChoice", func(c specRun) []string { return str(string(c.ToolChoice)) }},
	{"concurrency", "Levels[].Concurrency", func(c specRun) []string {
		return ladderArg(c, func(l load.Level) float64 { return float64(l.Concurrency) })
	}},
	{"rate", "Levels[].Rate", func(c specRun) []string { return ladderArg(c, func(l load.Level) float64 { return l.Rate }) }},
	{"stages", "Levels[].Stages", func(c specRun) []string { return stagesArg(c) }},
	{"arrival", "Base.Arrival", func(c specRun) []string { return str(c.Base.Arrival.String()) }},
	{"max-concurrency", "Base.MaxConcurrency", func(c specRun) []string { return num(c.Base.MaxConcurrency) }},
	{"requests", "Requests", func(c specRun) []string { return num(c.Requests) }},
	{"duration", "Base.Duration", func(c specRun) []string { return dur(c.Base.Duration) }},
	{"warmup", "Base.Warmup,Base.WarmupTime", func(c specRun) []string { return append(num(c.Base.Warmup), dur(c.Base.WarmupTime)...) }},
	{"cooldown", "Base.Cooldown", func(c specRun) []string { return dur(c.Base.Cooldown) }},
	{"max-error-rate", "Base.MaxErrorRate", func(c specRun) []string { return num(c.Base.MaxErrorRate) }},
	{"search", "Search", func(c specRun) []string { return str(string(c.Search)) }},
	{"search-max", "SearchMax", func(c specRun) []string { return num(c.SearchMax) }},
	{"repeat", "Repeat", func(c specRun) []string { return num(c.Repeat) }},
	{"stop-on-saturation", "StopOnSaturation", func(c specRun) []string { return on(c.StopOnSaturation) }},
	{"shard", "Base.Shard,Base.Shards", func(c specRun) []string {
		return when(c.Base.Shards > 1, rundesc.ShardString(c.Base.Shard, c.Base.Shards))
	}},
	{"start-at", "StartAt", func(c specRun) []string { return when(!c.StartAt.IsZero(), c.StartAt.Format(time.RFC3339Nano)) }},
	{"input-tokens", "Workload.InputTokens", func(c specRun) []string { return str(c.Workload.InputTokens.String()) }},
	{"output-tokens", "Workload.OutputTokens", func(c specRun) []string { return str(c.Workload.OutputTokens.String()) }},
	{"tokenizer", "Tokenizer", func(c specRun) []string { return str(c.Tokenizer) }},
	{"chat-template", "ChatTemplate", func(c specRun) []string { return chatTemplateArg(c) }},
	{"dataset", "Workload.Dataset", func(c specRun) []string { return str(c.Workload.Dataset) }},
	{"prefix-tokens", "Workload.PrefixTokens", func(c specRun) []string { return num(c.Workload.PrefixTokens) }},
	{"prefix-groups", "Workload.PrefixGroups", func(c specRun) []string { return num(c.Workload.PrefixGroups) }},
	{"trace-speed", "Workload.TraceSpeed", func(c specRun) []string { return num(c.Workload.TraceSpeed) }},
	{"trace-offset", "Workload.TraceOffset", func(c specRun) []string { return dur(c.Workload.TraceOffset) }},
	{"turns", "Workload.Turns", func(c specRun) []string { return num(c.Workload.Turns) }},
	{"think-time", "Workload.ThinkTime", func(c specRun) []string { return dur(c.Workload.ThinkTime) }},
	{"seed", "Seed", func(c specRun) []string { return []string{strconv.FormatInt(c.Seed, 10)} }}, // 0 is a seed too
	{"percentiles", "Judge.Metrics.Percentiles", func(c specRun) []string { return numList(c.Judge.Metrics.Percentiles) }},
	{"slo", "Judge.SLO,Judge.Metrics.SLOs", func(c specRun) []string { return str(c.Judge.SLO) }},
	{"gpu-price", "Judge.Pricing.USDPerGPUHour", func(c specRun) []string { return ptrArg(c.Judge.Pricing.USDPerGPUHour) }},
	{"gpus", "Judge.Pricing.GPUs", func(c specRun) []string { return num(c.Judge.Pricing.GPUs) }},
	{"price-in", "Judge.Pricing.Tokens", func(c specRun) []string {
		return tokenPrice(c, func(p metrics.TokenPrice) float64 { return p.USDPerMillionInput })
	}},
	{"price-out", "Judge.Pricing.Tokens", func(c specRun) []string {
		return tokenPrice(c, func(p metrics.TokenPrice) float64 { return p.USDPerMillionOutput })
	}},
	{"workload", "Workload.Agent", func(c specRun) []string {
		return str(map[bool]string{false: "chat", true: "agentic"}[c.Workload.Agent.On()])
	}},
	{"calls-per-task", "Workload.Agent.Calls", func(c specRun) []string { return agentDist(c, c.Workload.Agent.Calls) }},
	{"tool-latency", "Workload.Agent.ToolLatency", func(c specRun) []string { return agentDist(c, c.Workload.Agent.ToolLatency) }},
	{"tool-result-tokens", "Workload.Agent.ToolResultTokens", func(c specRun) []string { return agentDist(c, c.Workload.Agent.ToolResultTokens) }},
	{"fan-out", "Workload.Agent.FanOut", func(c specRun) []string { return num(c.Workload.Agent.FanOut) }},
	{"compact-at", "Workload.Agent.CompactAt", func(c specRun) []string { return num(c.Workload.Agent.CompactAt) }},
	{"compact-to", "Workload.Agent.CompactTo", func(c specRun) []string { return num(c.Workload.Agent.CompactTo) }},
	{"output-dir", "Output.Dir", func(c specRun) []string { return str(c.Output.Dir) }},
	{"overwrite", "Output.Overwrite", func(c specRun) []string { return on(c.Output.Overwrite) }},
	{"no-progress", "", func(c specRun) []string { return on(c.noProgress) }}, // the console's: no part of the Spec
	{"quiet", "", func(c specRun) []string { return on(c.quiet) }},
	{"wide", "", func(c specRun) []string { return on(c.wide) }},
	{"result-format", "Output.ResultFormat", func(c specRun) []string { return str(c.Output.ResultFormat) }},
	{"records", "Output.Records", func(c specRun) []string { return str(string(c.Output.Records)) }},
	{"config", "", nil}, // its settings are written as the flags they set
}

// specArgs is the command line that resolves to c and o again: each flag of specFlags that
// keep accepts (one the command binds, say), in their order. true and false are joined to
// their flag with "=", which a bool flag needs and every flag takes.
func specArgs(c *bench.Spec, o consoleOpts, keep func(name string) bool) []string {
	var args []string
	for _, f := range specFlags {
		if f.vals != nil && keep(f.name) {
			args = flagArgs(args, f.name, f.vals(specRun{c, o}))
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

// fmtDuration writes a whole number of seconds as a flag value: "300s".
func fmtDuration(d time.Duration) string {
	return strconv.FormatInt(int64(d.Round(time.Second)/time.Second), 10) + "s"
}

// on writes a flag that is off by default; off one that is on.
func on(b bool) []string  { return when(b, "true") }
func off(b bool) []string { return when(!b, "false") }

func headerArgs(c specRun) []string {
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

// sessionHeaderArgs writes the header a session-balanced run sends its key in ("" none);
// otherwise a header given for a router in front of one --url.
func sessionHeaderArgs(c specRun) []string {
	return when(c.Balance == route.Session || c.SessionHeader != "", c.SessionHeader)
}

// ladderArg writes the levels' loads of one loop (none for the default ladder, which no
// flag gave, or a staged level).
func ladderArg(c specRun, of func(load.Level) float64) []string {
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

func stagesArg(c specRun) []string {
	if len(c.Levels) == 0 {
		return nil
	}
	return str(c.Levels[0].Stages.String())
}

// chatTemplateArg writes the template chat prompts are sized with, or none where they are
// sized by their text alone (not where the server counts them).
func chatTemplateArg(c specRun) []string {
	switch {
	case c.ChatTemplate != nil:
		return []string{c.ChatTemplate.Path()}
	case c.ChatOnServer || !c.Live:
		return nil
	}
	return []string{"none"}
}

func tokenPrice(c specRun, side func(metrics.TokenPrice) float64) []string {
	if p := c.Judge.Pricing.Tokens; p != nil {
		return []string{strconv.FormatFloat(side(*p), 'g', -1, 64)} // 0 included
	}
	return nil
}

// agentDist writes one of an agentic workload's distributions (a zero one: none, "0").
func agentDist(c specRun, d workload.Dist) []string {
	if s := d.String(); s != "" || !c.Workload.Agent.On() {
		return when(c.Workload.Agent.On(), s)
	}
	return []string{"0"}
}
