package integration

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStatusVector checks Status against the protocol documentation's
// worked example, with the mempool entries given out of order.
func TestStatusVector(t *testing.T) {
	hist := []HistoryItem{
		{TxHash: "a6c9c361bd0bc536d6a22648efbf8f9b200e425ef6c3a7a9669dc444c532a347", Height: 2472},
		{TxHash: "9c42f84b2fcdaff676ba25d9d4941741cc0d1a01cce0c23fdc4c0b2afa38431c", Height: 2473},
		{TxHash: "770f2d4371b3fabb902dd9a103e2dd005fcd3971181078fca4a2a1d6ff127b30", Height: 2473},
		{TxHash: "bb4c8ab438c13b89ca80d1d5bee25b0b6b7f55673f4d801998ba97db161d9e85", Height: -1},
		{TxHash: "e02a1dadfa83b996b24175df807b271ea5d02937ef5b35c195fac1e1bdc3198f", Height: 0},
		{TxHash: "80b19848aed792565ab7c5a79b7c2a00fbf985741579396ebe0ab6098e607311", Height: 0},
	}
	if got := Status(hist); got == nil || *got != "78e96c6562cafa71c115503b9411fdfdc595a45031e2ab76ff75162fe1b0590d" {
		t.Fatalf("Status = %v", str(got))
	}
	if Status(nil) != nil {
		t.Fatal("an empty history has a status")
	}
}

// TestScriptHashVector checks ScriptHash against the protocol
// documentation's example (the P2PKH script of
// 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa).
func TestScriptHashVector(t *testing.T) {
	script, _ := hex.DecodeString("76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac")
	if got := ScriptHash(script); got != "8b01df4e368ea28f8dc0423bcf7a4923e3a12d307c875e47a0cfbf90b5c39161" {
		t.Fatalf("ScriptHash = %s", got)
	}
}

