package cli

import (
	"context"
	"testing"
)

// BenchmarkSimulateCommand1M is the whole `llmbench simulate` of the architecture issue's
// target — the default profile, concurrency 256, 1,000,000 requests of 512 input and 128
// output tokens — records (compact), summary and report.html written; ≤ 5 s is the target.
// Its peak RSS is the process's: /usr/bin/time -v of the same command (docs/performance.md).
//
//	go test ./internal/cli -run '^$' -bench SimulateCommand1M -benchtime 1x
func BenchmarkSimulateCommand1M(b *testing.B) {
	for b.Loop() {
		code, _, stderr := runCLI(b, context.Background(), "simulate", "--concurrency", "256", "--requests", "1000000",
			"--no-progress", "--output-dir", b.TempDir())
		if code != 0 {
			b.Fatalf("exit %d: %s", code, stderr)
		}
	}
}
