package integration

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestWSCallCancelledDuringWrite: over WebSocket, a call whose request a
// server does not read returns once its context is cancelled, as over
// TCP: the cancel cuts the write blocked in the middle of the message.
func TestWSCallCancelledDuringWrite(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		// Read one byte of the client's first message (its write has
		// begun), then nothing more.
		var b [1]byte
		if _, err := ws.NetConn().Read(b[:]); err == nil {
			close(started)
		}
		<-release
	}))
	defer srv.Close()
	defer close(release)

	ctx := testContext(t)
	c, err := DialElectrumWS(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/", nil)
	if err != nil {
		t.Fatal(err)
	}

	callCtx, cancelCall := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		// Far more than the socket buffers hold.
		_, err := c.Call(callCtx, "blockchain.transaction.broadcast", strings.Repeat("a", 64<<20))
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the big call returned before writing: %v", err)
	case <-ctx.Done():
		t.Fatal("the big call never began its write")
	}
	// Let the write fill the socket's buffers and block (a shorter wait
	// can only make the test pass wrongly, never fail wrongly).
	time.Sleep(time.Second)
	cancelCall()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled call returned %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("over WebSocket, a call whose context was cancelled stayed blocked in its write (a minute after the cancel)")
	}
	// The cut write closed the connection.
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("the connection stayed open after a cut write")
	}
	_ = c.Close()
}
