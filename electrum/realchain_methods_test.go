package electrum

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestRealChainMatchesModel checks the confirmed answers of every script
// method, for every script of a random regtest chain, against the naive
// reference model; and the block, header and transaction methods against
// the chain itself.
func TestRealChainMatchesModel(t *testing.T) {
	n := newRealNode(t, 8, nil)
	model, err := testchain.BuildModel(n.h)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, n.addr)
	c.negotiate([]string{"1.4", "1.6"})
	checked := 0
	for _, sh := range model.ScriptHashes() {
		var hist []historyItem
		c.must(&hist, "blockchain.scripthash.get_history", sh.String())
		want := model.History[sh]
		if len(hist) != len(want) {
			t.Fatalf("%s: %d history entries, model %d", sh, len(hist), len(want))
		}
		for i := range hist {
			if hist[i].TxHash != want[i].TxHash.String() || hist[i].Height != want[i].Height {
				t.Fatalf("%s: history[%d] = %+v, model %+v", sh, i, hist[i], want[i])
			}
		}
		var utxos []unspentItem
		c.must(&utxos, "blockchain.scripthash.listunspent", sh.String())
		wu := model.Unspent[sh]
		if len(utxos) != len(wu) {
			t.Fatalf("%s: %d unspent, model %d", sh, len(utxos), len(wu))
		}
		for i := range utxos {
			if utxos[i].TxHash != wu[i].TxHash.String() || utxos[i].TxPos != wu[i].Vout || utxos[i].Height != wu[i].Height || utxos[i].Value != wu[i].Value {
				t.Fatalf("%s: unspent[%d] = %+v, model %+v", sh, i, utxos[i], wu[i])
			}
		}
		var bal map[string]int64
		c.must(&bal, "blockchain.scripthash.get_balance", sh.String())
		if bal["confirmed"] != model.Balance[sh] || bal["unconfirmed"] != 0 {
			t.Fatalf("%s: balance %v, model %d", sh, bal, model.Balance[sh])
		}
		var status *string
		c.must(&status, "blockchain.scripthash.subscribe", sh.String())
		if status == nil || *status != model.StatusHex(sh) {
			t.Fatalf("%s: status %v, model %s", sh, status, model.StatusHex(sh))
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d scripts in the model", checked)
	}

	// Every transaction of the last blocks: raw bytes, merkle proof, position.
	tip := model.Height
	for height := tip - 3; height <= tip; height++ {
		block, err := n.h.Chain.BlockByHeight(height)
		if err != nil {
			t.Fatal(err)
		}
		for pos, tx := range block.Transactions() {
			txid := tx.Hash().String()
			var raw string
			c.must(&raw, "blockchain.transaction.get", txid)
			var buf bytes.Buffer
			tx.MsgTx().Serialize(&buf)
			if raw != hex.EncodeToString(buf.Bytes()) {
				t.Fatalf("tx %s bytes differ", txid)
			}
			var m merkleResult
			c.must(&m, "blockchain.transaction.get_merkle", txid, height)
			var branch []chainhash.Hash
			for _, b := range m.Merkle {
				branch = append(branch, mustHash(t, b))
			}
			if m.Pos != pos || rootFromBranch(*tx.Hash(), branch, pos) != block.MsgBlock().Header.MerkleRoot {
				t.Fatalf("tx %s: merkle proof does not reach the block's root", txid)
			}
			var id string
			c.must(&id, "blockchain.transaction.id_from_pos", height, pos)
			if id != txid {
				t.Fatalf("id_from_pos(%d,%d) = %s, want %s", height, pos, id, txid)
			}
		}
		var v map[string]any
		c.must(&v, "blockchain.transaction.get", block.Transactions()[0].Hash().String(), true)
		if v["blockhash"] != block.Hash().String() || v["confirmations"].(float64) != float64(tip-height+1) {
			t.Fatalf("verbose coinbase %v", v)
		}
		if vin := v["vin"].([]any); vin[0].(map[string]any)["coinbase"] == nil {
			t.Fatalf("verbose coinbase input %v", vin)
		}
	}

	// Headers and cp_height proofs against the chain's block hashes.
	var hashes []chainhash.Hash
	for h := int32(0); h <= tip; h++ {
		bh, err := n.h.Chain.BlockHashByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, *bh)
	}
	for _, tc := range []struct{ height, cp int32 }{{0, tip}, {5, 5}, {tip / 2, tip - 1}, {tip, tip}} {
		var p proofResult
		c.must(&p, "blockchain.block.header", tc.height, tc.cp)
		raw, _ := hex.DecodeString(p.Header)
		var branch []chainhash.Hash
		for _, b := range p.Branch {
			branch = append(branch, mustHash(t, b))
		}
		root := merkleRoot(hashes[:tc.cp+1])
		if chainhash.DoubleHashH(raw) != hashes[tc.height] || p.Root != root.String() ||
			rootFromBranch(hashes[tc.height], branch, int(tc.height)) != root {
			t.Fatalf("header proof %d/%d does not verify", tc.height, tc.cp)
		}
	}
	var hs map[string]any
	c.must(&hs, "blockchain.block.headers", 0, 3000)
	if hs["count"].(float64) != float64(tip+1) || len(hs["headers"].([]any)) != int(tip+1) {
		t.Fatalf("headers count %v", hs["count"])
	}
	var sub headerResult
	c.must(&sub, "blockchain.headers.subscribe")
	if sub.Height != tip {
		t.Fatalf("headers.subscribe height %d, want %d", sub.Height, tip)
	}
	var f map[string]any
	c.must(&f, "server.features")
	if f["genesis_hash"] != n.h.Params.GenesisHash.String() {
		t.Fatalf("features genesis %v", f["genesis_hash"])
	}
}

