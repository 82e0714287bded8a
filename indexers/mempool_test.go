package indexers

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/syndtr/goleveldb/leveldb"
)

// poolFixture holds two confirmed outputs and a chain of two unconfirmed
// transactions: tx1 spends confirmed output c1 (script A) and pays B and
// change to A; tx2 spends tx1's output to B and pays C.
type poolFixture struct {
	a, b, c   []byte
	c1        wire.OutPoint
	tx1, tx2  *mempool.TxDesc
	confirmed map[wire.OutPoint]*wire.TxOut
	shA, shB  ScriptHash
	shC       ScriptHash
}

func newPoolFixture() *poolFixture {
	// <n> OP_DROP OP_TRUE scripts.
	f := &poolFixture{a: []byte{0x01, 0x01, 0x75, 0x51}, b: []byte{0x01, 0x02, 0x75, 0x51}, c: []byte{0x01, 0x03, 0x75, 0x51}}
	f.shA, f.shB, f.shC = ScriptHashFromScript(f.a), ScriptHashFromScript(f.b), ScriptHashFromScript(f.c)
	f.c1 = wire.OutPoint{Hash: chainhash.Hash{1}, Index: 0}
	f.confirmed = map[wire.OutPoint]*wire.TxOut{f.c1: wire.NewTxOut(1000, f.a)}

	m1 := wire.NewMsgTx(2)
	m1.AddTxIn(wire.NewTxIn(&f.c1, nil, nil))
	m1.AddTxOut(wire.NewTxOut(600, f.b))
	m1.AddTxOut(wire.NewTxOut(300, f.a))
	m1.AddTxOut(wire.NewTxOut(0, []byte{0x6a, 0x01, 0x01})) // OP_RETURN: not indexed
	f.tx1 = desc(m1, 100)

	m2 := wire.NewMsgTx(2)
	m2.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: m1.TxHash(), Index: 0}, nil, nil))
	m2.AddTxOut(wire.NewTxOut(550, f.c))
	f.tx2 = desc(m2, 50)
	return f
}

func desc(m *wire.MsgTx, fee int64) *mempool.TxDesc {
	return &mempool.TxDesc{TxDesc: mining.TxDesc{Tx: btcutil.NewTx(m), Fee: fee}}
}

func (f *poolFixture) prevOut(op wire.OutPoint) ([]byte, int64, error) {
	out, ok := f.confirmed[op]
	if !ok {
		return nil, 0, errors.New("unknown output")
	}
	return out.PkScript, out.Value, nil
}

func heights(es []MempoolEntry) []int32 {
	var hs []int32
	for _, e := range es {
		hs = append(hs, e.Height)
	}
	return hs
}

func TestMempoolViewFollowsThePool(t *testing.T) {
	f := newPoolFixture()
	tx1, tx2 := *f.tx1.Tx.Hash(), *f.tx2.Tx.Hash()

	// Children may come before parents; the view orders them.
	m := NewMempool(f.prevOut)
	touched := m.Add(f.tx2, f.tx1)
	if len(touched) != 3 {
		t.Fatalf("adding touched %d scripts, want 3", len(touched))
	}

	if es := m.Entries(f.shA); len(es) != 1 || es[0].TxHash != tx1 || es[0].Height != 0 || es[0].Fee != 100 {
		t.Errorf("entries of A: %+v", es)
	}
	es := m.Entries(f.shB)
	if len(es) != 2 || es[0].TxHash != tx1 || es[1].TxHash != tx2 || es[1].Height != -1 || es[1].Fee != 50 {
		t.Errorf("entries of B: %+v", es)
	}
	if got := balanceOf(m, f.shA); got != 300-1000 {
		t.Errorf("unconfirmed balance of A %d, want -700", got)
	}
	if got := balanceOf(m, f.shB); got != 0 {
		t.Errorf("unconfirmed balance of B %d, want 0", got)
	}
	if got := balanceOf(m, f.shC); got != 550 {
		t.Errorf("unconfirmed balance of C %d, want 550", got)
	}
	if us := m.Unspent(f.shB, nil); len(us) != 0 {
		t.Errorf("B's output is spent by tx2 but listed: %+v", us)
	}
	if us := m.Unspent(f.shA, nil); len(us) != 1 || us[0].TxHash != tx1 || us[0].Vout != 1 || us[0].Value != 300 || us[0].Height != 0 {
		t.Errorf("unspent of A: %+v", us)
	}
	if !isSpent(m, f.c1) {
		t.Error("confirmed output spent by tx1 not reported spent")
	}
	if n := m.Len(); n != 2 {
		t.Errorf("Len %d", n)
	}

	// tx1 is mined: it leaves the pool and tx2 has only confirmed inputs.
	f.confirmed[wire.OutPoint{Hash: tx1, Index: 0}] = wire.NewTxOut(600, f.b)
	touched = m.Sync([]*mempool.TxDesc{f.tx2})
	if !containsAll(touched, f.shA, f.shB, f.shC) {
		t.Errorf("mining tx1 touched %v", touched)
	}
	if es := m.Entries(f.shB); len(es) != 1 || es[0].TxHash != tx2 || es[0].Height != 0 {
		t.Errorf("after mining tx1, entries of B: %+v", es)
	}
	if isSpent(m, f.c1) {
		t.Error("tx1 left the pool but its spend is still reported")
	}

	// The block is disconnected: tx1 comes back and tx2 is at -1 again.
	touched = m.Sync([]*mempool.TxDesc{f.tx2, f.tx1})
	if !containsAll(touched, f.shC) {
		t.Errorf("tx1 coming back touched %v", touched)
	}
	if hs := heights(m.Entries(f.shC)); len(hs) != 1 || hs[0] != -1 {
		t.Errorf("after tx1 came back, heights of C: %v", hs)
	}

	// Everything leaves.
	m.Sync(nil)
	if len(m.Entries(f.shA))+len(m.Entries(f.shB))+len(m.Entries(f.shC)) != 0 || isSpent(m, f.c1) {
		t.Error("empty pool, non-empty view")
	}
}

