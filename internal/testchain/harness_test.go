package testchain

import (
	"math/rand"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// chainStats walks the main chain and checks that no outpoint is spent twice
// and no OP_RETURN or unspendable-pool output is ever spent; it counts the
// generator features seen.
type chainStats struct {
	txs, sameBlockSpends, sameScriptOutputs, selfPays, opReturns, unspendables, witnessTxs int
}

func walkChain(t *testing.T, h *Harness) chainStats {
	t.Helper()
	unspendable := make(map[string]bool)
	for _, s := range h.Pool.Unspendable {
		unspendable[string(s.PkScript)] = true
	}
	type outInfo struct {
		script []byte
		height int32
	}
	outs := make(map[wire.OutPoint]outInfo)
	spent := make(map[wire.OutPoint]bool)
	var st chainStats
	_, tipHeight := h.Tip()
	for height := int32(1); height <= tipHeight; height++ {
		block, err := h.Chain.BlockByHeight(height)
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range block.Transactions() {
			msg := tx.MsgTx()
			st.txs++
			if msg.HasWitness() {
				st.witnessTxs++
			}
			inScripts := make(map[string]bool)
			if !blockchain.IsCoinBaseTx(msg) {
				for _, in := range msg.TxIn {
					op := in.PreviousOutPoint
					o, ok := outs[op]
					if !ok {
						t.Fatalf("height %d: input spends unknown output %v", height, op)
					}
					if spent[op] {
						t.Fatalf("height %d: %v spent twice", height, op)
					}
					spent[op] = true
					if txscript.IsNullData(o.script) || len(o.script) > 0 && o.script[0] == txscript.OP_RETURN {
						t.Fatalf("height %d: OP_RETURN output %v spent", height, op)
					}
					if unspendable[string(o.script)] {
						t.Fatalf("height %d: unspendable output %v spent", height, op)
					}
					if o.height == height {
						st.sameBlockSpends++
					}
					inScripts[string(o.script)] = true
				}
			}
			seen := make(map[string]bool)
			for i, out := range msg.TxOut {
				outs[wire.OutPoint{Hash: *tx.Hash(), Index: uint32(i)}] = outInfo{out.PkScript, height}
				switch {
				case len(out.PkScript) > 0 && out.PkScript[0] == txscript.OP_RETURN:
					st.opReturns++
				case unspendable[string(out.PkScript)]:
					st.unspendables++
				}
				if seen[string(out.PkScript)] {
					st.sameScriptOutputs++
				}
				seen[string(out.PkScript)] = true
				if inScripts[string(out.PkScript)] {
					st.selfPays++
				}
			}
		}
	}
	return st
}

func TestRandomBlocksConnect(t *testing.T) {
	h := New(t, nil)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 40; i++ {
		b, err := h.Mine(rng, DefaultSpec())
		if err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		if tip, _ := h.Tip(); tip != *b.Hash() {
			t.Fatalf("block %d did not become the tip", i)
		}
	}
	if _, height := h.Tip(); height != 141 {
		t.Fatalf("height %d, want 141", height)
	}
	if err := h.CheckWallet(); err != nil {
		t.Fatal(err)
	}
	st := walkChain(t, h)
	t.Logf("%+v", st)
	if st.sameBlockSpends == 0 || st.sameScriptOutputs == 0 || st.selfPays == 0 ||
		st.opReturns == 0 || st.unspendables == 0 || st.witnessTxs == 0 {
		t.Fatalf("generator missed a feature: %+v", st)
	}
}

func TestReorgSwitchesBranch(t *testing.T) {
	h := New(t, nil)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 10; i++ {
		if _, err := h.Mine(rng, DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	for depth := 1; depth <= 6; depth++ {
		oldTip, oldHeight := h.Tip()
		branch, err := h.Reorg(rng, depth, DefaultSpec())
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		tip, height := h.Tip()
		if height != oldHeight+1 || tip != *branch[len(branch)-1].Hash() {
			t.Fatalf("depth %d: tip %v at %d", depth, tip, height)
		}
		if h.Chain.MainChainHasBlock(&oldTip) {
			t.Fatalf("depth %d: old tip still in the main chain", depth)
		}
		if err := h.CheckWallet(); err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		if _, err := h.Mine(rng, DefaultSpec()); err != nil {
			t.Fatalf("after depth %d: %v", depth, err)
		}
	}
	walkChain(t, h)
}

func TestInvalidateAndReconsider(t *testing.T) {
	h := New(t, nil)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 8; i++ {
		if _, err := h.Mine(rng, DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	tip, height := h.Tip()
	target, _ := h.Chain.BlockHashByHeight(height - 3)
	if err := h.InvalidateBlock(*target); err != nil {
		t.Fatal(err)
	}
	if _, got := h.Tip(); got != height-4 {
		t.Fatalf("after invalidate height %d, want %d", got, height-4)
	}
	if err := h.CheckWallet(); err != nil {
		t.Fatal(err)
	}
	// Mine on the shortened chain: these blocks spend what the invalidated
	// blocks spent, from the wallet as it is now.
	for i := 0; i < 2; i++ {
		if _, err := h.Mine(rng, DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.ReconsiderBlock(*target); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Tip(); got != tip {
		t.Fatalf("after reconsider tip %v, want %v", got, tip)
	}
	if err := h.CheckWallet(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Mine(rng, DefaultSpec()); err != nil {
		t.Fatal(err)
	}
	walkChain(t, h)
}

func TestReopenKeepsChainAndWallet(t *testing.T) {
	dir := t.TempDir()
	h, err := Create(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(4))
	for i := 0; i < 5; i++ {
		if _, err := h.Mine(rng, DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	tip, _ := h.Tip()
	coins := len(h.Coins())
	if err := h.Reopen(nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Tip(); got != tip {
		t.Fatalf("reopened tip %v, want %v", got, tip)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h2, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if got, _ := h2.Tip(); got != tip {
		t.Fatalf("opened tip %v, want %v", got, tip)
	}
	if got := len(h2.Coins()); got != coins {
		t.Fatalf("rescanned wallet has %d coins, want %d", got, coins)
	}
	if err := h2.CheckWallet(); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.Reorg(rng, 2, DefaultSpec()); err != nil {
		t.Fatal(err)
	}
	walkChain(t, h2)
}

func TestReorgReplayMovesTransactions(t *testing.T) {
	h := New(t, nil)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(8))
	for i := 0; i < 8; i++ {
		if _, err := h.Mine(rng, DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	before, err := BuildModel(h)
	if err != nil {
		t.Fatal(err)
	}
	const depth = 3
	var old []TxPos
	var oldTxids []wire.OutPoint
	for height := before.Height - depth + 1; height <= before.Height; height++ {
		for pos, txid := range before.Blocks[height][1:] {
			old = append(old, TxPos{Height: height, Pos: uint32(pos + 1)})
			oldTxids = append(oldTxids, wire.OutPoint{Hash: txid})
		}
	}
	if _, err := h.ReorgReplay(rng, depth, DefaultSpec()); err != nil {
		t.Fatal(err)
	}
	after, err := BuildModel(h)
	if err != nil {
		t.Fatal(err)
	}
	kept, moved := 0, 0
	for i, op := range oldTxids {
		if p, ok := after.Txs[op.Hash]; ok {
			kept++
			if p != old[i] {
				moved++
			}
		}
	}
	t.Logf("%d of %d transactions re-mined, %d at another place", kept, len(oldTxids), moved)
	if kept < len(oldTxids)/2 || moved == 0 {
		t.Fatal("the replaying branch did not re-mine the replaced transactions")
	}
	if err := h.CheckWallet(); err != nil {
		t.Fatal(err)
	}
	walkChain(t, h)
}
