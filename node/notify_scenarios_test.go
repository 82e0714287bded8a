package node

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// scenarioSpend spends output vout of prev (paying testKey's P2PKH address)
// into outs, signed.
func scenarioSpend(t testing.TB, prev *wire.MsgTx, vout uint32, seq uint32, outs ...*wire.TxOut) *btcutil.Tx {
	t.Helper()
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(hashPtr(prev.TxHash()), vout), nil, nil))
	tx.TxIn[0].Sequence = seq
	for _, o := range outs {
		tx.AddTxOut(o)
	}
	sig, err := txscript.SignatureScript(tx, 0, prev.TxOut[vout].PkScript, txscript.SigHashAll, testKey, true)
	if err != nil {
		t.Fatal(err)
	}
	tx.TxIn[0].SignatureScript = sig
	return btcutil.NewTx(tx)
}

func hashPtr(h chainhash.Hash) *chainhash.Hash { return &h }

// scenarioScript is a P2WPKH script nobody here spends.
func scenarioScript(b byte) []byte { return append([]byte{0x00, 0x14}, bytes.Repeat([]byte{b}, 20)...) }

// specStatus is the status of §4.2 of entries "txid:height".
func specStatus(entries ...string) any {
	if len(entries) == 0 {
		return nil
	}
	var s string
	for _, e := range entries {
		s += e + ":"
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// coinbaseOf returns the coinbase of the block at height.
func coinbaseOf(t testing.TB, n *Node, height int32) *wire.MsgTx {
	t.Helper()
	b, err := n.Chain().BlockByHeight(height)
	if err != nil {
		t.Fatal(err)
	}
	return b.Transactions()[0].MsgTx()
}

// mineWith connects a block holding txs on the tip and waits for the index.
func mineWith(t testing.TB, n *Node, txs ...*btcutil.Tx) *btcutil.Block {
	t.Helper()
	best := n.Chain().BestSnapshot()
	prev, err := n.Chain().BlockByHash(&best.Hash)
	if err != nil {
		t.Fatal(err)
	}
	prev.SetHeight(best.Height)
	block, err := rpctest.CreateBlock(prev, txs, 4, prev.MsgBlock().Header.Timestamp.Add(time.Second),
		testMiningAddr(t), nil, n.Chain().ChainParams())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Chain().ProcessBlock(block, blockchain.BFNone); err != nil {
		t.Fatal(err)
	}
	syncIndex(t, n)
	return block
}

// pendingNotes returns the notifications the client got until quiet for
// wait (after a round trip).
func (c *electrumClient) pendingNotes(wait time.Duration) []map[string]any {
	c.t.Helper()
	c.call("server.ping")
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(wait))
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			break
		}
		var msg map[string]any
		if err := json.Unmarshal(line, &msg); err != nil {
			c.t.Fatalf("bad message %q", line)
		}
		c.notes = append(c.notes, msg)
	}
	out := c.notes
	c.notes = nil
	return out
}

