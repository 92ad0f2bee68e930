package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/sim"
)

func TestLoadRefusesBadTables(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"duplicate id": {`{"rows": [{"id": "a", "profile": {}, "measured": {"x": 1}}, {"id": "a", "profile": {}, "measured": {"x": 1}}]}`, `"a" appears twice`},
		"no profile":   {`{"rows": [{"id": "a", "measured": {"x": 1}}]}`, "needs a profile or a profile_file"},
		"no figures":   {`{"rows": [{"id": "a", "profile": {}}]}`, "no measured figures"},
		"no id":        {`{"rows": [{"profile": {}, "measured": {"x": 1}}]}`, "row 1 has no id"},
		"neither":      {`{"runs": []}`, "neither a validation table"},
		"unknown gt":   {`{"source": "x", "experiments": [{}]}`, "no converter"},
	} {
		p := filepath.Join(t.TempDir(), "t.json")
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
}

// TestSimulateComparesWithSummaryFigures: a row's prediction is simulate's figure under
// summary.json's name, and its error is against the measured one.
func TestSimulateComparesWithSummaryFigures(t *testing.T) {
	rows, err := Load("testdata/small.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Simulate(context.Background(), rows[0], 1, t.TempDir())
	if err != nil || res.Skipped != "" {
		t.Fatalf("simulate: %v %s", err, res.Skipped)
	}
	for _, k := range []string{"ttft_ms.p50", "tpot_ms.p50", "output_throughput"} {
		p, ok := res.Predicted[k]
		if !ok || !(p > 0) {
			t.Fatalf("%s predicted %v (%v)", k, p, ok)
		}
		want := 100 * (p - rows[0].Measured[k]) / rows[0].Measured[k]
		if math.Abs(res.ErrorPct[k]-want) > 1e-9 {
			t.Errorf("%s error %v, want %v", k, res.ErrorPct[k], want)
		}
	}
	// The same row measured at half the prediction is 100 % over.
	r := rows[0]
	r.Measured = map[string]float64{"tpot_ms.p50": res.Predicted["tpot_ms.p50"] / 2}
	again, err := Simulate(context.Background(), r, 1, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if e := again.ErrorPct["tpot_ms.p50"]; math.Abs(e-100) > 1e-9 {
		t.Errorf("error %v, want +100 %%: the same seed simulates the same", e)
	}
}

// TestFirstAndLastTokensFigures: a row whose figures are all per-request or level-wide is
// simulated recording each request's first token and end only, and predicts exactly what
// the same row simulated token by token (a per-token figure asked for) does.
func TestFirstAndLastTokensFigures(t *testing.T) {
	rows, err := Load("testdata/small.json")
	if err != nil {
		t.Fatal(err)
	}
	closed := rows[0]
	open := closed
	open.Workload.Concurrency, open.Workload.Rate, open.Workload.Requests = 0, 40, 200 // queues now and then
	for name, r := range map[string]Row{"closed": closed, "open": open} {
		r.Measured = map[string]float64{"output_throughput": 1, "request_throughput": 1}
		for _, m := range []string{"ttft_ms", "tpot_ms", "e2el_ms"} {
			for _, s := range []string{"mean", "p50", "p90", "p99"} {
				r.Measured[m+"."+s] = 1
			}
		}
		coarse, err := Simulate(context.Background(), r, 1, t.TempDir())
		if err != nil || coarse.Skipped != "" {
			t.Fatalf("%s: %v %s", name, err, coarse.Skipped)
		}
		r.Measured["itl_ms.p50"] = 1
		every, err := Simulate(context.Background(), r, 1, t.TempDir())
		if err != nil || every.Skipped != "" {
			t.Fatalf("%s: %v %s", name, err, every.Skipped)
		}
		if !(every.Predicted["itl_ms.p50"] > 0) {
			t.Errorf("%s: itl_ms.p50 predicted %v, want a figure", name, every.Predicted["itl_ms.p50"])
		}
		for k, v := range coarse.Predicted {
			if every.Predicted[k] != v {
				t.Errorf("%s: %s %v from first and last tokens, %v from every token", name, k, v, every.Predicted[k])
			}
		}
		if len(coarse.Predicted) != len(r.Measured)-1 {
			t.Errorf("%s: %d figures predicted, want %d", name, len(coarse.Predicted), len(r.Measured)-1)
		}
		// The peak output throughput needs every token's time: a row measuring it is
		// simulated token by token, whatever else it measures.
		peak := r
		peak.Measured = map[string]float64{"ttft_ms.p50": 1, "peak_output_throughput": 1}
		got, err := Simulate(context.Background(), peak, 1, t.TempDir())
		peak.Measured["itl_ms.p50"] = 1 // token by token for certain
		want, err2 := Simulate(context.Background(), peak, 1, t.TempDir())
		if err != nil || err2 != nil {
			t.Fatalf("%s: %v, %v", name, err, err2)
		}
		if g, w := got.Predicted["peak_output_throughput"], want.Predicted["peak_output_throughput"]; g != w || g == 0 {
			t.Errorf("%s: peak_output_throughput %v beside TTFT alone, %v token by token", name, g, w)
		}
	}
}

// Run hands the largest rows out first and gives the results in the rows' order, each the
// row's own simulation.
func TestRunLargestFirstResultsInOrder(t *testing.T) {
	rows, err := Load("testdata/small.json")
	if err != nil {
		t.Fatal(err)
	}
	small, big := rows[0], rows[0]
	small.ID, big.ID = "small", "big"
	small.Workload.Requests, big.Workload.Requests = 16, 256
	if !(big.Workload.work() > small.Workload.work()) {
		t.Fatalf("work: big %v, small %v", big.Workload.work(), small.Workload.work())
	}
	rows = append([]Row{small}, append(rows, big)...)
	got, err := Run(context.Background(), rows, 1, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		want, err := Simulate(context.Background(), r, 1, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if got[i].ID != r.ID || fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Errorf("result %d: %+v, want %+v", i, got[i], want)
		}
	}
}

func TestRefusedAndSkippedRowsSayWhy(t *testing.T) {
	rows, err := Load("testdata/small.json")
	if err != nil {
		t.Fatal(err)
	}
	results, err := Run(context.Background(), rows, 1, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(results[1].Skipped, "below max_num_seqs") {
		t.Errorf("refused row: skipped %q, want the simulator's reason", results[1].Skipped)
	}
	if results[2].Skipped != "no model preset for DeepSeek-R1" {
		t.Errorf("skipped row: %q", results[2].Skipped)
	}
	g := Groups(results)
	if len(g) != 2 || g[0].Rows != 1 || g[0].Skipped != 1 || g[1].Rows != 0 || g[1].Skipped != 1 {
		t.Errorf("groups %+v", g)
	}
	b, _ := json.Marshal(results[0])
	if !strings.Contains(string(b), `"interval":null`) {
		t.Errorf("interval should be null until SetIntervals: %s", b)
	}
}

func TestGroupsMedianAndWorst(t *testing.T) {
	g := predict.Group{Family: "m", GPU: "g", Engine: "e", Load: "closed"}
	var results []Result
	for _, e := range []float64{10, -40, 20, 5} {
		results = append(results, Result{Group: g, ErrorPct: map[string]float64{"ttft_ms.p50": e}})
	}
	results = append(results, Result{Group: g, Skipped: "why"})
	got := Groups(results)[0]
	f := got.Figures["ttft_ms.p50"]
	if got.Rows != 4 || got.Skipped != 1 || f.N != 4 || f.MedianPct != 15 || f.WorstPct != -40 {
		t.Errorf("got %+v %+v; want 4 rows, 1 skipped, median |error| 15, worst -40", got, f)
	}
}

// mlperfFixture is an MLPerf Server row as the groundtruth file holds one: B200, tp 2,
// TensorRT-LLM at NVFP4, OpenOrca at 100 req/s.
const mlperfFixture = `{"id": "x|Server", "source_repo": "mlcommons/inference_results_v5.1", "path": "p", "commit": "c",
	 "model": "llama2-70b-99", "gpu": "NVIDIA B200-SXM-180GB", "num_gpus": 8, "tp": 2,
	 "framework_and_version": "TensorRT 10.11", "dtype_weights": "fp4",
	 "serving_settings": {"gpu_batch_size": [2048], "max_num_tokens": [3584]},
	 "workload": {"scenario": "Server", "target_qps": 100, "dataset": "OpenOrca",
	  "mean_output_tokens_accuracy_run": "ROUGE1: 44  TOKENS_PER_SAMPLE: 280.0"},
	 "measured": {"ttft_p50_ns": 250000000, "tpot_p99_ns": 40000000, "completed_tokens_per_s": 28000},
	 "constraints": {"ttft_p99_limit_ns": 2000000000, "tpot_p99_limit_ns": 200000000}}`

func TestMLPerfConversion(t *testing.T) {
	exp := mlperfFixture
	r, err := mlperfRow(json.RawMessage(exp))
	if err != nil || r.Skip != "" {
		t.Fatalf("%v %s", err, r.Skip)
	}
	if r.Limits == nil || *r.Limits != (Limits{TTFTP99Ms: 2000, TPOTP99Ms: 200, SubmittedRate: 100}) {
		t.Errorf("limits %+v: want the scenario's P99 limits and the submitted QPS", r.Limits)
	}
	dep := r.Profile["deployment"].(map[string]any)
	if r.Profile["model"] != "llama-2-70b" || r.Profile["gpu"] != "b200" || dep["tp"] != 2 || dep["replicas"] != 4 || dep["weight_dtype"] != "nvfp4" {
		t.Errorf("profile %+v", r.Profile)
	}
	if r.Workload.Rate != 100 || r.Workload.OutputTokens != "normal:280:140" || r.Workload.Concurrency != 0 {
		t.Errorf("workload %+v", r.Workload)
	}
	if r.Measured["ttft_ms.p50"] != 250 || r.Measured["tpot_ms.p99"] != 40 || r.Measured["output_throughput"] != 28000 {
		t.Errorf("measured %+v", r.Measured)
	}
	if r.Group != (predict.Group{Family: "llama-2-70b", GPU: "b200", Engine: "tensorrt-llm", Load: "poisson"}) {
		t.Errorf("group %+v", r.Group)
	}
	for change, want := range map[string]string{
		`"tp": 2`:                  "tensor parallelism not stated",
		`"NVIDIA B200-SXM-180GB"`:  "no GPU preset",
		`"llama2-70b-99"`:          "no model preset",
		`"TensorRT 10.11"`:         "is not one the simulator models",
		`"gpu_batch_size": [2048]`: "several engine limits",
		`"num_gpus": 8`:            "not a whole number",
		`"target_qps": 100`:        "the same run as",
	} {
		to := map[string]string{`"tp": 2`: `"tp": null`, `"NVIDIA B200-SXM-180GB"`: `"NVIDIA GB300"`,
			`"llama2-70b-99"`: `"rgat"`, `"TensorRT 10.11"`: `"MegaServe 1.0"`,
			`"gpu_batch_size": [2048]`: `"gpu_batch_size": [2048, 512]`,
			`"num_gpus": 8`:            `"num_gpus": 7`, `"target_qps": 100`: `"target_qps": 100}, "duplicate_of": "y", "x": {"a": 1`}[change]
		r, err := mlperfRow(json.RawMessage(strings.Replace(exp, change, to, 1)))
		if err != nil || !strings.Contains(r.Skip, want) {
			t.Errorf("%s → %s: skip %q (%v), want %q", change, to, r.Skip, err, want)
		}
	}
}

// TestMLPerfRouter: a row of NVIDIA's harness spreads queries over its GPUs' engines as the
// harness's LLM server does, by the fewest pending samples in the Server scenario and round
// robin in Interactive; one engine, or another harness's engine, has no router set.
func TestMLPerfRouter(t *testing.T) {
	router := func(exp string) (any, []string) {
		t.Helper()
		r, err := mlperfRow(json.RawMessage(exp))
		if err != nil || r.Skip != "" {
			t.Fatalf("%v %s", err, r.Skip)
		}
		return r.Profile["deployment"].(map[string]any)["router"], r.Assumptions
	}
	interactive := strings.Replace(mlperfFixture, `"scenario": "Server"`, `"scenario": "Interactive"`, 1)
	for _, c := range []struct {
		exp, want, says string
	}{
		{mlperfFixture, sim.RouterLeastOutstanding, "fewest pending samples"},
		{interactive, sim.RouterRoundRobin, "round robin in the Interactive scenario"},
	} {
		got, why := router(c.exp)
		if got != c.want || !strings.Contains(strings.Join(why, " "), c.says) || !strings.Contains(strings.Join(why, " "), "code/llmlib/config.py") {
			t.Errorf("router %v, assumptions %q: want %s, saying %q and where", got, why, c.want, c.says)
		}
	}
	if got, _ := router(strings.Replace(mlperfFixture, `"num_gpus": 8`, `"num_gpus": 2`, 1)); got != nil {
		t.Errorf("one engine: router %v, want none", got)
	}
	if got, _ := router(strings.Replace(mlperfFixture, `"TensorRT 10.11"`, `"vLLM v0.9.2"`, 1)); got != nil {
		t.Errorf("vLLM's own harness: router %v, want none", got)
	}
}

// TestMLPerfHeldOutShapes: an AMD row's name is its preset and its fp4 MXFP4, said so, as is
// its KV cache's fp8; MLPerf's llama3.1-405b and deepseek-r1 rows convert on their presets
// and their datasets' summarised prompt lengths, DeepSeek-R1 on TensorRT-LLM keeping that
// engine's prefill cost (its PyTorch backend runs it).
func TestMLPerfHeldOutShapes(t *testing.T) {
	exp := strings.NewReplacer(`"NVIDIA B200-SXM-180GB"`, `"AMD Instinct MI355X"`, `"tp": 2`, `"tp": 1`,
		`"TensorRT 10.11"`, `"vLLM 0.10.1, ROCm 7.0"`, `[3584]`, `[8192]`).Replace(mlperfFixture)
	r, err := mlperfRow(json.RawMessage(exp))
	if err != nil || r.Skip != "" {
		t.Fatalf("%v %s", err, r.Skip)
	}
	dep := r.Profile["deployment"].(map[string]any)
	if r.Profile["gpu"] != "mi355x" || dep["weight_dtype"] != "mxfp4" || dep["replicas"] != 8 || r.Group.Engine != "vllm" {
		t.Errorf("profile %+v group %+v: want 8 × mi355x, mxfp4, vLLM", r.Profile, r.Group)
	}
	said := strings.Join(r.Assumptions, "\n")
	if !strings.Contains(said, "fp4 on AMD ASSUMED MXFP4") || !strings.Contains(said, "kv_dtype ASSUMED fp8") {
		t.Errorf("assumptions %q: want MXFP4 and the KV cache's fp8 stated", r.Assumptions)
	}
	if _, err := rowProfile(r); err != nil {
		t.Errorf("the simulator refuses the row's profile: %v", err)
	}
	mi300x := strings.Replace(exp, "AMD Instinct MI355X", "AMD Instinct MI300X", 1)
	if r, _ := mlperfRow(json.RawMessage(mi300x)); r.Group.GPU != "mi300x" || r.Profile["gpu"] != "mi300x" {
		t.Errorf("an MI300X row: group %+v, profile %+v", r.Group, r.Profile)
	}
	for model, want := range map[string]struct{ preset, inputs string }{
		"llama3.1-405b": {"llama-3.1-405b", "normal:9428.6:4067.2"}, "deepseek-r1": {"deepseek-r1", "normal:803.8:405.7"}} {
		r, _ := mlperfRow(json.RawMessage(strings.Replace(exp, `"llama2-70b-99"`, `"`+model+`"`, 1)))
		if r.Group.Family != want.preset || r.Skip != "" || r.Workload.InputTokens != want.inputs ||
			!strings.Contains(strings.Join(r.Assumptions, " "), "the normal shape is ASSUMED") {
			t.Errorf("%s: family %q, skip %q, inputs %q: want %s on its dataset's summarised lengths, their shape said", model, r.Group.Family, r.Skip, r.Workload.InputTokens, want.preset)
		}
	}
	// DeepSeek-R1 on TensorRT-LLM is its PyTorch backend's, and keeps that engine's prefill cost.
	trt := strings.NewReplacer(`"llama2-70b-99"`, `"deepseek-r1"`, `"vLLM 0.10.1, ROCm 7.0"`, `"TensorRT-LLM 1.0"`, "AMD Instinct MI355X", "NVIDIA B200-SXM-180GB").Replace(exp)
	if r, _ := mlperfRow(json.RawMessage(trt)); r.Skip != "" || r.Profile["cost"] != nil {
		t.Errorf("DeepSeek-R1 on TensorRT-LLM: skip %q, cost %v: want the engine's own prefill cost", r.Skip, r.Profile["cost"])
	}
}

// TestGPUPreset: a GB200 is the gb200 preset, not the B200 its name holds; a GB300 has none
// (it is neither a GB200 nor a B300), nor a GH200 or an L40; a name holding a shorter one
// (H200 H20, L40S L4, A100 A10) is its own, and an H200 NVL the h200-nvl; AMD's and InferenceX's names map alike.
func TestGPUPreset(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA GB200": "gb200", "NVIDIA GB300": "", "NVIDIA B200-SXM-180GB": "b200",
		"NVIDIA H200-SXM-141GB": "h200", "NVIDIA H200 NVL": "h200-nvl", "NVIDIA H200-NVL-141GB": "h200-nvl", "NVIDIA H100-SXM-80GB": "h100",
		"NVIDIA B300-SXM-288GB": "b300", "b300": "b300", "gb300": "", "NVIDIA GH200-144GB": "",
		"NVIDIA H20": "h20", "h20-96gb": "h20", "h200": "h200",
		"NVIDIA L40S": "l40s", "NVIDIA L4": "l4", "L4_x8": "l4", "NVIDIA L40": "",
		"NVIDIA A100-SXM4-80GB": "a100", "NVIDIA A10G": "a10g", "NVIDIA A10": "",
		"NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000", "NVIDIA RTX 6000 Ada": "",
		"AMD Instinct MI300X": "mi300x", "MI325X_x8": "mi325x", "AMD Instinct MI355X": "mi355x",
		"mi300x": "mi300x", "mi355x": "mi355x", "AMD Instinct MI350X": "", "AMD Instinct MI300A": "",
	} {
		if got := gpuPreset(name); got != want {
			t.Errorf("gpuPreset(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestGeneration: AMD's presets are CDNA generations of their own (not a name each), and
// Blackwell's B300 and RTX PRO 6000 are Blackwell.
func TestGeneration(t *testing.T) {
	for gpu, want := range map[string]string{"mi300x": "cdna3", "mi325x": "cdna3", "mi355x": "cdna4",
		"b300": "blackwell", "rtx-pro-6000": "blackwell", "h20": "hopper", "l4": "ada"} {
		if got := Generation(gpu); got != want {
			t.Errorf("Generation(%q) = %q, want %q", gpu, got, want)
		}
	}
}

// TestWeightDtype: fp4 is NVFP4 on NVIDIA's GPUs and MXFP4 on AMD's, each saying so where
// assumed; fp16 is bf16's size, said so.
func TestWeightDtype(t *testing.T) {
	for _, c := range []struct{ d, gpu, want string }{
		{"fp4", "b200", "nvfp4"}, {"fp4", "mi355x", "mxfp4"}, {"FP4", "mi300x", "mxfp4"}, {"mxfp4", "b200", "mxfp4"},
		{"fp8", "mi355x", "fp8"}, {"bf16", "mi300x", "bf16"}, {"fp16", "h100", "bf16"}, {"UNSET", "h200", ""},
	} {
		got, why := weightDtype(c.d, c.gpu)
		if got != c.want {
			t.Errorf("weightDtype(%q, %q) = %q, want %q", c.d, c.gpu, got, c.want)
		}
		if assumed := c.d == "fp16" || (strings.EqualFold(c.d, "fp4") && amd(c.gpu)); assumed != (why != "") {
			t.Errorf("weightDtype(%q, %q): assumption %q", c.d, c.gpu, why)
		}
	}
}

// TestNVIDIARuntimeBudget: a config built for more tokens a step than it runs simulates the
// run-time budget, and states the KV cache dtype its file states, or that it states none.
func TestNVIDIARuntimeBudget(t *testing.T) {
	stated := nvidiaRuntimeBudget("f", "s", 768, 768, 512, "fp4", "fp8")
	if stated.MaxBatchedTokens != 512 || stated.MaxNumSeqs != 768 || stated.KVDtype != "fp8" || !strings.Contains(stated.What, "kv_cache_dtype fp8") {
		t.Errorf("%+v: want the run-time budget 512, batch 768, the KV cache's fp8 stated", stated)
	}
	unstated := nvidiaRuntimeBudget("f", "s", 768, 768, 512, "fp4", "")
	if unstated.KVDtype != "" || !strings.Contains(unstated.What, "no kv_cache_dtype") {
		t.Errorf("%+v: want no KV cache dtype, said so", unstated)
	}
}

// TestMLPerfUnstatedKV: a row of NVIDIA's harness whose configs state no kv_cache_dtype (the
// B200's Llama-2-70B Interactive ones) keeps the cache unquantized, 16-bit, and says why and
// what is assumed; the Server rows and another GPU's Interactive ones take the fp8 theirs state.
func TestMLPerfUnstatedKV(t *testing.T) {
	kv := func(exp string) (any, string) {
		t.Helper()
		r, err := mlperfRow(json.RawMessage(exp))
		if err != nil || r.Skip != "" {
			t.Fatalf("%v %s", err, r.Skip)
		}
		return r.Profile["deployment"].(map[string]any)["kv_dtype"], strings.Join(r.Assumptions, "\n")
	}
	interactive := strings.Replace(mlperfFixture, `"scenario": "Server"`, `"scenario": "Interactive"`, 1)
	if got, why := kv(interactive); got != sim.DtypeBF16 || !strings.Contains(why, "quantize.py") || !strings.Contains(why, "ASSUMED") {
		t.Errorf("B200 Llama-2-70B Interactive: kv_dtype %v (%s), want bf16, saying why and what is assumed", got, why)
	}
	if got, _ := kv(mlperfFixture); got != "fp8" {
		t.Errorf("B200 Llama-2-70B Server: kv_dtype %v, want the fp8 its configs state", got)
	}
	if got, _ := kv(strings.Replace(interactive, `"NVIDIA B200-SXM-180GB"`, `"NVIDIA H200-SXM-141GB"`, 1)); got != "fp8" {
		t.Errorf("H200 Llama-2-70B Interactive: kv_dtype %v, want the fp8 its configs state", got)
	}
	id := "5.1-0088|Supermicro|SYS-422GS-NBRT-LCC_B200-SXM-180GBx8_TRT|llama2-70b-99|Interactive"
	if c := mlperfConfigs[id]; c.KVDtype != "" || !strings.Contains(c.What, "no kv_cache_dtype") {
		t.Errorf("%s: %+v, want no KV cache dtype read from its file", id, c)
	}
}

// TestMLPerfConfigsFillTheGaps: a row the groundtruth file left without parallelism or
// engine limits takes them from the submitter's files (mlperfConfigs), says where from, and
// an open-division row simulates the model it served on the benchmark's prompts.
func TestMLPerfConfigsFillTheGaps(t *testing.T) {
	const id = "5.1-0382|Krai|xd670_h200_x8_vllm_092|llama2-70b-99.9|Server"
	exp := `{"id": "` + id + `", "source_repo": "mlcommons/inference_results_v5.1", "path": "p", "commit": "965182b03376",
	 "model": "llama2-70b-99.9", "gpu": "NVIDIA H200-SXM-141GB", "num_gpus": null, "tp": null,
	 "framework_and_version": "vLLM v0.9.2", "dtype_weights": "UNSET",
	 "serving_settings": "not extracted; see the submitter's code/config (code_link)",
	 "workload": {"scenario": "Server", "target_qps": 93, "dataset": "OpenOrca",
	  "mean_output_tokens_accuracy_run": "TOKENS_PER_SAMPLE: 296.0"},
	 "measured": {"tpot_p50_ns": 112915517},
	 "constraints": {"ttft_p99_limit_ns": 2000000000, "tpot_p99_limit_ns": 200000000}}`
	r, err := mlperfRow(json.RawMessage(exp))
	if err != nil || r.Skip != "" {
		t.Fatalf("%v %s", err, r.Skip)
	}
	dep, eng := r.Profile["deployment"].(map[string]any), r.Profile["engine"].(map[string]any)
	if r.Profile["model"] != "llama-3.1-70b" || dep["tp"] != 1 || dep["replicas"] != 8 || dep["weight_dtype"] != "fp8" ||
		dep["kv_dtype"] != "bf16" || eng["kind"] != "vllm" || eng["max_num_seqs"] != 858 || eng["max_batched_tokens"] != 36498 ||
		eng["gpu_memory_utilization"] != 0.95 {
		t.Errorf("profile %+v", r.Profile)
	}
	if r.Group != (predict.Group{Family: "llama-3.1-70b", GPU: "h200", Engine: "vllm", Load: "poisson"}) {
		t.Errorf("group %+v", r.Group)
	}
	if r.Workload.InputTokens != mlperfInputs["llama-2-70b"].dist {
		t.Errorf("inputs %q: want the Llama-2-70B benchmark's OpenOrca prompts", r.Workload.InputTokens)
	}
	if !strings.Contains(strings.Join(r.Assumptions, "\n"), mlperfConfigs[id].From+" at 965182b0") {
		t.Errorf("assumptions %q do not name the file the limits were read from", r.Assumptions)
	}
	skipped := strings.Replace(exp, id, "5.1-0377|Krai|b200_x8|llama2-70b-99.9|Server", 1)
	if r, _ := mlperfRow(json.RawMessage(skipped)); !strings.Contains(r.Skip, "neither its token budget") || r.Group.Family != "llama-3.1-70b" {
		t.Errorf("a row whose files state too little: skip %q, family %q", r.Skip, r.Group.Family)
	}
	for id, c := range mlperfConfigs {
		if c.From == "" || (c.Skip == "" && (c.TP < 1 || c.Replicas < 1 || c.MaxNumSeqs < 1 || c.MaxBatchedTokens < 1 || c.What == "")) {
			t.Errorf("%s: %+v states too little to simulate and gives no reason", id, c)
		}
	}
}

// TestCommittedMLPerfTable: the committed table loads, hermetically, and its runnable rows
// carry a profile and a load.
func TestCommittedMLPerfTable(t *testing.T) {
	rows, err := Load(mlperfTable)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 115 {
		t.Errorf("%d rows, want the 115 of the groundtruth file", len(rows))
	}
	for _, r := range rows {
		if r.Skip == "" && (r.Profile == nil || r.Workload.Rate <= 0 || r.Source.Commit == "") {
			t.Errorf("row %s: profile %v, workload %+v, source %+v", r.ID, r.Profile, r.Workload, r.Source)
		}
	}
}

// TestFromRun: a run's levels become rows of their own figures; simulated on the profile
// that made them, the error is small.
func TestFromRun(t *testing.T) {
	rows, err := FromRun("../cli/testdata/v1-run", "textbook")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Workload.Concurrency != 1 || rows[0].Workload.InputTokens != "512" || rows[0].Measured["ttft_ms.p50"] != 10.24 {
		t.Fatalf("rows %+v", rows)
	}
	var profileErr *ProfileError
	if _, err := FromRun("../cli/testdata/v1-run", "no-such-profile"); !errors.As(err, &profileErr) || profileErr.Profile != "no-such-profile" {
		t.Errorf("unknown profile: %v", err)
	}
	if _, err := FromRun(t.TempDir(), "textbook"); err == nil {
		t.Error("a folder without summary.json: no error")
	}
}

// TestInferencexRows: an InferenceX row (its shape as ../shared/groundtruth's README
// describes it; the figures here are made up) becomes a closed loop on one aggregated
// server of its tp GPUs — DP attention as dp groups of one GPU, EP as expert parallelism,
// fp4 as NVFP4 — with its throughput per GPU times tp; the engine limits it lacks are
// stated assumptions; disaggregated and speculative rows say why they are skipped.
func TestInferencexRows(t *testing.T) {
	row := func(dpAttn bool, ep int, dtype, spec string, disagg bool) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"id": "x", "model": "DeepSeek-R1-0528 ('dsr1')", "gpu": "b200",
			"num_gpus": {"prefill": %d, "decode": %d}, "tp": {"prefill": 8, "decode": 8}, "ep": {"prefill": %d, "decode": %d},
			"dp_attention": {"prefill": %t, "decode": %t}, "framework": "sglang", "dtype": %q,
			"serving_settings": {"disagg": %t, "spec_method": %q},
			"workload": {"isl": 1024, "osl": 1024, "concurrency": 64},
			"measured": {"median_tpot": 0.02, "median_ttft": 0.15, "median_itl": 0.6, "output_tput_per_gpu": 250}}`,
			8*ep, 8*ep, ep, ep, dpAttn, dpAttn, dtype, disagg, spec))
	}
	r, err := inferencexRow(row(true, 8, "fp4", "none", false))
	if err != nil {
		t.Fatal(err)
	}
	dep, _ := r.Profile["deployment"].(map[string]any)
	if r.Skip != "" || r.Profile["model"] != "deepseek-r1" || dep["tp"] != 1 || dep["dp"] != 8 || dep["expert_parallel"] != true || dep["weight_dtype"] != "nvfp4" {
		t.Errorf("row %+v profile %+v: want deepseek-r1, dp 8 of tp 1, expert parallel, nvfp4", r, r.Profile)
	}
	if r.Workload.Concurrency != 64 || r.Workload.Requests != 640 || r.Workload.InputTokens != "uniform:819:1024" {
		t.Errorf("workload %+v: want a closed loop of 64, 640 requests, inputs uniform in [0.8 L, L]", r.Workload)
	}
	if r.Measured["output_throughput"] != 2000 || r.Measured["tpot_ms.p50"] != 20 || r.Measured["ttft_ms.p50"] != 150 {
		t.Errorf("measured %+v: want 8 GPUs × 250 tokens/s, TPOT 20 ms, TTFT 150 ms", r.Measured)
	}
	// The source's ITL is per stream event of several tokens, not the simulator's per token.
	if _, ok := r.Measured["itl_ms.p50"]; ok || !strings.Contains(strings.Join(r.Assumptions, " "), "ITL not compared") {
		t.Errorf("measured %+v, assumptions %q: want the per-event ITL left out, and said so", r.Measured, r.Assumptions)
	}
	if len(r.Assumptions) < 3 || !strings.Contains(strings.Join(r.Assumptions, " "), "max_num_seqs ASSUMED") {
		t.Errorf("assumptions %q: want the engine limits stated", r.Assumptions)
	}
	if _, err := rowProfile(r); err != nil {
		t.Errorf("the simulator refuses the row's profile: %v", err)
	}
	r, _ = inferencexRow(row(false, 1, "fp8", "none", false))
	if dep, _ := r.Profile["deployment"].(map[string]any); dep["tp"] != 8 || dep["dp"] != nil || dep["expert_parallel"] != nil || dep["weight_dtype"] != "fp8" {
		t.Errorf("profile %+v: want tp 8, fp8, no DP or EP", r.Profile)
	}
	for spec, want := range map[string]string{"mtp": "speculative decoding by mtp: its acceptance rate", "eagle3": "speculative decoding by eagle3", "": "disaggregated prefill and decode pools"} {
		r, _ := inferencexRow(row(false, 1, "fp8", spec, spec == ""))
		if !strings.HasPrefix(r.Skip, want) {
			t.Errorf("skip %q, want %q", r.Skip, want)
		}
	}
}

// TestInferencexHeldOutShapes: rows of other models, GPUs and engines convert as far as the
// source states them. gpt-oss-120b's fp4 is its checkpoint as shipped (MXFP4 experts), on
// AMD as on NVIDIA; another model's fp4 is MXFP4 on AMD; bf16 rows convert; only DeepSeek-R1's
// rows take the engine flags read from its scripts; names match case aside, by prefix; a
// model or engine the simulator lacks is skipped, saying so.
func TestInferencexHeldOutShapes(t *testing.T) {
	row := func(model, gpu, framework, dtype string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"id": "x", "model": %q, "gpu": %q,
			"num_gpus": {"prefill": 8, "decode": 8}, "tp": {"prefill": 8, "decode": 8}, "ep": {"prefill": 1, "decode": 1},
			"dp_attention": {"prefill": false, "decode": false}, "framework": %q, "dtype": %q, "date": "2026-03-01",
			"serving_settings": {"disagg": false, "spec_method": "none"},
			"workload": {"isl": 1024, "osl": 1024, "concurrency": 64},
			"measured": {"median_tpot": 0.02, "median_ttft": 0.15, "median_itl": 0.6, "output_tput_per_gpu": 250}}`,
			model, gpu, framework, dtype))
	}
	r, err := inferencexRow(row("gpt-oss-120b", "mi355x", "sglang", "fp4"))
	if err != nil || r.Skip != "" {
		t.Fatalf("%v %s", err, r.Skip)
	}
	dep, eng := r.Profile["deployment"].(map[string]any), r.Profile["engine"].(map[string]any)
	said := strings.Join(r.Assumptions, "\n")
	if r.Profile["model"] != "gpt-oss-120b" || r.Profile["gpu"] != "mi355x" || dep["expert_dtype"] != "mxfp4" || dep["weight_dtype"] != nil {
		t.Errorf("profile %+v: want gpt-oss-120b on mi355x, its MXFP4 experts as shipped", r.Profile)
	}
	if _, ok := eng["recv_interval"]; ok || eng["max_batched_tokens"] != 8192 || !strings.Contains(said, "max_batched_tokens ASSUMED 8192") ||
		strings.Contains(said, "dsr1") || !strings.Contains(said, "checkpoint as shipped") {
		t.Errorf("engine %+v, assumptions %q: want the default budget, said so, and no flag of DeepSeek-R1's scripts", eng, r.Assumptions)
	}
	if _, err := rowProfile(r); err != nil {
		t.Errorf("the simulator refuses the row's profile: %v", err)
	}
	// The same row's model on a B200 with SGLang, whose DeepSeek-R1 rows take recv_interval 30.
	r, _ = inferencexRow(row("openai/GPT-OSS-120B", "b200", "sglang", "fp4"))
	if eng, _ := r.Profile["engine"].(map[string]any); r.Skip != "" || r.Profile["model"] != "gpt-oss-120b" || eng["recv_interval"] != nil {
		t.Errorf("skip %q, profile %+v: want gpt-oss-120b on b200 without DeepSeek-R1's recv_interval", r.Skip, r.Profile)
	}
	r, _ = inferencexRow(row("DeepSeek-R1-0528 ('dsr1')", "mi355x", "sglang", "fp4"))
	if dep, _ := r.Profile["deployment"].(map[string]any); r.Skip != "" || dep["weight_dtype"] != "mxfp4" || !strings.Contains(strings.Join(r.Assumptions, " "), "fp4 on AMD ASSUMED MXFP4") {
		t.Errorf("skip %q, profile %+v, assumptions %q: want DeepSeek-R1 on mi355x in MXFP4, said so", r.Skip, r.Profile, r.Assumptions)
	}
	// DeepSeek-R1 on a GPU whose scripts were not read takes the default budget too.
	r, _ = inferencexRow(row("DeepSeek-R1-0528 ('dsr1')", "b300", "trt", "fp4"))
	if said := strings.Join(r.Assumptions, " "); r.Skip != "" || r.Profile["gpu"] != "b300" || !strings.Contains(said, "max_batched_tokens ASSUMED 8192") || strings.Contains(said, "--max_num_tokens") {
		t.Errorf("skip %q, profile %+v, assumptions %q: want DeepSeek-R1 on b300 with the default budget", r.Skip, r.Profile, r.Assumptions)
	}
	for model, want := range map[string]string{"Llama-3.3-70B-Instruct-FP8": "llama-3.1-70b", "llama-3.1-8b-instruct": "llama-3.1-8b",
		"Qwen3-235B-A22B-FP8": "qwen3-235b-a22b", "DeepSeek-V3-0324": "deepseek-v3", "gpt-oss-20b": "gpt-oss-20b"} {
		r, _ := inferencexRow(row(model, "h200", "vllm", "bf16"))
		if dep, _ := r.Profile["deployment"].(map[string]any); r.Profile["model"] != want || dep["weight_dtype"] != "bf16" || r.Profile["engine"].(map[string]any)["kind"] != "vllm" {
			t.Errorf("%s: skip %q, profile %+v: want %s in bf16 on vLLM", model, r.Skip, r.Profile, want)
		}
	}
	for _, c := range []struct{ model, framework, want string }{
		{"Mistral-Large-2411", "vllm", "no model preset for Mistral-Large-2411"},
		{"DeepSeek-V3.2-Exp", "sglang", "sparse attention"},
		{"gpt-oss-120b", "atom", `engine "atom" is not one the simulator models`},
	} {
		if r, _ := inferencexRow(row(c.model, "mi355x", c.framework, "fp8")); !strings.Contains(r.Skip, c.want) {
			t.Errorf("%s on %s: skip %q, want %q", c.model, c.framework, r.Skip, c.want)
		}
	}
}

// SetIntervals gives each row the interval of the other sources' residuals: a row of a
// source whose bias the others do not share is not covered by its own.
func TestSetIntervalsLeavesTheSourceOut(t *testing.T) {
	g := predict.Group{Family: "m", GPU: "h100", Engine: "vllm", Load: "closed"}
	var results []Result
	for i := range 6 {
		results = append(results, Result{ID: fmt.Sprint("a", i), Group: g, Source: Source{Name: "a"},
			Predicted: map[string]float64{"tpot_ms.p50": 10}, Measured: map[string]float64{"tpot_ms.p50": 10 + float64(i%3)*0.2}})
	}
	results = append(results, Result{ID: "b0", Group: g, Source: Source{Name: "b"},
		Predicted: map[string]float64{"tpot_ms.p50": 10}, Measured: map[string]float64{"tpot_ms.p50": 30}})
	SetIntervals(results)
	iv := results[6].Interval["tpot_ms.p50"]
	if !(iv[0] > 9 && iv[1] < 12) {
		t.Errorf("b0's interval %v should come from source a's rows alone (about 10-10.8)", iv)
	}
	if iv := results[0].Interval["tpot_ms.p50"]; iv != [2]float64{} {
		t.Errorf("a0's interval %v: source b has one row, fewer than a band needs of the group, and no pooled band of 2", iv)
	}
	var buf bytes.Buffer
	WriteCoverage(&buf, results)
	if !strings.Contains(buf.String(), "each source left out in turn") {
		t.Errorf("coverage: %s", buf.String())
	}
}

// A capacity answer is the highest rate, to 5 %, that met the limits: the simulator met
// them there, and missed them at a rate at most 5 % above (or the search's reach).
func TestFindCapacity(t *testing.T) {
	r := Row{ID: "capacity", Profile: map[string]any{"model": "llama-3.1-8b", "gpu": "h100"},
		Workload: Workload{Rate: 10, InputTokens: "512", OutputTokens: "128", Requests: 2000, Warmup: 500},
		Limits:   &Limits{TTFTP99Ms: 1000, TPOTP99Ms: 15, SubmittedRate: 10}}
	c, err := FindCapacity(context.Background(), r, 1, t.TempDir())
	if err != nil || c == nil {
		t.Fatalf("capacity %+v, %v", c, err)
	}
	var met, above bool
	for _, p := range c.Probes {
		met = met || p.Met && p.Rate == c.PredictedRate && p.TPOTP99Ms <= 15 && p.TTFTP99Ms <= 1000
		above = above || !p.Met && p.Rate > c.PredictedRate && p.Rate <= c.PredictedRate*1.05+1e-9
	}
	if !met || !above || c.PredictedRate <= 0 || c.PredictedRate >= capacityReach*10 {
		t.Fatalf("predicted %.3g req/s from probes %+v: want a met rate with a missed one within 5%% above", c.PredictedRate, c.Probes)
	}
	if want := 100 * (c.PredictedRate - 10) / 10; math.Abs(c.ErrorPct-want) > 1e-9 {
		t.Errorf("error %.2f%%, want %.2f%%", c.ErrorPct, want)
	}
	t.Logf("capacity %.3g req/s in %d probes", c.PredictedRate, len(c.Probes))
	s := SummariseCapacity([]Result{{Capacity: &Capacity{ErrorPct: -10}}, {Capacity: &Capacity{ErrorPct: 40}}, {Capacity: &Capacity{ErrorPct: -30}}, {}})
	if s == nil || s.Rows != 3 || s.OverPredicted25 != 1 || s.MedianPct != -10 || s.MedianAbsPct != 30 {
		t.Errorf("summary %+v: want 3 rows, median -10%%, median |error| 30%%, one over-predicted", s)
	}
}

// A capacity probe is judged over its whole level: a batching server near its capacity
// fills for minutes, and the over-saturation rule, which ends a run's level early, stopped
// this one (MLPerf's B200 Llama-2-70B deployment, one replica at 88 % of its capacity) after
// 32 s of a level it keeps up with.
func TestCapacityProbeNotStoppedWhileFilling(t *testing.T) {
	r := Row{ID: "filling", Profile: map[string]any{"model": "llama-2-70b", "gpu": "b200",
		"deployment": map[string]any{"weight_dtype": "nvfp4", "kv_dtype": "fp8"},
		"engine":     map[string]any{"kind": "tensorrt-llm", "max_num_seqs": 2048, "max_batched_tokens": 3584}}}
	w := Workload{Rate: 40, InputTokens: "lognormal:222.3:171.5", OutputTokens: "normal:274.4:137.2"}
	w.Requests, w.Warmup = 6000, 1000
	lv, skip, err := simulateLevel(context.Background(), r, w, "ttft:p99<=2s,tpot:p99<=200ms", probeFigures, 1, t.TempDir())
	if err != nil || skip != "" {
		t.Fatalf("%q, %v", skip, err)
	}
	if lv.EndReason == string(load.EndOversaturated) || lv.SLO == nil || !lv.SLO.Pass {
		t.Fatalf("end %q, verdict %+v: want the level run whole and its limits met", lv.EndReason, lv.SLO)
	}
}

// A validation's files are written whole into a folder not made yet: a long validation
// does not end in an error that loses what it simulated.
func TestWritesMakeTheirFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "made")
	rep := &Report{Seed: 7, Tables: []string{"t.json"}, Groups: []GroupResult{{Rows: 2}}}
	if err := WriteJSON(filepath.Join(dir, "validation.json"), rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(filepath.Join(dir, "groups.md"), rep); err != nil {
		t.Fatal(err)
	}
	var back Report
	b, err := os.ReadFile(filepath.Join(dir, "validation.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil || back.Seed != 7 || len(back.Groups) != 1 {
		t.Fatalf("validation.json read back as %+v (%v)", back, err)
	}
	if md, err := os.ReadFile(filepath.Join(dir, "groups.md")); err != nil || !strings.HasPrefix(string(md), "| group | rows |") {
		t.Fatalf("groups.md is %q (%v)", md, err)
	}
}

// TestInferencePerfRows: an inference-perf run (its shape as ../shared/groundtruth's
// README describes it; the figures here are made up) becomes a row per stage: constant
// arrivals at the stage's rate of single-turn shared-prefix prompts within the realised
// lengths, outputs of output_len, on vLLM with the run's limits and prefix caching; only
// latencies are compared; an overloaded stage and a multi-turn run say why they are
// skipped.
func TestInferencePerfRows(t *testing.T) {
	run := func(multiTurn bool, failures int) json.RawMessage {
		cfg := fmt.Sprintf("data:\n  type: shared_prefix\n  shared_prefix:\n    num_groups: 10\n    system_prompt_len: 100\n    question_len: 466\n    output_len: 247\n    enable_multi_turn_chat: %t\nload:\n  type: constant\n  stages:\n  - rate: 5.0\n    duration: 600\n  - rate: 10.0\n    duration: 600\nserver:\n  ignore_eos: true\n", multiTurn)
		stage := func(rate float64, failures int) string {
			return fmt.Sprintf(`{"stage_file": "d/results/stage_%g_lifecycle_metrics.json", "successes_count": 3000, "failures_count": %d,
				"load_summary": {"requested_rate": %g}, "throughput": {"output_tokens_per_sec": 900},
				"latency_s": {"ttft": {"mean": 0.06, "median": 0.05, "p99": 0.08}, "e2e_latency": {"mean": 4.98, "median": 4.2}, "tpot": {"median": 0.003}},
				"prompt_len_tokens": {"min": 577, "median": 593, "max": 609}}`, rate, failures, rate)
		}
		b, _ := json.Marshal(cfg)
		return json.RawMessage(fmt.Sprintf(`{"id": "run", "source_repo": "r", "path": "d", "commit": "c", "model": "meta-llama/Llama-2-70b-hf",
			"gpu": "H100 SXM 80GB", "tp": 4, "framework": "vllm",
			"serving_settings": {"exp_config_yaml": {"max_model_len": 4096, "max_num_batched_tokens": 2048, "max_num_seqs": 128}},
			"workload": {"inference_perf_results_config_yaml": %s},
			"measured": {"stages": [%s, %s]}}`, b, stage(5, 0), stage(10, failures)))
	}
	rows, err := inferencePerfRows(run(false, 7))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want one per stage", len(rows))
	}
	r := rows[0]
	eng, _ := r.Profile["engine"].(map[string]any)
	dep, _ := r.Profile["deployment"].(map[string]any)
	if r.Skip != "" || r.ID != "run/stage_0" || r.Profile["model"] != "llama-2-70b" || r.Profile["gpu"] != "h100" || dep["tp"] != 4 ||
		eng["max_num_seqs"] != 128 || eng["max_batched_tokens"] != 2048 || eng["prefix_caching"] != true || r.Group.Load != "constant" {
		t.Errorf("row %+v: want llama-2-70b on 4 × h100, vLLM's limits, prefix caching, constant load", r)
	}
	w := r.Workload
	if w.Rate != 5 || w.Arrival != "constant" || w.InputTokens != "uniform:577:609" || w.OutputTokens != "247" ||
		w.PrefixTokens != 100 || w.PrefixGroups != 10 || w.Requests != 2000 || w.Warmup != 50 {
		t.Errorf("workload %+v", w)
	}
	if r.Measured["ttft_ms.p50"] != 50 || r.Measured["e2el_ms.p50"] != 4200 || math.Abs(r.Measured["tpot_ms.mean"]-20) > 1e-9 || len(r.Measured) != 6 {
		t.Errorf("measured %+v: want TTFT, E2E and TPOT's mean from theirs (the source's output counts are unreliable)", r.Measured)
	}
	if _, err := rowProfile(r); err != nil {
		t.Errorf("the simulator refuses the row's profile: %v", err)
	}
	if _, lvl, err := rowWorkload(w, 1); err != nil || lvl.Arrival.Kind != "constant" || lvl.Rate != 5 {
		t.Errorf("level %+v, %v: want constant arrivals at 5 req/s", lvl, err)
	}
	if !strings.HasPrefix(rows[1].Skip, "overloaded: 7 of 3007 requests failed") {
		t.Errorf("skip %q: want the overloaded stage named", rows[1].Skip)
	}
	rows, _ = inferencePerfRows(run(true, 0))
	if !strings.Contains(rows[0].Skip, "multi-turn true") {
		t.Errorf("skip %q: want the multi-turn run named", rows[0].Skip)
	}
}

// TestInferencexMemFraction: SGLang's DeepSeek-R1 fp8 rows on four B200s take the script's
// static memory fraction (without it the weights leave no KV cache); at TP 8 the default.
func TestInferencexMemFraction(t *testing.T) {
	row := func(tp int, date string) Row {
		t.Helper()
		r, err := inferencexRow(json.RawMessage(fmt.Sprintf(`{"id": "x", "model": "DeepSeek-R1-0528 ('dsr1')", "gpu": "b200",
			"num_gpus": {"prefill": %d, "decode": %d}, "tp": {"prefill": %d, "decode": %d}, "ep": {"prefill": 1, "decode": 1},
			"dp_attention": {"prefill": false, "decode": false}, "framework": "sglang", "dtype": "fp8", "date": %q,
			"serving_settings": {"disagg": false, "spec_method": "none"},
			"workload": {"isl": 8192, "osl": 1024, "concurrency": 32},
			"measured": {"median_tpot": 0.03, "median_ttft": 0.8}}`, tp, tp, tp, tp, date)))
		if err != nil || r.Skip != "" {
			t.Fatalf("tp %d: %v, skipped %q", tp, err, r.Skip)
		}
		return r
	}
	eng := func(r Row) map[string]any { e, _ := r.Profile["engine"].(map[string]any); return e }
	if r := row(4, "2026-05-22"); eng(r)["gpu_memory_utilization"] != 0.95 || !strings.Contains(strings.Join(r.Assumptions, " "), "--mem-fraction-static") {
		t.Errorf("tp 4: engine %v, assumptions %q: want the script's 0.95, said", eng(r), r.Assumptions)
	}
	for _, r := range []Row{row(8, "2026-05-22"), row(4, "2025-12-01")} {
		if _, ok := eng(r)["gpu_memory_utilization"]; ok {
			t.Errorf("engine %v: want the default fraction at TP 8 or before the script set it", eng(r))
		}
	}
}
