package integration

import (
	"context"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// branches is the set-up of the reorg tests: two real btcd nodes A and B
// that share 101 blocks and then mine competing branches without seeing
// each other (A: blocks 102 with a wallet transaction T, and 103; B: 102 to
// 105), and our node, which followed A and then reorganized to B's heavier
// branch once it peered with B. Two Electrum clients are subscribed to the
// tip; client 1 to the script T pays, client 2 to A's coinbase script,
// which T spends from.
type branches struct {
	a, b               *rpctest.Harness
	ours               *Node
	ec1, ec2           *ElectrumClient
	txHash             *chainhash.Hash
	txid               string
	coinbase           []byte
	shPaid, shCoinbase string
	aTip, bTip         *chainhash.Hash
	aHeader, bHeader   string
	aCoinbaseHist      []HistoryItem
}

// setUpBranches builds the branches set-up and checks what the clients see
// at each step: A's tip and T confirmed at 102, then B's tip, every header
// equal to B's, T back in the mempool and both statuses equal to the ones
// computed from get_history.
func setUpBranches(t *testing.T, ctx context.Context) *branches {
	s := &branches{}
	s.a = StartBtcd(t, BtcdConfig{MatureOutputs: 1})
	s.b = StartBtcd(t, BtcdConfig{})
	a, b := s.a, s.b
	// B gets A's blocks by submitblock, so the two never peer.
	for h := int64(1); h <= 101; h++ {
		blk, err := a.Client.GetBlock(mustHash(t, a.Client, h))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Client.SubmitBlock(btcutil.NewBlock(blk), nil); err != nil {
			t.Fatalf("submitblock %d to B: %v", h, err)
		}
	}
	waitSameTip(t, ctx, a.Client, b.Client)

	s.ours = StartNode(t, NodeConfig{Args: []string{"--connect=" + a.P2PAddress()}})
	ours := s.ours
	waitSameTip(t, ctx, a.Client, ours.RPC)

	addr, err := a.NewAddress()
	if err != nil {
		t.Fatal(err)
	}
	paid, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.Client.GetBlock(mustHash(t, a.Client, 1))
	if err != nil {
		t.Fatal(err)
	}
	s.coinbase = first.Transactions[0].TxOut[0].PkScript
	s.shPaid, s.shCoinbase = ScriptHash(paid), ScriptHash(s.coinbase)
	s.ec1, s.ec2 = ours.Electrum, ours.DialElectrum(t, ctx)
	for _, ec := range []*ElectrumClient{s.ec1, s.ec2} {
		if _, err := ec.SubscribeHeaders(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ec1.SubscribeScriptHash(ctx, s.shPaid); err != nil {
		t.Fatal(err)
	}
	status, err := s.ec2.SubscribeScriptHash(ctx, s.shCoinbase)
	if err != nil {
		t.Fatal(err)
	}
	checkStatus(t, ctx, s.ec2, s.shCoinbase, status)

	// A's branch: T in block 102, then 103.
	if s.txHash, err = a.SendOutputs([]*wire.TxOut{wire.NewTxOut(30_000_000, paid)}, 10); err != nil {
		t.Fatal(err)
	}
	s.txid = s.txHash.String()
	if _, err := a.Client.Generate(2); err != nil {
		t.Fatal(err)
	}
	s.aTip, _ = waitSameTip(t, ctx, a.Client, ours.RPC)
	s.aHeader = headerHex(t, a.Client, 103)
	s.checkOnA(t, ctx)

	// B's heavier branch; our node meets B.
	if _, err := b.Client.Generate(3); err != nil {
		t.Fatal(err)
	}
	if err := ours.RPC.AddNode(b.P2PAddress(), rpcclient.ANAdd); err != nil {
		t.Fatalf("addnode: %v", err)
	}
	WaitFor(t, ctx, "our node to peer with B", func() bool {
		peers, err := b.Client.GetPeerInfo()
		return err == nil && len(peers) == 1
	})
	// As with btcd, a node that is current does not go looking for a
	// longer chain on a new peer; it learns of it when the peer announces
	// a block.
	if _, err := b.Client.Generate(1); err != nil {
		t.Fatal(err)
	}
	var bHeight int32
	if s.bTip, bHeight = waitSameTip(t, ctx, b.Client); bHeight != 105 {
		t.Fatalf("B is at %d, want 105", bHeight)
	}
	WaitFor(t, ctx, "our node to reorganize to B's branch", func() bool {
		h, _, err := ours.RPC.GetBestBlock()
		return err == nil && *h == *s.bTip
	})
	s.bHeader = headerHex(t, b.Client, 105)
	s.checkOnB(t, ctx)
	return s
}

// checkOnA checks that our node is on A's branch and the clients see it:
// A's tip, T confirmed at 102 and not in the mempool, A's coinbase history.
func (s *branches) checkOnA(t *testing.T, ctx context.Context) {
	t.Helper()
	waitTip(t, ctx, s.ec1, 103, s.aHeader)
	waitTip(t, ctx, s.ec2, 103, s.aHeader)
	checkHeaders(t, ctx, s.ec1, s.ours.RPC, 103)
	if h := headerHex(t, s.ours.RPC, 103); h != s.aHeader {
		t.Fatalf("our node's block 103 is %s, A's is %s", h, s.aHeader)
	}
	if inMempool(t, s.ours.RPC, s.txHash) {
		t.Errorf("%s is in the mempool while confirmed in A's block 102", s.txid)
	}
	waitStatus(t, ctx, s.ec1, s.shPaid, []HistoryItem{{TxHash: s.txid, Height: 102}})
	if s.aCoinbaseHist == nil {
		var err error
		if s.aCoinbaseHist, err = ChainHistory(s.a.Client, s.coinbase); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus(t, ctx, s.ec2, s.shCoinbase, s.aCoinbaseHist)
	checkMerkle(t, ctx, s.ec1, s.ours.RPC, s.txid, 102)
}

// checkOnB checks that our node is on B's branch and the clients see it:
// B's tip and headers, T back in the mempool (height 0 in both histories),
// the coinbase script's confirmed history as B's blocks give it.
func (s *branches) checkOnB(t *testing.T, ctx context.Context) {
	t.Helper()
	waitTip(t, ctx, s.ec1, 105, s.bHeader)
	waitTip(t, ctx, s.ec2, 105, s.bHeader)
	checkHeaders(t, ctx, s.ec1, s.b.Client, 105)
	if !inMempool(t, s.ours.RPC, s.txHash) {
		t.Fatalf("%s is not in the mempool on B's branch", s.txid)
	}
	waitStatus(t, ctx, s.ec1, s.shPaid, []HistoryItem{{TxHash: s.txid, Height: 0}})
	want, err := ChainHistory(s.b.Client, s.coinbase)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, HistoryItem{TxHash: s.txid, Height: 0})
	waitStatus(t, ctx, s.ec2, s.shCoinbase, want)
}

// TestReorgBetweenBtcdNodes checks the P2P reorganization of the branches
// set-up, then, with the peers disconnected, a reorganization by
// invalidateblock on the first block of B's branch (our node returns to
// A's branch, which it kept: T confirmed at 102 again, A's tip notified)
// and back by reconsiderblock (B's tip, T in the mempool again).
func TestReorgBetweenBtcdNodes(t *testing.T) {
	ctx := testContext(t)
	s := setUpBranches(t, ctx)
	for _, p := range []string{s.a.P2PAddress(), s.b.P2PAddress()} {
		if err := s.ours.RPC.AddNode(p, rpcclient.ANRemove); err != nil {
			t.Fatalf("addnode remove %s: %v", p, err)
		}
	}
	WaitFor(t, ctx, "our node to drop its peers", func() bool {
		n, err := s.ours.RPC.GetConnectionCount()
		return err == nil && n == 0
	})

	bFork := mustHash(t, s.b.Client, 102)
	if err := s.ours.RPC.InvalidateBlock(bFork); err != nil {
		t.Fatalf("invalidateblock: %v", err)
	}
	if h, height, err := s.ours.RPC.GetBestBlock(); err != nil || *h != *s.aTip || height != 103 {
		t.Fatalf("after invalidateblock the tip is %v@%d (%v), want A's %v@103", h, height, err, s.aTip)
	}
	s.checkOnA(t, ctx)

	if err := s.ours.RPC.ReconsiderBlock(bFork); err != nil {
		t.Fatalf("reconsiderblock: %v", err)
	}
	if h, _, err := s.ours.RPC.GetBestBlock(); err != nil || *h != *s.bTip {
		t.Fatalf("after reconsiderblock the tip is %v (%v), want B's %v", h, err, s.bTip)
	}
	s.checkOnB(t, ctx)
}

// TestInvalidateBlockWithPeerAhead is the same invalidateblock and
// reconsiderblock round trip with B still connected. Our node must drop T
// from its mempool when A's block 102 is connected again, and have T back
// in the mempool after reconsiderblock. Stock btcd v0.26.2 fails this: its
// sync manager skips mempool updates for connected blocks while the sync
// peer announces a higher tip, so T stays in the pool although confirmed,
// and the reinsert on the next disconnect fails and drops T altogether.
func TestInvalidateBlockWithPeerAhead(t *testing.T) {
	ctx := testContext(t)
	s := setUpBranches(t, ctx)
	bFork := mustHash(t, s.b.Client, 102)
	if err := s.ours.RPC.InvalidateBlock(bFork); err != nil {
		t.Fatalf("invalidateblock: %v", err)
	}
	s.checkOnA(t, ctx)
	if err := s.ours.RPC.ReconsiderBlock(bFork); err != nil {
		t.Fatalf("reconsiderblock: %v", err)
	}
	s.checkOnB(t, ctx)
}

// mustHash returns the hash of the main-chain block at height.
func mustHash(t *testing.T, c *rpcclient.Client, height int64) *chainhash.Hash {
	t.Helper()
	h, err := c.GetBlockHash(height)
	if err != nil {
		t.Fatalf("getblockhash %d: %v", height, err)
	}
	return h
}

// inMempool reports whether txid is in the node's mempool.
func inMempool(t *testing.T, c *rpcclient.Client, txid *chainhash.Hash) bool {
	t.Helper()
	pool, err := c.GetRawMempool()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range pool {
		if *h == *txid {
			return true
		}
	}
	return false
}

// waitTip waits for a headers notification of exactly this height and
// header.
func waitTip(t *testing.T, ctx context.Context, ec *ElectrumClient, height int32, hexHeader string) {
	t.Helper()
	var last HeaderTip
	_, err := ec.NextHeaderMatching(ctx, func(tip HeaderTip) bool {
		last = tip
		return tip.Height == height && tip.Hex == hexHeader
	})
	if err != nil {
		t.Fatalf("no headers notification of %d %s (last seen %d %s): %v", height, hexHeader, last.Height, last.Hex, err)
	}
}

// waitStatus waits until the server notifies the status of want for sh,
// then checks get_history is exactly want (txids and heights) and that the
// status is the one computed from it.
func waitStatus(t *testing.T, ctx context.Context, ec *ElectrumClient, sh string, want []HistoryItem) {
	t.Helper()
	wantStatus := Status(want)
	var last *string
	_, err := ec.NextStatus(ctx, sh, func(s *string) bool {
		last = s
		return str(s) == str(wantStatus)
	})
	if err != nil {
		hist, _ := ec.GetHistory(context.Background(), sh)
		t.Fatalf("no status %s for %s (last notified %s; get_history %+v, want %+v): %v",
			str(wantStatus), sh, str(last), hist, want, err)
	}
	hist := checkStatus(t, ctx, ec, sh, wantStatus)
	if got := withoutFees(hist); !equalHistory(got, want) {
		t.Fatalf("get_history of %s = %+v, want %+v", sh, got, want)
	}
}

// TestReorgReplacesDoubleSpend mines 101 blocks on our node (to the
// harness's key) and gives them to two real btcd nodes, which then confirm
// conflicting spends of the same coinbase: A confirms T paying script 1 in
// one block, B confirms T' paying script 2 in a longer branch. Our node
// follows A, then B: T is dropped (it conflicts with T', so it must not
// come back to the mempool), script 1's status goes back to null and
// script 2's shows T' confirmed, as the subscribed client is told.
func TestReorgReplacesDoubleSpend(t *testing.T) {
	ctx := testContext(t)
	ours := StartNode(t, NodeConfig{})
	if _, err := ours.Mine(101); err != nil {
		t.Fatal(err)
	}
	a, b := StartBtcd(t, BtcdConfig{}), StartBtcd(t, BtcdConfig{})
	for h := int64(1); h <= 101; h++ {
		blk, err := ours.RPC.GetBlock(mustHash(t, ours.RPC, h))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*rpcclient.Client{a.Client, b.Client} {
			if err := c.SubmitBlock(btcutil.NewBlock(blk), nil); err != nil {
				t.Fatalf("submitblock %d: %v", h, err)
			}
		}
	}
	script1, script2 := otherScript(t), payScript(t, 0x43)
	tx := spendCoinbaseAt(t, ours.RPC, 1, script1)
	conflict := spendCoinbaseAt(t, ours.RPC, 1, script2)
	if _, err := a.Client.SendRawTransaction(tx, false); err != nil {
		t.Fatalf("T to A: %v", err)
	}
	if _, err := a.Client.Generate(1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Client.SendRawTransaction(conflict, false); err != nil {
		t.Fatalf("T' to B: %v", err)
	}
	if _, err := b.Client.Generate(2); err != nil {
		t.Fatal(err)
	}

	ec := ours.Electrum
	sh1, sh2 := ScriptHash(script1), ScriptHash(script2)
	for _, sh := range []string{sh1, sh2} {
		if st, err := ec.SubscribeScriptHash(ctx, sh); err != nil || st != nil {
			t.Fatalf("subscribe %s: %s, %v", sh, str(st), err)
		}
	}
	if err := ours.RPC.AddNode(a.P2PAddress(), rpcclient.ANAdd); err != nil {
		t.Fatal(err)
	}
	waitSameTip(t, ctx, a.Client, ours.RPC)
	waitStatus(t, ctx, ec, sh1, []HistoryItem{{TxHash: tx.TxHash().String(), Height: 102}})

	if err := ours.RPC.AddNode(b.P2PAddress(), rpcclient.ANAdd); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, ctx, "our node to peer with B", func() bool {
		peers, err := b.Client.GetPeerInfo()
		return err == nil && len(peers) == 1
	})
	if _, err := b.Client.Generate(1); err != nil {
		t.Fatal(err)
	}
	waitSameTip(t, ctx, b.Client, ours.RPC)
	waitStatus(t, ctx, ec, sh2, []HistoryItem{{TxHash: conflict.TxHash().String(), Height: 102}})
	waitStatus(t, ctx, ec, sh1, nil)
	txHash := tx.TxHash()
	if inMempool(t, ours.RPC, &txHash) {
		t.Fatalf("T, which conflicts with the confirmed T', is in the mempool")
	}
	if mp, err := ec.GetMempool(ctx, sh1); err != nil || len(mp) != 0 {
		t.Fatalf("get_mempool of script 1 = %+v, %v", mp, err)
	}
	checkMerkle(t, ctx, ec, b.Client, conflict.TxHash().String(), 102)
}

// TestDeepReorgDropsCoinbaseSpend: a Fund payment spends a faucet
// coinbase; Reorg(tip height) replaces every block, that coinbase's too. The
// payment, put back into the pool from its own replaced block, then spends
// an output that exists nowhere: the node drops it from btcd's pool, the
// Electrum server stops listing it, and the faucet, which would otherwise
// spend the stranded payment's change, funds again.
func TestDeepReorgDropsCoinbaseSpend(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{})
	addr, script := newWalletAddress(t)
	sh := ScriptHash(script)
	op, err := n.Fund(addr, btcutil.Amount(1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := n.RPC.GetRawTransaction(&op.Hash)
	if err != nil {
		t.Fatal(err)
	}
	_, height, _ := n.RPC.GetBestBlock()
	branch, err := n.Reorg(int(height)) // every block but genesis
	if err != nil {
		t.Fatal(err)
	}
	if _, tip, _ := n.RPC.GetBestBlock(); len(branch) != int(height)+1 || tip != height+1 {
		t.Fatalf("Reorg(%d): branch of %d, tip %d", height, len(branch), tip)
	}
	in := tx.MsgTx().TxIn[0].PreviousOutPoint
	if out, err := n.RPC.GetTxOut(&in.Hash, in.Index, true); err != nil || out != nil {
		t.Fatalf("the payment's input %v still exists after the reorg (%v)", in, err)
	}
	pool, err := n.RPC.GetRawMempool()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range pool {
		if *h == op.Hash {
			t.Errorf("after Reorg(%d) the payment %v, whose input (a replaced coinbase, %v) exists nowhere, is in the node's mempool", height, op.Hash, in)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	var hist []HistoryItem
	for {
		hist, err = n.Electrum.GetHistory(ctx, sh)
		if err == nil && len(hist) == 0 {
			break
		}
		if wctx.Err() != nil {
			t.Errorf("the Electrum server still lists the payment that spends a replaced coinbase: get_history = %+v (%v)", withoutFees(hist), err)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A stranded payment's change would be spent by the faucet's next
	// payment, which no block could confirm.
	addr2, _ := newWalletAddress(t)
	if _, err := n.Fund(addr2, btcutil.Amount(1_000_000)); err != nil {
		t.Errorf("Fund after the deep reorg: %v", err)
	}
}
