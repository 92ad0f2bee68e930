//go:build !linux

package client

import "net"

// kernelStamps says whether this build stamps received data in the kernel.
const kernelStamps = false

// wrapRx returns c as it is: events are stamped at read time.
func wrapRx(c net.Conn) net.Conn { return c }
