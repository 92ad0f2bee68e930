//go:build !linux

package client

import "net"

// rxReader is unused where the kernel does not stamp received data for us.
type rxReader struct{}

// kernelStamps says whether this build stamps received data in the kernel.
const kernelStamps = false

// wrapRx returns c as it is: events are stamped at read time.
func wrapRx(c net.Conn) net.Conn { return c }

func (*rxReader) read(c *rxConn, p []byte) (int, int64, error) {
	n, err := c.Conn.Read(p)
	return n, 0, err
}