// TestMerkleRootVector folds the documentation's two branches of regtest
// block 2473 (one with the odd-count self-duplication) to the same root.
func TestMerkleRootVector(t *testing.T) {
	r1, err := MerkleRoot("9c42f84b2fcdaff676ba25d9d4941741cc0d1a01cce0c23fdc4c0b2afa38431c", []string{
		"9b977e4cc0b2eb44cb5ea2adb30bf6eae892c9a838111031cb49c97d8ad57309",
		"e7a2891bd8f96488681a596f619de4d88a22d3b08a8aee3b44bbdd913e3e3562"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := MerkleRoot("770f2d4371b3fabb902dd9a103e2dd005fcd3971181078fca4a2a1d6ff127b30", []string{
		"770f2d4371b3fabb902dd9a103e2dd005fcd3971181078fca4a2a1d6ff127b30",
		"ee43317b1b79a9a6b101df711a26d12a88b1419f63db15161a9fdb587fabae63"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	const root = "132994b613a584d0a435ce23196e391c064333f94b537d38b8cf8da2e614a67a"
	if r1 != r2 || (r1.String() != root && hex.EncodeToString(r1[:]) != root) {
		t.Fatalf("roots %v and %v, want %s", r1, r2, root)
	}
	if _, err := MerkleRoot("zz", nil, 0); err == nil {
		t.Fatal("a malformed txid was accepted")
	}
}

// scriptedServer accepts one connection and answers each request line with
// what respond returns (any number of lines, written in order).
func scriptedServer(t *testing.T, respond func(req map[string]any) []string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var req map[string]any
			if json.Unmarshal(line, &req) != nil {
				return
			}
			for _, out := range respond(req) {
				if out == "CLOSE" {
					return
				}
				if _, err := conn.Write([]byte(out + "\n")); err != nil {
					return
				}
			}
		}
	}()
	return l.Addr().String()
}

// TestElectrumClientDispatch checks the client against a scripted server:
// responses are matched by id even when a notification comes first,
// errors become *RPCError, queued notifications are found by method and
// subject (waiting for one script hash never drops another's), and a
// closed connection fails calls and waits instead of
// hanging.
func TestElectrumClientDispatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := scriptedServer(t, func(req map[string]any) []string {
		id, _ := json.Marshal(req["id"])
		switch req["method"] {
		case "server.version":
			return []string{
				`{"jsonrpc":"2.0","method":"blockchain.headers.subscribe","params":[{"height":5,"hex":"00"}]}`,
				`{"jsonrpc":"2.0","method":"blockchain.headers.subscribe","params":[{"height":7,"hex":"01"}]}`,
				`{"jsonrpc":"2.0","method":"blockchain.scripthash.subscribe","params":["aa","1"]}`,
				`{"jsonrpc":"2.0","method":"blockchain.scripthash.subscribe","params":["bb","2"]}`,
				`{"jsonrpc":"2.0","method":"blockchain.scripthash.subscribe","params":["aa",null]}`,
				`{"jsonrpc":"2.0","method":"blockchain.scripthash.subscribe","params":["aa","3"]}`,
				`{"jsonrpc":"2.0","id":` + string(id) + `,"result":["srv","1.4"]}`,
			}
		case "fail":
			return []string{`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32601,"message":"unknown method"}}`}
		default:
			return []string{"CLOSE"}
		}
	})
	c, err := DialElectrum(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if srv, v, err := c.Version(ctx, "test", "1.4"); err != nil || srv != "srv" || v != "1.4" {
		t.Fatalf("Version = %q %q %v", srv, v, err)
	}
	_, err = c.Call(ctx, "fail")
	if e, ok := err.(*RPCError); !ok || e.Code != -32601 {
		t.Fatalf("error call returned %v", err)
	}
	tip, err := c.NextHeader(ctx, 6)
	if err != nil || tip.Height != 7 || tip.Hex != "01" {
		t.Fatalf("NextHeader = %+v, %v", tip, err)
	}
	if n := c.PendingNotifications(); n != 4 {
		t.Fatalf("%d notifications left, want the 4 status notifications (the older header dropped)", n)
	}
	// Waiting for one script hash keeps the other's notifications, and
	// drops only the superseded ones of its own.
	if st, err := c.NextStatus(ctx, "bb", nil); err != nil || str(st) != "2" {
		t.Fatalf("NextStatus(bb) = %s, %v", str(st), err)
	}
	if st, err := c.NextStatus(ctx, "aa", func(s *string) bool { return s == nil }); err != nil || st != nil {
		t.Fatalf("NextStatus(aa, null) = %s, %v", str(st), err)
	}
	if st, err := c.NextStatus(ctx, "aa", nil); err != nil || str(st) != "3" {
		t.Fatalf("NextStatus(aa) = %s, %v", str(st), err)
	}
	if n := c.PendingNotifications(); n != 0 {
		t.Fatalf("%d notifications left", n)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := c.NextHeader(short, 8); err == nil {
		t.Fatal("a wait with nothing to wait for returned")
	}
	if _, err := c.Call(ctx, "close"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("call on a closed connection: %v", err)
	}
	<-c.Done()
	if _, err := c.NextHeader(ctx, 0); err == nil {
		t.Fatal("a wait on a closed connection returned a notification")
	}
}

// silentServer accepts one connection and reads nothing from it until
// release is closed; it then sends each line it reads on lines, which it
// closes when the connection ends.
func silentServer(t *testing.T) (addr string, release chan struct{}, lines chan string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	release = make(chan struct{})
	lines = make(chan string, 16)
	go func() {
		defer close(lines)
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		<-release
		r := bufio.NewReaderSize(conn, 1<<20)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	return l.Addr().String(), release, lines
}

// startedConn is a connection that closes started when a write of more
// than 1 MiB begins.
type startedConn struct {
	net.Conn
	once    sync.Once
	started chan struct{}
}

func (s *startedConn) Write(p []byte) (int, error) {
	if len(p) > 1<<20 {
		s.once.Do(func() { close(s.started) })
	}
	return s.Conn.Write(p)
}

// dialSilent connects a client to a silentServer.
func dialSilent(t *testing.T) (c *ElectrumClient, conn *startedConn, release chan struct{}, lines chan string) {
	t.Helper()
	addr, release, lines := silentServer(t)
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn = &startedConn{Conn: raw, started: make(chan struct{})}
	c = newElectrumClient(conn)
	t.Cleanup(func() { _ = c.Close() })
	return c, conn, release, lines
}

// bigCall starts a call whose request (64 MiB) a server that reads nothing
// never takes in full, and returns once its write has begun; done
// receives the call's result.
func bigCall(t *testing.T, ctx context.Context, c *ElectrumClient, conn *startedConn) (done chan error) {
	t.Helper()
	done = make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "blockchain.transaction.broadcast", strings.Repeat("a", 64<<20))
		done <- err
	}()
	select {
	case <-conn.started:
	case err := <-done:
		t.Fatalf("the big call returned before writing: %v", err)
	case <-time.After(testWait):
		t.Fatal("the big call never began its write")
	}
	return done
}

// TestCallWaitingForWriteHonoursContext: a call whose context ends while
// another call's write is stuck (a server that stopped reading) returns
// the context's error instead of waiting for that write.
func TestCallWaitingForWriteHonoursContext(t *testing.T) {
	c, conn, _, _ := dialSilent(t)
	bigCtx, cancelBig := context.WithCancel(context.Background())
	defer cancelBig()
	bigCall(t, bigCtx, c, conn)

	short, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(short, "server.ping")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("server.ping behind a stuck write returned %v, want its context's error", err)
		}
	case <-time.After(testWait):
		t.Fatal("server.ping behind a stuck write outlived its context: it waits for the write, not its context")
	}
}

