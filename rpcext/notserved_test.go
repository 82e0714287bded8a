package rpcext

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/btcjson"
)

// A method the server does not serve is answered from btcd v0.26.2's own
// lists: its wallet commands -1 "This implementation does not implement
// wallet commands", anything else -32601 "Method not found", after the
// parameters of a method btcjson knows are checked (-32602), also for one
// served over websockets only and asked over HTTP. A client
// probing for a method (ElectrumX for estimatesmartfee) takes any other
// answer than -32601 as "the node has it".
func TestNotServedAnswersAsBtcd(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)
	c := ts.httpClient(t, testUser, testPass)
	for _, tc := range []struct {
		method string
		params []string
		code   btcjson.RPCErrorCode
	}{
		// Not in btcd's rpcAskWallet: "Method not found".
		{"estimatesmartfee", []string{"6"}, btcjson.ErrRPCMethodNotFound.Code},
		{"importaddress", []string{`"bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080"`, `""`}, btcjson.ErrRPCMethodNotFound.Code},
		{"getaddressinfo", []string{`"bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080"`}, btcjson.ErrRPCMethodNotFound.Code},
		{"loadwallet", []string{`"w"`}, btcjson.ErrRPCMethodNotFound.Code},
		// In btcd's rpcAskWallet: the wallet answer.
		{"gettxoutsetinfo", nil, btcjson.ErrRPCNoWallet},
		{"getbalance", nil, btcjson.ErrRPCNoWallet},
		// Wrong parameters first, as btcd parses before it looks up.
		{"importaddress", []string{`"a"`, `"b"`, `true`, `1`, `2`}, btcjson.ErrRPCInvalidParams.Code},
		{"getbalance", []string{`1`, `2`, `3`, `4`}, btcjson.ErrRPCInvalidParams.Code},
		{"nosuchmethod", nil, btcjson.ErrRPCMethodNotFound.Code},
		// Websocket-only methods over HTTP: parameters first too.
		{"notifyblocks", []string{`1`}, btcjson.ErrRPCInvalidParams.Code},
		{"loadtxfilter", []string{`"x"`}, btcjson.ErrRPCInvalidParams.Code},
		{"notifyblocks", nil, btcjson.ErrRPCMethodNotFound.Code},
	} {
		var params []json.RawMessage
		for _, p := range tc.params {
			params = append(params, json.RawMessage(p))
		}
		_, err := c.RawRequest(tc.method, params)
		var rerr *btcjson.RPCError
		if !errors.As(err, &rerr) || rerr.Code != tc.code {
			t.Errorf("%s: got %v, want code %d as btcd v0.26.2 answers", tc.method, err, tc.code)
		}
	}
}
