package client

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// kernelStamps says whether this build stamps received data in the kernel.
const kernelStamps = true

// wrapRx turns on receive timestamps for a TCP connection and wraps it; any other
// connection, or one where the option is refused, is returned as it is.
func wrapRx(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c
	}
	return &rxConn{Conn: tc, raw: raw}
}

// Read reads like net.Conn.Read, noting the receive time of what it read for the request
// that has the connection.
func (c *rxConn) Read(p []byte) (int, error) {
	n, stamp, err := c.recv(p)
	// Bytes that came without a stamp are timed when read, like the end of the stream (or
	// a failure), which carries no data: keeping the previous stamp would date them to
	// earlier bytes. The kernel stamps nothing for a moment after the first socket asks
	// (it switches stamping on from a work queue), so early reads can lack one.
	if err != nil {
		stamp = 0
	}
	if s := c.owner.Load(); s != nil {
		s.last.Store(stamp)
	}
	return n, err
}

// recv reads through recvmsg(2), so that the kernel's SCM_TIMESTAMPNS comes with the data,
// returning the receive time (Unix ns) of the last segment read, or 0 when it gave none.
func (c *rxConn) recv(p []byte) (int, int64, error) {
	if len(p) == 0 {
		return 0, 0, nil
	}
	oob := unsafe.Slice((*byte)(unsafe.Pointer(&c.oob[0])), len(c.oob)*8)
	var n, oobn int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, oob, 0)
			if rerr != syscall.EINTR {
				break
			}
		}
		return rerr != syscall.EAGAIN // not ready: wait for the poller, then try again
	})
	if err == nil && rerr != nil {
		err = os.NewSyscallError("recvmsg", rerr)
	}
	if err != nil {
		// The shape net.Conn.Read gives its errors ("read tcp a->b: ..."), so that net/http
		// and our messages see the same; RawConn's own come as "raw-read".
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		return 0, 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if n == 0 {
		return 0, 0, io.EOF
	}
	return n, parseRxStamp(oob[:oobn]), nil
}

// parseRxStamp finds SCM_TIMESTAMPNS in a control-message buffer: Unix ns, or 0.
func parseRxStamp(b []byte) int64 {
	for len(b) >= syscall.SizeofCmsghdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < syscall.SizeofCmsghdr || l > len(b) {
			return 0
		}
		data := syscall.CmsgLen(0)
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && l >= data+int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&b[data]))
			return ts.Nano()
		}
		next := syscall.CmsgSpace(l - syscall.SizeofCmsghdr)
		if next > len(b) {
			return 0
		}
		b = b[next:]
	}
	return 0
}
