package rpcext

import (
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcjson"
)

// TestLimitedWebsocketBadParams: btcd's websocket handler parses the
// command (parseCmd) before it checks the limited user's permission, so a
// method btcjson knows, called with parameters it cannot parse, is answered
// the parse error (-32602 "wrong number of params ..."), not the limited
// user's refusal, which comes only for a command that parsed.
func TestLimitedWebsocketBadParams(t *testing.T) {
	ts := parityLimitedServer(t, newTestNode(t))
	conn := parityWSDial(t, ts, "limited", "lpass")
	r := parityWSCall(t, conn, `{"jsonrpc":"1.0","method":"stop","params":["x"],"id":1}`)
	t.Logf("answer: %+v", r.Error)
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCInvalidParams.Code ||
		!strings.Contains(r.Error.Message, "wrong number of params") {
		t.Fatalf("limited user's stop with a parameter over a websocket: %+v; btcd answers its parse error, "+
			"-32602 wrong number of params (expected 0, received 1)", r.Error)
	}
}
