package cli

import (
	"strings"
	"testing"
)

// A level's rules are load.Level.Validate's: the CLI names the flag behind each problem,
// says it once however many levels share it, and reports every one at once (exit 2).
func TestLevelErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args       []string
		want, none []string
	}{
		{args: []string{"simulate", "--rate", "2", "--max-concurrency", "-1"},
			want: []string{"--max-concurrency: max concurrency -1 is negative"}},
		{args: []string{"simulate", "--concurrency", "2,4", "--max-concurrency", "4"},
			want: []string{"--max-concurrency: max concurrency applies to an open loop (rate)"}},
		{args: []string{"simulate", "--duration", "10s", "--warmup", "6s", "--cooldown", "4s"},
			want: []string{"--duration: warm-up 6s plus cool-down 4s leave nothing of duration 10s to measure"}},
		{args: []string{"run", "--concurrency", "2,8", "--shard", "1/3"},
			want: []string{"--concurrency: concurrency 2 cannot be split among 3 shards"}, none: []string{"concurrency 8"}},
		// The default ladder's five levels share the problems; each is said once.
		{args: []string{"simulate", "--requests", "-3", "--cooldown", "1s", "--max-concurrency", "-1"},
			want: []string{"--requests: requests -3 is negative", "--cooldown: cool-down 1s needs a duration", "--max-concurrency: max concurrency -1 is negative"}},
		{args: []string{"simulate", "--duration", "-1s", "--cooldown", "-2s"},
			want: []string{"--duration: duration -1s is negative", "--cooldown: cool-down -2s is negative"}},
		// A search has no ladder to check: a stand-in probe checks the flags.
		{args: []string{"simulate", "--search", "rate", "--slo", "ttft:p99<=1s", "--duration", "-1s"},
			want: []string{"--duration: duration -1s is negative"}},
		// bench.Config's rules are bench's, named by flag too.
		{args: []string{"simulate", "--repeat", "0", "--search-max", "-5", "--result-format", "csv"},
			want: []string{"--repeat: 0 must be at least 1", "--search-max: -5 must be positive", `--result-format: "csv" is not vllm`}},
		// The flags' own rules stay the CLI's.
		{args: []string{"simulate", "--duration", "10s", "--requests", "-1"},
			want: []string{"--requests and --duration: give one, not both"}},
		{args: []string{"simulate", "--concurrency", "1", "--rate", "2"},
			want: []string{"--concurrency and --rate: give one"}},
		// A --rate that did not parse is not replaced by the default closed-loop ladder,
		// which --max-concurrency would not fit.
		{args: []string{"simulate", "--rate", "x", "--max-concurrency", "2"},
			want: []string{`--rate: "x" is not a number`}, none: []string{"--max-concurrency"}},
	} {
		code, _, stderr := runCLI(t, t.Context(), c.args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", c.args, code, ExitUsage, stderr)
		}
		for _, w := range c.want {
			if n := strings.Count(stderr, w); n != 1 {
				t.Errorf("%v: stderr says %q %d times, want once:\n%s", c.args, w, n, stderr)
			}
		}
		for _, w := range c.none {
			if strings.Contains(stderr, w) {
				t.Errorf("%v: stderr says %q:\n%s", c.args, w, stderr)
			}
		}
	}
}
