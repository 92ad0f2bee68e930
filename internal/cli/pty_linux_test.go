package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPty opens a pseudo-terminal: the terminal a command writes to, and its master end
// whose reads are what a person would see.
func openPty(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlocking the pty: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("naming the pty: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// onTerminal runs llmbench with its stderr on a pseudo-terminal and returns what the
// terminal showed, and stdout.
func onTerminal(t *testing.T, args ...string) (code int, screen, stdout string) {
	t.Helper()
	master, tty := openPty(t)
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

// TestNoProgressOffATerminal: a file or pipe gets no progress line (logs and CI stay clean).
func TestNoProgressOffATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if terminal(foldNotes{f}) || terminal(foldNotes{&bytes.Buffer{}}) {
		t.Fatal("a file or buffer behind the note folding was taken for a terminal")
	}
	_, tty := openPty(t)
	if !terminal(foldNotes{tty}) {
		t.Fatal("a terminal behind the note folding was not seen as one")
	}
}
