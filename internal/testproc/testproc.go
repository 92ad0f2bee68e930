// Package testproc starts the processes tests need (a built llmbench, a browser, a client
// helper) so that none outlives its test: each runs in its own process group, which is
// killed when the test ends (t.Cleanup), when the test binary is interrupted (SIGINT,
// SIGTERM), just before the binary's -timeout panics it (a watchdog) and, on Linux, when
// the test binary dies for any reason (a parent-death signal: the child itself).
package testproc

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Start starts cmd in its own process group, to be killed with its group when t ends; the
// cleanup also waits for cmd unless the test has. cmd must not have SysProcAttr set, and t
// must not be in a synctest bubble (the spawning goroutine outlives every test).
func Start(t testing.TB, cmd *exec.Cmd) error {
	t.Helper()
	cmd.SysProcAttr = sysProcAttr()
	if cmd.Cancel != nil { // exec.CommandContext: its context ending kills the group too
		cmd.Cancel = func() error { return killGroup(cmd.Process) }
	}
	if err := spawn(cmd); err != nil {
		return err
	}
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		armWatchdog(dt.Deadline())
	}
	t.Cleanup(func() {
		killGroup(cmd.Process)
		if cmd.ProcessState == nil {
			cmd.Wait()
		}
		forget(cmd.Process)
	})
	return nil
}

// Run is Start, then cmd.Wait.
func Run(t testing.TB, cmd *exec.Cmd) error {
	t.Helper()
	if err := Start(t, cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// CombinedOutput is Run with stdout and stderr returned together, as cmd.CombinedOutput.
func CombinedOutput(t testing.TB, cmd *exec.Cmd) ([]byte, error) {
	t.Helper()
	var b syncBuffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := Run(t, cmd)
	return b.bytes(), err
}

type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b
}

var (
	once     sync.Once
	watchdog sync.Once
	starts   chan startReq
	mu       sync.Mutex
	running  = map[*os.Process]bool{}
)

type startReq struct {
	cmd  *exec.Cmd
	errc chan error
}

// spawn starts cmd from one goroutine locked to its OS thread for the life of the
// process: Linux sends the parent-death signal when the thread that forked the child
// exits, not the process, and a test's goroutine may run on a thread that ends earlier (one
// locked by a goroutine that returns); this one ends only with the process.
func spawn(cmd *exec.Cmd) error {
	once.Do(func() {
		starts = make(chan startReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range starts {
				err := r.cmd.Start()
				if err == nil {
					mu.Lock()
					running[r.cmd.Process] = true
					mu.Unlock()
				}
				r.errc <- err
			}
		}()
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		go func() {
			s := <-sig
			killAll()
			// Die of the signal as the test binary would have without this handler.
			signal.Reset(s)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Signal(s)
			}
			os.Exit(1)
		}()
	})
	r := startReq{cmd, make(chan error, 1)}
	starts <- r
	return <-r.errc
}

// armWatchdog kills every group just before the binary's deadline: -timeout panics it
// with no cleanup run.
func armWatchdog(d time.Time, ok bool) {
	if ok {
		watchdog.Do(func() { time.AfterFunc(time.Until(d)-200*time.Millisecond, killAll) })
	}
}

func forget(p *os.Process) {
	mu.Lock()
	delete(running, p)
	mu.Unlock()
}

func killAll() {
	mu.Lock()
	defer mu.Unlock()
	for p := range running {
		killGroup(p)
	}
}
