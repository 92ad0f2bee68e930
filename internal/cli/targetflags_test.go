package cli

import (
	"strings"
	"testing"
)

// TestTargetURLErrors: run says every URL that is not an http:// or https:// one in the
// words of its flag (bench.Server.SetURLs, bench.Telemetry.SetGPUs), and --gpu-metrics
// none given with URLs.
func TestTargetURLErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--url", "ftp://a", "--url", "b:1", "--metrics-url", "c"}, []string{
			`--url: "ftp://a" must be an http:// or https:// base URL such as http://127.0.0.1:8000`,
			`--url: "b:1" must be an http:// or https:// base URL`, `--metrics-url: "c" must be an http:// or https:// URL`}},
		{[]string{"--url", "http://127.0.0.1:1", "--gpu-metrics", "d", "--gpu-metrics", "none"}, []string{
			`--gpu-metrics: "d" must be an http:// or https:// URL of a dcgm-exporter's or AMD device-metrics-exporter's /metrics, or none`,
			"--gpu-metrics none: given with URLs; none reads no GPU metrics at all"}},
	} {
		code, _, stderr := runCLI(t, t.Context(), append([]string{"run"}, c.args...)...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", c.args, code, ExitUsage)
		}
		for _, want := range c.want {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: no %q in\n%s", c.args, want, stderr)
			}
		}
	}
}
