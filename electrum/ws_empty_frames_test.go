package electrum

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// rawWSFrame is a masked client frame with the FIN bit as given (payload under
// 126 bytes).
func rawWSFrame(fin bool, op byte, payload []byte) []byte {
	key := [4]byte{9, 8, 7, 6}
	b0 := op
	if fin {
		b0 |= 0x80
	}
	f := []byte{b0, 0x80 | byte(len(payload)), key[0], key[1], key[2], key[3]}
	for i, c := range payload {
		f = append(f, c^key[i%4])
	}
	return f
}

// TestEmptyWebSocketFramesCharged: as empty lines over TCP, a WebSocket
// message sent as any number of empty continuation frames is counted as
// bytes in and charged for every byte read, frame headers included; counted
// by payload, a client kept the read loop parsing frames at no cost.
func TestEmptyWebSocketFramesCharged(t *testing.T) {
	fx := newFixtureChain(t)
	s := New(Config{WSListen: []string{"127.0.0.1:0"}}, fx.f) // loopback not exempt: charged
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+s.Addrs()[WS][0].String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(60 * time.Second)) // hang guard
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["x","1.4"]}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	before := openSessionFrom(s, "127.0.0.1")

	const empties = 200_000
	nc := ws.NetConn()
	bw := bufio.NewWriterSize(nc, 64<<10)
	sent := 0
	write := func(f []byte) {
		sent += len(f)
		if _, err := bw.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	write(rawWSFrame(false, websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,`)))
	for i := 0; i < empties; i++ {
		write(rawWSFrame(false, 0, nil))
	}
	write(rawWSFrame(true, 0, []byte(`"method":"server.ping"}`)))
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	_, m, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	if !strings.Contains(string(m), `"id":1`) {
		t.Fatalf("answer %s", m)
	}
	after := openSessionFrom(s, "127.0.0.1")
	if after == nil {
		t.Fatal("session gone")
	}
	in := after.BytesIn - before.BytesIn
	cost := after.Cost - before.Cost
	want := float64(sent) / float64(s.cfg.BandwidthUnit)
	t.Logf("%d bytes sent in %d frames: bytes in +%d, cost +%.2f", sent, empties+2, in, cost)
	if in < uint64(sent)/2 || cost < want/2 {
		t.Fatalf("a message of %d empty continuation frames (%d bytes) was read for bytes in +%d and cost +%.2f; "+
			"want its bytes counted and charged as empty lines are over TCP (about %.0f)", empties, sent, in, cost, want)
	}
}
