package electrum

import (
	"net"

	"golang.org/x/sys/unix"
)

// setNotSentLowat sets TCP_NOTSENT_LOWAT on c: the kernel takes a write
// only while fewer than n bytes of the connection are not yet sent. The
// bytes in flight still follow the client's window (up to the send
// buffer); what a client that does not read leaves unsent stays in the
// session's queue, where it is counted against the backlog limits and
// shared with other sessions, instead of being copied into the kernel.
func setNotSentLowat(c *net.TCPConn, n int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, n)
	})
}
