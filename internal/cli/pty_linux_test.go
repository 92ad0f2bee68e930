package cli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/ptytest"
)

// onTerminal runs llmbench with its stderr on a pseudo-terminal and returns what the
// terminal showed, and stdout.
func onTerminal(t *testing.T, args ...string) (code int, screen, stdout string) {
	t.Helper()
	master, tty := ptytest.Open(t)
	var (
		seen bytes.Buffer
		wg   sync.WaitGroup
	)
	wg.Go(func() { io.Copy(&seen, master) }) // drained, or a full terminal blocks the command
	var out bytes.Buffer
	code = Main(context.Background(), args, Stdio{In: strings.NewReader(""), Out: &out, Err: tty})
	tty.Close()
	master.SetReadDeadline(time.Now().Add(5 * time.Second)) // the copy ends at EIO once the terminal closes; this bounds it regardless
	wg.Wait()
	return code, seen.String(), out.String()
}

// TestProgressOnATerminal runs each command that runs for long under a pseudo-terminal:
// each must draw its progress line there (a redrawn line: \r, clear, text).
func TestProgressOnATerminal(t *testing.T) {
	t.Parallel() // a live ladder waiting on the real clock, then three commands
	dir := t.TempDir()
	ladder := filepath.Join(dir, "ladder")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"run", []string{"run", "--sim", "textbook", "--concurrency", "1,2,4", "--requests", "8", "--input-tokens", "64",
			"--output-tokens", "24", "--output-dir", ladder, "--quiet"}, "\r\x1b[Kconcurrency 1 "},
		{"simulate", []string{"simulate", "--sim", "textbook", "--rate", "5", "--duration", "600s", "--output-dir",
			filepath.Join(dir, "sim"), "--quiet"}, "\r\x1b[Ksimulated rate 5/s "},
		{"calibrate", []string{"calibrate", ladder, "--output", filepath.Join(dir, "fit.yaml")}, "\r\x1b[Kcalibrate: fitting "},
		{"plan", []string{"plan", "--sim", "textbook", "--rate", "20", "--input-tokens", "512", "--output-tokens", "128",
			"--requests", "400", "--slo", "tpot:p99<=20ms,ttft:p99<=2s", "--output-dir", filepath.Join(dir, "plan")}, "\r\x1b[Kplan: "},
	}
	for _, c := range cases { // in order: calibrate fits the ladder run made
		code, screen, stdout := onTerminal(t, c.args...)
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", c.name, code, screen, stdout)
		}
		if !strings.Contains(screen, c.want) {
			t.Errorf("%s drew no progress line (%q) on a terminal; it showed:\n%q", c.name, c.want, screen)
		}
	}
}
