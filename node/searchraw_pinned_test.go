package node

import (
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestSearchRawMempoolFilterVinExtra pins what btcd v0.26.2's
// handleSearchRawTransactions answers beyond TestAddrIndexAndDrops:
//   - vinextra gives the spent output's addresses and value for a segwit
//     input whose parent is still in the mempool, and once both confirm;
//   - filteraddrs narrows vout to the outputs paying a filter address;
//   - with reverse the mempool transactions come first; without it the
//     mempool part honours count exactly after skipping the confirmed ones.
func TestSearchRawMempoolFilterVinExtra(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.AddrIndex = true
	n := startNode(t, cfg)
	generate(t, n, 101)
	c := rpcClient(t, n.RPCAddrs()[0].String())
	params := &chaincfg.RegressionNetParams
	mining := testMiningAddr(t)

	// A pays coinbase 1 to a P2WPKH address K; B spends A:0 (a segwit
	// input, parent in the mempool) to a fresh address X and back to the
	// mining address.
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	addrK, err := address.NewAddressWitnessPubKeyHash(address.Hash160(key.PubKey().SerializeCompressed()), params)
	if err != nil {
		t.Fatal(err)
	}
	scriptK, _ := txscript.PayToAddrScript(addrK)
	a := payFromCoinbase(t, n, 1, scriptK)
	aValue := a.MsgTx().TxOut[0].Value

	addrX := freshAddr(t)
	scriptX, _ := txscript.PayToAddrScript(addrX)
	scriptMining, _ := txscript.PayToAddrScript(mining)
	b := wire.NewMsgTx(2)
	b.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: *a.Hash(), Index: 0}, nil, nil))
	b.AddTxOut(wire.NewTxOut(1e8, scriptX))
	b.AddTxOut(wire.NewTxOut(aValue-1e8-10_000, scriptMining))
	fetcher := txscript.NewCannedPrevOutputFetcher(scriptK, aValue)
	wit, err := txscript.WitnessSignature(b, txscript.NewTxSigHashes(b, fetcher), 0, aValue, scriptK,
		txscript.SigHashAll, key, true)
	if err != nil {
		t.Fatal(err)
	}
	b.TxIn[0].Witness = wit
	bTx := btcutil.NewTx(b)
	if _, err := n.ProcessTx(bTx); err != nil {
		t.Fatalf("ProcessTx B: %v", err)
	}

	// checkPrevOut finds B among K's transactions and checks its input's
	// vinextra prevOut.
	checkPrevOut := func(when string) {
		t.Helper()
		res, err := c.SearchRawTransactionsVerbose(addrK, 0, 10, true, false, nil)
		if err != nil || len(res) != 2 {
			t.Fatalf("%s: searchrawtransactions K: %d %v", when, len(res), err)
		}
		for _, r := range res {
			if r.Txid != bTx.Hash().String() {
				continue
			}
			p := r.Vin[0].PrevOut
			if p == nil || p.Value != btcutil.Amount(aValue).ToBTC() || len(p.Addresses) != 1 ||
				p.Addresses[0] != addrK.EncodeAddress() {
				t.Fatalf("%s: vinextra prevOut of B's segwit input = %+v, want %v paid to %v",
					when, p, btcutil.Amount(aValue).ToBTC(), addrK)
			}
			return
		}
		t.Fatalf("%s: B not found among %d results", when, len(res))
	}
	checkPrevOut("parent in the mempool")

	// filteraddrs: B's outputs narrowed to the one paying X, its input
	// (spending from K) left out.
	res, err := c.SearchRawTransactionsVerbose(addrX, 0, 10, true, false, []string{addrX.EncodeAddress()})
	if err != nil || len(res) != 1 || res[0].Txid != bTx.Hash().String() {
		t.Fatalf("searchrawtransactions X: %+v %v", res, err)
	}
	if len(res[0].Vout) != 1 || res[0].Vout[0].N != 0 || len(res[0].Vin) != 0 {
		t.Fatalf("filteraddrs [X]: vout %+v vin %+v, want only vout 0 and no vin", res[0].Vout, res[0].Vin)
	}

	// The mining address has 101 confirmed coinbases and A (spending
	// coinbase 1) and B (paying it) in the mempool.
	mempool := map[string]bool{a.Hash().String(): true, bTx.Hash().String(): true}
	rev, err := c.SearchRawTransactions(mining, 0, 2, true, nil)
	if err != nil || len(rev) != 2 {
		t.Fatalf("reverse count 2: %d %v", len(rev), err)
	}
	for i, tx := range rev {
		if !mempool[tx.TxHash().String()] {
			t.Fatalf("reverse entry %d is %v, want the mempool transactions %v first", i, tx.TxHash(), mempool)
		}
	}
	fwd, err := c.SearchRawTransactions(mining, 101, 2, false, nil)
	if err != nil || len(fwd) != 2 {
		t.Fatalf("skip 101 count 2 (the two mempool transactions): %d %v", len(fwd), err)
	}
	for i, tx := range fwd {
		if !mempool[tx.TxHash().String()] {
			t.Fatalf("forward entry %d after the confirmed ones is %v, want a mempool transaction", i, tx.TxHash())
		}
	}

	// Confirmed: vinextra reads the parent from the transaction index.
	mined := generate(t, n, 1)
	checkPrevOut("both confirmed")

	// getrawtransaction verbose of the confirmed B carries its block's
	// hash, time and blocktime (btcd's createTxRawResult).
	header, err := n.Chain().HeaderByHash(mined[0])
	if err != nil {
		t.Fatal(err)
	}
	gv, err := c.GetRawTransactionVerbose(bTx.Hash())
	if err != nil || gv.BlockHash != mined[0].String() || gv.Confirmations != 1 ||
		gv.Time != header.Timestamp.Unix() || gv.Blocktime != header.Timestamp.Unix() {
		t.Fatalf("getrawtransaction verbose B: blockhash %s confirmations %d time %d blocktime %d (%v), want %v 1 %d %d",
			gv.BlockHash, gv.Confirmations, gv.Time, gv.Blocktime, err, mined[0], header.Timestamp.Unix(), header.Timestamp.Unix())
	}
}