func containsAll(set []ScriptHash, want ...ScriptHash) bool {
	for _, w := range want {
		found := false
		for _, s := range set {
			if s == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Mempool order of protocol 1.6: height 0 before -1, then txid as
// displayed hex (electrum-protocol protocol-basics.rst, Status Example).
func TestMempoolOrderIsDisplayHex(t *testing.T) {
	a := mustHash(t, "80b19848aed792565ab7c5a79b7c2a00fbf985741579396ebe0ab6098e607311")
	b := mustHash(t, "e02a1dadfa83b996b24175df807b271ea5d02937ef5b35c195fac1e1bdc3198f")
	if !DisplayLess(&a, &b) || DisplayLess(&b, &a) || DisplayLess(&a, &a) {
		t.Fatal("displayLess does not order by displayed hex")
	}
}

func TestFeeHistogramDescends(t *testing.T) {
	m := NewMempool(nil)
	var descs []*mempool.TxDesc
	for i := 0; i < 400; i++ {
		tx := wire.NewMsgTx(2)
		tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{byte(i), byte(i >> 8), 7}}, nil, nil))
		tx.AddTxOut(wire.NewTxOut(1000, make([]byte, 1000))) // about 1 kvB
		descs = append(descs, desc(tx, int64(1000*(1+i%37))))
	}
	m.Add(descs...)
	hist := m.FeeHistogram()
	if len(hist) < 2 {
		t.Fatalf("histogram %v", hist)
	}
	var total float64
	for i, bin := range hist {
		if i > 0 && !(bin[0] < hist[i-1][0]) {
			t.Fatalf("fee rates not strictly descending: %v", hist)
		}
		total += bin[1]
	}
	var vs int64
	for _, d := range descs {
		vs += mempool.GetTxVirtualSize(d.Tx)
	}
	if total != float64(vs) {
		t.Errorf("histogram holds %v vbytes, pool %d", total, vs)
	}
}

// A transaction that enters the view while the output it spends is known
// nowhere (mid-reorganization: its parent's block has left the index and
// the parent is not back in the pool yet) gets the spent output's script
// once a later Sync finds it, with its entry, balance and status.
func TestMempoolResolvesSpentOutputLater(t *testing.T) {
	f := newPoolFixture()
	missing := f.confirmed[f.c1]
	delete(f.confirmed, f.c1)
	m := NewMempool(f.prevOut)
	m.Sync([]*mempool.TxDesc{f.tx1})
	if es := m.Entries(f.shA); len(es) != 1 {
		t.Fatalf("script A before: %d entries (the change output only)", len(es))
	}
	if got := balanceOf(m, f.shA); got != 300 {
		t.Fatalf("script A before: balance %d, want the change 300", got)
	}
	f.confirmed[f.c1] = missing
	touched := m.Sync([]*mempool.TxDesc{f.tx1})
	if !containsAll(touched, f.shA) {
		t.Fatalf("Sync touched %v, not script A", touched)
	}
	if got := balanceOf(m, f.shA); got != 300-1000 {
		t.Fatalf("script A after: balance %d, want %d", got, 300-1000)
	}
	if !isSpent(m, f.c1) {
		t.Fatal("the spent output is not marked spent")
	}
}

