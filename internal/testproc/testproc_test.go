package testproc

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// The test binary doubles as the processes these tests start, by its role variable:
// "sleeper" sleeps; "tree" starts a sleeper of its own (in its group, as any child
// would), writes its pid and the sleeper's to pidFileEnv and sleeps.
const (
	roleEnv    = "LLMBENCH_TESTPROC_ROLE"
	pidFileEnv = "LLMBENCH_TESTPROC_PIDFILE"
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "sleeper":
		time.Sleep(time.Hour)
		os.Exit(0)
	case "tree":
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), roleEnv+"=sleeper")
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		writePids(os.Getpid(), c.Process.Pid)
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writePids writes the tree's pid and its child's, the file's whole content at once.
func writePids(tree, child int) {
	if err := os.WriteFile(os.Getenv(pidFileEnv), fmt.Appendf(nil, "%d %d\n", tree, child), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// TestStarterHelper is the test binary that starts a tree and then hangs, for the tests
// that cut it off; it returns at once unless roleEnv is "starter".
func TestStarterHelper(t *testing.T) {
	if os.Getenv(roleEnv) != "starter" {
		return
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=tree")
	if err := Start(t, cmd); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Hour) // until -test.timeout or a signal ends the binary
}
