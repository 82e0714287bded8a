package electrum

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBadInput sends hostile input on one session while a well-behaved
// client keeps being served on another.
func TestBadInput(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.CostHardLimit = -1 })
	sh := fx.shA.String()

	good := fx.client(t, "1.4")
	stop := make(chan struct{})
	var served atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var bal map[string]int64
			good.must(&bal, "blockchain.scripthash.get_balance", sh)
			if bal["confirmed"] == 0 {
				t.Error("well-behaved client got a wrong balance")
				return
			}
			served.Add(1)
		}
	}()

	bad := fx.client(t, "1.4")
	cases := []struct {
		name string
		line string
		code int
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,`, codeParseError},
		{"not an object", `42`, codeInvalidRequest},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":5}`, codeInvalidRequest},
		{"params not a container", `{"jsonrpc":"2.0","id":1,"method":"server.ping","params":"x"}`, codeInvalidParams},
		{"bad jsonrpc version", `{"jsonrpc":"3.0","id":1,"method":"server.ping"}`, codeInvalidRequest},
		{"empty batch", `[]`, codeInvalidRequest},
		{"invalid UTF-8", "{\"id\":1,\"method\":\"\xff\xfe\"}", codeParseError},
	}
	for _, tc := range cases {
		r := bad.await(func() chan rpcResponse { ch := bad.expectNullID(); bad.send(tc.line); return ch }())
		if r.Error == nil || r.Error.Code != tc.code {
			t.Errorf("%s: got %+v, want code %d", tc.name, r.Error, tc.code)
		}
	}
	calls := []struct {
		name   string
		method string
		params []any
		code   int
	}{
		{"unknown method", "blockchain.nope", nil, codeMethodNotFound},
		{"height as string", "blockchain.block.header", []any{"abc"}, codeBadRequest},
		{"negative height", "blockchain.block.header", []any{-1}, codeBadRequest},
		{"fractional height", "blockchain.block.header", []any{1.5}, codeBadRequest},
		{"huge height", "blockchain.block.header", []any{1e30}, codeBadRequest},
		{"missing argument", "blockchain.block.header", nil, codeInvalidParams},
		{"too many arguments", "server.ping", []any{1}, codeInvalidParams},
		{"scripthash as number", "blockchain.scripthash.get_balance", []any{123}, codeBadRequest},
		{"scripthash too short", "blockchain.scripthash.get_history", []any{sh[:63]}, codeBadRequest},
		{"scripthash not hex", "blockchain.scripthash.listunspent", []any{strings.Repeat("zz", 32)}, codeBadRequest},
		{"scripthash as list", "blockchain.scripthash.subscribe", []any{[]string{sh}}, codeBadRequest},
		{"verbose not a bool", "blockchain.transaction.get", []any{fx.tx1.TxHash().String(), "yes"}, codeBadRequest},
		{"tx hash too long", "blockchain.transaction.get", []any{strings.Repeat("a", 66)}, codeBadRequest},
		{"merkle not a bool", "blockchain.transaction.id_from_pos", []any{1, 0, 2}, codeBadRequest},
		{"features not an object", "server.add_peer", []any{"x"}, codeBadRequest},
		{"raw tx garbage", "blockchain.transaction.broadcast", []any{"00ff"}, codeBadRequest},
		{"estimatefee string", "blockchain.estimatefee", []any{"six"}, codeBadRequest},
	}
	for _, tc := range calls {
		if _, rerr := bad.call(tc.method, tc.params...); rerr == nil || rerr.Code != tc.code {
			t.Errorf("%s: got %v, want code %d", tc.name, rerr, tc.code)
		}
	}

	// A 2 MB line is skipped with an error; the session goes on.
	ch := bad.expectNullID()
	bad.send(`{"jsonrpc":"2.0","id":1,"method":"server.banner","params":["` + strings.Repeat("x", 2_000_000) + `"]}`)
	if r := bad.await(ch); r.Error == nil || r.Error.Code != codeInvalidRequest || !strings.Contains(r.Error.Message, "too large") {
		t.Errorf("2 MB line: %+v", r.Error)
	}
	bad.must(nil, "server.ping")

	// A 10,000-request batch is over the batch limit.
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < 10_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"server.ping"}`)
	}
	b.WriteByte(']')
	ch = bad.expectNullID()
	bad.send(b.String())
	if r := bad.await(ch); r.Error == nil || r.Error.Code != codeLimitExceeded {
		t.Errorf("10,000-request batch: %+v", r.Error)
	}
	bad.must(nil, "server.ping")

	close(stop)
	wg.Wait()
	if served.Load() == 0 {
		t.Fatal("the well-behaved client was not served")
	}
}

// TestSlowReader checks that a client that never reads its answers is
// disconnected while another client is served.
func TestSlowReader(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.MaxSendBacklog = 1 << 20
		c.WriteTimeout = time.Second
		c.Banner = strings.Repeat("b", 100_000)
		c.CostHardLimit = -1
	})
	good := fx.client(t, "1.4")
	conn, err := net.Dial("tcp", fx.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	conn.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["slow","1.4"]}` + "\n"))
	// Ask for 200 banners (20 MB) and read nothing.
	var req strings.Builder
	for i := 0; i < 200; i++ {
		req.WriteString(`{"jsonrpc":"2.0","id":1,"method":"server.banner"}` + "\n")
	}
	go conn.Write([]byte(req.String()))
	deadline := time.Now().Add(20 * time.Second)
	for fx.s.SessionCount() != 1 && time.Now().Before(deadline) {
		good.must(nil, "server.ping")
		time.Sleep(20 * time.Millisecond)
	}
	if n := fx.s.SessionCount(); n != 1 {
		t.Fatalf("slow reader still connected (%d sessions)", n)
	}
	// The connection is reset: reading ends with an error or EOF.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading the slow connection: %v", err)
	}
	good.must(nil, "server.ping")
}

