package specflags

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/workload"
	"github.com/spf13/pflag"
)

// bindInputs binds the flags of what a request carries beside its prompt: the stream,
// tools, embeddings' batches and rerank's documents.
func (f *Flags) bindInputs(fs specFlagSet, d bench.Spec) {
	specVar(fs, fs.BoolVar, &f.stream, "stream", !d.NoStream, "stream the response (generation APIs); false asks for one JSON document: E2EL and throughput only, no TTFT, TPOT or ITL", "NoStream",
		func(c specRun) []string { return when(c.NoStream, "false") })
	// Generated definitions are written back as their count: the seed makes them again.
	specVar(fs, fs.IntVar, &f.tools, "tools", 0, "chat, Responses and Ollama's chat: offer N generated function definitions in every request (plausible names and typed parameters, by --seed)", "Tools",
		func(c specRun) []string { return when(c.ToolsFile == "", Num(len(c.Tools))...) })
	specVar(fs, fs.StringVar, &f.spec.ToolsFile, "tools-file", "", "offer the function definitions of this JSON file in every request: an array of OpenAI tools, each {\"type\":\"function\",\"function\":{...}}", "Tools,ToolsFile")
	specVar(fs, fs.StringVar, (*string)(&f.spec.ToolChoice), "tool-choice", "", "with --tools or --tools-file: auto, required, none, or a function's name to call (default: none sent, the server's auto)", "ToolChoice")
	specVar(fs, fs.IntVar, &f.spec.BatchSize, "batch-size", 1, "embeddings: inputs per request, each of --input-tokens tokens", "BatchSize")
	specVar(fs, fs.IntVar, &f.spec.Documents, "documents", bench.DefaultDocuments, "rerank: documents per request, each of --input-tokens tokens", "Documents")
	specVar(fs, fs.IntVar, &f.spec.QueryTokens, "query-tokens", bench.DefaultQueryTokens, "rerank: the query's length in tokens", "QueryTokens")
}

// bindWorkload binds the flags that shape the requests (shared with dataset).
func (f *Flags) bindWorkload(fs specFlagSet) {
	d, w := bench.DefaultSpec(), &f.spec.Workload
	specVar(fs, fs.StringVar, &f.inputTokens, "input-tokens", d.Workload.InputTokens.String(), "prompt length in tokens: N, uniform:A:B, normal:MEAN:STD or lognormal:MEAN:STD", "Workload.InputTokens",
		func(c specRun) []string { return Str(c.Workload.InputTokens.String()) })
	specVar(fs, fs.StringVar, &f.outputTokens, "output-tokens", d.Workload.OutputTokens.String(), "output length in tokens (max_tokens): N, uniform:A:B, normal:MEAN:STD or lognormal:MEAN:STD", "Workload.OutputTokens",
		func(c specRun) []string { return Str(c.Workload.OutputTokens.String()) })
	specVar(fs, fs.StringVar, &f.spec.Tokenizer, "tokenizer", d.Tokenizer, "tokenizer for exact prompt lengths: o200k_base, cl100k_base, a tokenizer.json path, a HuggingFace model id in the local cache, or server (the target's /tokenize)", "Tokenizer")
	specVar(fs, fs.StringVar, &w.Dataset, "dataset", d.Workload.Dataset, "workload: random, jsonl:PATH, sharegpt:PATH, mooncake:PATH, azure:PATH, agent:PATH (recorded agent sessions)", "Workload.Dataset")
	specVar(fs, fs.IntVar, &w.PrefixTokens, "prefix-tokens", 0, "every prompt starts with one of --prefix-groups shared prefixes of exactly this many tokens", "Workload.PrefixTokens")
	specVar(fs, fs.IntVar, &w.PrefixGroups, "prefix-groups", d.Workload.PrefixGroups, "number of distinct shared prefixes", "Workload.PrefixGroups")
	specVar(fs, fs.Float64Var, &w.TraceSpeed, "trace-speed", d.Workload.TraceSpeed, "replay traces this many times faster", "Workload.TraceSpeed")
	specVar(fs, fs.DurationVar, &w.TraceOffset, "trace-offset", 0, "start a trace's replay this far into it (the trace's own time from its first request, before --trace-speed): e.g. 1h replays from its second hour", "Workload.TraceOffset")
	specVar(fs, fs.IntVar, &w.Turns, "turns", d.Workload.Turns, "turns per conversation: each next turn carries the history (multi-turn chat)", "Workload.Turns")
	specVar(fs, fs.DurationVar, &w.ThinkTime, "think-time", 0, "with --turns: the user's pause between a reply and the next turn", "Workload.ThinkTime")
	// Written back even as 0, which is a seed too (not given, run draws one).
	specVar(fs, fs.Int64Var, &f.spec.Seed, "seed", d.Seed, "seed for prompts, lengths, arrivals and the simulator (run --url without --seed, unsharded: a new seed each run, printed and kept in summary.json)", "Seed",
		func(c specRun) []string { return []string{strconv.FormatInt(c.Seed, 10)} })
}