// The index is the node's PrevOutFetcher: the script and value of a
// confirmed output come from btcd's block files, located through the
// index's store. A pool transaction spending one charges its script.
func TestMempoolPrevOutFromIndex(t *testing.T) {
	params := &chaincfg.RegressionNetParams
	db, err := database.Create("ffldb", filepath.Join(t.TempDir(), "db"), params.Net)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	block, stxos, _, a, _ := undoTestBlock(t)
	if err := db.Update(func(tx database.Tx) error { return tx.StoreBlock(block) }); err != nil {
		t.Fatal(err)
	}
	idx, err := NewElectrumIndex(db, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	b := new(leveldb.Batch)
	// Blocks 0 to 6 held 9 transactions.
	b.Put(blkKey(6), blkVal(9, &block.MsgBlock().Header.PrevBlock))
	applyConnect(batchWriter{b}, planBlock(block, stxos, false), 9)
	b.Put(tipKey, tipVal(block.Hash(), 7))
	if err := idx.store.Write(b, nil); err != nil {
		t.Fatal(err)
	}
	idx.republish()

	txid := *block.Transactions()[1].Hash()
	if script, value, err := idx.PrevOut(wire.OutPoint{Hash: txid, Index: 0}); err != nil ||
		!bytes.Equal(script, a) || value != 600 {
		t.Fatalf("PrevOut of output 0: %x %d %v", script, value, err)
	}
	if script, value, err := idx.PrevOut(wire.OutPoint{Hash: txid, Index: 1}); err != nil || script[0] != 0x6a || value != 0 {
		t.Fatalf("PrevOut of the OP_RETURN output: %x %d %v", script, value, err)
	}
	if _, _, err := idx.PrevOut(wire.OutPoint{Hash: txid, Index: 2}); err == nil {
		t.Fatal("PrevOut of an output past the transaction's")
	}
	if _, _, err := idx.PrevOut(wire.OutPoint{Hash: chainhash.Hash{9}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("PrevOut of an unknown transaction: %v", err)
	}

	m := NewMempool(idx.PrevOut)
	spend := wire.NewMsgTx(2)
	spend.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: txid, Index: 0}, nil, nil))
	spend.AddTxOut(wire.NewTxOut(550, []byte{0x53}))
	touched := m.Add(desc(spend, 50))
	shA := ScriptHashFromScript(a)
	if !containsAll(touched, shA, ScriptHashFromScript([]byte{0x53})) || balanceOf(m, shA) != -600 || !isSpent(m, wire.OutPoint{Hash: txid}) {
		t.Fatalf("pool spend of an indexed output: touched %v, balance of its script %d", touched, balanceOf(m, shA))
	}
}

// isSpent reports whether an unconfirmed transaction of m spends op.
func isSpent(m *Mempool, op wire.OutPoint) bool {
	_, ok := m.SpentBy(op)
	return ok
}

// balanceOf is the unconfirmed change of sh's balance in m.
func balanceOf(m *Mempool, sh ScriptHash) int64 {
	d, _ := m.BalanceOf(sh, nil)
	return d
}

// btcd announces accepted transactions outside its pool's lock, so a
// child's event can come before its parent's. Once the parent comes, the
// child's spend of its output counts, and the child is at height -1.
func TestMempoolChildBeforeParent(t *testing.T) {
	f := newPoolFixture()
	m := NewMempool(f.prevOut)
	m.Add(f.tx2)
	touched := m.Add(f.tx1)
	if !containsAll(touched, f.shA, f.shB, f.shC) {
		t.Fatalf("the parent's Add touched %v, want A, B and the child's C", touched)
	}
	if got := balanceOf(m, f.shB); got != 0 {
		t.Fatalf("script B: balance %d, want 600 paid by the parent and spent by the child", got)
	}
	if !isSpent(m, wire.OutPoint{Hash: *f.tx1.Tx.Hash(), Index: 0}) {
		t.Fatal("the parent's output is not spent")
	}
	if es := m.Entries(f.shB); len(es) != 2 {
		t.Fatalf("script B: %d entries, want the parent and the child", len(es))
	}
	if hs := heights(m.Entries(f.shC)); len(hs) != 1 || hs[0] != -1 {
		t.Fatalf("the child's height on script C: %v, want -1", hs)
	}
	// The next reconciliation agrees.
	if touched := m.Sync([]*mempool.TxDesc{f.tx1, f.tx2}); len(touched) != 0 {
		t.Fatalf("Sync after found %v changed", touched)
	}
}