// notesUntil reads notifications until each script of want has last been
// notified its status there (the server sends them on its own goroutines
// after the index's commit and the mempool view's reconciliation), then
// until quiet for 300 ms, so that a notification sent after the expected
// one is read too; it fails after testWait.
func (c *electrumClient) notesUntil(want map[string]any) []map[string]any {
	c.t.Helper()
	var notes []map[string]any
	reached := func() bool {
		for sh, w := range want {
			got := statusNotes(notes, sh)
			if len(got) == 0 || got[len(got)-1] != w {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(testWait)
	for !reached() {
		if time.Now().After(deadline) {
			c.t.Fatalf("notified %v within %v, want each of %v last", notes, testWait, want)
		}
		notes = append(notes, c.pendingNotes(100*time.Millisecond)...)
	}
	return append(notes, c.pendingNotes(300*time.Millisecond)...)
}

// statusNotes returns the statuses notified for sh, in order.
func statusNotes(notes []map[string]any, sh string) []any {
	var out []any
	for _, m := range notes {
		if m["method"] != "blockchain.scripthash.subscribe" {
			continue
		}
		p, _ := m["params"].([]any)
		if len(p) == 2 && p[0] == sh {
			out = append(out, p[1])
		}
	}
	return out
}

func short(v []any) string {
	s := "["
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		if str, ok := x.(string); ok {
			s += str[:12]
		} else {
			s += fmt.Sprint(x)
		}
	}
	return s + "]"
}

// TestReplacementNotifiesBothScripts: a replacement (BIP 125) paying
// another script: the replaced transaction's script is notified once with
// its status without it, the replacement's with its own, each equal to a
// fresh subscribe's.
func TestReplacementNotifiesBothScripts(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	s1, s2 := scenarioScript(0x31), scenarioScript(0x32)
	sh1, sh2 := indexers.ScriptHashFromScript(s1).String(), indexers.ScriptHashFromScript(s2).String()
	c.call("blockchain.scripthash.subscribe", sh1)
	c.call("blockchain.scripthash.subscribe", sh2)
	cb := coinbaseOf(t, n, 1)
	first := scenarioSpend(t, cb, 0, 0xfffffffd, wire.NewTxOut(cb.TxOut[0].Value-10_000, s1))
	if _, err := n.ProcessTx(first); err != nil {
		t.Fatal(err)
	}
	w1 := specStatus(first.Hash().String() + ":0")
	if got := statusNotes(c.notesUntil(map[string]any{sh1: w1}), sh1); len(got) != 1 || got[0] != w1 {
		t.Fatalf("after the first: %v", got)
	}
	second := scenarioSpend(t, cb, 0, 0xfffffffd, wire.NewTxOut(cb.TxOut[0].Value-100_000, s2))
	if _, err := n.ProcessTx(second); err != nil {
		t.Fatal(err)
	}
	w2 := specStatus(second.Hash().String() + ":0")
	notes := c.notesUntil(map[string]any{sh1: nil, sh2: w2})
	g1, g2 := statusNotes(notes, sh1), statusNotes(notes, sh2)
	f := dialElectrum(t, n)
	f.call("server.version", "test", "1.4")
	f1, f2 := f.call("blockchain.scripthash.subscribe", sh1), f.call("blockchain.scripthash.subscribe", sh2)
	if len(g1) != 1 || g1[0] != nil || len(g2) != 1 || g2[0] != w2 || f1 != nil || f2 != w2 {
		t.Fatalf("replaced script notified %v (fresh %v, want [null]); replacement's notified %v (fresh %v, want %v)",
			g1, f1, short(g2), f2, w2)
	}
}

// TestDoubleSpendByBlockNotifies: a block confirms a transaction
// double-spending a pool transaction that paid a subscribed script the
// block does not touch: that script is notified once, its status without
// the evicted transaction, as a fresh subscribe has it.
func TestDoubleSpendByBlockNotifies(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	s1, s2 := scenarioScript(0x41), scenarioScript(0x42)
	sh1, sh2 := indexers.ScriptHashFromScript(s1).String(), indexers.ScriptHashFromScript(s2).String()
	c.call("blockchain.scripthash.subscribe", sh1)
	c.call("blockchain.scripthash.subscribe", sh2)
	cb := coinbaseOf(t, n, 1)
	pooled := scenarioSpend(t, cb, 0, wire.MaxTxInSequenceNum, wire.NewTxOut(cb.TxOut[0].Value-10_000, s1))
	if _, err := n.ProcessTx(pooled); err != nil {
		t.Fatal(err)
	}
	c.notesUntil(map[string]any{sh1: specStatus(pooled.Hash().String() + ":0")})
	mined := scenarioSpend(t, cb, 0, wire.MaxTxInSequenceNum, wire.NewTxOut(cb.TxOut[0].Value-20_000, s2))
	block := mineWith(t, n, mined)
	w2 := specStatus(fmt.Sprintf("%s:%d", mined.Hash(), block.Height()))
	notes := c.notesUntil(map[string]any{sh1: nil, sh2: w2})
	g1, g2 := statusNotes(notes, sh1), statusNotes(notes, sh2)
	f := dialElectrum(t, n)
	f.call("server.version", "test", "1.4")
	f1, f2 := f.call("blockchain.scripthash.subscribe", sh1), f.call("blockchain.scripthash.subscribe", sh2)
	if len(g1) != 1 || g1[0] != nil || f1 != nil || len(g2) != 1 || g2[0] != w2 || f2 != w2 {
		t.Fatalf("evicted tx's script notified %v (fresh %v, want [null]); block's notified %v (fresh %v)",
			g1, f1, short(g2), f2)
	}
}

// TestParentConfirmedChildHeight: P (pool) pays testKey, C spends it
// paying s2 (height -1). A block confirms P: s2 is notified once, C at 0.
func TestParentConfirmedChildHeight(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	s2 := scenarioScript(0x52)
	sh2 := indexers.ScriptHashFromScript(s2).String()
	c.call("blockchain.scripthash.subscribe", sh2)
	cb := coinbaseOf(t, n, 2)
	p := scenarioSpend(t, cb, 0, wire.MaxTxInSequenceNum, wire.NewTxOut(cb.TxOut[0].Value-10_000, cb.TxOut[0].PkScript))
	ch := scenarioSpend(t, p.MsgTx(), 0, wire.MaxTxInSequenceNum, wire.NewTxOut(p.MsgTx().TxOut[0].Value-10_000, s2))
	for _, tx := range []*btcutil.Tx{p, ch} {
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	c.notesUntil(map[string]any{sh2: specStatus(ch.Hash().String() + ":-1")})
	mineWith(t, n, p)
	want := specStatus(ch.Hash().String() + ":0")
	got := statusNotes(c.notesUntil(map[string]any{sh2: want}), sh2)
	f := dialElectrum(t, n)
	f.call("server.version", "test", "1.4")
	fresh := f.call("blockchain.scripthash.subscribe", sh2)
	if len(got) != 1 || got[0] != want || fresh != want {
		t.Fatalf("after P confirmed: notified %v, fresh %v, want one %v", short(got), fresh, want)
	}
}

// TestReorgStatuses: a reorganization takes T's block a away (T back
// to the pool) and confirms U (in the pool) in b1. Every status notified
// is one of a real state: T confirmed at a or unconfirmed, U unconfirmed or
// confirmed at b1, or either nowhere for the moment btcd's own chain and
// pool hold it nowhere (its pool takes a block's transactions back, and
// drops them, in its chain notification, beside the index's writer); the
// last equals a fresh subscribe's.
func TestReorgStatuses(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	c.call("blockchain.headers.subscribe")
	s1, s2 := scenarioScript(0x61), scenarioScript(0x62)
	sh1, sh2 := indexers.ScriptHashFromScript(s1).String(), indexers.ScriptHashFromScript(s2).String()
	c.call("blockchain.scripthash.subscribe", sh1)
	c.call("blockchain.scripthash.subscribe", sh2)
	cb1, cb2 := coinbaseOf(t, n, 1), coinbaseOf(t, n, 2)
	tt := scenarioSpend(t, cb1, 0, wire.MaxTxInSequenceNum, wire.NewTxOut(cb1.TxOut[0].Value-10_000, s1))
	u := scenarioSpend(t, cb2, 0, wire.MaxTxInSequenceNum, wire.NewTxOut(cb2.TxOut[0].Value-10_000, s2))
	parentHash := n.Chain().BestSnapshot().Hash
	parent, _ := n.Chain().BlockByHash(&parentHash)
	parent.SetHeight(n.Chain().BestSnapshot().Height)
	a := mineWith(t, n, tt)
	if _, err := n.ProcessTx(u); err != nil {
		t.Fatal(err)
	}
	c.notesUntil(map[string]any{
		sh1: specStatus(fmt.Sprintf("%s:%d", tt.Hash(), a.Height())),
		sh2: specStatus(u.Hash().String() + ":0"),
	})

	b1, err := rpctest.CreateBlock(parent, []*btcutil.Tx{u}, 4, parent.MsgBlock().Header.Timestamp.Add(2*time.Second),
		testMiningAddr(t), nil, n.Chain().ChainParams())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Chain().ProcessBlock(b1, blockchain.BFNone); err != nil {
		t.Fatal(err)
	}
	b1.SetHeight(a.Height())
	b2, err := rpctest.CreateBlock(b1, nil, 4, b1.MsgBlock().Header.Timestamp.Add(time.Second),
		testMiningAddr(t), nil, n.Chain().ChainParams())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Chain().ProcessBlock(b2, blockchain.BFNone); err != nil {
		t.Fatal(err)
	}
	syncIndex(t, n)
	if !n.TxPool().HaveTransaction(tt.Hash()) {
		t.Fatal("T is not back in the pool")
	}
	notes := c.notesUntil(map[string]any{
		sh1: specStatus(tt.Hash().String() + ":0"),
		sh2: specStatus(fmt.Sprintf("%s:%d", u.Hash(), a.Height())),
	})
	ok1 := map[any]string{
		specStatus(fmt.Sprintf("%s:%d", tt.Hash(), a.Height())): "T@a",
		specStatus(tt.Hash().String() + ":0"):                   "T:0",
		specStatus():                                            "none",
	}
	ok2 := map[any]string{
		specStatus(u.Hash().String() + ":0"):                   "U:0",
		specStatus(fmt.Sprintf("%s:%d", u.Hash(), a.Height())): "U@b1",
		specStatus(): "none",
	}
	g1, g2 := statusNotes(notes, sh1), statusNotes(notes, sh2)
	var named1, named2 []string
	for _, s := range g1 {
		named1 = append(named1, fmt.Sprint(ok1[s]))
	}
	for _, s := range g2 {
		named2 = append(named2, fmt.Sprint(ok2[s]))
	}
	f := dialElectrum(t, n)
	f.call("server.version", "test", "1.4")
	f1, f2 := f.call("blockchain.scripthash.subscribe", sh1), f.call("blockchain.scripthash.subscribe", sh2)
	var heights []any
	for _, m := range notes {
		if m["method"] == "blockchain.headers.subscribe" {
			p, _ := m["params"].([]any)
			hx, _ := hex.DecodeString(p[0].(map[string]any)["hex"].(string))
			var h wire.BlockHeader
			_ = h.Deserialize(bytes.NewReader(hx))
			name := h.BlockHash().String()[:8]
			switch h.BlockHash() {
			case *a.Hash():
				name = "a"
			case *b1.Hash():
				name = "b1"
			case *b2.Hash():
				name = "b2"
			}
			heights = append(heights, fmt.Sprint(p[0].(map[string]any)["height"], "/", name))
		}
	}
	t.Logf("T's script notified %v, U's %v, headers %v", named1, named2, heights)
	for _, s := range named1 {
		if s == "" {
			t.Errorf("T's script notified a status of no state: %v", named1)
		}
	}
	for _, s := range named2 {
		if s == "" {
			t.Errorf("U's script notified a status of no state: %v", named2)
		}
	}
	if len(g1) == 0 || g1[len(g1)-1] != f1 || ok1[f1] != "T:0" || len(g2) == 0 || g2[len(g2)-1] != f2 || ok2[f2] != "U@b1" {
		t.Fatalf("last notified %v / %v, fresh %v / %v", named1, named2, ok1[f1], ok2[f2])
	}
}

// TestDeepReorgDropsCoinbaseSpend: P (pool) spends block 1's coinbase and
// C spends P paying s1. A branch from genesis, one block longer, replaces
// every block, its coinbases paying elsewhere: P's input then exists
// nowhere, and since a coinbase never returns to the pool, P and C leave
// btcd's pool and the Electrum view, and s1 is notified it has no history.
func TestDeepReorgDropsCoinbaseSpend(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	s1 := scenarioScript(0x71)
	sh1 := indexers.ScriptHashFromScript(s1).String()
	c.call("blockchain.scripthash.subscribe", sh1)
	cb := coinbaseOf(t, n, 1)
	p := scenarioSpend(t, cb, 0, wire.MaxTxInSequenceNum, wire.NewTxOut(cb.TxOut[0].Value-10_000, cb.TxOut[0].PkScript))
	ch := scenarioSpend(t, p.MsgTx(), 0, wire.MaxTxInSequenceNum, wire.NewTxOut(p.MsgTx().TxOut[0].Value-10_000, s1))
	for _, tx := range []*btcutil.Tx{p, ch} {
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	c.notesUntil(map[string]any{sh1: specStatus(ch.Hash().String() + ":-1")})

	var prev *btcutil.Block
	elsewhere := []wire.TxOut{{Value: 1e8, PkScript: scenarioScript(0x72)}}
	for h := n.Chain().BestSnapshot().Height + 1; h > 0; h-- {
		b, err := rpctest.CreateBlock(prev, nil, 4, time.Time{}, testMiningAddr(t), elsewhere, n.Chain().ChainParams())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := n.Chain().ProcessBlock(b, blockchain.BFNone); err != nil {
			t.Fatal(err)
		}
		prev = b
	}
	syncIndex(t, n)
	if best := n.Chain().BestSnapshot(); best.Hash != *prev.Hash() {
		t.Fatalf("the branch did not become the chain: tip %v at %d", best.Hash, best.Height)
	}
	for _, tx := range []*btcutil.Tx{p, ch} {
		if n.TxPool().HaveTransaction(tx.Hash()) {
			t.Fatalf("%v, which spends a replaced coinbase or descends from a spender, is in the pool", tx.Hash())
		}
	}
	var got []any
	waitFor(t, "s1 notified without history", func() bool {
		got = append(got, statusNotes(c.pendingNotes(100*time.Millisecond), sh1)...)
		return len(got) > 0 && got[len(got)-1] == nil
	})
	f := dialElectrum(t, n)
	f.call("server.version", "test", "1.4")
	if fresh := f.call("blockchain.scripthash.subscribe", sh1); fresh != nil {
		t.Fatalf("a fresh subscribe to s1: %v, want null", fresh)
	}
}
