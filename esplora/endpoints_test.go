package esplora

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2/bloom"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestBlocksAgainstChain checks every block endpoint, for every block,
// against the block btcd holds.
func TestBlocksAgainstChain(t *testing.T) {
	n := newTestNode(t, "/api")
	o := buildOracle(t, n.h.Chain)
	tip := int32(len(o.blocks) - 1)

	if got := n.getText("/blocks/tip/height"); got != strconv.Itoa(int(tip)) {
		t.Fatalf("tip height %s, chain %d", got, tip)
	}
	if got := n.getText("/blocks/tip/hash"); got != o.blocks[tip].Hash().String() {
		t.Fatalf("tip hash %s, chain %s", got, o.blocks[tip].Hash())
	}
	for h, block := range o.blocks {
		hash := block.Hash().String()
		if got := n.getText(fmt.Sprintf("/block-height/%d", h)); got != hash {
			t.Fatalf("block-height %d: %s, chain %s", h, got, hash)
		}
		var v blockValue
		n.getJSON("/block/"+hash, &v)
		hdr := block.MsgBlock().Header
		raw, _ := block.Bytes()
		stripped := block.MsgBlock().SerializeSizeStripped()
		want := blockValue{
			ID: hash, Height: int32(h), Version: uint32(hdr.Version), Timestamp: hdr.Timestamp.Unix(),
			TxCount: len(block.Transactions()), Size: len(raw), Weight: int64(3*stripped + len(raw)),
			MerkleRoot: hdr.MerkleRoot.String(), Nonce: hdr.Nonce, Bits: hdr.Bits, Difficulty: v.Difficulty,
		}
		var times []int64
		for i := max(0, h-10); i <= h; i++ {
			times = append(times, o.blocks[i].MsgBlock().Header.Timestamp.Unix())
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		want.MedianTime = times[len(times)/2]
		if h > 0 {
			p := o.blocks[h-1].Hash().String()
			want.PreviousBlockHash = &p
		}
		gotPrev, wantPrev := v.PreviousBlockHash, want.PreviousBlockHash
		v.PreviousBlockHash, want.PreviousBlockHash = nil, nil
		if fmt.Sprint(v) != fmt.Sprint(want) || (gotPrev == nil) != (wantPrev == nil) || (h > 0 && *gotPrev != *wantPrev) {
			t.Fatalf("block %d:\n got %+v\nwant %+v", h, v, want)
		}
		// Regtest's lowest-difficulty bits are difficulty 4.66e-10 in
		// Core's formula.
		if v.Difficulty <= 0 || v.Difficulty > 1e-9 {
			t.Fatalf("block %d: difficulty %v", h, v.Difficulty)
		}
		var hb bytes.Buffer
		_ = hdr.Serialize(&hb)
		if got := n.getText("/block/" + hash + "/header"); got != hex.EncodeToString(hb.Bytes()) {
			t.Fatalf("header %d: %s", h, got)
		}
		if got := n.getText("/block/" + hash + "/raw"); got != string(raw) {
			t.Fatalf("raw block %d differs", h)
		}
		var st blockStatus
		n.getJSON("/block/"+hash+"/status", &st)
		if !st.InBestChain || st.Height == nil || *st.Height != int32(h) ||
			(int32(h) < tip) != (st.NextBest != nil) || (st.NextBest != nil && *st.NextBest != o.blocks[h+1].Hash().String()) {
			t.Fatalf("status %d: %+v", h, st)
		}
		var txids []string
		n.getJSON("/block/"+hash+"/txids", &txids)
		if len(txids) != len(block.Transactions()) {
			t.Fatalf("txids %d: %d of %d", h, len(txids), len(block.Transactions()))
		}
		for i, tx := range block.Transactions() {
			if txids[i] != tx.Hash().String() {
				t.Fatalf("txids %d[%d]: %s", h, i, txids[i])
			}
		}
		last := len(txids) - 1
		if got := n.getText(fmt.Sprintf("/block/%s/txid/%d", hash, last)); got != txids[last] {
			t.Fatalf("txid %d/%d: %s", h, last, got)
		}
		// Every page of transactions, 25 a page.
		var all []txValue
		for start := 0; start < len(txids); start += chainTxsPerPage {
			var page []txValue
			path := "/block/" + hash + "/txs"
			if start > 0 {
				path += "/" + strconv.Itoa(start)
			}
			n.getJSON(path, &page)
			if len(page) != min(chainTxsPerPage, len(txids)-start) {
				t.Fatalf("%s: %d transactions", path, len(page))
			}
			all = append(all, page...)
		}
		for i, v := range all {
			checkTx(t, o, &v, block.Transactions()[i].MsgTx(), int32(h))
		}
	}

	var list []blockValue
	n.getJSON("/blocks", &list)
	if len(list) != blockLimit || list[0].Height != tip || list[9].Height != tip-9 {
		t.Fatalf("/blocks: %d blocks from %d", len(list), list[0].Height)
	}
	n.getJSON("/blocks/3", &list)
	if len(list) != 4 || list[0].ID != o.blocks[3].Hash().String() || list[3].Height != 0 || list[3].PreviousBlockHash != nil {
		t.Fatalf("/blocks/3: %+v", list)
	}
}

// checkTx compares a transaction's Esplora form with the transaction and
// what the chain says of its inputs.
func checkTx(t *testing.T, o *chainOracle, v *txValue, tx *wire.MsgTx, height int32) {
	t.Helper()
	txid := tx.TxHash()
	var buf bytes.Buffer
	_ = tx.Serialize(&buf)
	if v.TxID != txid.String() || v.Version != uint32(tx.Version) || v.Locktime != tx.LockTime ||
		v.Size != buf.Len() || v.Weight != int64(3*tx.SerializeSizeStripped()+buf.Len()) {
		t.Fatalf("tx %s: %+v", txid, v)
	}
	if height >= 0 {
		hdr := o.blocks[height].MsgBlock().Header
		if !v.Status.Confirmed || *v.Status.BlockHeight != height || v.Status.BlockHash != o.blocks[height].Hash().String() ||
			*v.Status.BlockTime != hdr.Timestamp.Unix() {
			t.Fatalf("tx %s status %+v, block %d", txid, v.Status, height)
		}
	} else if v.Status.Confirmed || v.Status.BlockHeight != nil {
		t.Fatalf("tx %s status %+v, unconfirmed", txid, v.Status)
	}
	coinbase := blockchain.IsCoinBaseTx(tx)
	var in, out int64
	for i, txin := range tx.TxIn {
		vin := v.Vin[i]
		if vin.TxID != txin.PreviousOutPoint.Hash.String() || vin.Vout != txin.PreviousOutPoint.Index ||
			vin.IsCoinbase != coinbase || vin.Sequence != txin.Sequence ||
			vin.ScriptSig != hex.EncodeToString(txin.SignatureScript) || len(vin.Witness) != len(txin.Witness) {
			t.Fatalf("tx %s vin %d: %+v", txid, i, vin)
		}
		for j, w := range txin.Witness {
			if vin.Witness[j] != hex.EncodeToString(w) {
				t.Fatalf("tx %s vin %d witness %d", txid, i, j)
			}
		}
		if coinbase {
			if vin.Prevout != nil {
				t.Fatalf("coinbase %s has a prevout", txid)
			}
			continue
		}
		prev := o.outputs[txin.PreviousOutPoint]
		if prev == nil {
			continue // an unconfirmed parent: checked by the caller
		}
		in += prev.Value
		if vin.Prevout == nil || vin.Prevout.Value != prev.Value || vin.Prevout.ScriptPubKey != hex.EncodeToString(prev.PkScript) {
			t.Fatalf("tx %s vin %d prevout %+v, chain %x %d", txid, i, vin.Prevout, prev.PkScript, prev.Value)
		}
		checkOut(t, testParams, vin.Prevout, prev)
		// The harness spends P2SH by pushing the redeem script and
		// P2WSH with the witness script as the last item.
		if isP2SH(prev.PkScript) != (vin.InnerRedeemScriptAsm != nil) {
			t.Fatalf("tx %s vin %d: inner redeem script %v for %x", txid, i, vin.InnerRedeemScriptAsm, prev.PkScript)
		}
		if len(txin.Witness) > 0 && (vin.InnerWitnessAsm == nil || *vin.InnerWitnessAsm != scriptAsm(txin.Witness[len(txin.Witness)-1])) {
			t.Fatalf("tx %s vin %d: inner witness script %v", txid, i, vin.InnerWitnessAsm)
		}
	}
	for i, txout := range tx.TxOut {
		out += txout.Value
		checkOut(t, testParams, &v.Vout[i], txout)
	}
	if !coinbase && v.Fee != in-out {
		t.Fatalf("tx %s fee %d, chain %d", txid, v.Fee, in-out)
	}
	if coinbase && v.Fee != 0 {
		t.Fatalf("coinbase %s fee %d", txid, v.Fee)
	}
}

// checkOut compares an output's Esplora form with the output; the address
// with btcd's own reading of standard scripts.
func checkOut(t *testing.T, params *chaincfg.Params, v *txOutValue, out *wire.TxOut) {
	t.Helper()
	if v.Value != out.Value || v.ScriptPubKey != hex.EncodeToString(out.PkScript) || v.ScriptPubKeyAsm != scriptAsm(out.PkScript) ||
		v.ScriptPubKeyType != scriptType(out.PkScript) {
		t.Fatalf("output %+v, chain %x %d", v, out.PkScript, out.Value)
	}
	class, addrs, _, err := txscript.ExtractPkScriptAddrs(out.PkScript, params)
	switch {
	case err == nil && len(addrs) == 1 && (class == txscript.PubKeyHashTy || class == txscript.ScriptHashTy ||
		class == txscript.WitnessV0PubKeyHashTy || class == txscript.WitnessV0ScriptHashTy || class == txscript.WitnessV1TaprootTy):
		if v.ScriptPubKeyAddr != addrs[0].EncodeAddress() {
			t.Fatalf("output %x: address %q, btcd %q", out.PkScript, v.ScriptPubKeyAddr, addrs[0].EncodeAddress())
		}
	case v.ScriptPubKeyAddr != "":
		t.Fatalf("output %x (%v): address %q", out.PkScript, class, v.ScriptPubKeyAddr)
	}
}

// TestTransactionsAgainstChain checks the transaction endpoints for every
// confirmed transaction: its form, raw bytes, status, merkle proofs
// (against the header's merkle root, the Electrum server and btcd's
// merkleblock) and the spenders of its outputs.
func TestTransactionsAgainstChain(t *testing.T) {
	n := newTestNode(t, "")
	o := buildOracle(t, n.h.Chain)
	el := n.dialElectrum()
	merkleBlocks := 0
	for h, block := range o.blocks {
		if h == 0 {
			continue // the genesis coinbase is not in the index
		}
		for pos, btx := range block.Transactions() {
			tx := btx.MsgTx()
			txid := tx.TxHash().String()
			var v txValue
			n.getJSON("/tx/"+txid, &v)
			checkTx(t, o, &v, tx, int32(h))
			var raw bytes.Buffer
			_ = tx.Serialize(&raw)
			if got := n.getText("/tx/" + txid + "/hex"); got != hex.EncodeToString(raw.Bytes()) {
				t.Fatalf("hex %s", txid)
			}
			if got := n.getText("/tx/" + txid + "/raw"); got != raw.String() {
				t.Fatalf("raw %s", txid)
			}
			// The outputs walk of the stats agrees with the parsed
			// transaction for every script it pays, and stops without
			// a panic on every truncation.
			for _, out := range tx.TxOut {
				want, wantSum := 0, int64(0)
				for _, o := range tx.TxOut {
					if bytes.Equal(o.PkScript, out.PkScript) {
						want, wantSum = want+1, wantSum+o.Value
					}
				}
				m := &scriptMatcher{sh: indexers.ScriptHashFromScript(out.PkScript)}
				if got, sum, ok := paidIn(raw.Bytes(), m); !ok || got != want || sum != wantSum {
					t.Fatalf("paidIn %s %x: %d %d %v, want %d %d", txid, out.PkScript, got, sum, ok, want, wantSum)
				}
			}
			for cut := 0; cut < raw.Len(); cut++ {
				paidIn(raw.Bytes()[:cut], &scriptMatcher{sh: indexers.ScriptHashFromScript(tx.TxOut[0].PkScript)})
			}
			var st txStatus
			n.getJSON("/tx/"+txid+"/status", &st)
			if !st.Confirmed || *st.BlockHeight != int32(h) || st.BlockHash != block.Hash().String() {
				t.Fatalf("status %s: %+v", txid, st)
			}

			var proof merkleProofValue
			n.getJSON("/tx/"+txid+"/merkle-proof", &proof)
			if proof.BlockHeight != int32(h) || proof.Pos != uint32(pos) {
				t.Fatalf("merkle-proof %s: %+v", txid, proof)
			}
			node := tx.TxHash()
			for i, hs := range proof.Merkle {
				sib, err := chainhash.NewHashFromStr(hs)
				if err != nil {
					t.Fatal(err)
				}
				if pos>>i&1 == 1 {
					node = merkleParent(*sib, node)
				} else {
					node = merkleParent(node, *sib)
				}
			}
			if node != block.MsgBlock().Header.MerkleRoot {
				t.Fatalf("merkle-proof %s does not lead to the merkle root", txid)
			}
			var elProof struct {
				BlockHeight int32    `json:"block_height"`
				Merkle      []string `json:"merkle"`
				Pos         uint32   `json:"pos"`
			}
			el.call(t, "blockchain.transaction.get_merkle", []any{txid, h}, &elProof)
			if fmt.Sprint(elProof) != fmt.Sprint(proof) {
				t.Fatalf("merkle-proof %s: %+v, Electrum %+v", txid, proof, elProof)
			}

			filter := bloom.NewFilter(1, 0, 0.000001, wire.BloomUpdateNone)
			filter.AddHash(btx.Hash())
			mb, matched := bloom.NewMerkleBlock(block, filter)
			if len(matched) == 1 && matched[0] == uint32(pos) {
				var want bytes.Buffer
				_ = mb.BtcEncode(&want, wire.ProtocolVersion, wire.BaseEncoding)
				if got := n.getText("/tx/" + txid + "/merkleblock-proof"); got != hex.EncodeToString(want.Bytes()) {
					t.Fatalf("merkleblock-proof %s:\n got %s\nwant %x", txid, got, want.Bytes())
				}
				merkleBlocks++
			}

			var spends []spendValue
			n.getJSON("/tx/"+txid+"/outspends", &spends)
			if len(spends) != len(tx.TxOut) {
				t.Fatalf("outspends %s: %d", txid, len(spends))
			}
			for vout := range tx.TxOut {
				op := wire.OutPoint{Hash: tx.TxHash(), Index: uint32(vout)}
				ref, spent := o.spender[op]
				got := spends[vout]
				if got.Spent != spent || (spent && (got.TxID != ref.txid.String() || *got.Vin != uint32(ref.vin) ||
					*got.Status.BlockHeight != ref.height)) {
					t.Fatalf("outspend %s:%d: %+v, chain %v %+v", txid, vout, got, spent, ref)
				}
				if vout == 0 {
					var one spendValue
					n.getJSON(fmt.Sprintf("/tx/%s/outspend/%d", txid, vout), &one)
					if fmt.Sprint(one.Spent, one.TxID) != fmt.Sprint(got.Spent, got.TxID) {
						t.Fatalf("outspend %s:0: %+v, outspends %+v", txid, one, got)
					}
				}
			}
		}
	}
	if merkleBlocks < 100 {
		t.Fatalf("only %d merkleblock proofs compared with btcd's", merkleBlocks)
	}
}

// TestScriptsAgainstChainAndElectrum checks, for every script of the
// chain, the stats against the chain and the history, balance and unspent
// outputs against the Electrum server's answers for the same script.
func TestScriptsAgainstChainAndElectrum(t *testing.T) {
	// Every history goes through the cache of long ones.
	defer func(min int) { historyCacheMin = min }(historyCacheMin)
	historyCacheMin = 1
	n := newTestNode(t, "/api")
	o := buildOracle(t, n.h.Chain)
	el := n.dialElectrum()
	long := 0
	for sh, want := range o.stats {
		if len(o.blocks) > 0 && !indexedScript(o, sh) {
			continue
		}
		esh := hex.EncodeToString(sh[:])
		var stats struct {
			MempoolStats scriptStats `json:"mempool_stats"`
			Scripthash   string      `json:"scripthash"`
		}
		n.getJSON("/scripthash/"+esh, &stats)
		if stats.MempoolStats != (scriptStats{}) || stats.Scripthash != esh {
			t.Fatalf("stats %s: %+v", esh, stats)
		}
		checkScript(t, n, o, el, sh, true)
		if want.TxCount > chainTxsPerPage {
			long++
		}
		var first, chain []txValue
		n.getJSON("/scripthash/"+esh+"/txs", &first)
		n.getJSON("/scripthash/"+esh+"/txs/chain", &chain)
		if len(first) != min(want.TxCount, chainTxsPerPage) || (len(first) > 0 && first[0].TxID != chain[0].TxID) {
			t.Fatalf("txs %s: %d", esh, len(first))
		}
	}
	if long == 0 {
		t.Fatal("no script has more than one page of history: the chain does not exercise paging")
	}

	// The longest history's stats are cached; a block paying it moves the
	// tip, and the next answer adds that block to the cached totals.
	var top indexers.ScriptHash
	most := 0
	for sh, st := range o.stats {
		if indexedScript(o, sh) && st.TxCount > most {
			top, most = sh, st.TxCount
		}
	}
	if o.stats[top] == nil || o.stats[top].TxCount < 2 {
		t.Fatalf("the longest history has %v entries: the stats cache is not exercised", o.stats[top])
	}
	var pkScript []byte
	for _, out := range o.outputs {
		if indexers.ScriptHashFromScript(out.PkScript) == top {
			pkScript = out.PkScript
		}
	}
	coin := n.coin()
	n.mine(testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: 7_000, PkScript: pkScript},
		&wire.TxOut{Value: coin.Value - 8_000, PkScript: pkScript}))
	o = buildOracle(t, n.h.Chain)
	var stats struct {
		ChainStats scriptStats `json:"chain_stats"`
	}
	n.getJSON("/scripthash/"+hex.EncodeToString(top[:]), &stats)
	if stats.ChainStats != *o.stats[top] {
		t.Fatalf("stats after a block: %+v, chain %+v", stats.ChainStats, *o.stats[top])
	}
}

// indexedScript reports whether the index holds a script (provably
// unspendable outputs are not indexed).
func indexedScript(o *chainOracle, sh indexers.ScriptHash) bool {
	for _, out := range o.outputs {
		if indexers.ScriptHashFromScript(out.PkScript) == sh {
			return isIndexed(out.PkScript)
		}
	}
	return true
}

// isIndexed is the index's rule: outputs that can never be spent are left
// out.
func isIndexed(pkScript []byte) bool {
	if len(pkScript) > 0 && pkScript[0] == txscript.OP_RETURN || len(pkScript) > txscript.MaxScriptSize {
		return false
	}
	tok := txscript.MakeScriptTokenizer(0, pkScript)
	for tok.Next() {
	}
	return tok.Err() == nil
}

// testParams is the network of the test chains.
var testParams = testchain.RegtestParams()