// TestRealChainStatusWhilePoolHoldsMined: when the index commits a block
// before btcd's pool drops the block's transactions, a child of a mined
// transaction is at height 0 in the status notified for the block and in
// the history, and btcd's pool catching up later changes neither, so no
// notification is due then.
func TestRealChainStatusWhilePoolHoldsMined(t *testing.T) {
	n := newRealNode(t, 2, nil)
	target := append([]byte{0x00, 0x14}, bytes.Repeat([]byte{0x43}, 20)...)
	sh := indexers.ScriptHashFromScript(target)
	change := &n.h.Pool.Spendable[1]
	c := dial(t, n.addr)
	c.negotiate("1.4")
	var status *string
	c.must(&status, "blockchain.scripthash.subscribe", sh.String())

	coin := n.coin()
	tx1 := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(1_0000_0000, target), wire.NewTxOut(coin.Value-1_0000_0000-20_000, change.PkScript))
	tx2 := testchain.SpendTx([]testchain.Coin{changeCoin(tx1, 1, change)}, wire.NewTxOut(5000_0000, target), wire.NewTxOut(tx1.TxOut[1].Value-5000_0000-30_000, change.PkScript))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx1))
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx2))
	c.drain(n.srv)

	history := func() []string {
		t.Helper()
		var hist []historyItem
		c.must(&hist, "blockchain.scripthash.get_history", sh.String())
		out := []string{}
		for _, h := range hist {
			out = append(out, fmt.Sprintf("%s:%d", h.TxHash[:8], h.Height))
		}
		return out
	}
	n.mu.Lock()
	n.poolLags = true
	n.mu.Unlock()
	b1 := n.mine(nil, tx1)
	if !n.pool.IsTransactionInPool(b1.Transactions()[1].Hash()) {
		t.Fatal("btcd's pool dropped the mined transaction; the test needs it held")
	}
	want := []string{fmt.Sprintf("%s:%d", tx1.TxHash().String()[:8], b1.Height()), tx2.TxHash().String()[:8] + ":0"}
	var last *string
	for _, nt := range c.drain(n.srv) {
		if nt.Method == "blockchain.scripthash.subscribe" {
			_, last = statusOf(t, nt)
		}
	}
	if got := history(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("history with the mined parent still in btcd's pool %v, want %v", got, want)
	}
	d := indexers.NewStatusHasher()
	d.Add(tx1.TxHash(), b1.Height())
	d.Add(tx2.TxHash(), 0)
	if last == nil || *last != *statusHex(d.Sum()) {
		t.Fatalf("status notified for the block %v does not match the history %v", last, want)
	}

	n.dropMined()
	if got := history(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("history once btcd's pool dropped the parent %v, want %v", got, want)
	}
	c.noNote(n.srv)
}

