// btcd's answers the server keeps, each unchecked by earlier tests:
// websocket authentication, stopnotifyblocks, rescans after a disconnect,
// long requests, getnetworkhashps, decodescript, validateaddress and
// getheaders.

package rpcext

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/gorilla/websocket"
)

// wsMessageSeen is a websocket message: a reply (id set) or a notification.
type wsMessageSeen struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	ID     json.RawMessage `json:"id"`
	Error  json.RawMessage `json:"error"`
}

// sendUntilReply sends body and reads until the reply with id, returning
// the notifications read before it. The deadline only turns a hang into a
// failure.
func sendUntilReply(t *testing.T, conn *websocket.Conn, body, id string) []wsMessageSeen {
	t.Helper()
	if err := conn.WriteMessage(websocket.TextMessage, []byte(body)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var notes []wsMessageSeen
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("reading the reply to %s: %v", body, err)
		}
		var m wsMessageSeen
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("message %q: %v", msg, err)
		}
		if string(m.ID) == id {
			if len(m.Error) > 0 && string(m.Error) != "null" {
				t.Fatalf("%s answered %s", body, m.Error)
			}
			return notes
		}
		notes = append(notes, m)
	}
}

// untilBlockConnected reads notifications until blockconnected of hash.
func untilBlockConnected(t *testing.T, conn *websocket.Conn, hash string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for blockconnected %s: %v", hash, err)
		}
		var m wsMessageSeen
		if json.Unmarshal(msg, &m) != nil || m.Method != "blockconnected" {
			continue
		}
		var params []json.RawMessage
		if json.Unmarshal(m.Params, &params) == nil && len(params) > 0 && string(params[0]) == `"`+hash+`"` {
			return
		}
	}
}

// After stopnotifyblocks a client receives no more blockconnected nor
// filteredblockconnected notifications (btcd's handleStopNotifyBlocks
// unregisters it), while a client still registered does.
func TestStopNotifyBlocksEndsBlockNotifications(t *testing.T) {
	node := newTestNode(t)
	ts := startServer(t, node, nil)
	stopper := parityWSDial(t, ts, testUser, testPass)
	watcher := parityWSDial(t, ts, testUser, testPass)
	sendUntilReply(t, stopper, `{"jsonrpc":"1.0","method":"notifyblocks","params":[],"id":1}`, "1")
	sendUntilReply(t, watcher, `{"jsonrpc":"1.0","method":"notifyblocks","params":[],"id":1}`, "1")

	first, err := node.Generate(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	untilBlockConnected(t, stopper, first[0].String())
	untilBlockConnected(t, watcher, first[0].String())

	// Whatever the stopper still had queued for the first block arrives
	// before this reply; nothing after it may be a block notification.
	sendUntilReply(t, stopper, `{"jsonrpc":"1.0","method":"stopnotifyblocks","params":[],"id":2}`, "2")

	// Two more blocks: once the watcher has the second, the notifier has
	// finished with the first of them for every client.
	more, err := node.Generate(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	untilBlockConnected(t, watcher, more[1].String())
	notes := sendUntilReply(t, stopper, `{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":3}`, "3")
	for _, n := range notes {
		if n.Method != "" {
			t.Fatalf("after stopnotifyblocks the client was sent %s %s; btcd sends no block notifications then",
				n.Method, n.Params)
		}
	}
}

// An authenticated websocket client sending authenticate again is
// disconnected, as btcd's inHandler does ("already authenticated"): it is
// neither answered nor served further.
func TestAuthenticateTwiceDisconnects(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)
	conn := parityWSDial(t, ts, testUser, testPass)
	auth := fmt.Sprintf(`{"jsonrpc":"1.0","method":"authenticate","params":[%q,%q],"id":1}`, testUser, testPass)
	if err := conn.WriteMessage(websocket.TextMessage, []byte(auth)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, msg, err := conn.ReadMessage(); err == nil {
		t.Fatalf("a second authenticate was answered %s and the connection kept; btcd disconnects the client", msg)
	}
}

// After the tip is invalidated (blockdisconnected), a rescan through the
// tip still ends: the notifier's tip follows the disconnect to the new tip,
// where the rescan's keys are handed to the notifications.
func TestRescanThroughTipAfterDisconnect(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(5, nil); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, nil)
	watched, _ := newAddress(t, node)
	conn := parityWSDial(t, ts, testUser, testPass)
	sendUntilReply(t, conn, `{"jsonrpc":"1.0","method":"notifyblocks","params":[],"id":1}`, "1")

	tip := node.chain.BestSnapshot().Hash
	if r := ts.call(t, fmt.Sprintf(`{"jsonrpc":"1.0","method":"invalidateblock","params":[%q],"id":1}`, tip)); r.Error != nil {
		t.Fatalf("invalidateblock: %v", r.Error)
	}
	// The disconnect has reached the notifier once the client is told.
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for blockdisconnected: %v", err)
		}
		var m wsMessageSeen
		if json.Unmarshal(msg, &m) == nil && m.Method == "blockdisconnected" {
			break
		}
	}
	if err := conn.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(
		`{"jsonrpc":"1.0","method":"rescan","params":[%q,[%q],[]],"id":2}`, node.params.GenesisHash, watched.EncodeAddress()))); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("no answer to a rescan through the tip after the tip was disconnected: %v", err)
		}
		var m wsMessageSeen
		if json.Unmarshal(msg, &m) == nil && string(m.ID) == "2" {
			if len(m.Error) > 0 && string(m.Error) != "null" {
				t.Fatalf("rescan answered %s", m.Error)
			}
			return
		}
	}
}

