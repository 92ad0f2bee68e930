package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/plan"
	"github.com/llmbench/llmbench/internal/report"
)

func readPlan(t *testing.T, dir string) *plan.Plan {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pl plan.Plan
	if err := json.Unmarshal(b, &pl); err != nil {
		t.Fatal(err)
	}
	return &pl
}

// TestPlanTextbookReplicas: on the textbook model the capacity of a replica follows by
// hand. It prefills in an unlimited disaggregated pool and decodes in lock-step, a batch
// of b taking 8 × (1 + 0.12 (b − 1)) = 7.04 + 0.96 b ms a step. Constant arrivals split
// round-robin give each of n replicas a constant λ = R / n requests/s, each decoding 127
// steps after its first token (128 output tokens), so the steady batch is
// b = λ · 0.127 · (7.04 + 0.96 b) (Little's law), and TPOT is the step. TPOT ≤ 20 ms
// allows b ≤ (20 − 7.04) / 0.96 = 13.5, reached at λ = 13.5 / (0.89408 + 0.12192 · 13.5)
// = 5.315 req/s. At 20 req/s: ⌈20 / 5.315⌉ = 4 replicas (3 would each take 6.67 req/s,
// TPOT 37.7 ms).
func TestPlanTextbookReplicas(t *testing.T) {
	const rate, bound = 20.0, 20.0
	b := (bound - 7.04) / 0.96
	perReplica := b / (0.89408 + 0.12192*b)
	want := int(math.Ceil(rate / perReplica))
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "plan", "--sim", "textbook", "--rate", fmt.Sprint(rate), "--arrival", "constant",
		"--router", "round-robin", "--input-tokens", "512", "--output-tokens", "128", "--requests", "1000",
		"--slo", fmt.Sprintf("tpot:p99<=%gms", bound), "--output-dir", dir, "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	pl := readPlan(t, dir)
	if pl.Best == nil || pl.Candidates[*pl.Best].Replicas != want {
		t.Fatalf("chose %+v, want %d replicas\n%s", pl.Candidates, want, stdout)
	}
	if !strings.Contains(stderr, "profile textbook has a linear cost model") {
		t.Errorf("the linear profile's note is missing:\n%s", stderr)
	}
	if !strings.Contains(stdout, fmt.Sprintf("(%d replicas miss them)", want-1)) {
		t.Errorf("console:\n%s", stdout)
	}
}