// TestRealChainMempoolNotifications drives btcd's real mempool and chain:
// broadcasts through the server, a child with an unconfirmed parent,
// blocks confirming them one at a time and a reorg that returns them to the
// mempool, checking answers and notifications at each step.
func TestRealChainMempoolNotifications(t *testing.T) {
	n := newRealNode(t, 2, nil)
	target := append([]byte{0x00, 0x14}, bytes.Repeat([]byte{0x42}, 20)...)
	sh := indexers.ScriptHashFromScript(target)
	change := &n.h.Pool.Spendable[1] // P2WSH anyone-can-spend
	if change.Kind != testchain.KindP2WSH {
		t.Fatalf("pool script kind %v", change.Kind)
	}

	c := dial(t, n.addr)
	c.negotiate("1.4")
	var hsub headerResult
	c.must(&hsub, "blockchain.headers.subscribe")
	var status *string
	c.must(&status, "blockchain.scripthash.subscribe", sh.String())
	if status != nil {
		t.Fatal("fresh script has a status")
	}
	c16 := dial(t, n.addr)
	c16.negotiate("1.6")

	coin := n.coin()
	tx1 := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(1_0000_0000, target), wire.NewTxOut(coin.Value-1_0000_0000-20_000, change.PkScript))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx1))
	if txid != tx1.TxHash().String() {
		t.Fatalf("broadcast txid %s", txid)
	}
	expectStatus := func(want []string) {
		t.Helper()
		n.waitNotified()
		_, st := statusOf(t, c.note())
		var hist []historyItem
		c.must(&hist, "blockchain.scripthash.get_history", sh.String())
		got := []string{}
		d := indexers.NewStatusHasher()
		for _, h := range hist {
			got = append(got, fmt.Sprintf("%s:%d", h.TxHash[:8], h.Height))
			d.Add(mustHash(t, h.TxHash), h.Height)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("history %v, want %v", got, want)
		}
		if st == nil || *st != *statusHex(d.Sum()) {
			t.Fatalf("notified status does not match the history")
		}
		c.noNote(n.srv)
	}
	id1 := tx1.TxHash().String()[:8]
	expectStatus([]string{id1 + ":0"})

	var mem []historyItem
	c.must(&mem, "blockchain.scripthash.get_mempool", sh.String())
	if len(mem) != 1 || *mem[0].Fee != 20_000 {
		t.Fatalf("get_mempool %+v", mem)
	}
	var bal map[string]int64
	c.must(&bal, "blockchain.scripthash.get_balance", sh.String())
	if bal["confirmed"] != 0 || bal["unconfirmed"] != 1_0000_0000 {
		t.Fatalf("balance %v", bal)
	}
	var utxos []unspentItem
	c.must(&utxos, "blockchain.scripthash.listunspent", sh.String())
	if len(utxos) != 1 || utxos[0].Height != 0 || utxos[0].Value != 1_0000_0000 {
		t.Fatalf("listunspent %+v", utxos)
	}
	var raw string
	c.must(&raw, "blockchain.transaction.get", id1+tx1.TxHash().String()[8:])
	if raw != txHex(tx1) {
		t.Fatal("mempool tx bytes differ")
	}
	var hist [][2]float64
	c.must(&hist, "mempool.get_fee_histogram")
	if len(hist) == 0 || hist[0][0] <= 0 {
		t.Fatalf("fee histogram %v", hist)
	}

	// A child of tx1's change pays the target again: height -1.
	tx2 := testchain.SpendTx([]testchain.Coin{changeCoin(tx1, 1, change)}, wire.NewTxOut(5000_0000, target), wire.NewTxOut(tx1.TxOut[1].Value-5000_0000-30_000, change.PkScript))
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx2))
	id2 := tx2.TxHash().String()[:8]
	expectStatus([]string{id1 + ":0", id2 + ":-1"})

	// Confirm tx1 only: tx1 at the new height, tx2 becomes height 0.
	b1 := n.mine(nil, tx1)
	n.waitNotified()
	nh := c.note()
	if nh.Method != "blockchain.headers.subscribe" {
		t.Fatalf("expected a header notification, got %s", nh.Method)
	}
	h1 := b1.Height()
	expectStatus([]string{fmt.Sprintf("%s:%d", id1, h1), id2 + ":0"})

	// A package: parent and child accepted in order (1.6).
	coin2 := n.coin()
	p := testchain.SpendTx([]testchain.Coin{coin2}, wire.NewTxOut(coin2.Value-10_000, change.PkScript))
	ch := testchain.SpendTx([]testchain.Coin{changeCoin(p, 0, change)}, wire.NewTxOut(2000_0000, target), wire.NewTxOut(p.TxOut[0].Value-2000_0000-10_000, change.PkScript))
	var pr map[string]any
	c16.must(&pr, "blockchain.transaction.broadcast_package", []string{txHex(p), txHex(ch)})
	if pr["success"] != true {
		t.Fatalf("package %v", pr)
	}
	idc := ch.TxHash().String()[:8]
	wantMem := []string{id2 + ":0", idc + ":-1"}
	expectStatus(append([]string{fmt.Sprintf("%s:%d", id1, h1)}, wantMem...))

	// Mine everything.
	b2 := n.mineMempool()
	n.waitNotified()
	c.note() // header
	h2 := b2.Height()
	confirmed := []string{fmt.Sprintf("%s:%d", id1, h1)}
	for _, tx := range b2.Transactions() {
		if tx.Hash().String()[:8] == id2 || tx.Hash().String()[:8] == idc {
			confirmed = append(confirmed, fmt.Sprintf("%s:%d", tx.Hash().String()[:8], h2))
		}
	}
	expectStatus(confirmed)
	c.must(&bal, "blockchain.scripthash.get_balance", sh.String())
	if bal["confirmed"] != 1_0000_0000+5000_0000+2000_0000 || bal["unconfirmed"] != 0 {
		t.Fatalf("balance after blocks %v", bal)
	}

	// Reorg: a longer branch from b1's parent without these transactions.
	parent, err := n.h.Chain.BlockByHash(&b1.MsgBlock().Header.PrevBlock)
	if err != nil {
		t.Fatal(err)
	}
	parent.SetHeight(h1 - 1)
	f1 := n.mine(parent)
	f1.SetHeight(h1)
	f2 := n.mine(f1)
	f2.SetHeight(h1 + 1)
	f3 := n.mine(f2)
	// Everything the reorg caused: header notifications ending at the new
	// tip, and status notifications ending at the final status.
	var last headerResult
	var lastStatus *string
	for _, nt := range c.drain(n.srv) {
		if nt.Method == "blockchain.headers.subscribe" {
			var hs []headerResult
			decodeInto(t, nt.Params, &hs)
			last = hs[0]
			continue
		}
		_, lastStatus = statusOf(t, nt)
	}
	if last.Height != h1+2 {
		t.Fatalf("last header after reorg at %d, want %d", last.Height, h1+2)
	}
	if hdr, _ := headerHex(&f3.MsgBlock().Header); last.Hex != hdr {
		t.Fatal("reorg header is not the new tip")
	}
	var after []historyItem
	c.must(&after, "blockchain.scripthash.get_history", sh.String())
	d := indexers.NewStatusHasher()
	heights := map[string]int32{}
	for _, h := range after {
		d.Add(mustHash(t, h.TxHash), h.Height)
		heights[h.TxHash[:8]] = h.Height
	}
	if len(after) != 3 || heights[id1] != 0 || heights[id2] != -1 || heights[idc] != -1 {
		t.Fatalf("history after reorg %+v", after)
	}
	if lastStatus == nil || *lastStatus != *statusHex(d.Sum()) {
		t.Fatal("last notified status after the reorg does not match the history")
	}
}

