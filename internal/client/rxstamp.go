package client

import (
	"crypto/tls"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// Kernel receive timestamps. A token event's time is when its bytes reached this host, not
// when our goroutine got round to reading them: under thousands of streams a goroutine can
// wait milliseconds for its turn (Go's netpoller hands back a batch of ready connections
// and runs them last-ready first), and that wait is the client's, not the server's. Where the
// kernel can stamp received data (Linux: SO_TIMESTAMPNS), each connection keeps the stamp of
// the newest bytes it read, and the stream reader uses it instead of time.Now(). Elsewhere,
// and for HTTP/2 (one connection carries many streams), events are stamped at read time.

// rxConn is a TCP connection whose reads note the kernel's receive time of the data (Read,
// in rxstamp_linux.go; elsewhere wrapRx never makes one). It
// embeds net.Conn, not *net.TCPConn: the latter's ReadFrom and WriteTo, promoted, would let
// io.Copy (net/http copies request bodies with it) move bytes past Read and Write.
type rxConn struct {
	net.Conn
	raw syscall.RawConn
	oob [8]uint64 // control-message buffer, 8-byte aligned; net/http reads a conn from one goroutine at a time
	// owner holds the stamps of the request that has the connection. net/http can hand a
	// keep-alive connection to the next request before the previous one has looked at the
	// time of its last read, so each request keeps its own (claim).
	owner atomic.Pointer[rxStamps]
}

// rxStamps is one request's view of its connection's receive times.
type rxStamps struct {
	// last is the receive time (Unix ns, CLOCK_REALTIME) of the newest bytes read for the
	// request; 0 when they came without one (they are then timed when read).
	last atomic.Int64
}

// claim gives the connection's stamps to a new request, from its next read on.
func (c *rxConn) claim() *rxStamps {
	s := new(rxStamps)
	c.owner.Store(s)
	return s
}

// stamp is the monotonic instant at which the newest bytes read arrived, and how long ago
// that was: their age, taken on the wall clock (which the kernel's stamp is on) in one
// reading with the monotonic clock, so that a clock step between runs does not matter.
// k is the kernel's stamp itself (Unix ns), which bytes of one arrival share. Without a
// believable stamp it is the current time, and ok is false.
func (s *rxStamps) stamp() (t time.Time, k int64, age time.Duration, ok bool) {
	t = time.Now()
	k = s.last.Load()
	if k == 0 {
		return t, 0, 0, false
	}
	a := t.UnixNano() - k
	if a < 0 || a > int64(maxRxAge) {
		// A stamp from the future or of long ago: the wall clock was stepped since.
		return t, 0, 0, false
	}
	return t.Add(-time.Duration(a)), k, time.Duration(a), true
}

// KernelStampsSupported says whether this build asks the kernel for receive times (Linux).
// A kernel may still give none (some sandboxes); records then say KernelStamps false.
func KernelStampsSupported() bool { return kernelStamps }

// maxRxAge bounds how old a stamp may be and still be believed (see stamp).
const maxRxAge = time.Hour

// rxConnOf returns the rxConn under c (a plain or TLS connection, tracked or not), or nil.
func rxConnOf(c net.Conn) *rxConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if t, ok := c.(*trackedConn); ok {
		c = t.Conn
	}
	rc, _ := c.(*rxConn)
	return rc
}
