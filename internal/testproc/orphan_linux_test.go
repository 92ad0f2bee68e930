package testproc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gone reports whether pid has exited: no such process, or a zombie (in a container whose
// init does not reap, an exited orphan stays one).
func gone(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// pid (comm) state …: the state follows the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// waitPids waits for path to hold the tree's two pids.
func waitPids(t *testing.T, path string) []int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 2 {
			return pids
		}
	}
	t.Fatalf("no pids in %s after 30 s", path)
	return nil
}

// checkGone fails t unless every pid exits within 10 s.
func checkGone(t *testing.T, pids []int, after string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for !gone(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !gone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d still running 10 s after %s", pid, after)
		}
	}
}

// A test's cleanup kills its process's whole group: the grandchild too.
func TestCleanupKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	var pids []int
	t.Run("starts", func(t *testing.T) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), roleEnv+"=tree", pidFileEnv+"="+pidFile)
		if err := Start(t, cmd); err != nil {
			t.Fatal(err)
		}
		pids = waitPids(t, pidFile)
	})
	checkGone(t, pids, "its test ended")
}

// A test binary cut off by -timeout (a panic: no cleanup runs) or by a signal leaves
// nothing running: the tree it started dies with it, grandchild and all.
func TestNoOrphans(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal // 0: the starter's -test.timeout ends it
	}{
		{"timeout", 0},
		{"SIGINT", syscall.SIGINT},
		{"SIGTERM", syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			starter := exec.Command(os.Args[0], "-test.run=^TestStarterHelper$", "-test.timeout=3s")
			starter.Env = append(os.Environ(), roleEnv+"=starter", pidFileEnv+"="+pidFile)
			var out bytes.Buffer
			starter.Stdout, starter.Stderr = &out, &out
			if err := Start(t, starter); err != nil {
				t.Fatal(err)
			}
			pids := waitPids(t, pidFile)
			if tc.sig != 0 {
				starter.Process.Signal(tc.sig)
			}
			if err := starter.Wait(); err == nil {
				t.Fatalf("the starter passed:\n%s", out.String())
			}
			if tc.sig == 0 && !strings.Contains(out.String(), "test timed out") {
				t.Errorf("the starter did not time out:\n%s", out.String())
			}
			checkGone(t, pids, "the starter's "+tc.name)
		})
	}
}