// getnetworkhashps with a height above the tip answers 0, as btcd
// ("the passed height is too high or zero, just return 0"), and so does
// height 0; a height at or below the tip is estimated.
func TestNetworkHashPSHeightBounds(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(3, nil); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, nil)
	for _, body := range []string{
		`{"jsonrpc":"1.0","method":"getnetworkhashps","params":[120,4],"id":1}`,
		`{"jsonrpc":"1.0","method":"getnetworkhashps","params":[120,1000],"id":1}`,
		`{"jsonrpc":"1.0","method":"getnetworkhashps","params":[120,0],"id":1}`,
	} {
		r := ts.call(t, body)
		if r.Error != nil || string(r.Result) != "0" {
			t.Fatalf("%s: %s %v; btcd answers 0 for a height above the tip or 0", body, r.Result, r.Error)
		}
	}
	if r := ts.call(t, `{"jsonrpc":"1.0","method":"getnetworkhashps","params":[120,3],"id":1}`); r.Error != nil {
		t.Fatalf("getnetworkhashps at the tip's height: %v", r.Error)
	}
}

// A websocket client runs at most two rescans and long polls at once: with
// two long polls parked, a third waits its turn while the requests sent
// after it are answered, and runs once a block ends the first two.
func TestWebsocketLongRequestsBounded(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, func(c *Config) { c.Backend = gbtNode{node} })
	conn := parityWSDial(t, ts, testUser, testPass)
	var tmpl btcjson.GetBlockTemplateResult
	r := parityWSCall(t, conn, `{"jsonrpc":"1.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"]}],"id":1}`)
	if r.Error != nil || json.Unmarshal(r.Result, &tmpl) != nil || tmpl.LongPollID == "" {
		t.Fatalf("template %s %v", r.Result, r.Error)
	}
	poll := func(id string) string {
		return `{"jsonrpc":"1.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"],"longpollid":"` +
			tmpl.LongPollID + `"}],"id":` + id + `}`
	}
	for _, body := range []string{poll("2"), poll("3"), poll("4"),
		`{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":5}`} {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	mined := false
	answered := map[string]bool{}
	for len(answered) < 4 {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var r reply
		if err := json.Unmarshal(msg, &r); err != nil {
			t.Fatalf("message %q: %v", msg, err)
		}
		id := string(r.ID)
		switch {
		case id == "5":
			if len(answered) > 0 {
				t.Fatalf("a long poll was answered before the block: %v", answered)
			}
			// The long polls wait for a template change: a block.
			if _, err := node.Generate(1, nil); err != nil {
				t.Fatal(err)
			}
			mined = true
		case !mined:
			t.Fatalf("long poll %s answered before getblockcount, and before any block: %s", id, msg)
		case r.Error != nil:
			t.Fatalf("long poll %s: %s; want it answered, the third after a slot freed", id, msg)
		}
		answered[id] = true
	}
}

