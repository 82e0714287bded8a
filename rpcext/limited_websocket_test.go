package rpcext

import (
	"testing"

	"github.com/btcsuite/btcd/btcjson"
)

// Over a websocket btcd parses the command before it looks at the limited
// user's permission (rpcwebsocket.go inHandler: parseCmd, then
// "if !c.isAdmin"), so a method btcjson does not know is answered -32601
// Method not found, as it is to the full user, while a known method the
// limited user may not call is still refused -32602. Over HTTP the
// permission comes first (TestLimitedUserUnknownMethod).
func TestLimitedWebsocketUnknownMethod(t *testing.T) {
	ts := parityLimitedServer(t, newTestNode(t))
	conn := parityWSDial(t, ts, "limited", "lpass")
	r := parityWSCall(t, conn, `{"jsonrpc":"1.0","method":"nosuchmethod","params":[],"id":1}`)
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCMethodNotFound.Code {
		t.Fatalf("limited user's unknown method over a websocket: %+v; btcd answers -32601 Method not found", r.Error)
	}
	r = parityWSCall(t, conn, `{"jsonrpc":"1.0","method":"getbalance","params":[],"id":1}`)
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCInvalidParams.Code ||
		r.Error.Message != "limited user not authorized for this method" {
		t.Fatalf("limited user's wallet method over a websocket: %+v; btcd answers -32602 limited user not authorized", r.Error)
	}
}
