package esplora

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/chaingen"
)

// TestMainnetShapedChain checks the endpoints on a generated mainnet-shaped
// chain (the generator of cmd/chaingen: blocks of a thousand transactions,
// the output kinds and script reuse of mainnet, scripts with thousands of
// history entries) against the chain itself and against the Electrum
// server's answers for the same scripts and transactions: every block,
// a sample of transactions, and the longest histories with a sample of
// ordinary scripts.
func TestMainnetShapedChain(t *testing.T) {
	txs := 40000
	if testing.Short() || raceDetector {
		txs = 10000
	}
	shape := chaingen.DefaultShape()
	shape.TxsPerBlock, shape.RampBlocks, shape.RampPool = 1000, 3, 3000
	shape.PopularScripts, shape.SampleScripts = 20, 200
	dir := t.TempDir()
	if _, err := chaingen.Generate(chaingen.Options{Dir: dir, Seed: 5, Txs: txs, Shape: shape, Workers: 2,
		UtxoCacheMiB: 64}); err != nil {
		t.Fatal(err)
	}
	params, err := chaingen.Params("simnet")
	if err != nil {
		t.Fatal(err)
	}
	db, err := database.Open("ffldb", chaingen.DBPath(dir, "simnet"), params.Net)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	n := &testNode{t: t}
	if n.idx, err = indexers.NewElectrumIndex(db, indexers.Options{Dir: t.TempDir(), OnCommit: n.onCommit}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.idx.Close() })
	chain, err := blockchain.New(&blockchain.Config{DB: db, ChainParams: params, TimeSource: blockchain.NewMedianTime(),
		IndexManager: indexers.NewManager(db, n.idx), UtxoCacheMaxSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	n.serve(chain, params, "/api")
	o := buildOracle(t, chain)
	el := n.dialElectrum()
	rng := rand.New(rand.NewSource(1))

	t.Run("blocks", func(t *testing.T) {
		for h, block := range o.blocks {
			checkGenBlock(t, n, o, params, int32(h), block.Hash())
		}
	})

	t.Run("transactions", func(t *testing.T) {
		for i := 0; i < 300; i++ {
			h := 1 + rng.Intn(len(o.blocks)-1)
			block := o.blocks[h]
			pos := rng.Intn(len(block.Transactions()))
			tx := block.Transactions()[pos].MsgTx()
			txid := tx.TxHash().String()
			var v txValue
			n.getJSON("/tx/"+txid, &v)
			checkGenTx(t, o, params, &v, tx, int32(h))
			var raw string
			el.call(t, "blockchain.transaction.get", []any{txid}, &raw)
			if got := n.getText("/tx/" + txid + "/hex"); got != raw {
				t.Fatalf("hex %s differs from the Electrum server's", txid)
			}
			var proof merkleProofValue
			n.getJSON("/tx/"+txid+"/merkle-proof", &proof)
			var elProof merkleProofValue
			el.call(t, "blockchain.transaction.get_merkle", []any{txid, h}, &elProof)
			if fmt.Sprint(elProof) != fmt.Sprint(proof) || proof.Pos != uint32(pos) || proof.BlockHeight != int32(h) {
				t.Fatalf("merkle-proof %s: %+v, Electrum %+v", txid, proof, elProof)
			}
			var spends []spendValue
			n.getJSON("/tx/"+txid+"/outspends", &spends)
			if len(spends) != len(tx.TxOut) {
				t.Fatalf("outspends %s: %d", txid, len(spends))
			}
			for vout, got := range spends {
				ref, spent := o.spender[wire.OutPoint{Hash: tx.TxHash(), Index: uint32(vout)}]
				if got.Spent != spent || (spent && (got.TxID != ref.txid.String() || *got.Vin != uint32(ref.vin) ||
					*got.Status.BlockHeight != ref.height)) {
					t.Fatalf("outspend %s:%d: %+v, chain %v %+v", txid, vout, got, spent, ref)
				}
			}
		}
	})

	t.Run("scripts", func(t *testing.T) {
		// The longest histories, then a sample of the rest.
		indexed := make(map[indexers.ScriptHash]bool)
		for _, out := range o.outputs {
			indexed[indexers.ScriptHashFromScript(out.PkScript)] = isIndexed(out.PkScript)
		}
		var all []indexers.ScriptHash
		for sh := range o.stats {
			if indexed[sh] {
				all = append(all, sh)
			}
		}
		sort.Slice(all, func(i, j int) bool {
			a, b := o.stats[all[i]], o.stats[all[j]]
			return a.TxCount > b.TxCount || a.TxCount == b.TxCount && bytes.Compare(all[i][:], all[j][:]) < 0
		})
		if o.stats[all[0]].TxCount < 1000 {
			t.Fatalf("the longest history has %d entries: the chain is not shaped as mainnet", o.stats[all[0]].TxCount)
		}
		sample := all[:20]
		for i := 0; i < 200; i++ {
			sample = append(sample, all[20+rng.Intn(len(all)-20)])
		}
		for i, sh := range sample {
			checkScript(t, n, o, el, sh, i < 3)
		}
	})
}

// checkGenBlock checks a block's endpoints against the chain's block.
func checkGenBlock(t *testing.T, n *testNode, o *chainOracle, params *chaincfg.Params, h int32, hash *chainhash.Hash) {
	t.Helper()
	block := o.blocks[h]
	if got := n.getText("/block-height/" + strconv.Itoa(int(h))); got != hash.String() {
		t.Fatalf("block-height %d: %s, chain %s", h, got, hash)
	}
	var v blockValue
	n.getJSON("/block/"+hash.String(), &v)
	raw, _ := block.Bytes()
	hdr := block.MsgBlock().Header
	stripped := block.MsgBlock().SerializeSizeStripped()
	if v.ID != hash.String() || v.Height != h || v.TxCount != len(block.Transactions()) || v.Size != len(raw) ||
		v.Weight != int64(3*stripped+len(raw)) || v.MerkleRoot != hdr.MerkleRoot.String() || v.Timestamp != hdr.Timestamp.Unix() {
		t.Fatalf("block %d: %+v", h, v)
	}
	var hb bytes.Buffer
	_ = hdr.Serialize(&hb)
	if got := n.getText("/block/" + hash.String() + "/header"); got != hex.EncodeToString(hb.Bytes()) {
		t.Fatalf("header %d: %s", h, got)
	}
	if got := n.getText("/block/" + hash.String() + "/raw"); got != string(raw) {
		t.Fatalf("raw block %d differs", h)
	}
	var txids []string
	n.getJSON("/block/"+hash.String()+"/txids", &txids)
	if len(txids) != len(block.Transactions()) {
		t.Fatalf("txids %d: %d of %d", h, len(txids), len(block.Transactions()))
	}
	for i, tx := range block.Transactions() {
		if txids[i] != tx.Hash().String() {
			t.Fatalf("txids %d[%d]: %s", h, i, txids[i])
		}
	}
	// The first and the last page of its transactions.
	last := (len(txids) - 1) / chainTxsPerPage * chainTxsPerPage
	for _, start := range []int{0, last} {
		var page []txValue
		n.getJSON(fmt.Sprintf("/block/%s/txs/%d", hash, start), &page)
		if len(page) != min(chainTxsPerPage, len(txids)-start) {
			t.Fatalf("block %d txs from %d: %d", h, start, len(page))
		}
		for i := range page {
			checkGenTx(t, o, params, &page[i], block.Transactions()[start+i].MsgTx(), h)
		}
	}
}

// checkGenTx compares a transaction's Esplora form with the transaction
// and the outputs its inputs spend.
func checkGenTx(t *testing.T, o *chainOracle, params *chaincfg.Params, v *txValue, tx *wire.MsgTx, h int32) {
	t.Helper()
	txid := tx.TxHash()
	var buf bytes.Buffer
	_ = tx.Serialize(&buf)
	if v.TxID != txid.String() || v.Size != buf.Len() || v.Weight != int64(3*tx.SerializeSizeStripped()+buf.Len()) ||
		!v.Status.Confirmed || *v.Status.BlockHeight != h || v.Status.BlockHash != o.blocks[h].Hash().String() ||
		len(v.Vin) != len(tx.TxIn) || len(v.Vout) != len(tx.TxOut) {
		t.Fatalf("tx %s: %+v", txid, v)
	}
	coinbase := blockchain.IsCoinBaseTx(tx)
	var in, out int64
	for i, txin := range tx.TxIn {
		vin := v.Vin[i]
		if vin.TxID != txin.PreviousOutPoint.Hash.String() || vin.Vout != txin.PreviousOutPoint.Index || vin.IsCoinbase != coinbase {
			t.Fatalf("tx %s vin %d: %+v", txid, i, vin)
		}
		if coinbase {
			continue
		}
		prev := o.outputs[txin.PreviousOutPoint]
		in += prev.Value
		if vin.Prevout == nil {
			t.Fatalf("tx %s vin %d: no prevout", txid, i)
		}
		checkOut(t, params, vin.Prevout, prev)
	}
	for i, txout := range tx.TxOut {
		out += txout.Value
		checkOut(t, params, &v.Vout[i], txout)
	}
	if !coinbase && v.Fee != in-out {
		t.Fatalf("tx %s fee %d, chain %d", txid, v.Fee, in-out)
	}
}

// checkScript checks a script's stats against the chain, twice (the
// second answer may come from kept totals), and its history, balance and
// unspent outputs against the Electrum server's: every page of its history
// when allPages, else the first two.
func checkScript(t *testing.T, n *testNode, o *chainOracle, el *electrumClient, sh indexers.ScriptHash, allPages bool) {
	t.Helper()
	want := o.stats[sh]
	esh := hex.EncodeToString(sh[:])
	var stats struct {
		ChainStats scriptStats `json:"chain_stats"`
	}
	for range 2 {
		n.getJSON("/scripthash/"+esh, &stats)
		if stats.ChainStats != *want {
			t.Fatalf("stats %s: %+v, chain %+v", esh, stats.ChainStats, *want)
		}
	}
	var hist []struct {
		TxHash string `json:"tx_hash"`
		Height int32  `json:"height"`
	}
	el.call(t, "blockchain.scripthash.get_history", []any{sh.String()}, &hist)
	if len(hist) != want.TxCount {
		t.Fatalf("Electrum history %s: %d, chain %d", esh, len(hist), want.TxCount)
	}
	path, seen := "/scripthash/"+esh+"/txs/chain", 0
	for pages := 0; allPages || pages < 2; pages++ {
		var page []txValue
		n.getJSON(path, &page)
		for i, v := range page {
			e := hist[len(hist)-1-seen-i]
			if v.TxID != e.TxHash || *v.Status.BlockHeight != e.Height {
				t.Fatalf("txs/chain %s[%d]: %s@%d, Electrum %s@%d", esh, seen+i, v.TxID, *v.Status.BlockHeight, e.TxHash, e.Height)
			}
		}
		seen += len(page)
		if len(page) < chainTxsPerPage {
			if seen != len(hist) {
				t.Fatalf("txs/chain %s: %d entries, Electrum %d", esh, seen, len(hist))
			}
			break
		}
		path = "/scripthash/" + esh + "/txs/chain/" + page[len(page)-1].TxID
	}
	var balance struct {
		Confirmed int64 `json:"confirmed"`
	}
	el.call(t, "blockchain.scripthash.get_balance", []any{sh.String()}, &balance)
	var unspent []struct {
		TxHash string `json:"tx_hash"`
		TxPos  uint32 `json:"tx_pos"`
		Height int32  `json:"height"`
		Value  int64  `json:"value"`
	}
	el.call(t, "blockchain.scripthash.listunspent", []any{sh.String()}, &unspent)
	var utxos []utxoValue
	n.getJSON("/scripthash/"+esh+"/utxo", &utxos)
	if balance.Confirmed != want.FundedTxoSum-want.SpentTxoSum || len(utxos) != len(unspent) ||
		len(utxos) != want.FundedTxoCount-want.SpentTxoCount {
		t.Fatalf("%s: balance %d, %d utxos, Electrum %d, chain %+v", esh, balance.Confirmed, len(utxos), len(unspent), *want)
	}
	for i, u := range utxos {
		e := unspent[i]
		if u.TxID != e.TxHash || u.Vout != e.TxPos || u.Value != e.Value || *u.Status.BlockHeight != e.Height ||
			u.Status.BlockHash != o.blocks[e.Height].Hash().String() {
			t.Fatalf("utxo %s[%d]: %+v, Electrum %+v", esh, i, u, e)
		}
	}
}
