package node

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// maxFeeSpend spends the coinbase of the block at height to testKey's
// address, keeping out of the 50 BTC, signed.
func maxFeeSpend(t *testing.T, n *Node, height int32, keep int64) *wire.MsgTx {
	t.Helper()
	block, err := n.Chain().BlockByHeight(height)
	if err != nil {
		t.Fatal(err)
	}
	cb := block.Transactions()[0].MsgTx()
	pk, err := txscript.PayToAddrScript(testMiningAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(block.Transactions()[0].Hash(), 0), nil, nil))
	tx.AddTxOut(wire.NewTxOut(keep, pk))
	sig, err := txscript.SignatureScript(tx, 0, cb.TxOut[0].PkScript, txscript.SigHashAll, testKey, true)
	if err != nil {
		t.Fatal(err)
	}
	tx.TxIn[0].SignatureScript = sig
	return tx
}

// txHex is a transaction in hex, as a broadcast carries it.
func txHex(tx *wire.MsgTx) string {
	var b bytes.Buffer
	_ = tx.Serialize(&b)
	return hex.EncodeToString(b.Bytes())
}

// TestMaxFeeCheckedAfterValidation: bitcoind's sendrawtransaction (which
// ElectrumX's blockchain.transaction.broadcast and electrs' POST /tx call)
// checks maxfeerate only on a transaction its mempool would accept
// (node/transaction.cpp BroadcastTransaction: "First, call ATMP with
// test_accept and check the fee. If ATMP fails here, return error
// immediately."). A transaction paying over 0.10 BTC/kvB that is invalid
// for another reason (here: a signature that does not verify, and a spend
// of an immature coinbase) is refused for that reason, -26
// (mandatory-script-verify-flag-failed, bad-txns-premature-spend-of-coinbase),
// not with -25 "Fee exceeds maximum".
func TestMaxFeeCheckedAfterValidation(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.EsploraListeners = []string{"127.0.0.1:0"}
	n := startNode(t, cfg)
	generate(t, n, 101)
	base := "http://" + n.EsploraAddrs()[0].String()
	post := func(h string) (int, string) {
		t.Helper()
		resp, err := http.Post(base+"/tx", "text/plain", strings.NewReader(h))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	c := dialElectrum(t, n)
	c.call("server.version", "wallet", "1.4")

	// 1 BTC of fee on ~190 vbytes: far over 0.10 BTC/kvB.
	badSig := maxFeeSpend(t, n, 1, 49e8)
	badSig.TxIn[0].SignatureScript[10] ^= 0x01
	immature := maxFeeSpend(t, n, 101, 49e8) // the tip's coinbase

	const maxFee = "Fee exceeds maximum configured by user"
	for _, tc := range []struct {
		name string
		tx   *wire.MsgTx
	}{{"bad signature", badSig}, {"immature coinbase spend", immature}} {
		h := txHex(tc.tx)
		code, body := post(h)
		if code != http.StatusBadRequest || !strings.Contains(body, `"code":-26`) || strings.Contains(body, maxFee) {
			t.Errorf("%s, POST /tx: %d %s\nwant 400 with -26 and the mempool's reason (bitcoind checks maxfeerate only on a valid transaction)",
				tc.name, code, body)
		}
		msg := c.rawCall("blockchain.transaction.broadcast", h)
		e, _ := msg["error"].(map[string]any)
		if text, _ := e["message"].(string); e == nil || strings.Contains(text, maxFee) {
			t.Errorf("%s, blockchain.transaction.broadcast: %v\nwant the mempool's reason, not %q", tc.name, msg, maxFee)
		}
	}
}