// TestRealChainOtherMethods covers the remaining methods on the real node:
// fee policy from btcd's pool and estimator, server information, ping,
// peers, unsubscribe and the merkle forms of id_from_pos and block.headers.
func TestRealChainOtherMethods(t *testing.T) {
	n := newRealNode(t, 2, nil)
	_, tip := n.h.Tip()
	c14 := dial(t, n.addr)
	c14.negotiate("1.4.2")
	var fee float64
	c14.must(&fee, "blockchain.relayfee")
	if fee != 0.00001 {
		t.Fatalf("relayfee %v", fee)
	}
	c14.must(&fee, "blockchain.estimatefee", 2)
	if fee != -1 && fee <= 0 {
		t.Fatalf("estimatefee %v", fee)
	}
	var s string
	c14.must(&s, "server.banner")
	if s != DefaultBanner {
		t.Fatalf("banner %q", s)
	}
	c14.must(&s, "server.donation_address")
	var peers []any
	c14.must(&peers, "server.peers.subscribe")
	if res, rerr := c14.call("server.ping"); rerr != nil || string(res) != "null" {
		t.Fatalf("ping %s %v", res, rerr)
	}
	var ok bool
	sh := indexers.ScriptHashFromScript(n.h.Pool.Spendable[0].PkScript).String()
	c14.must(nil, "blockchain.scripthash.subscribe", sh)
	c14.must(&ok, "blockchain.scripthash.unsubscribe", sh)
	if !ok {
		t.Fatal("unsubscribe returned false")
	}

	c16 := dial(t, n.addr)
	c16.negotiate([]string{"1.4", "1.6"})
	var mi map[string]float64
	c16.must(&mi, "mempool.get_info")
	if mi["minrelaytxfee"] != 0.00001 || mi["mempoolminfee"] != 0.00001 || mi["incrementalrelayfee"] != 0.00001 {
		t.Fatalf("mempool.get_info %v", mi)
	}
	c16.must(&fee, "blockchain.estimatefee", 2, "CONSERVATIVE")
	block, err := n.h.Chain.BlockByHeight(tip)
	if err != nil {
		t.Fatal(err)
	}
	var idm struct {
		TxHash string   `json:"tx_hash"`
		Merkle []string `json:"merkle"`
	}
	last := len(block.Transactions()) - 1
	c16.must(&idm, "blockchain.transaction.id_from_pos", tip, last, true)
	var branch []chainhash.Hash
	for _, b := range idm.Merkle {
		branch = append(branch, mustHash(t, b))
	}
	if idm.TxHash != block.Transactions()[last].Hash().String() ||
		rootFromBranch(*block.Transactions()[last].Hash(), branch, last) != block.MsgBlock().Header.MerkleRoot {
		t.Fatal("id_from_pos merkle proof does not verify")
	}
	var hs struct {
		Count   int      `json:"count"`
		Headers []string `json:"headers"`
		Root    string   `json:"root"`
		Branch  []string `json:"branch"`
	}
	c16.must(&hs, "blockchain.block.headers", tip-4, 3, tip)
	if hs.Count != 3 || len(hs.Headers) != 3 || hs.Root == "" {
		t.Fatalf("headers with proof %+v", hs)
	}
	raw, _ := hex.DecodeString(hs.Headers[2])
	branch = branch[:0]
	for _, b := range hs.Branch {
		branch = append(branch, mustHash(t, b))
	}
	if got := rootFromBranch(chainhash.DoubleHashH(raw), branch, int(tip-2)); got.String() != hs.Root {
		t.Fatal("block.headers proof for the last header does not verify")
	}
}