// BindWorkload binds the flags that shape the requests alone (dataset's).
func (f *Flags) BindWorkload(fs *pflag.FlagSet) { f.bindWorkload(newSpecFlagSet(fs)) }

// Workload is the workload the flags bound by BindWorkload describe, checked (every problem
// at once), and the tokenizer its prompts are counted with.
func (f *Flags) Workload() (workload.Config, string, error) {
	in, out, errIn, errOut := f.lengths()
	errs := []error{errIn, errOut}
	wc := f.spec.Workload // the workload flags bound to it
	wc.InputTokens, wc.OutputTokens, wc.Seed = in, out, f.spec.Seed
	if errIn == nil && errOut == nil {
		errs = append(errs, workloadError(wc, wc.Validate()))
	}
	return wc, f.spec.Tokenizer, errors.Join(errs...)
}

// workload reads the flags that shape the requests: lengths, dataset, sampling, chat.
func (r *resolver) workload() {
	f, c, live := r.f, r.c, r.live
	in, out, errIn, errOut := f.lengths()
	r.add(errIn)
	r.add(errOut)
	w := &c.Workload
	w.InputTokens, w.OutputTokens, w.Seed, w.LengthsOnly = in, out, c.Seed, !live
	if f.fs != nil {
		var err error
		w.Agent, err = f.agent.agent(f.fs, w.Agent)
		r.add(err)
	}
	if live && f.fs != nil { // sent only when given
		if f.fs.Changed("temperature") {
			c.Temperature = &f.temperature
		}
		if f.fs.Changed("top-p") {
			c.TopP = &f.topP
		}
	}
	r.spec("Temperature", "TopP")
	if live {
		r.add(fieldError(c.SetChat(f.chatTemplate)))
	}
	r.spec("Tokenizer")
	if w.Turns < 1 {
		r.add(fmt.Errorf("--turns %d: a conversation has at least one turn (1: single requests)", w.Turns))
	} else if errOut == nil && errIn == nil {
		r.add(workloadError(*w, w.Validate()))
	}
}

// lengths reads --input-tokens and --output-tokens (run, simulate, plan and dataset).
func (f *Flags) lengths() (in, out workload.Dist, errIn, errOut error) {
	in, err := workload.ParseDist(f.inputTokens)
	if err != nil {
		errIn = fmt.Errorf("--input-tokens: %w", err)
	}
	out, err = workload.ParseDist(f.outputTokens)
	if err != nil {
		errOut = fmt.Errorf("--output-tokens: %w", err)
	}
	return in, out, errIn, errOut
}

// ChatTemplate is bench.ChatTemplate's template, its problems said as the flags
// behind them do (specMessages).
func ChatTemplate(given, tok, api string) (*chattemplate.Template, error) {
	tm, err := bench.ChatTemplate(given, tok, api)
	return tm, fieldError(err)
}

// workloadError says w.Validate's problems (err) with fields the flags set together as those
// flags do, from w's values; the others as workload says them.
func workloadError(w workload.Config, err error) error {
	var out []error
	for _, e := range fielderr.Split(err) {
		var field *fielderr.Error
		if errors.As(e, &field) {
			e = workloadField(w, field)
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// workloadField is a problem of w's field said as the flags behind it do.
func workloadField(w workload.Config, e *fielderr.Error) error {
	a := w.Agent
	switch e.Field {
	case "PrefixGroups,PrefixTokens":
		return fmt.Errorf("prefix groups: %d groups need --prefix-tokens > 0", w.PrefixGroups)
	case "Agent.ToolResultTokens":
		return errors.New("tool result tokens: required with --workload agentic (e.g. --tool-result-tokens 300)")
	case "Agent.CompactAt,Agent.CompactTo":
		return fmt.Errorf("compaction: --compact-at %d and --compact-to %d must not be negative", a.CompactAt, a.CompactTo)
	case "Agent.CompactTo":
		return fmt.Errorf("compaction: --compact-to %d must be in 1..%d (below --compact-at)", a.CompactTo, a.CompactAt-1)
	case "Agent.CompactAt":
		return fmt.Errorf("compaction: --compact-to %d needs --compact-at", a.CompactTo)
	case "Turns,ThinkTime,Agent":
		return errors.New("workload agentic: --turns and --think-time are chat's; a task's calls and tool latency are --calls-per-task and --tool-latency")
	}
	return e
}
