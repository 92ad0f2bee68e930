package cli

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/plan"
	"github.com/llmbench/llmbench/internal/specflags"
)

// roundTripValues give every flag of run, simulate and plan a value other than its
// default, with what it needs beside it; DIR is a folder of fixtures. Arguments of a flag
// the command lacks are left out.
var roundTripValues = map[string][]string{
	"url":                {"--url", "http://127.0.0.1:9", "--url", "https://h:10/"},
	"api":                {"--api", "openai-completions"},
	"model":              {"--model", "m"},
	"api-key":            {"--api-key", "k"},
	"api-key-file":       {"--api-key-file", "DIR/key"},
	"header":             {"--header", "X-A: 1", "--header", "x-b:2"},
	"extra-body":         {"--extra-body", `{"a":1.5,"b":[true]}`},
	"endpoint":           {"--endpoint", "/x"},
	"ignore-eos":         {"--ignore-eos=false"},
	"temperature":        {"--temperature", "0"},
	"top-p":              {"--top-p", "0.5"},
	"timeout":            {"--timeout", "90s"},
	"idle-timeout":       {"--idle-timeout", "2s"},
	"ca-cert":            {"--ca-cert", "DIR/ca.pem"},
	"insecure":           {"--insecure"},
	"http2":              {"--http2"},
	"keep-alive":         {"--keep-alive=false"},
	"test-request":       {"--test-request=false"},
	"read-stamps":        {"--read-stamps"},
	"save-text":          {"--save-text"},
	"metrics-url":        {"--metrics-url", "none"},
	"metrics-interval":   {"--metrics-interval", "3s"},
	"gpu-metrics":        {"--gpu-metrics", "http://127.0.0.1:9400/metrics", "--gpu-metrics", "http://h:1/metrics"},
	"balance":            {"--url", "http://a:1", "--url", "http://b:1", "--balance", "session"},
	"session-header":     {"--session-header", "X-S"},
	"sim":                {"--sim", "textbook"},
	"model-config":       {"--model-config", "../sim/testdata/hf-configs/qwen3-30b-a3b/config.json"},
	"stream":             {"--stream=false"},
	"batch-size":         {"--api", "openai-embeddings", "--batch-size", "4"},
	"documents":          {"--api", "rerank", "--documents", "3"},
	"query-tokens":       {"--api", "rerank", "--query-tokens", "9"},
	"images":             {"--images", "2"},
	"image-size":         {"--images", "1", "--image-size", "64x32"},
	"image-format":       {"--images", "1", "--image-format", "jpeg"},
	"tools":              {"--tools", "3"},
	"tools-file":         {"--tools-file", "DIR/tools.json"},
	"tool-choice":        {"--tools", "2", "--tool-choice", "required"},
	"concurrency":        {"--concurrency", "2,8"},
	"rate":               {"--rate", "2.5"},
	"stages":             {"--stages", "10s:2,20s:2->8"},
	"arrival":            {"--rate", "2", "--arrival", "gamma:0.5"},
	"max-concurrency":    {"--rate", "2", "--max-concurrency", "7"},
	"requests":           {"--requests", "33"},
	"duration":           {"--duration", "45s"},
	"warmup":             {"--warmup", "5s"},
	"cooldown":           {"--duration", "60s", "--cooldown", "5s"},
	"max-error-rate":     {"--max-error-rate", "30%"},
	"search":             {"--search", "rate", "--slo", "tpot:p99<=50ms"},
	"search-max":         {"--search", "concurrency", "--search-max", "64", "--slo", "tpot:p99<=50ms"},
	"repeat":             {"--repeat", "3"},
	"stop-on-saturation": {"--rate", "2", "--stop-on-saturation"},
	"shard":              {"--concurrency", "3,6", "--shard", "1/3"},
	"start-at":           {"--start-at", "2030-01-02T15:04:05.5Z"},
	"input-tokens":       {"--input-tokens", "uniform:100:300"},
	"output-tokens":      {"--output-tokens", "normal:64:8"},
	"tokenizer":          {"--tokenizer", "cl100k_base"},
	"chat-template":      {"--chat-template", "DIR/t.jinja"},
	"dataset":            {"--dataset", "jsonl:DIR/d.jsonl"},
	"prefix-tokens":      {"--prefix-tokens", "64"},
	"prefix-groups":      {"--prefix-tokens", "64", "--prefix-groups", "3"},
	"trace-speed":        {"--trace-speed", "2"},
	"trace-offset":       {"--dataset", "mooncake:testdata/golden/trace.jsonl", "--trace-offset", "400ms"},
	"turns":              {"--turns", "3"},
	"think-time":         {"--turns", "2", "--think-time", "1s"},
	"seed":               {"--seed", "0"},
	"percentiles":        {"--percentiles", "50,99.5"},
	"slo":                {"--slo", "ttft:p99<=1s,tpot<=50ms"},
	"gpu-price":          {"--gpu-price", "2.5"},
	"gpus":               {"--gpu-price", "2", "--gpus", "8"},
	"price-in":           {"--price-in", "0.5", "--price-out", "0"},
	"price-out":          {"--price-in", "0", "--price-out", "1.5"},
	"workload":           {"--workload", "agentic"},
	"calls-per-task":     {"--workload", "agentic", "--calls-per-task", "uniform:2:6"},
	"tool-latency":       {"--workload", "agentic", "--tool-latency", "0"},
	"tool-result-tokens": {"--workload", "agentic", "--tool-result-tokens", "100"},
	"fan-out":            {"--workload", "agentic", "--fan-out", "2"},
	"compact-at":         {"--workload", "agentic", "--compact-at", "4000", "--compact-to", "500"},
	"compact-to":         {"--workload", "agentic", "--compact-at", "3000", "--compact-to", "400"},
	"output-dir":         {"--output-dir", "DIR/out"},
	"overwrite":          {"--overwrite"},
	"no-progress":        {"--no-progress"},
	"quiet":              {"--quiet"},
	"wide":               {"--wide"},
	"result-format":      {"--result-format", "vllm"},
	"records":            {"--records", "compact"},
	"config":             {"--config", "DIR/c.yaml"},
	// plan's search space and ranking.
	"gpu":                {"--gpu", "h100,h200"},
	"tp":                 {"--tp", "1,2"},
	"dtype":              {"--dtype", "fp8"},
	"dp":                 {"--model-config", "../sim/testdata/hf-configs/qwen3-30b-a3b/config.json", "--dp", "1,2"},
	"expert-parallel":    {"--model-config", "../sim/testdata/hf-configs/qwen3-30b-a3b/config.json", "--expert-parallel", "false,true"},
	"max-num-seqs":       {"--max-num-seqs", "64,128"},
	"max-batched-tokens": {"--max-batched-tokens", "4096"},
	"prefill":            {"--prefill", "colocated,disaggregated"},
	"router":             {"--router", "round-robin,least-outstanding"},
	"speculative":        {"--sim", "DIR/spec.yaml", "--speculative", "off,3:0.7"},
	"model-shape":        {"--model-shape", "llama-3.1-70b"},
	"max-replicas":       {"--max-replicas", "9"},
	"confidence":         {"--confidence", "point"},
	"objective":          {"--objective", "energy"},
	"electricity":        {"--electricity", "0.12"},
	"pue":                {"--pue", "1.3"},
}

