package testchain

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Coin is a spendable output the harness knows how to spend.
type Coin struct {
	// OutPoint identifies the output.
	OutPoint wire.OutPoint
	// Value is its amount in satoshis.
	Value int64
	// Height is the height of the block that created it.
	Height int32
	// Coinbase is true for coinbase outputs (subject to maturity).
	Coinbase bool
	// Script is how to spend it.
	Script *Script
}

// wallet is a set of coins with a deterministic order, so that a seeded
// random generator picks the same coins on every run.
type wallet struct {
	coins []Coin
	pos   map[wire.OutPoint]int
}

// newWallet returns an empty wallet.
func newWallet() *wallet {
	return &wallet{pos: make(map[wire.OutPoint]int)}
}

// add inserts a coin; adding a coin twice is a harness bug.
func (w *wallet) add(c Coin) {
	if _, ok := w.pos[c.OutPoint]; ok {
		panic("testchain: coin added twice: " + c.OutPoint.String())
	}
	w.pos[c.OutPoint] = len(w.coins)
	w.coins = append(w.coins, c)
}

// remove deletes a coin by outpoint and returns it.
func (w *wallet) remove(op wire.OutPoint) Coin {
	i, ok := w.pos[op]
	if !ok {
		panic("testchain: removing a coin the wallet does not hold: " + op.String())
	}
	c := w.coins[i]
	last := len(w.coins) - 1
	if i != last {
		w.coins[i] = w.coins[last]
		w.pos[w.coins[i].OutPoint] = i
	}
	w.coins = w.coins[:last]
	delete(w.pos, op)
	return c
}

// has reports whether the wallet holds op.
func (w *wallet) has(op wire.OutPoint) bool {
	_, ok := w.pos[op]
	return ok
}

// blockRecord is what the harness remembers about every block it built: its
// place in the tree and the wallet changes it makes, so the wallet can move
// between branches.
type blockRecord struct {
	hash    chainhash.Hash
	parent  chainhash.Hash
	height  int32
	spent   []Coin // wallet coins the block spends, in spending order
	created []Coin // spendable outputs the block creates and leaves unspent
}

// apply moves the wallet forward over r.
func (w *wallet) apply(r *blockRecord) {
	for _, c := range r.spent {
		w.remove(c.OutPoint)
	}
	for _, c := range r.created {
		w.add(c)
	}
}

// undo moves the wallet back over r.
func (w *wallet) undo(r *blockRecord) {
	for i := len(r.created) - 1; i >= 0; i-- {
		w.remove(r.created[i].OutPoint)
	}
	for i := len(r.spent) - 1; i >= 0; i-- {
		w.add(r.spent[i])
	}
}
