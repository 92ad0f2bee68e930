package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestServeFlagErrors: serve says every problem server.Config.Load finds, each in the
// words of the flag behind it, as a usage error; a truth file it cannot create is named
// by --truth.
func TestServeFlagErrors(t *testing.T) {
	code, _, stderr := runCLI(t, t.Context(), "serve", "--listen", "127.0.0.1:0", "--sim", "no-such-profile", "--faults", "http500=2",
		"--tokenizer", "server", "--image-patch", "0", "--close-after", "-1s")
	if code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	for _, want := range []string{"--sim: ", "--faults: ", "--tokenizer server: serve is the server; give the tokenizer it should use",
		"--image-patch and --image-merge must be at least 1, --image-encode not negative", "--close-after must not be negative"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("no %q in\n%s", want, stderr)
		}
	}
	truth := filepath.Join(t.TempDir(), "no-such-dir", "truth.jsonl")
	if code, _, stderr := runCLI(t, t.Context(), "serve", "--listen", "127.0.0.1:0", "--sim", "textbook", "--truth", truth); code != ExitFailure || !strings.Contains(stderr, "--truth: open "+truth) {
		t.Errorf("an uncreatable --truth: exit %d\n%s", code, stderr)
	}
}
