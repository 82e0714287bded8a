package rpcext

import (
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcjson"
)

// TestFaucetParams checks the faucet method's parameters before the node
// is asked to pay: an address of the node's network and a positive amount
// in BTC; the node's own refusal reaches the client as an RPC error.
func TestFaucetParams(t *testing.T) {
	node := newTestNode(t)
	ts := startServer(t, node, nil)
	to, _ := newAddress(t, node)
	tests := []struct {
		name, params string
		code         btcjson.RPCErrorCode
	}{
		{"mainnet address", `["1BoatSLRHtKNngkdXEeobR76b53LETtpyT", 1]`, btcjson.ErrRPCInvalidAddressOrKey},
		{"not an address", `["nope", 1]`, btcjson.ErrRPCInvalidAddressOrKey},
		{"zero amount", `["` + to.EncodeAddress() + `", 0]`, btcjson.ErrRPCInvalidParameter},
		{"negative amount", `["` + to.EncodeAddress() + `", -1]`, btcjson.ErrRPCInvalidParameter},
		{"more than exists", `["` + to.EncodeAddress() + `", 21000001]`, btcjson.ErrRPCInvalidParameter},
		{"missing amount", `["` + to.EncodeAddress() + `"]`, btcjson.ErrRPCInvalidParams.Code},
		{"node refuses", `["` + to.EncodeAddress() + `", 1.5]`, btcjson.ErrRPCInternal.Code},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.call(t, `{"method":"faucet","params":`+tc.params+`,"id":1}`)
			if r.Error == nil || r.Error.Code != tc.code {
				t.Fatalf("faucet %s: %+v, want code %d", tc.params, r.Error, tc.code)
			}
		})
	}
	r := ts.call(t, `{"method":"faucet","params":["`+to.EncodeAddress()+`", 1.5],"id":1}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "no faucet") {
		t.Fatalf("the node's refusal did not reach the client: %+v", r.Error)
	}
	r = ts.call(t, `{"method":"help","params":["faucet"],"id":1}`)
	if r.Error != nil || !strings.Contains(string(r.Result), "regtest only") {
		t.Fatalf("help faucet: %s %+v", r.Result, r.Error)
	}
}