// TestCallCancelledDuringWrite: cancelling a call's context (one without
// a deadline) interrupts its stuck write; the call returns the
// cancellation.
func TestCallCancelledDuringWrite(t *testing.T) {
	c, conn, _, _ := dialSilent(t)
	bigCtx, cancelBig := context.WithCancel(context.Background())
	done := bigCall(t, bigCtx, c, conn)
	cancelBig()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled call returned %v, want context.Canceled", err)
		}
	case <-time.After(testWait):
		t.Fatal("a call whose context was cancelled stayed blocked in its write")
	}
}

// TestInterruptedWriteClosesClient: a call whose context ends in the
// middle of writing its request leaves a part of it on the connection,
// which no later request can follow, so the client closes the connection:
// later calls fail saying why, and the server never receives a line that
// is not JSON.
func TestInterruptedWriteClosesClient(t *testing.T) {
	c, conn, release, lines := dialSilent(t)
	bigCtx, cancelBig := context.WithCancel(context.Background())
	done := bigCall(t, bigCtx, c, conn)
	cancelBig()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the big call succeeded against a server that reads nothing")
		}
	case <-time.After(testWait):
		t.Fatal("a call whose context ended stayed blocked in its write")
	}
	close(release)
	pingCtx, cancelPing := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelPing()
	_, pingErr := c.Call(pingCtx, "server.ping")
	ctx := testContext(t)
	for done := false; !done; {
		select {
		case line, ok := <-lines:
			if !ok {
				done = true // the connection ended with the torn request
				break
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("after a write was interrupted the server received a line of %d bytes that is not JSON (%v), ending in %q",
					len(line), err, line[max(0, len(line)-80):])
			}
		case <-ctx.Done():
			t.Fatal("the connection stayed open after a write was interrupted")
		}
	}
	if pingErr == nil || !strings.Contains(pingErr.Error(), "interrupted") {
		t.Fatalf("a call after an interrupted write returned %v, want an error saying the connection closed after it", pingErr)
	}
	if c.Err() == nil {
		t.Fatal("the client reports no error after an interrupted write")
	}
}
