package integration

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// postTx posts tx to the node's Esplora POST /tx and returns the answer.
func postTx(t *testing.T, n *Node, tx *wire.MsgTx) (int, string) {
	t.Helper()
	var b bytes.Buffer
	if err := tx.Serialize(&b); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(n.EsploraURL+"/tx", "text/plain", strings.NewReader(hex.EncodeToString(b.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// spendingMissing returns a transaction whose inputs (n of them) all spend
// one output that does not exist.
func spendingMissing(t *testing.T, n int) *wire.MsgTx {
	t.Helper()
	tx := wire.NewMsgTx(2)
	op := wire.OutPoint{Hash: chainhash.DoubleHashH([]byte("no such transaction")), Index: 0}
	for range n {
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: op, Sequence: wire.MaxTxInSequenceNum})
	}
	pk, err := txscript.PayToAddrScript(MiningAddress())
	if err != nil {
		t.Fatal(err)
	}
	tx.AddTxOut(&wire.TxOut{Value: 10_000, PkScript: pk})
	return tx
}

// missingInputs is bitcoind's answer to a transaction whose inputs are
// missing or spent, which electrs passes on.
const missingInputs = `sendrawtransaction RPC error: {"code":-25,"message":"bad-txns-inputs-missingorspent"}`

// TestEsploraBroadcastMissingInputs posts a transaction spending an output
// that does not exist: btcd refuses it as an orphan, which is not a policy
// rejection (-26) but bitcoind's missing inputs.
func TestEsploraBroadcastMissingInputs(t *testing.T) {
	n := StartNode(t, NodeConfig{Esplora: true})
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	if code, body := postTx(t, n, spendingMissing(t, 1)); code != http.StatusBadRequest || body != missingInputs {
		t.Fatalf("POST /tx spending a missing output: %d %s\nwant 400 %s", code, body, missingInputs)
	}
}

// TestEsploraBroadcastInvalidWithMissingInputs posts a transaction that
// fails the context-free checks (the same input twice) and whose input
// does not exist. bitcoind refuses it before it looks up any input, -26
// bad-txns-inputs-duplicate; btcd refuses it for the same reason, which
// must not become -25 because the input is missing too.
func TestEsploraBroadcastInvalidWithMissingInputs(t *testing.T) {
	n := StartNode(t, NodeConfig{Esplora: true})
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	code, body := postTx(t, n, spendingMissing(t, 2))
	if code != http.StatusBadRequest || !strings.Contains(body, `"code":-26`) {
		t.Fatalf("POST /tx of a transaction with a duplicate (missing) input: %d %s\nwant 400 with -26 "+
			"(refused by the sanity check, as bitcoind's bad-txns-inputs-duplicate)", code, body)
	}
}

// TestEsploraBroadcastConfirmedFullySpent posts again a confirmed
// transaction whose every output a confirmed transaction spends. bitcoind
// answers -27 only while one of the transaction's outputs is unspent; with
// all of them spent its inputs are spent too: -25
// "bad-txns-inputs-missingorspent".
func TestEsploraBroadcastConfirmedFullySpent(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{Esplora: true})
	if _, err := n.Mine(101); err != nil {
		t.Fatal(err)
	}
	parent, err := SpendCoinbaseAt(n.RPC, 1, MiningScript(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := postTx(t, n, parent); code != http.StatusOK {
		t.Fatalf("POST parent: %d %s", code, body)
	}
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	child, err := SpendMined(wire.OutPoint{Hash: parent.TxHash()}, parent.TxOut[0].Value, MiningScript(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := postTx(t, n, child); code != http.StatusOK {
		t.Fatalf("POST child: %d %s", code, body)
	}
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body := postTx(t, n, parent); code != http.StatusBadRequest || body != missingInputs {
		t.Fatalf("POST of a confirmed transaction whose outputs are all spent: %d %s\nwant 400 %s", code, body, missingInputs)
	}
}
