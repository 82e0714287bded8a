package integration

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestNotificationWaitSeesConnectionEnd: Notification (and NextStatus,
// NextHeader, which share its wait) waits "until one arrives, the
// connection ends or ctx is done": when the server closes the connection
// while callers wait, every wait ends with the connection's error, also a
// waiter that wakes between the read loop's last wake-up and its closing
// of Done. The server is a plain TCP listener that closes each connection
// it accepts while four waiters with no deadline wait on the client, for
// 20,000 rounds; the 10 s after the connection's end are a hang guard only.
func TestNotificationWaitSeesConnectionEnd(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted := make(chan net.Conn)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- conn
		}
	}()
	const waiters = 4
	for round := 0; round < 20000; round++ {
		c, err := DialElectrum(context.Background(), l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server := <-accepted
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, waiters)
		for range waiters {
			go func() {
				_, err := c.Notification(ctx, "blockchain.headers.subscribe", nil)
				errs <- err
			}()
		}
		server.Close()
		<-c.Done() // the client has seen the connection end
		guard := time.After(10 * time.Second)
		for i := 0; i < waiters; i++ {
			select {
			case <-errs:
			case <-guard:
				cancel()
				t.Fatalf("round %d: the server closed the connection (client Err: %v), yet a Notification wait "+
					"was still blocked 10 s later; it returns only when its context ends", round, c.Err())
			}
		}
		cancel()
		_ = c.Close()
	}
}