// roundTripCommands bind each command's flags as the command does and resolve them, with
// the arguments the command's own flags are written back as; plan is given the traffic it
// needs first.
// resolved is a command's run as its flags resolve: the Spec and the console's options.
type resolved struct {
	spec *bench.Spec
	con  specflags.Console
}

var roundTripCommands = []struct {
	name string
	bind func(fs *pflag.FlagSet) func(now time.Time) (resolved, plan.Config, []string, error)
	base []string
	full map[string][]string // a flag's arguments in full, without base, where its value above does not do
}{
	{"run", func(fs *pflag.FlagSet) func(time.Time) (resolved, plan.Config, []string, error) {
		var f specflags.Flags
		f.Bind(fs, true)
		return func(now time.Time) (resolved, plan.Config, []string, error) {
			c, con, err := f.Resolve(true, now)
			return resolved{c, con}, plan.Config{}, nil, err
		}
	}, nil, nil},
	{"simulate", func(fs *pflag.FlagSet) func(time.Time) (resolved, plan.Config, []string, error) {
		var f specflags.Flags
		f.BindSimulate(fs)
		return func(now time.Time) (resolved, plan.Config, []string, error) {
			c, con, err := f.Resolve(false, now)
			return resolved{c, con}, plan.Config{}, nil, err
		}
	}, nil, map[string][]string{"records": {"--records", "jsonl"}}},
	{"plan", func(fs *pflag.FlagSet) func(time.Time) (resolved, plan.Config, []string, error) {
		var f planFlags
		f.bind(fs)
		return func(now time.Time) (resolved, plan.Config, []string, error) {
			c, con, pc, err := f.resolve(Stdio{Out: io.Discard, Err: io.Discard}, now)
			var own []string
			for _, fl := range planSpaceFlags {
				own = specflags.FlagArgs(own, fl.name, fl.vals(&f, pc))
			}
			pc.Price, pc.Traffic.At = nil, nil // functions of the rest
			return resolved{c, con}, pc, own, err
		}
	}, []string{"--rate", "3", "--slo", "tpot:p99<=50ms"},
		map[string][]string{"trace-offset": {"--slo", "tpot:p99<=50ms", "--dataset", "mooncake:testdata/golden/trace.jsonl", "--trace-offset", "400ms"}}},
}

