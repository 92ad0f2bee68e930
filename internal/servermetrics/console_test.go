package servermetrics

import (
	"strings"
	"testing"
)

func TestWriteConsole(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name string
		s    *Summary
		want string
	}{
		{"vllm", &Summary{
			Family: FamilyVLLM, Scrapes: 31, FailedScrapes: 1, LastError: "GET http://h/metrics: timed out",
			Running: &Stat{Mean: 30.5, Max: 32}, Waiting: &Stat{Mean: 4.25, Max: 12},
			KVCacheUsage: &Stat{Mean: 0.4134, Max: 0.77}, Preemptions: f(3),
			PrefixCacheHitRate: f(0.125), PromptTokensPerS: f(5012.345), GenerationTokensPerS: f(2345.6),
		}, `--------------Server Metrics (vLLM)---------------
Scrapes (failed):                        31 (1)
Last scrape error:                       GET http://h/metrics: timed out
Mean running requests:                   30.50
Max running requests:                    32.00
Mean waiting requests:                   4.25
Max waiting requests:                    12.00
Mean KV-cache usage:                     41.34%
Max KV-cache usage:                      77.00%
Preemptions:                             3
Prefix-cache hit rate:                   12.50%
Server prompt tokens/s:                  5012.35
Server generation tokens/s:              2345.60
`},
		{"tgi, no kv", &Summary{
			Family: FamilyTGI, Scrapes: 5, Running: &Stat{Mean: 8, Max: 8}, Waiting: &Stat{Mean: 0, Max: 0},
			GenerationTokensPerS: f(100),
		}, `---------------Server Metrics (TGI)---------------
Scrapes (failed):                        5 (0)
Mean running requests:                   8.00
Max running requests:                    8.00
Mean waiting requests:                   0.00
Max waiting requests:                    0.00
Server generation tokens/s:              100.00
`},
		{"all failed", &Summary{Family: FamilyUnknown, Scrapes: 4, FailedScrapes: 4, LastError: "GET u: HTTP 404 Not Found"},
			`------------------Server Metrics------------------
Scrapes (failed):                        4 (4)
Last scrape error:                       GET u: HTTP 404 Not Found
`},
		{"nil", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteConsole(&b, tc.s); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

// A scrape's error can be longer than the console is wide (a timed-out scrape names its URL
// and the client's reason); it is wrapped under its value's column.
func TestWriteConsoleWrapsALongError(t *testing.T) {
	s := &Summary{Family: FamilyLlamaCpp, Scrapes: 3, FailedScrapes: 3,
		LastError: `GET http://127.0.0.1:40123/metrics: context deadline exceeded (Client.Timeout exceeded while awaiting headers)`}
	var b strings.Builder
	if err := WriteConsole(&b, s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[3], strings.Repeat(" ", 41)+"exceeded (Client.Timeout") {
		t.Fatalf("want the error wrapped under its column:\n%s", b.String())
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("%d columns: %q", n, l)
		}
	}
}