// TestRealChainBroadcastAgain: as bitcoind's sendrawtransaction answers
// ElectrumX, a transaction already in the mempool broadcast again is
// answered with its txid (wallets broadcast again), and one already
// confirmed is refused as already in the chain.
func TestRealChainBroadcastAgain(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, n.h.Pool.Spendable[0].PkScript))
	for i := 0; i < 2; i++ {
		var txid string
		c.must(&txid, "blockchain.transaction.broadcast", txHex(tx))
		if txid != tx.TxHash().String() {
			t.Fatalf("broadcast %d: %s, want %s", i+1, txid, tx.TxHash())
		}
	}
	n.mineMempool()
	_, rerr := c.call("blockchain.transaction.broadcast", txHex(tx))
	if rerr == nil || rerr.Code != codeBadRequest || !strings.Contains(rerr.Message, "already in block chain") {
		t.Fatalf("broadcast of a confirmed transaction: %+v, want error 1 already in block chain", rerr)
	}
}

// TestRealChainHeadersOfIndexTipInReorg: while btcd's chain has
// reorganized and the index's writer has yet to undo its tip, the headers
// a wallet gets are those of the index's chain, which its histories and
// proofs are of: headers.subscribe and block.header at the tip's height
// give the index tip's header, not the new branch's.
func TestRealChainHeadersOfIndexTipInReorg(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	parent := n.mine(nil)
	n.hold()
	a := n.process(parent, time.Second)
	<-n.held
	if tip, _ := n.idx.LatestTip(); tip.Hash != *a.Hash() {
		t.Fatalf("index tip %v, want %v", tip.Hash, a.Hash())
	}
	b1 := n.process(parent, 2*time.Second)
	n.process(b1, time.Second) // the chain reorganizes onto b1 and b2
	if best := n.h.Chain.BestSnapshot(); best.Height != a.Height()+1 {
		t.Fatalf("chain at %d, want the longer branch at %d", best.Height, a.Height()+1)
	}
	want, _ := headerHex(&a.MsgBlock().Header)
	var hs headerResult
	c.must(&hs, "blockchain.headers.subscribe")
	if hs.Height != a.Height() || hs.Hex != want {
		t.Fatalf("headers.subscribe {%d %s}, want the index tip {%d %s}", hs.Height, hs.Hex, a.Height(), want)
	}
	var hdr string
	c.must(&hdr, "blockchain.block.header", a.Height())
	if hdr != want {
		t.Fatalf("block.header(%d) = %s, want the index tip's %s", a.Height(), hdr, want)
	}
	n.release()
	if err := n.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	other, _ := headerHex(&b1.MsgBlock().Header)
	c.must(&hdr, "blockchain.block.header", a.Height())
	if hdr != other {
		t.Fatalf("block.header(%d) after the undo = %s, want the new branch's %s", a.Height(), hdr, other)
	}
}