// decodescript gives a script's pay-to-script-hash address in "p2sh",
// except for a script that is itself pay-to-script-hash, for which btcd
// leaves it out ("if scriptClass != txscript.ScriptHashTy").
func TestDecodeScriptP2SHOfP2SH(t *testing.T) {
	node := newTestNode(t)
	ts := startServer(t, node, nil)
	inner, err := txscript.PayToAddrScript(node.minerTo)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := address.NewAddressScriptHash(inner, node.params)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := txscript.PayToAddrScript(sh)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(script []byte) btcjson.DecodeScriptResult {
		t.Helper()
		r := ts.call(t, fmt.Sprintf(`{"jsonrpc":"1.0","method":"decodescript","params":[%q],"id":1}`, hex.EncodeToString(script)))
		var res btcjson.DecodeScriptResult
		if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
			t.Fatalf("decodescript %x: %s %v", script, r.Result, r.Error)
		}
		return res
	}
	if res := decode(inner); res.P2sh != sh.EncodeAddress() {
		t.Fatalf("decodescript of a P2PKH script: p2sh %q, want %q", res.P2sh, sh.EncodeAddress())
	}
	if res := decode(outer); res.Type != "scripthash" || res.P2sh != "" || res.Address != sh.EncodeAddress() {
		t.Fatalf("decodescript of a P2SH script: %+v; btcd gives no p2sh for a P2SH script", res)
	}
}

// validateaddress of a pay-to-script-hash address answers isscript true and
// iswitness false, as btcd's handleValidateAddress.
func TestValidateAddressP2SH(t *testing.T) {
	node := newTestNode(t)
	ts := startServer(t, node, nil)
	inner, err := txscript.PayToAddrScript(node.minerTo)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := address.NewAddressScriptHash(inner, node.params)
	if err != nil {
		t.Fatal(err)
	}
	r := ts.call(t, fmt.Sprintf(`{"jsonrpc":"1.0","method":"validateaddress","params":[%q],"id":1}`, sh.EncodeAddress()))
	var res btcjson.ValidateAddressChainResult
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
		t.Fatalf("validateaddress %s: %s %v", sh, r.Result, r.Error)
	}
	if !res.IsValid || res.Address != sh.EncodeAddress() || res.IsScript == nil || !*res.IsScript ||
		res.IsWitness == nil || *res.IsWitness {
		t.Fatalf("validateaddress of P2SH %s: %s; btcd answers isvalid, isscript true, iswitness false", sh, r.Result)
	}
}

// getheaders returns the main-chain headers after the locator up to and
// including hashstop, as btcd's LocateHeaders.
func TestGetHeadersStopsAtHashStop(t *testing.T) {
	node := newTestNode(t)
	hashes, err := node.Generate(5, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, nil)
	r := ts.call(t, fmt.Sprintf(`{"jsonrpc":"1.0","method":"getheaders","params":[[%q],%q],"id":1}`,
		node.params.GenesisHash, hashes[2]))
	var out []string
	if r.Error != nil || json.Unmarshal(r.Result, &out) != nil {
		t.Fatalf("getheaders: %s %v", r.Result, r.Error)
	}
	if len(out) != 3 {
		t.Fatalf("getheaders from genesis to block 3: %d headers; btcd stops at hashstop", len(out))
	}
	for i, h := range out {
		raw, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		var hdr wire.BlockHeader
		if err := hdr.Deserialize(bytes.NewReader(raw)); err != nil {
			t.Fatal(err)
		}
		if hdr.BlockHash() != *hashes[i] {
			t.Fatalf("header %d is %v, want %v", i, hdr.BlockHash(), hashes[i])
		}
	}
}

// A websocket client that has the answers to its long requests may send
// the next ones at once: their slots are free before the answers are
// sent. A miner polls getblocktemplate this way, one call after the last
// answer.
func TestWebsocketLongSlotsFreeWhenAnswered(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, func(c *Config) { c.Backend = gbtNode{node} })
	conn := parityWSDial(t, ts, testUser, testPass)
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	for round := 0; round < 300; round++ {
		for _, id := range []string{"1", "2"} {
			body := `{"jsonrpc":"1.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"]}],"id":` + id + `}`
			if err := conn.WriteMessage(websocket.TextMessage, []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
		for answered := 0; answered < 2; {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			var r reply
			if err := json.Unmarshal(msg, &r); err != nil {
				t.Fatalf("message %q: %v", msg, err)
			}
			if r.ID == nil {
				continue
			}
			if r.Error != nil {
				t.Fatalf("round %d: a template asked for after the last two were answered was refused: %s", round, msg)
			}
			answered++
		}
	}
}
