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

// TestEsploraBroadcastInvalidWithMissingInputs posts a transaction that
// fails btcd's (and bitcoind's) context-free checks (the same input twice)
// and whose input does not exist. bitcoind refuses it in CheckTransaction,
// before it looks up any input: -26 bad-txns-inputs-duplicate. btcd refuses
// it for the same reason; the node must not turn that refusal into -25
// because the input happens to be missing.
func TestEsploraBroadcastInvalidWithMissingInputs(t *testing.T) {
	n := StartNode(t, NodeConfig{Esplora: true})
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	tx := wire.NewMsgTx(2)
	op := wire.OutPoint{Hash: chainhash.DoubleHashH([]byte("no such transaction")), Index: 0}
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: op, Sequence: wire.MaxTxInSequenceNum})
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: op, Sequence: wire.MaxTxInSequenceNum})
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
	t.Logf("answer: %d %s", resp.StatusCode, body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"code":-26`) {
		t.Fatalf("POST /tx of a transaction with a duplicate (missing) input: %d %s\nwant 400 with -26 "+
			"(refused by the sanity check, as bitcoind's bad-txns-inputs-duplicate)", resp.StatusCode, body)
	}
}
