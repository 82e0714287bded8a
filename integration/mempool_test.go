package integration

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestMempoolChainAcrossNodes broadcasts a parent and a child spending it
// over Electrum to our node (in-process), which a real btcd follows over
// P2P. The mining script's status covers the parent at height 0 and the
// child at -1 (an unconfirmed input), the paid script's the child at -1;
// get_mempool lists them with fees; both reach btcd's mempool; when btcd
// mines them they are confirmed at the same height in block order.
func TestMempoolChainAcrossNodes(t *testing.T) {
	ctx := testContext(t)
	ours := StartNode(t, NodeConfig{})
	btcd := StartBtcd(t, BtcdConfig{})
	if _, err := ours.Mine(101); err != nil {
		t.Fatal(err)
	}
	if err := btcd.Client.AddNode(ours.P2PAddr, rpcclient.ANAdd); err != nil {
		t.Fatal(err)
	}
	waitSameTip(t, ctx, ours.RPC, btcd.Client)

	ec := ours.Electrum
	paid := otherScript(t)
	shPaid, shMining := ScriptHash(paid), ScriptHash(MiningScript())
	for _, sh := range []string{shPaid, shMining} {
		if _, err := ec.SubscribeScriptHash(ctx, sh); err != nil {
			t.Fatal(err)
		}
	}
	confirmedMining, err := ChainHistory(ours.RPC, MiningScript())
	if err != nil {
		t.Fatal(err)
	}

	parent := spendCoinbaseAt(t, ours.RPC, 1, MiningScript())
	parentHash := parent.TxHash()
	child, err := SpendMined(wire.OutPoint{Hash: parentHash, Index: 0}, parent.TxOut[0].Value, paid, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	childHash := child.TxHash()
	for _, tx := range []*wire.MsgTx{parent, child} {
		var raw bytes.Buffer
		if err := tx.Serialize(&raw); err != nil {
			t.Fatal(err)
		}
		if txid, err := ec.Broadcast(ctx, hex.EncodeToString(raw.Bytes())); err != nil || txid != tx.TxHash().String() {
			t.Fatalf("broadcast = %s, %v", txid, err)
		}
	}
	p, c := parentHash.String(), childHash.String()
	waitStatus(t, ctx, ec, shPaid, []HistoryItem{{TxHash: c, Height: -1}})
	waitStatus(t, ctx, ec, shMining, append(append([]HistoryItem{}, confirmedMining...),
		HistoryItem{TxHash: p, Height: 0}, HistoryItem{TxHash: c, Height: -1}))
	mp, err := ec.GetMempool(ctx, shMining)
	if err != nil {
		t.Fatal(err)
	}
	if len(mp) != 2 || mp[0].TxHash != p || mp[0].Height != 0 || mp[1].TxHash != c || mp[1].Height != -1 ||
		mp[0].Fee == nil || *mp[0].Fee != 10_000 || mp[1].Fee == nil || *mp[1].Fee != 10_000 {
		t.Fatalf("get_mempool of the mining script = %+v", mp)
	}
	if bal, err := ec.GetBalance(ctx, shPaid); err != nil || bal.Confirmed != 0 || bal.Unconfirmed != child.TxOut[0].Value {
		t.Fatalf("get_balance of the paid script = %+v, %v", bal, err)
	}

	WaitFor(t, ctx, "btcd to receive both transactions", func() bool {
		return inMempool(t, btcd.Client, &parentHash) && inMempool(t, btcd.Client, &childHash)
	})
	hashes, err := btcd.Client.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	block, err := btcd.Client.GetBlock(hashes[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(block.Transactions) != 3 || block.Transactions[1].TxHash() != parentHash || block.Transactions[2].TxHash() != childHash {
		t.Fatalf("btcd's block holds %d transactions, want the coinbase, the parent and the child", len(block.Transactions))
	}
	waitSameTip(t, ctx, btcd.Client, ours.RPC)
	waitStatus(t, ctx, ec, shPaid, []HistoryItem{{TxHash: c, Height: 102}})
	scan, err := ChainHistory(ours.RPC, MiningScript())
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, ctx, ec, shMining, scan)
	if mp, err := ec.GetMempool(ctx, shMining); err != nil || len(mp) != 0 {
		t.Fatalf("get_mempool after mining = %+v, %v", mp, err)
	}
	checkMerkle(t, ctx, ec, btcd.Client, c, 102)
}
