package electrum

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNotSentLowatBoundsKernelCopy: a server connection set up by
// capSendBuffer takes from a writer that a client never reads only what
// fits the client's window and TCP_NOTSENT_LOWAT, not the whole send
// buffer (512 KiB as Linux counts it).
func TestNotSentLowatBoundsKernelCopy(t *testing.T) {
	accepted := func(capped bool) int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			})
			return errors.Join(err, serr)
		}}
		client, err := d.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		tc := c.(*net.TCPConn)
		if capped {
			capSendBuffer(tc)
			rc, _ := tc.SyscallConn()
			var got int
			var gerr error
			rc.Control(func(fd uintptr) {
				got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
			})
			if gerr != nil || got != sessionNotSentLowat {
				t.Fatalf("TCP_NOTSENT_LOWAT = %d, %v; want %d", got, gerr, sessionNotSentLowat)
			}
		} else {
			tc.SetWriteBuffer(sessionSendBuffer)
		}
		tc.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := tc.Write(make([]byte, 4<<20))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write to a client that does not read: %d bytes, %v", n, err)
		}
		return n
	}
	without, with := accepted(false), accepted(true)
	t.Logf("bytes the kernel took for a client that does not read: %d with the send buffer alone, %d with TCP_NOTSENT_LOWAT", without, with)
	if with > 2*sessionNotSentLowat+64<<10 {
		t.Errorf("with TCP_NOTSENT_LOWAT the kernel took %d bytes, want at most about %d", with, sessionNotSentLowat)
	}
	if without < 2*with {
		t.Errorf("the send buffer alone took %d bytes, not more than twice %d: the test does not tell them apart", without, with)
	}
}