// TestRealChainUnspentAgreesWithBalanceWhilePoolMovesOn: when the mempool
// view still holds a transaction btcd's pool no longer has (the view is
// reconciled only after the index's next commit), listunspent does not
// hide the outputs it spends, as get_balance does not count the spend:
// the two answers agree.
func TestRealChainUnspentAgreesWithBalanceWhilePoolMovesOn(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	sh := indexers.ScriptHashFromScript(coin.Script.PkScript)
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, n.h.Pool.Spendable[0].PkScript))
	// In the view only, as after btcd's pool dropped it.
	n.overlay.Add(&mempool.TxDesc{TxDesc: mining.TxDesc{Tx: btcutil.NewTx(tx), Added: time.Now(), Fee: 10_000}})
	var bal struct {
		Confirmed   int64 `json:"confirmed"`
		Unconfirmed int64 `json:"unconfirmed"`
	}
	c.must(&bal, "blockchain.scripthash.get_balance", sh.String())
	var utxos []struct {
		TxHash string `json:"tx_hash"`
		TxPos  uint32 `json:"tx_pos"`
		Value  int64  `json:"value"`
	}
	c.must(&utxos, "blockchain.scripthash.listunspent", sh.String())
	sum, listed := int64(0), false
	for _, u := range utxos {
		sum += u.Value
		listed = listed || (u.TxHash == coin.OutPoint.Hash.String() && u.TxPos == coin.OutPoint.Index)
	}
	if sum != bal.Confirmed+bal.Unconfirmed || !listed {
		t.Fatalf("listunspent sums to %d (the coin listed: %v), get_balance says %d + %d", sum, listed, bal.Confirmed, bal.Unconfirmed)
	}
}

// TestRealChainMinedTransactionNeverMissing: between btcd's pool dropping a
// mined transaction (when the chain connects its block) and the index
// committing that block, the transaction is still answered as unconfirmed
// (the index's rows are of the block before), never missing from a
// wallet's history, mempool, balance and unspent outputs, and a wallet
// shown it can fetch it; once the index has committed the block it is
// confirmed there.
func TestRealChainMinedTransactionNeverMissing(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	payTo := p2wpkh(0x5e) // a script of its own
	payee := indexers.ScriptHashFromScript(payTo)
	payer := indexers.ScriptHashFromScript(coin.Script.PkScript)
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, payTo))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx))

	type entry struct {
		TxHash string `json:"tx_hash"`
		Height int32  `json:"height"`
	}
	type balance struct {
		Confirmed   int64 `json:"confirmed"`
		Unconfirmed int64 `json:"unconfirmed"`
	}
	type utxo struct {
		TxHash string `json:"tx_hash"`
		TxPos  uint32 `json:"tx_pos"`
		Height int32  `json:"height"`
	}
	check := func(when string, height int32) {
		t.Helper()
		var hist, pool []entry
		c.must(&hist, "blockchain.scripthash.get_history", payee.String())
		c.must(&pool, "blockchain.scripthash.get_mempool", payee.String())
		found := false
		for _, e := range hist {
			found = found || (e.TxHash == txid && e.Height == height)
		}
		if !found {
			t.Fatalf("%s: payee's history %v lacks %s at height %d", when, hist, txid, height)
		}
		if inPool := len(pool) == 1 && pool[0].TxHash == txid; inPool != (height == 0) {
			t.Fatalf("%s: payee's mempool %v", when, pool)
		}
		var bal balance
		c.must(&bal, "blockchain.scripthash.get_balance", payer.String())
		if height == 0 && bal.Unconfirmed != -coin.Value || height > 0 && bal.Unconfirmed != 0 {
			t.Fatalf("%s: payer's balance %+v, its %d spent at height %d", when, bal, coin.Value, height)
		}
		var us []utxo
		c.must(&us, "blockchain.scripthash.listunspent", payer.String())
		for _, u := range us {
			if u.TxHash == coin.OutPoint.Hash.String() && u.TxPos == coin.OutPoint.Index {
				t.Fatalf("%s: the spent coin is listed unspent", when)
			}
		}
		c.must(&us, "blockchain.scripthash.listunspent", payee.String())
		if len(us) != 1 || us[0].TxHash != txid || us[0].Height != height {
			t.Fatalf("%s: payee's unspent %v, want %s at height %d", when, us, txid, height)
		}
		var raw string
		c.must(&raw, "blockchain.transaction.get", txid)
		if raw != txHex(tx) {
			t.Fatalf("%s: transaction.get %s, want %s", when, raw, txHex(tx))
		}
	}
	check("in the pool", 0)

	n.hold()
	n.process(nil, time.Second)
	<-n.held // the index holds that block and waits
	block := n.process(nil, time.Second, tx)
	if h := tx.TxHash(); n.pool.IsTransactionInPool(&h) {
		t.Fatal("btcd's pool still holds the mined transaction")
	}
	check("mined, the index a block behind", 0)

	n.release()
	if err := n.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	n.waitNotified()
	check("indexed", block.Height())
}

