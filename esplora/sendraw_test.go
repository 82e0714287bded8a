package esplora

import (
	"net/http"
	"testing"

	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestBroadcastBurnRefusedAsBitcoind: electrs hands POST /tx to bitcoind's
// sendrawtransaction, whose default maxburnamount is 0: a transaction
// sending value to a provably unspendable output is refused with -25 and
// never reaches the mempool.
func TestBroadcastBurnRefusedAsBitcoind(t *testing.T) {
	n := newTestNode(t, "")
	coin := n.coin()
	burn, err := txscript.NullDataScript([]byte("burn"))
	if err != nil {
		t.Fatal(err)
	}
	tx := testchain.SpendTx([]testchain.Coin{coin},
		&wire.TxOut{Value: 10_000, PkScript: burn},
		&wire.TxOut{Value: coin.Value - 10_000 - 1000, PkScript: coin.Script.PkScript})
	code, body := n.post("/tx", txHex(tx))
	want := `sendrawtransaction RPC error: {"code":-25,"message":"Unspendable output exceeds maximum configured by user (maxburnamount)"}`
	if code != http.StatusBadRequest || body != want {
		t.Errorf("POST /tx burning 10,000 sat to OP_RETURN: %d %s\nwant 400 %s", code, body, want)
	}
	txid := tx.TxHash()
	if n.pool.IsTransactionInPool(&txid) {
		t.Errorf("the burning transaction %s entered the mempool", txid)
	}
}

// TestBroadcastAbsurdFeeRefusedAsBitcoind: bitcoind's sendrawtransaction
// refuses by default a transaction paying more than 0.10 BTC/kvB (the
// guard against a wallet that forgot its change), with -25, and electrs
// passes no other maxfeerate.
func TestBroadcastAbsurdFeeRefusedAsBitcoind(t *testing.T) {
	n := newTestNode(t, "")
	coin := n.coin()
	// Half a coin in fees on a transaction of about 100 vbytes: some
	// 500,000 sat/vB, fifty times the limit of 10,000 sat/vB.
	const fee = 50_000_000
	tx := testchain.SpendTx([]testchain.Coin{coin},
		&wire.TxOut{Value: coin.Value - fee, PkScript: coin.Script.PkScript})
	if vs := vsizeOf(tx); fee*1000/vs <= 10_000_000 {
		t.Fatalf("fee rate %d sat/kvB is within bitcoind's limit", fee*1000/vs)
	}
	code, body := n.post("/tx", txHex(tx))
	want := `sendrawtransaction RPC error: {"code":-25,"message":"Fee exceeds maximum configured by user (e.g. -maxtxfee, maxfeerate)"}`
	if code != http.StatusBadRequest || body != want {
		t.Errorf("POST /tx paying %d sat in fees: %d %s\nwant 400 %s", fee, code, body, want)
	}
	txid := tx.TxHash()
	if n.pool.IsTransactionInPool(&txid) {
		t.Errorf("the transaction paying %d sat in fees entered the mempool", fee)
	}
}

func vsizeOf(tx *wire.MsgTx) int64 {
	return int64((3*tx.SerializeSizeStripped() + tx.SerializeSize() + 3) / 4)
}

// TestPlusSignedNumbersAsElectrs: electrs parses the numbers of
// /block/:hash/txid/:index, /tx/:txid/outspend/:vout and
// /block/:hash/txs/:start_index with Rust's FromStr, which takes a leading
// '+' ("+25" is 25), as heights are parsed here.
func TestPlusSignedNumbersAsElectrs(t *testing.T) {
	n := newTestNode(t, "")
	tip := n.h.Chain.BestSnapshot()
	var big *wire.MsgBlock
	var bigHash string
	for h := tip.Height; h > 0 && big == nil; h-- {
		b, err := n.h.Chain.BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Transactions()) > 2*chainTxsPerPage {
			big, bigHash = b.MsgBlock(), b.Hash().String()
		}
	}
	if big == nil {
		t.Fatal("no block of more than 50 transactions")
	}
	if code, body := n.get("/block/" + bigHash + "/txid/+1"); code != 200 || body != big.Transactions[1].TxHash().String() {
		t.Errorf("/block/:hash/txid/+1: %d %s, want 200 %s (electrs: \"+1\".parse::<usize>() is 1)", code, body, big.Transactions[1].TxHash())
	}
	cb := big.Transactions[0].TxHash().String()
	want := n.getText("/tx/" + cb + "/outspend/0")
	if code, body := n.get("/tx/" + cb + "/outspend/+0"); code != 200 || body != want {
		t.Errorf("/tx/:txid/outspend/+0: %d %s, want 200 %s (electrs: \"+0\".parse::<u32>() is 0)", code, body, want)
	}
	var page, second []txValue
	n.getJSON("/block/"+bigHash+"/txs/+25", &page)
	n.getJSON("/block/"+bigHash+"/txs/25", &second)
	if len(page) == 0 || page[0].TxID != second[0].TxID {
		first := ""
		if len(page) > 0 {
			first = page[0].TxID
		}
		t.Errorf("/block/:hash/txs/+25 starts at %s, want the page at 25 starting at %s (index 0 is %s)",
			first, second[0].TxID, big.Transactions[0].TxHash())
	}
}
