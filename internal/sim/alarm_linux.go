//go:build linux

package sim

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// fineTimer is a timerfd: a kernel timer with ns resolution whose expiry makes the fd
// readable. Go's own timers wake up to 1.1 ms late on Linux whenever the process is idle:
// the runtime then waits for them in epoll_wait, whose timeout is whole milliseconds (the
// delay is rounded down, and the remainder waits a further 1 ms; golang/go#53824). A
// ready fd ends that wait at once, so the step loop arms a timerfd beside its Go timer and
// wakes at whichever fires first: the timerfd when the process is idle, the Go timer when
// every P is busy (the scheduler checks timers at each switch but polls fds less often).
type fineTimer struct {
	f     *os.File
	rc    syscall.RawConn
	fired chan struct{}
	done  chan struct{}
}

// itimerspec is struct itimerspec: the interval first, then the first expiry.
type itimerspec struct {
	interval, value syscall.Timespec
}

const clockMonotonic = 1 // CLOCK_MONOTONIC, the clock of Go's monotonic readings

// newFineTimer returns nil where the kernel refuses a timerfd; the Go timer then paces
// alone.
func newFineTimer() *fineTimer {
	fd, _, errno := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil
	}
	f := os.NewFile(fd, "sim-timerfd") // non-blocking, so reads park on the netpoller
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil
	}
	t := &fineTimer{f: f, rc: rc, fired: make(chan struct{}, 1), done: make(chan struct{})}
	go t.read()
	return t
}

// read turns expiries into wake-ups on C until the fd is closed.
func (t *fineTimer) read() {
	defer close(t.done)
	var b [8]byte // the expiry count
	for {
		if _, err := t.f.Read(b[:]); err != nil {
			return
		}
		select {
		case t.fired <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// C receives a value after each expiry; nil (never ready) on a nil timer.
func (t *fineTimer) C() <-chan struct{} {
	if t == nil {
		return nil
	}
	return t.fired
}

// set arms the timer to expire d from now (at once if d <= 0), replacing any earlier arming.
func (t *fineTimer) set(d time.Duration) {
	if t == nil {
		return
	}
	spec := itimerspec{value: syscall.NsecToTimespec(int64(max(d, 1)))} // 0 would disarm it
	_ = t.rc.Control(func(fd uintptr) {
		_, _, _ = syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	})
}

// stop disarms the timer.
func (t *fineTimer) stop() {
	if t == nil {
		return
	}
	var spec itimerspec
	_ = t.rc.Control(func(fd uintptr) {
		_, _, _ = syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	})
}

// close releases the fd and waits for its reader to end.
func (t *fineTimer) close() {
	if t == nil {
		return
	}
	_ = t.f.Close()
	<-t.done
}
