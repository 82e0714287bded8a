package esplora

import (
	"net/http"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestPolicyRejectionIsMinus26WithPoolRelay: the server wired as
// docs/EMBEDDING.md tells an embedder to wire it (an electrum.IndexBackend
// whose Relay is "a ready one", electrum.PoolRelay; newTestNode wires it
// so). docs/OPERATIONS.md promises POST /tx answers bitcoind's
// `sendrawtransaction RPC error: {"code":-26,...}` "for a policy or
// consensus rejection"; bitcoind refuses a transaction conflicting with one
// of its mempool (no replacement) with -26 "txn-mempool-conflict".
func TestPolicyRejectionIsMinus26WithPoolRelay(t *testing.T) {
	n := newTestNode(t, "")
	coin := n.coin()
	a := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 10_000, PkScript: p2wpkhScript(0x61)})
	if code, body := n.post("/tx", txHex(a)); code != http.StatusOK {
		t.Fatalf("POST /tx: %d %s", code, body)
	}
	b := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 20_000, PkScript: p2wpkhScript(0x62)})
	code, body := n.post("/tx", txHex(b))
	if code != http.StatusBadRequest || !strings.HasPrefix(body, `sendrawtransaction RPC error: {"code":-26,"message":`) {
		t.Errorf("POST /tx of a double spend of a mempool transaction: %d %s\n"+
			"want 400 sendrawtransaction RPC error: {\"code\":-26,...} (docs/OPERATIONS.md: -26 for a policy or consensus rejection)", code, body)
	}
}
