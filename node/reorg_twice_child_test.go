package node

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/btcsuite/btclog"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// logTap copies the node's log output into a buffer a test can search.
type logTap struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *logTap) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *logTap) has(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Contains(w.buf.String(), s)
}

// TestTwoQuickReorgsKeepChildOfParentConfirmedAgain: P (version 3:
// valid by consensus, not standard with --rejectnonstd) is mined in a;
// C, spending P, waits in the pool. A first reorganization replaces a
// with b1 (P again) and b2: btcd's sync manager cannot put P back into the
// pool at a's disconnect and removes C with it; the node held C aside and
// queues it for its dispatcher to submit again. Before the dispatcher gets
// to it, a second reorganization replaces b1 and b2 with c1 (P again), c2,
// c3. Every branch the node was ever on confirms P, so C, a valid
// transaction of the pool throughout, must still be there at the end, as
// it is in Bitcoin Core (and as the node keeps it after one
// reorganization, TestReorgKeepsChildOfNonStandardParentConfirmedAgain).
//
// The dispatcher is made to run the restore in the second
// reorganization's window (between b1's disconnect and c1's connect): the
// test holds the view's lock, which the dispatcher takes in every
// reconciliation, across the first reorganization, and lets go of it in a
// chain callback at b1's disconnect, waiting there until the dispatcher
// has tried C (its debug log line).
func TestTwoQuickReorgsKeepChildOfParentConfirmedAgain(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.RejectNonStd = true
	n := startNode(t, cfg)
	generate(t, n, 101)
	s := scenarioScript(0xa1)
	sh := indexers.ScriptHashFromScript(s).String()

	cb := coinbaseOf(t, n, 1)
	ptx := wire.NewMsgTx(3)
	ptx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(hashPtr(cb.TxHash()), 0), nil, nil))
	ptx.AddTxOut(wire.NewTxOut(cb.TxOut[0].Value-10_000, dynScript()))
	sig, err := txscript.SignatureScript(ptx, 0, cb.TxOut[0].PkScript, txscript.SigHashAll, testKey, true)
	if err != nil {
		t.Fatal(err)
	}
	ptx.TxIn[0].SignatureScript = sig
	p := btcutil.NewTx(ptx)
	if _, err := n.ProcessTx(p); err == nil {
		t.Fatal("P (version 3) was accepted into the pool; the test needs it non-standard")
	}
	fork := n.Chain().BestSnapshot().Height
	mineWith(t, n, p)
	c := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{ptx, 0, dynKey}}, wire.NewTxOut(ptx.TxOut[0].Value-10_000, s))
	if _, err := n.ProcessTx(c); err != nil {
		t.Fatal(err)
	}
	w := dialElectrum(t, n)
	w.call("server.version", "wallet", "1.4")
	want := specStatus(c.Hash().String() + ":0")
	if got := w.call("blockchain.scripthash.subscribe", sh); got != want {
		t.Fatalf("before: %v, want C at 0", got)
	}

	tap := &logTap{}
	output.mu.Lock()
	oldOut := output.stdout
	output.stdout = tap
	output.mu.Unlock()
	log.SetLevel(btclog.LevelDebug)
	t.Cleanup(func() {
		log.SetLevel(btclog.LevelInfo)
		output.mu.Lock()
		output.stdout = oldOut
		output.mu.Unlock()
	})

	// First reorganization, the dispatcher held: it takes the view's lock
	// for C announced again, and waits there, so that every event of the
	// reorganization (its restore among them) waits in the queue.
	n.viewMu.Lock()
	var once sync.Once
	release := func() { once.Do(n.viewMu.Unlock) }
	t.Cleanup(release)
	var descC []*mempool.TxDesc
	for _, d := range n.TxPool().TxDescs() {
		if *d.Tx.Hash() == *c.Hash() {
			descC = append(descC, d)
		}
	}
	n.AnnounceNewTransactions(descC)
	waitFor(t, "the dispatcher to take the announcement", func() bool {
		n.events.mu.Lock()
		defer n.events.mu.Unlock()
		return len(n.events.items) == 0
	})
	b := submitBranch(t, n, fork, 2*time.Second, []*btcutil.Tx{p}, nil)
	if n.TxPool().HaveTransaction(c.Hash()) {
		t.Fatal("C is in the pool before the dispatcher ran: btcd kept it, the scenario does not apply")
	}

	// Second reorganization; at b1's disconnect the dispatcher goes on and
	// tries C while P is confirmed nowhere.
	tried := false
	n.Chain().Subscribe(func(note *blockchain.Notification) {
		blk, ok := note.Data.(*btcutil.Block)
		if !ok || note.Type != blockchain.NTBlockDisconnected || *blk.Hash() != *b[0].Hash() {
			return
		}
		release()
		deadline := time.Now().Add(30 * time.Second)
		for !tap.has(c.Hash().String() + ", held aside during a reorganization, stays out") {
			if time.Now().After(deadline) {
				return // hang guard; the test then reports what it finds
			}
			time.Sleep(5 * time.Millisecond)
		}
		tried = true
	})
	submitBranch(t, n, fork, 3*time.Second, []*btcutil.Tx{p}, nil, nil)
	if !tried {
		t.Log("the dispatcher did not try C in the second reorganization's window")
	}
	syncIndex(t, n)
	if best := n.Chain().BestSnapshot(); best.Height != fork+3 {
		t.Fatalf("tip at %d, want %d", best.Height, fork+3)
	}
	// C returns to the pool (hang guard), and a wallet sees it again.
	waitFor(t, "C back in btcd's pool", func() bool { return n.TxPool().HaveTransaction(c.Hash()) })
	waitFor(t, "C's script's status to show C at height 0", func() bool {
		f := dialElectrum(t, n)
		f.call("server.version", "fresh", "1.4")
		return f.call("blockchain.scripthash.subscribe", sh) == want
	})
}

// submitBranch builds count blocks on the main-chain block at height from
// (txs[i] in block i) and submits them with ProcessBlock; tweak makes the
// blocks differ from others built on the same parent.
func submitBranch(t testing.TB, n *Node, from int32, tweak time.Duration, txs ...[]*btcutil.Tx) []*btcutil.Block {
	t.Helper()
	parent, err := n.Chain().BlockByHeight(from)
	if err != nil {
		t.Fatal(err)
	}
	parent.SetHeight(from)
	var out []*btcutil.Block
	prev := parent
	for i, btxs := range txs {
		b, err := rpctest.CreateBlock(prev, btxs, 4, prev.MsgBlock().Header.Timestamp.Add(time.Second+tweak),
			testMiningAddr(t), nil, n.Chain().ChainParams())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := n.Chain().ProcessBlock(b, blockchain.BFNone); err != nil {
			t.Fatalf("block %d of the branch: %v", i, err)
		}
		b.SetHeight(from + int32(i) + 1)
		out = append(out, b)
		prev = b
	}
	return out
}