// TestPlanBestYAMLResimulates: the default model's chosen deployment, re-simulated from
// best.yaml with the same traffic flags over the plan's horizon (the check command it
// prints), meets every SLO with the plan's own figures; the same file with one replica
// fewer does not.
func TestPlanBestYAMLResimulates(t *testing.T) {
	dir := t.TempDir()
	traffic := []string{"--rate", "80", "--slo", "ttft:p99<=300ms,tpot:p99<=30ms"}
	code, stdout, stderr := runCLI(t, context.Background(), append([]string{"plan", "--output-dir", dir, "--no-progress",
		"--max-num-seqs", "128,256"}, traffic...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	pl := readPlan(t, dir)
	best := pl.Candidates[*pl.Best]
	if best.Replicas < 2 {
		t.Fatalf("the check needs a fleet of 2 or more, got %d replicas", best.Replicas)
	}
	yaml := filepath.Join(dir, "best.yaml")
	horizon := fmt.Sprintf("%.0fs", best.HorizonS)
	unfolded := strings.ReplaceAll(stdout, " \\\n    ", " ") // the check folded to fit the terminal
	if want := "  llmbench simulate --sim " + yaml + " --rate 80 --slo 'ttft:p99<=300ms,tpot:p99<=30ms' --duration " + horizon + "\n"; !strings.Contains(unfolded, want) {
		t.Errorf("console does not print the check %q:\n%s", want, stdout)
	}
	if !best.Steady || best.HorizonS < plan.MinHorizon.Seconds() {
		t.Errorf("best: steady %v over %g s", best.Steady, best.HorizonS)
	}
	traffic = append(traffic, "--duration", horizon)
	simulate := func(profile string) *report.Level {
		out := t.TempDir()
		runCLI(t, context.Background(), append([]string{"simulate", "--sim", profile, "--output-dir", out, "--no-progress", "--quiet"}, traffic...)...)
		return &readSummaryT(t, out).Levels[0]
	}
	lv := simulate(yaml)
	if !lv.SLO.Pass || lv.EndReason == report.EndOversaturated {
		t.Fatalf("best.yaml at the traffic: SLO %+v, end %s", lv.SLO, lv.EndReason)
	}
	for i, term := range lv.SLO.Terms {
		if *term.Value != *best.SLO[i].Value {
			t.Errorf("%s: simulate %v, plan %v", term.Term, *term.Value, *best.SLO[i].Value)
		}
	}
	if got, want := *lv.Cost.PerMillionOutputTokens, *best.CostPerMillionOutputTokens; got != want {
		t.Errorf("cost per million output tokens: simulate %v, plan %v", got, want)
	}
	b, err := os.ReadFile(yaml)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^  replicas: \d+$`)
	if n := len(re.FindAll(b, -1)); n != 1 {
		t.Fatalf("best.yaml has %d replicas keys", n)
	}
	fewer := filepath.Join(t.TempDir(), "fewer.yaml")
	if err := os.WriteFile(fewer, re.ReplaceAll(b, fmt.Appendf(nil, "  replicas: %d", best.Replicas-1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if lv := simulate(fewer); lv.SLO.Pass && lv.EndReason != report.EndOversaturated {
		t.Errorf("%d replicas meet the SLOs too: %+v", best.Replicas-1, lv.SLO)
	}
}

// A 70B in bf16 (141 GB of weights) is never planned at tp 1 on 80 GB GPUs.
func TestPlan70BNeverAtTP1(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "plan", "--model-shape", "llama-3.1-70b", "--gpu", "h100,a100",
		"--tp", "1,2,4", "--rate", "3", "--slo", "ttft:p99<=2s,tpot:p99<=80ms", "--max-replicas", "8", "--output-dir", dir, "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	pl := readPlan(t, dir)
	if len(pl.Candidates) != 6 {
		t.Fatalf("%d candidates", len(pl.Candidates))
	}
	for _, c := range pl.Candidates {
		if c.TP == 1 && (c.Fits || c.MeetsSLO) {
			t.Errorf("%s planned", c.Describe())
		}
	}
	if b := pl.Candidates[*pl.Best]; b.TP < 2 {
		t.Errorf("chose %s", b.Describe())
	}
	if !strings.Contains(stdout, "2 cannot be deployed as configured") {
		t.Errorf("console does not say what does not fit:\n%s", stdout)
	}
}

func TestPlanFlagErrorsAllAtOnce(t *testing.T) {
	code, _, stderr := runCLI(t, context.Background(), "plan", "--concurrency", "4", "--repeat", "2", "--model-shape", "llama-9",
		"--sim", "textbook", "--tp", "0", "--max-num-seqs", "x", "--gpu", ",")
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitUsage, stderr)
	}
	for _, want := range []string{
		"--concurrency: plan sizes a fleet for an arrival rate", "--repeat: plan simulates each fleet once",
		"--model-shape and --sim: give one", `--model-shape: "llama-9" is not a model preset`, `--tp: "0" must be positive`,
		`--max-num-seqs: "x" is not a number`, `--gpu: "," lists nothing`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// The space's problems come with the flags' others.
	code, _, stderr = runCLI(t, context.Background(), "plan", "--concurrency", "4", "--gpu", "tpu", "--dtype", "int8")
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitUsage, stderr)
	}
	for _, want := range []string{"--concurrency: plan sizes", `--gpu: "tpu" is not a GPU preset`, `--dtype: "int8" is not one of bf16, fp8, int4, mxfp4, nvfp4`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sim", "textbook", "--gpu", "h100", "--tp", "2", "--rate", "5", "--slo", "tpot:p99<=20ms"},
			"--gpu, --tp: profile textbook has a linear cost model"},
		{[]string{"--rate", "5", "--slo", "ttft<=1s"}, "--slo: plan needs verdict terms"},
		{[]string{"--slo", "ttft:p99<=1s"}, "--rate: give the one arrival rate to plan for"},
		{[]string{"--rate", "5,10", "--slo", "ttft:p99<=1s"}, "--rate: give the one arrival rate to plan for"},
		{[]string{"--rate", "5", "--slo", "ttft:p99<=1s", "--gpu", "tpu", "--router", "random", "--max-replicas", "0"},
			`--gpu: "tpu" is not a GPU preset`},
	} {
		code, _, stderr := runCLI(t, context.Background(), append([]string{"plan", "--output-dir", t.TempDir()}, c.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("plan %v: exit %d, stderr lacks %q:\n%s", c.args, code, c.want, stderr)
		}
	}
	// plan names fields; the command names their flags, every problem of the space's and
	// the config's at once.
	code, _, stderr = runCLI(t, context.Background(), "plan", "--output-dir", t.TempDir(), "--rate", "5", "--slo", "tpot:p99<=30ms",
		"--gpu", "tpu,h100,h100", "--tp", "3", "--confidence", "maybe", "--pue", "9")
	for _, want := range []string{`--gpu: "tpu" is not a GPU preset`, "--tp: 3 is not a power of two", "--gpu: h100 is listed twice",
		"--pue: 9 is not a power usage effectiveness", `--confidence: "maybe" is not interval`} {
		if code != ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
}

func TestPlanRefusesAnEarlierPlan(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plan.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, context.Background(), "plan", "--rate", "5", "--slo", "ttft:p99<=1s", "--output-dir", dir)
	if code != ExitUsage || !strings.Contains(stderr, "already holds a plan (plan.json)") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
}

// Interrupted before anything was planned, plan still writes what it has (nothing) and
// says it was interrupted: exit 130.
func TestPlanInterruptedKeepsWhatItFound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, ctx, "plan", "--rate", "5", "--slo", "ttft:p99<=1s", "--max-num-seqs", "64,128", "--output-dir", dir)
	if code != ExitInterrupted {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	pl := readPlan(t, dir)
	if !pl.Interrupted || pl.Configurations != 2 || pl.Evaluated != 0 || pl.Best != nil {
		t.Errorf("plan.json: %+v", pl)
	}
	if _, err := os.Stat(filepath.Join(dir, "plan.html")); err != nil {
		t.Error(err)
	}
}

// No candidate meeting the SLOs is a finding, written down, and exit 3: the textbook's
// fastest step is 8 ms, so no fleet meets a 5 ms TPOT.
func TestPlanNoneMeetsIsExit3(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "plan", "--sim", "textbook", "--rate", "20", "--slo", "tpot:p99<=5ms",
		"--output-dir", dir, "--no-progress")
	if code != ExitSLOFailed || !strings.Contains(stderr, "no candidate met the SLOs") || !strings.Contains(stdout, "1 misses the SLOs") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if pl := readPlan(t, dir); pl.Best != nil || len(pl.Candidates) != 1 || pl.Candidates[0].MeetsSLO {
		t.Errorf("plan.json: %+v", pl)
	}
	if _, err := os.Stat(filepath.Join(dir, "best.yaml")); !os.IsNotExist(err) {
		t.Errorf("best.yaml written without a plan: %v", err)
	}
}

// Every flag plan takes is decided: it shapes the traffic (and goes to the check command),
// it is plan's own, or plan refuses it, saying why. A flag added to run and simulate that
// sets the Spec's fields is the traffic's unless refused (planTraffic); one that sets none,
// or the outputs', fails here until it is one of them, so plan never takes one silently and
// drops it.
func TestPlanDecidesEveryFlag(t *testing.T) {
	var undecided []string
	newPlanCmd(Stdio{}).Flags().VisitAll(func(f *pflag.Flag) {
		_, refused := planRefused[f.Name]
		n := btoi(refused) + btoi(planTraffic(f)) + btoi(slices.Contains(planOwnFlags, f.Name))
		if n != 1 {
			undecided = append(undecided, fmt.Sprintf("--%s (%d lists)", f.Name, n))
		}
	})
	if len(undecided) > 0 {
		t.Errorf("flags in no list, or in several: %v (planTraffic, planOwnFlags or planRefused)", undecided)
	}
	code, _, stderr := runCLI(t, context.Background(), "plan", "--output-dir", t.TempDir(), "--rate", "2", "--slo", "tpot:p99<=30ms",
		"--stages", "60s:2,60s:4")
	if code != ExitUsage || !strings.Contains(stderr, "--stages: plan sizes a fleet for one steady rate") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPlanCheckCommandReproduces: the check command plan prints (specArgs of the traffic
// flags given, in canonical form: 50% as 0.5), run as it is, simulates best.yaml to the
// plan's chosen figures, with traffic flags off their defaults, tools among them (their
// definitions and calls are the requests' in plan's simulations as in simulate's).
func TestPlanCheckCommandReproduces(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "plan", "--output-dir", dir, "--no-progress", "--gpu", "h100", "--tp", "1",
		"--rate", "3", "--arrival", "gamma:0.5", "--input-tokens", "uniform:256:768", "--output-tokens", "64", "--warmup", "5",
		"--max-error-rate", "50%", "--percentiles", "50,99", "--slo", "ttft:p99<=2s,tpot:p99<=60ms", "--gpu-price", "3", "--seed", "7",
		"--tools", "3", "--tool-choice", "required")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	pl := readPlan(t, dir)
	best := pl.Candidates[*pl.Best]
	_, check, ok := strings.Cut(strings.ReplaceAll(stdout, " \\\n    ", " "), "check it with\n  ")
	check, _, _ = strings.Cut(check, "\n")
	if !ok || !strings.Contains(check, "--max-error-rate 0.5 ") || !strings.Contains(check, "--tools 3 --tool-choice required ") {
		t.Fatalf("no check command, or not in canonical form: %q", check)
	}
	out := t.TempDir()
	args := append(shellWords(strings.TrimPrefix(check, "llmbench ")), "--output-dir", out, "--no-progress", "--quiet")
	if code, stdout, stderr := runCLI(t, context.Background(), args...); code != 0 {
		t.Fatalf("%s: exit %d\n%s\n%s", check, code, stdout, stderr)
	}
	lv := readSummaryT(t, out).Levels[0]
	if len(lv.SLO.Terms) != 2 || len(best.SLO) != 2 {
		t.Fatalf("%s: SLO terms %+v, plan's %+v", check, lv.SLO.Terms, best.SLO)
	}
	for i, term := range lv.SLO.Terms {
		if *term.Value != *best.SLO[i].Value {
			t.Errorf("%s: simulate %v, plan %v", term.Term, *term.Value, *best.SLO[i].Value)
		}
	}
	if got, want := *lv.Cost.PerMillionOutputTokens, *best.CostPerMillionOutputTokens; got != want {
		t.Errorf("cost per million output tokens: simulate %v, plan %v", got, want)
	}
}

// shellWords splits a command line as a POSIX shell does console.ShellQuote's quoting.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	quoted, in := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				words = append(words, w.String())
			}
			w.Reset()
			in = false
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}
