package client

import (
	"crypto/tls"
	"net"
	"sync/atomic"
	"time"
)

// Kernel receive timestamps. A token event's time is when its bytes reached this host, not
// when our goroutine got round to reading them: under thousands of streams a goroutine can
// wait milliseconds for its turn (Go's netpoller hands back a batch of ready connections
// and runs them last-ready first), and that wait is the client's, not the server's. Where the
// kernel can stamp received data (Linux: SO_TIMESTAMPNS), each connection keeps the stamp of
// the newest bytes it read, and the stream reader uses it instead of time.Now(). Elsewhere,
// and for HTTP/2 (one connection carries many streams), events are stamped at read time.

// rxConn is a TCP connection whose reads note the kernel's receive time of the data.
type rxConn struct {
	*net.TCPConn
	rx rxReader
	// last is the receive time (Unix ns, CLOCK_REALTIME) of the newest bytes read; 0 = none.
	last atomic.Int64
	// armed is set when a request takes the connection; the next Write (net/http's write
	// loop, which may run well after the request was handed to it) records in wrote when
	// the request's first byte was written, as ns since rxEpoch.
	armed atomic.Bool
	wrote atomic.Int64
}

// rxEpoch anchors wrote's offsets to the monotonic clock.
var rxEpoch = time.Now()

// arm marks the start of a request on the connection (see armed).
func (c *rxConn) arm() {
	c.wrote.Store(0)
	c.armed.Store(true)
}

// writeStart is when the armed request's first Write began, if it has.
func (c *rxConn) writeStart() (time.Time, bool) {
	w := c.wrote.Load()
	if w == 0 {
		return time.Time{}, false
	}
	return rxEpoch.Add(time.Duration(w)), true
}

// Write notes the start of an armed request's write, then writes.
func (c *rxConn) Write(p []byte) (int, error) {
	if c.armed.Load() && c.armed.CompareAndSwap(true, false) {
		c.wrote.Store(max(int64(time.Since(rxEpoch)), 1))
	}
	return c.TCPConn.Write(p)
}

// Read reads like net.Conn.Read, noting the receive time of what it read.
func (c *rxConn) Read(p []byte) (int, error) {
	n, stamp, err := c.rx.read(c, p)
	switch {
	case err != nil:
		// The end of the stream (or a failure) is timed when it is read: it carries no
		// data, and the newest stamp belongs to earlier bytes.
		c.last.Store(0)
	case stamp != 0:
		c.last.Store(stamp)
	}
	return n, err
}

// stamp is the monotonic instant at which the newest bytes read arrived, and how long ago
// that was: their age, taken on the wall clock (which the kernel's stamp is on) in one
// reading with the monotonic clock, so that a clock step between runs does not matter.
// Without a believable stamp it is the current time, and ok is false.
func (c *rxConn) stamp() (t time.Time, age time.Duration, ok bool) {
	t = time.Now()
	k := c.last.Load()
	if k == 0 {
		return t, 0, false
	}
	a := t.UnixNano() - k
	if a < 0 || a > int64(maxRxAge) {
		// A stamp from the future or of long ago: the wall clock was stepped since.
		return t, 0, false
	}
	return t.Add(-time.Duration(a)), time.Duration(a), true
}

// maxRxAge bounds how old a stamp may be and still be believed (see now).
const maxRxAge = time.Hour

// rxConnOf returns the rxConn under c (a plain or TLS connection), or nil.
func rxConnOf(c net.Conn) *rxConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	rc, _ := c.(*rxConn)
	return rc
}