// TestVersionWithSignsRefused: a protocol version is two or three numbers
// of digits only; "+1.+4" or "1.4.-0" is no version at all.
func TestVersionWithSignsRefused(t *testing.T) {
	fx := newFixture(t, nil)
	for _, v := range []string{"+1.+4", "+1.6", "1.4.-0", "1.+6", " 1.4"} {
		c := dial(t, fx.addr)
		r := c.await(c.sendExpect("1", `{"jsonrpc":"2.0","id":1,"method":"server.version","params":["x","`+v+`"]}`))
		if r.Error == nil || r.Error.Code != codeBadRequest {
			t.Fatalf("server.version %q: result %s error %v; want error 1", v, r.Result, r.Error)
		}
		if !c.closedByServer() {
			t.Fatalf("server.version %q: session kept open", v)
		}
	}
}

// TestMethodNullInvalid: "method": null is no string, as 5 is not.
func TestMethodNullInvalid(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	r := c.await(c.sendExpect("1", `{"jsonrpc":"2.0","id":1,"method":null}`))
	if r.Error == nil || r.Error.Code != codeInvalidRequest || !strings.Contains(r.Error.Message, "method must be a string") {
		t.Fatalf(`"method": null answered %+v, want -32600 method must be a string`, r.Error)
	}
}

// TestLargeIntegerArgs: the protocol asks for non-negative integers, of
// any size: a start_height past the tip gives no headers, a count past the
// cap is capped, a height past the tip is "out of range", and a cp_height
// past the tip is refused as such, however far past 2^31 they are.
func TestLargeIntegerArgs(t *testing.T) {
	fx := newFixture(t, nil)
	_, tip := fx.f.tip()
	const big = int64(1) << 32
	for _, v := range []string{"1.4", "1.6"} {
		c := fx.client(t, v)
		var hs map[string]json.RawMessage
		res, rerr := c.call("blockchain.block.headers", big, 1)
		if rerr != nil {
			t.Errorf("%s block.headers(2^32, 1): error %q, want count 0", v, rerr.Message)
		} else if json.Unmarshal(res, &hs); string(hs["count"]) != "0" {
			t.Errorf("%s block.headers(2^32, 1) = %s, want count 0", v, res)
		}
		res, rerr = c.call("blockchain.block.headers", 0, big)
		if rerr != nil {
			t.Errorf("%s block.headers(0, 2^32): error %q, want the headers to the tip", v, rerr.Message)
		} else if json.Unmarshal(res, &hs); string(hs["count"]) != fmt.Sprint(tip+1) {
			t.Errorf("%s block.headers(0, 2^32) = %s, want count %d", v, res, tip+1)
		}
		_, rerr = c.call("blockchain.block.header", big)
		if rerr == nil || rerr.Code != codeBadRequest || rerr.Message != "height 4294967296 out of range" {
			t.Errorf("%s block.header(2^32): %v, want code 1 \"height 4294967296 out of range\"", v, rerr)
		}
		// 2^32 would be cp_height 0 as a 32-bit height.
		_, rerr = c.call("blockchain.block.header", 0, big)
		want := fmt.Sprintf("require header height 0 <= cp_height %d <= chain height %d", big, tip)
		if rerr == nil || rerr.Code != codeBadRequest || rerr.Message != want {
			t.Errorf("%s block.header(0, 2^32): %v, want code 1 %q", v, rerr, want)
		}
		_, rerr = c.call("blockchain.transaction.id_from_pos", big, 0)
		if rerr == nil || rerr.Code != codeBadRequest || rerr.Message != "height 4294967296 out of range" {
			t.Errorf("%s id_from_pos(2^32, 0): %v, want code 1 \"height 4294967296 out of range\"", v, rerr)
		}
	}
}