// TestRealChainBroadcastPackage: broadcast_package on the node's mempool
// answers, verbose, with submitpackage's result: each member's size and
// fees in BTC; and refuses, as submitpackage does, a member over its
// default maximum fee rate.
func TestRealChainBroadcastPackage(t *testing.T) {
	n := newRealNode(t, 0, nil)
	change := &n.h.Pool.Spendable[1]
	c := dial(t, n.addr)
	c.negotiate("1.6")
	coin := n.coin()
	parent := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-20_000, change.PkScript))
	child := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: parent.TxHash()}, Value: coin.Value - 20_000, Script: change}},
		wire.NewTxOut(coin.Value-25_000, change.PkScript))
	var res struct {
		Msg     string `json:"package_msg"`
		Results map[string]struct {
			TxID  string `json:"txid"`
			VSize int64  `json:"vsize"`
			Fees  struct {
				Base     json.Number `json:"base"`
				Rate     json.Number `json:"effective-feerate"`
				Includes []string    `json:"effective-includes"`
			} `json:"fees"`
		} `json:"tx-results"`
	}
	c.must(&res, "blockchain.transaction.broadcast_package", []string{txHex(parent), txHex(child)}, true)
	if res.Msg != "success" || len(res.Results) != 2 {
		t.Fatalf("package: %+v", res)
	}
	for _, m := range []struct {
		tx  *wire.MsgTx
		fee int64
	}{{parent, 20_000}, {child, 5_000}} {
		r := res.Results[m.tx.WitnessHash().String()]
		vs := vsize(m.tx)
		if r.TxID != m.tx.TxHash().String() || r.VSize != vs || r.Fees.Base.String() != fmt.Sprintf("%.8f", float64(m.fee)/1e8) ||
			r.Fees.Rate.String() != fmt.Sprintf("%.8f", float64(m.fee*1000/vs)/1e8) ||
			len(r.Fees.Includes) != 1 || r.Fees.Includes[0] != m.tx.WitnessHash().String() {
			t.Fatalf("member %v (fee %d, vsize %d): %+v", m.tx.TxHash(), m.fee, vs, r)
		}
	}

	greedyCoin := n.coin()
	greedy := testchain.SpendTx([]testchain.Coin{greedyCoin}, wire.NewTxOut(greedyCoin.Value-50_000_000, change.PkScript))
	var plain struct {
		Success bool `json:"success"`
		Errors  []struct {
			TxID  string `json:"txid"`
			Error string `json:"error"`
		} `json:"errors"`
	}
	c.must(&plain, "blockchain.transaction.broadcast_package", []string{txHex(greedy)})
	if plain.Success || len(plain.Errors) != 1 || plain.Errors[0].TxID != greedy.TxHash().String() ||
		plain.Errors[0].Error != "max feerate exceeded" {
		t.Fatalf("a member over 0.10 BTC/kvB: %+v", plain)
	}
}

