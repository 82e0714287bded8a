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

// TestEsploraBroadcastMissingInputs posts to the node's Esplora API a
// transaction spending an output that does not exist. electrs answers
// bitcoind's sendrawtransaction error, which for inputs missing or spent is
// -25 "bad-txns-inputs-missingorspent"; btcd refuses it as an orphan, which
// is not a policy rejection (-26).
func TestEsploraBroadcastMissingInputs(t *testing.T) {
	n := StartNode(t, NodeConfig{Esplora: true})
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: chainhash.DoubleHashH([]byte("no such transaction")), Index: 0},
		Sequence: wire.MaxTxInSequenceNum})
	pk, err := txscript.PayToAddrScript(MiningAddress())
	if err != nil {
		t.Fatal(err)
	}
	tx.AddTxOut(&wire.TxOut{Value: 10_000, PkScript: pk})
	var b bytes.Buffer
	if err := tx.Serialize(&b); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(n.EsploraURL+"/tx", "text/plain", strings.NewReader(hex.EncodeToString(b.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `sendrawtransaction RPC error: {"code":-25,"message":"bad-txns-inputs-missingorspent"}`
	if resp.StatusCode != http.StatusBadRequest || string(body) != want {
		t.Fatalf("POST /tx spending a missing output: %d %s\nwant 400 %s", resp.StatusCode, body, want)
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
	post := func(tx *wire.MsgTx) (int, string) {
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
	parent, err := SpendCoinbaseAt(n.RPC, 1, MiningScript(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(parent); code != http.StatusOK {
		t.Fatalf("POST parent: %d %s", code, body)
	}
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	child, err := SpendMined(wire.OutPoint{Hash: parent.TxHash()}, parent.TxOut[0].Value, MiningScript(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(child); code != http.StatusOK {
		t.Fatalf("POST child: %d %s", code, body)
	}
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	code, body := post(parent)
	want := `sendrawtransaction RPC error: {"code":-25,"message":"bad-txns-inputs-missingorspent"}`
	if code != http.StatusBadRequest || body != want {
		t.Fatalf("POST of a confirmed transaction whose outputs are all spent: %d %s\nwant 400 %s", code, body, want)
	}
}