// TestSpecArgsRoundTrip: for every flag of run, simulate and plan (but those plan refuses),
// its value parsed and resolved, written back by specflags.Args (and plan's own by
// planSpaceFlags) and parsed again resolves to the same run and plan, which are not the
// default ones. A flag bound without specVar or an entry in planSpaceFlags, or without a
// value here, fails.
func TestSpecArgsRoundTrip(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	for name, data := range map[string]string{"key": "k2\n", "ca.pem": "",
		"tools.json": `[{"type":"function","function":{"name":"f"}}]`, "t.jinja": "{% for m in messages %}{{ m.content }}{% endfor %}",
		"d.jsonl": `{"prompt": "hello there", "output_tokens": 5}` + "\n", "c.yaml": "input-tokens: 100\nturns: 2\n",
		"spec.yaml": "speculative:\n  draft_tokens: 3\n  acceptance: 0.7\n  draft_model: llama-3.2-1b\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	written := map[string]bool{}
	for _, f := range planSpaceFlags {
		written[f.name] = true
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, cmd := range roundTripCommands {
		parse := func(args []string) (resolved, plan.Config, []string, *pflag.FlagSet, error) {
			fs := pflag.NewFlagSet(cmd.name, pflag.ContinueOnError)
			resolve := cmd.bind(fs)
			if err := fs.Parse(args); err != nil {
				return resolved{}, plan.Config{}, nil, fs, err
			}
			c, pc, own, err := resolve(now)
			if c.spec != nil {
				c.spec.SeedDrawn = false // a drawn seed is written back as --seed, which reproduces it
			}
			return c, pc, own, fs, err
		}
		base, basePlan, _, _, err := parse(cmd.base)
		if err != nil {
			t.Fatalf("%s %v: %v", cmd.name, cmd.base, err)
		}
		newCmd := map[string]func(Stdio) *pflag.FlagSet{
			"run":      func(s Stdio) *pflag.FlagSet { return newRunCmd(s).Flags() },
			"simulate": func(s Stdio) *pflag.FlagSet { return newSimulateCmd(s).Flags() },
			"plan":     func(s Stdio) *pflag.FlagSet { return newPlanCmd(s).Flags() },
		}[cmd.name]
		newCmd(Stdio{}).VisitAll(func(fl *pflag.Flag) {
			_, refused := planRefused[fl.Name]
			if cmd.name == "plan" && refused {
				return
			}
			vals, ok := roundTripValues[fl.Name]
			spec := specflags.Fields(fl) != nil
			if !ok || !(spec || written[fl.Name]) {
				t.Errorf("--%s: no value in roundTripValues (%v), or bound without specVar and no entry in planSpaceFlags (%v)", fl.Name, ok, written[fl.Name])
				return
			}
			args := append(slices.Clone(cmd.base), onlyFlagsOf(newCmd(Stdio{}), vals, dir)...)
			if full, ok := cmd.full[fl.Name]; ok {
				args = full
			}
			c1, pc1, own, fs, err := parse(args)
			if err != nil {
				t.Errorf("%s %s: %v", cmd.name, strings.Join(args, " "), err)
				return
			}
			again := specflags.Args(c1.spec, c1.con, cmd.name == "run", func(name string) bool {
				_, refused := planRefused[name]
				return fs.Lookup(name) != nil && !(cmd.name == "plan" && refused)
			})
			again = append(again, own...)
			c2, pc2, _, _, err := parse(again)
			if err != nil {
				t.Errorf("%s %s\nwritten back as %s: %v", cmd.name, strings.Join(args, " "), strings.Join(again, " "), err)
				return
			}
			if c1.spec.ChatTemplate.Path() != c2.spec.ChatTemplate.Path() {
				t.Errorf("%s --%s: chat template %s, then %s", cmd.name, fl.Name, c1.spec.ChatTemplate.Path(), c2.spec.ChatTemplate.Path())
			}
			c1.spec.ChatTemplate, c2.spec.ChatTemplate = nil, nil
			if !reflect.DeepEqual(c1, c2) {
				t.Errorf("%s %s\nwritten back as %s\nresolves to\n%+v\nnot\n%+v", cmd.name, strings.Join(args, " "), strings.Join(again, " "), c2, c1)
			}
			if !reflect.DeepEqual(pc1, pc2) {
				t.Errorf("%s %s\nwritten back as %s\nplans\n%+v\nnot\n%+v", cmd.name, strings.Join(args, " "), strings.Join(again, " "), pc2, pc1)
			}
			if fl.Name != "chat-template" && reflect.DeepEqual(c1, base) && reflect.DeepEqual(pc1, basePlan) {
				t.Errorf("%s --%s %v: resolves to the default run", cmd.name, fl.Name, vals)
			}
		})
	}
}

// onlyFlagsOf is args without the flags fs lacks (and their values), DIR replaced by dir.
func onlyFlagsOf(fs *pflag.FlagSet, args []string, dir string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, inline := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		fl := fs.Lookup(name)
		if fl == nil {
			if !inline && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
				i++
			}
			continue
		}
		out = append(out, args[i])
		if !inline && fl.NoOptDefVal == "" && i+1 < len(args) {
			i++
			out = append(out, strings.ReplaceAll(args[i], "DIR", dir))
		}
	}
	return out
}

// TestSpecFlagFields: each field a flag of run or simulate names (its errors' key) is
// bench.Spec's.
func TestSpecFlagFields(t *testing.T) {
	for _, fs := range []*pflag.FlagSet{newRunCmd(Stdio{}).Flags(), newSimulateCmd(Stdio{}).Flags()} {
		fs.VisitAll(func(fl *pflag.Flag) {
			for _, path := range specflags.Fields(fl) {
				if path == "" {
					continue
				}
				typ := reflect.TypeFor[bench.Spec]()
				for _, name := range strings.Split(path, ".") {
					name, slice := strings.CutSuffix(name, "[]")
					field, ok := reflect.StructField{}, typ.Kind() == reflect.Struct
					if ok {
						field, ok = typ.FieldByName(name)
					}
					if !ok {
						t.Errorf("--%s: bench.Spec has no field %s", fl.Name, path)
						break
					}
					if typ = field.Type; slice {
						typ = typ.Elem()
					}
				}
			}
		})
	}
}
