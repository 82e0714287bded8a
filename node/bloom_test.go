package node

import (
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2/bloom"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestBloomFilters loads a BIP 37 filter holding a fresh script: the mempool
// answer and the relayed inventory hold the payment to it and not an
// unrelated transaction, a filtered block arrives as a merkleblock proving
// the payment followed by the transaction itself, and filterclear and
// filteradd work as btcd's.
func TestBloomFilters(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := n.Generate(102, nil); err != nil {
		t.Fatal(err)
	}
	script := freshScript(t)

	invs := make(chan *wire.MsgInv, 10)
	merkles := make(chan *wire.MsgMerkleBlock, 1)
	txs := make(chan *wire.MsgTx, 10)
	pongs := make(chan struct{}, 10)
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{
		OnInv:         func(_ *peer.Peer, m *wire.MsgInv) { invs <- m },
		OnMerkleBlock: func(_ *peer.Peer, m *wire.MsgMerkleBlock) { merkles <- m },
		OnTx:          func(_ *peer.Peer, m *wire.MsgTx) { txs <- m },
		OnPong:        func(_ *peer.Peer, _ *wire.MsgPong) { pongs <- struct{}{} },
	})
	// sync waits until the node processed everything sent before: it
	// answers a ping after the messages queued ahead of it.
	sync := func() {
		t.Helper()
		p.QueueMessage(wire.NewMsgPing(1), nil)
		recv(t, pongs, "pong")
	}
	filter := bloom.NewFilter(10, 0, 0.0001, wire.BloomUpdateAll)
	filter.Add(script[2:]) // the witness program, as wallets add it
	p.QueueMessage(filter.MsgFilterLoad(), nil)
	sync()

	unrelated := spendCoinbase(t, n, 2, 10_000)
	if _, err := n.ProcessTx(unrelated); err != nil {
		t.Fatal(err)
	}
	paid := payFromCoinbase(t, n, 1, script)

	// Relay: only the matching transaction is announced.
	inv := recv(t, invs, "inv of the payment")
	if len(inv.InvList) != 1 || inv.InvList[0].Hash != *paid.Hash() {
		t.Fatalf("relayed %v, want only %v", inv.InvList, paid.Hash())
	}

	// mempool: the matching transaction only.
	p.QueueMessage(wire.NewMsgMemPool(), nil)
	inv = recv(t, invs, "mempool inv")
	if len(inv.InvList) != 1 || inv.InvList[0].Hash != *paid.Hash() {
		t.Fatalf("mempool answered %v, want only %v", inv.InvList, paid.Hash())
	}

	hashes, err := n.Generate(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	drainInvs(invs)
	getData := wire.NewMsgGetData()
	_ = getData.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, hashes[0]))
	p.QueueMessage(getData, nil)
	mb := recv(t, merkles, "merkleblock")
	if mb.Header.BlockHash() != *hashes[0] || mb.Transactions != 3 {
		t.Fatalf("merkleblock of %v with %d transactions", mb.Header.BlockHash(), mb.Transactions)
	}
	if got := recv(t, txs, "matched transaction"); got.TxHash() != *paid.Hash() {
		t.Fatalf("merkleblock followed by %v, want %v", got.TxHash(), paid.Hash())
	}
	// The merkle proof commits to the block's merkle root.
	matched := verifyMerkleBlock(t, mb)
	if len(matched) != 1 || matched[0] != *paid.Hash() {
		t.Fatalf("merkle proof matches %v", matched)
	}

	// filterclear: an unfiltered peer gets every transaction again.
	p.QueueMessage(wire.NewMsgFilterClear(), nil)
	sync()
	other := spendCoinbase(t, n, 3, 10_000)
	if _, err := n.ProcessTx(other); err != nil {
		t.Fatal(err)
	}
	for {
		inv = recv(t, invs, "inv after filterclear")
		if inv.InvList[0].Type == wire.InvTypeBlock {
			continue // the block mined above
		}
		if inv.InvList[0].Hash != *other.Hash() {
			t.Fatalf("after filterclear relayed %v", inv.InvList)
		}
		break
	}
	// filteradd without a filter breaks the protocol: disconnected.
	p.QueueMessage(wire.NewMsgFilterAdd([]byte{1, 2, 3}), nil)
	select {
	case <-p.Done():
	case <-time.After(testWait):
		t.Fatal("filteradd without a filter did not disconnect")
	}
}

// drainInvs empties the inv channel.
func drainInvs(c chan *wire.MsgInv) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// TestNoPeerBloomFilters starts with --nopeerbloomfilters: the service bit is
// off and a peer sending filterload is disconnected with a ban score of 100
// (its protocol version says it knew), while the node keeps serving.
func TestNoPeerBloomFilters(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.NoPeerBloomFilters = true
	n := startNode(t, cfg)
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{})
	if p.Services()&wire.SFNodeBloom != 0 {
		t.Fatalf("services %v advertise bloom filters", p.Services())
	}
	p.QueueMessage(bloom.NewFilter(10, 0, 0.001, wire.BloomUpdateNone).MsgFilterLoad(), nil)
	select {
	case <-p.Done():
	case <-time.After(testWait):
		t.Fatal("filterload was not refused")
	}
	// As btcd: the ban score rises by 100, which is the default
	// threshold, not above it, so the host is not banned yet.
	if n.bans.isBanned("127.0.0.1") {
		t.Fatal("banned on the first offence")
	}
	if _, err := n.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
}

// verifyMerkleBlock walks a merkleblock's partial merkle tree (BIP 37),
// checks that it commits to the header's merkle root and returns the
// matched transaction hashes.
func verifyMerkleBlock(t *testing.T, mb *wire.MsgMerkleBlock) []chainhash.Hash {
	t.Helper()
	width := func(h uint32) uint32 { return (mb.Transactions + (1 << h) - 1) >> h }
	var height uint32
	for width(height) > 1 {
		height++
	}
	var bitPos, hashPos int
	var matched []chainhash.Hash
	var walk func(h, pos uint32) chainhash.Hash
	walk = func(h, pos uint32) chainhash.Hash {
		if bitPos/8 >= len(mb.Flags) || hashPos > len(mb.Hashes) {
			t.Fatal("merkleblock too short")
		}
		bit := mb.Flags[bitPos/8] >> (bitPos % 8) & 1
		bitPos++
		if h == 0 || bit == 0 {
			if hashPos >= len(mb.Hashes) {
				t.Fatal("merkleblock has too few hashes")
			}
			hash := *mb.Hashes[hashPos]
			hashPos++
			if h == 0 && bit == 1 {
				matched = append(matched, hash)
			}
			return hash
		}
		left := walk(h-1, pos*2)
		right := left
		if pos*2+1 < width(h-1) {
			right = walk(h-1, pos*2+1)
		}
		return bloom.HashMerkleBranches(&left, &right)
	}
	if root := walk(height, 0); root != mb.Header.MerkleRoot {
		t.Fatalf("merkle proof root %v, header's %v", root, mb.Header.MerkleRoot)
	}
	if hashPos != len(mb.Hashes) {
		t.Fatalf("merkleblock has %d unused hashes", len(mb.Hashes)-hashPos)
	}
	return matched
}
