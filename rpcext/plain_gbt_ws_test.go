package rpcext

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/gorilla/websocket"
)

// TestPlainGetBlockTemplateNotALongPollOverWebsocket: over a websocket, as
// over HTTP (isLongPoll), only a getblocktemplate with a longpollid is a
// long poll: with a miner's two long polls parked, plain template requests,
// more than may wait for a long slot, are answered at once, as btcd answers
// them.
func TestPlainGetBlockTemplateNotALongPollOverWebsocket(t *testing.T) {
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
	send := func(body string) {
		t.Helper()
		if err := conn.WriteMessage(websocket.TextMessage, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	// Two long polls, parked until a block.
	for _, id := range []string{"2", "3"} {
		send(`{"jsonrpc":"1.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"],"longpollid":"` +
			tmpl.LongPollID + `"}],"id":` + id + `}`)
	}
	// Plain template requests: answered at once by btcd.
	const plain = 2*DefaultMaxConcurrentRequests + 1
	for i := 0; i < plain; i++ {
		send(fmt.Sprintf(`{"jsonrpc":"1.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"]}],"id":%d}`, 1000+i))
	}
	answered := 0
	conn.SetReadDeadline(time.Now().Add(60 * time.Second)) // hang guard
	for answered < plain {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("after %d of %d plain templates answered (no block mined, two long polls parked): %v",
				answered, plain, err)
		}
		var r reply
		if err := json.Unmarshal(msg, &r); err != nil {
			t.Fatalf("message %q: %v", msg, err)
		}
		switch id := string(r.ID); {
		case id == "2" || id == "3":
			t.Fatalf("a parked long poll was answered without a block: %s", msg)
		case r.Error != nil && strings.Contains(r.Error.Message, "rescans and long polls"):
			t.Fatalf("plain getblocktemplate (no longpollid) %s refused as a long request: %s; with two long polls "+
				"parked the plain ones wait for the next block instead of being answered (btcd and this server's "+
				"HTTP path treat only a request with a longpollid as a long poll)", id, msg)
		case r.Error != nil:
			t.Fatalf("plain getblocktemplate %s: %s", id, msg)
		}
		answered++
	}
}