// TestRealChainPackageRefusedWholeNamesItsMembers: a package refused whole
// (two parents spending one output) is answered with an error for every
// member, as bitcoind's submitpackage names them and ElectrumX passes them
// on (the Electrum wallet reads "errors" whenever success is false), and
// each refused member is charged.
func TestRealChainPackageRefusedWholeNamesItsMembers(t *testing.T) {
	n := newRealNode(t, 0, nil)
	change := &n.h.Pool.Spendable[1]
	c := dial(t, n.addr)
	c.negotiate("1.6")
	coin := n.coin()
	p1 := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, change.PkScript))
	p2 := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-20_000, change.PkScript))
	child := testchain.SpendTx([]testchain.Coin{
		{OutPoint: wire.OutPoint{Hash: p1.TxHash()}, Value: coin.Value - 10_000, Script: change},
		{OutPoint: wire.OutPoint{Hash: p2.TxHash()}, Value: coin.Value - 20_000, Script: change},
	}, wire.NewTxOut(2*coin.Value-60_000, change.PkScript))

	before := ownCost(n.srv, "127.0.0.1")
	var plain struct {
		Success bool `json:"success"`
		Errors  *[]struct {
			TxID  string `json:"txid"`
			Error string `json:"error"`
		} `json:"errors"`
	}
	c.must(&plain, "blockchain.transaction.broadcast_package", []string{txHex(p1), txHex(p2), txHex(child)})
	cost := ownCost(n.srv, "127.0.0.1") - before
	if plain.Success {
		t.Fatalf("conflict-in-package accepted: %+v", plain)
	}
	if plain.Errors == nil || len(*plain.Errors) != 3 {
		t.Errorf("a package refused whole answered success:false with errors %v; want one entry per member", plain.Errors)
	}
	if cost < 3*errorCost {
		t.Errorf("a package of 3 members all refused cost %.1f, want at least %d (a refused member costs %d)",
			cost, 3*errorCost, errorCost)
	}
}

// TestRealChainPackageBurnRefused: an output burning value is refused, as
// submitpackage refuses it with its default maxburnamount (0) when
// ElectrumX calls it.
func TestRealChainPackageBurnRefused(t *testing.T) {
	n := newRealNode(t, 0, nil)
	change := &n.h.Pool.Spendable[1]
	c := dial(t, n.addr)
	c.negotiate("1.6")
	coin := n.coin()
	burn, err := txscript.NullDataScript([]byte("burn"))
	if err != nil {
		t.Fatal(err)
	}
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-20_000-1_000, change.PkScript),
		wire.NewTxOut(1_000, burn))
	res, rerr := c.call("blockchain.transaction.broadcast_package", []string{txHex(tx)})
	if rerr == nil || rerr.Code != codeBadRequest ||
		!strings.Contains(rerr.Message, "Unspendable output exceeds maximum configured by user (maxburnamount)") {
		t.Fatalf("a package burning 1,000 sat: result %s, error %v; want error 1 with submitpackage's "+
			"maxburnamount refusal", res, rerr)
	}
}

// TestRealChainBroadcastAsSendRawTransaction: ElectrumX broadcasts through
// bitcoind's sendrawtransaction with its defaults, so a transaction burning
// value (maxburnamount 0) or paying over 0.10 BTC/kvB (maxfeerate) is
// refused with bitcoind's words and kept out of the mempool; one within
// both is taken.
func TestRealChainBroadcastAsSendRawTransaction(t *testing.T) {
	n := newRealNode(t, 0, nil)
	change := &n.h.Pool.Spendable[1]
	c := dial(t, n.addr)
	c.negotiate("1.4")
	burn, err := txscript.NullDataScript([]byte("burn"))
	if err != nil {
		t.Fatal(err)
	}
	coin := n.coin()
	// About 100 vbytes paying 0.5 BTC: fifty times the limit.
	const absurd = 50_000_000
	for _, c2 := range []struct {
		name string
		tx   *wire.MsgTx
		want string
	}{
		{"burning 1,000 sat", testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-20_000-1_000, change.PkScript),
			wire.NewTxOut(1_000, burn)), "Unspendable output exceeds maximum configured by user (maxburnamount)"},
		{"paying 0.5 BTC in fees", testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-absurd, change.PkScript)),
			"Fee exceeds maximum configured by user (e.g. -maxtxfee, maxfeerate)"},
	} {
		res, rerr := c.call("blockchain.transaction.broadcast", txHex(c2.tx))
		if rerr == nil || rerr.Code != codeBadRequest ||
			!strings.HasPrefix(rerr.Message, "the transaction was rejected by network rules.\n\n"+c2.want+"\n[") {
			t.Errorf("a transaction %s: result %s, error %v; want error 1 with sendrawtransaction's refusal %q", c2.name, res, rerr, c2.want)
		}
		if txid := c2.tx.TxHash(); n.pool.IsTransactionInPool(&txid) {
			t.Errorf("the transaction %s entered the mempool", c2.name)
		}
	}
	ok := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-20_000, change.PkScript))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(ok))
	if txid != ok.TxHash().String() {
		t.Fatalf("a transaction within both limits: %q", txid)
	}
}
