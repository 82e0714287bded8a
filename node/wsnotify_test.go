package node

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// recvTx is one recvtx or redeemingtx notification.
type recvTx struct {
	hash    chainhash.Hash
	details *btcjson.BlockDetails
}

// TestWebsocketTxNotifications drives btcd's websocket transaction flows
// with btcd's rpcclient, as btcwallet-style clients use them:
// notifynewtransactions (txaccepted), notifyreceived (recvtx from the
// mempool, then again from the block), notifyspent (redeemingtx),
// loadtxfilter (relevanttxaccepted) with rescanblocks over the same filter,
// and session.
func TestWebsocketTxNotifications(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := n.Generate(103, nil); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan chainhash.Hash, 10)
	recvs := make(chan recvTx, 10)
	redeem := make(chan recvTx, 10)
	relevant := make(chan chainhash.Hash, 10)
	c, err := rpcclient.New(&rpcclient.ConnConfig{Host: n.RPCAddrs()[0].String(), Endpoint: "ws",
		User: "user", Pass: "pass", DisableTLS: true}, &rpcclient.NotificationHandlers{
		OnTxAccepted: func(h *chainhash.Hash, _ btcutil.Amount) { accepted <- *h },
		OnRecvTx: func(tx *btcutil.Tx, d *btcjson.BlockDetails) {
			recvs <- recvTx{*tx.Hash(), d}
		},
		OnRedeemingTx: func(tx *btcutil.Tx, d *btcjson.BlockDetails) {
			redeem <- recvTx{*tx.Hash(), d}
		},
		OnRelevantTxAccepted: func(raw []byte) {
			tx, err := btcutil.NewTxFromBytes(raw)
			if err == nil {
				relevant <- *tx.Hash()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()

	if s, err := c.Session(); err != nil || s.SessionID == 0 {
		t.Fatalf("session %v %v", s, err)
	}
	received, filtered := freshAddr(t), freshAddr(t)
	if err := c.NotifyNewTransactions(false); err != nil {
		t.Fatal(err)
	}
	if err := c.NotifyReceived([]address.Address{received}); err != nil {
		t.Fatal(err)
	}
	spentOp := wire.OutPoint{Hash: *mustBlock(t, n, 3).Transactions()[0].Hash(), Index: 0}
	if err := c.NotifySpent([]*wire.OutPoint{&spentOp}); err != nil {
		t.Fatal(err)
	}
	if err := c.LoadTxFilter(true, []address.Address{filtered}, nil); err != nil {
		t.Fatal(err)
	}

	script := func(a address.Address) []byte {
		s, err := txscript.PayToAddrScript(a)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	toReceived := payFromCoinbase(t, n, 1, script(received))
	if h := recv(t, accepted, "txaccepted"); h != *toReceived.Hash() {
		t.Fatalf("txaccepted %v, want %v", h, toReceived.Hash())
	}
	if r := recv(t, recvs, "recvtx"); r.hash != *toReceived.Hash() || r.details != nil {
		t.Fatalf("recvtx %+v", r)
	}
	toFiltered := payFromCoinbase(t, n, 2, script(filtered))
	if h := recv(t, relevant, "relevanttxaccepted"); h != *toFiltered.Hash() {
		t.Fatalf("relevanttxaccepted %v, want %v", h, toFiltered.Hash())
	}
	spend := spendCoinbase(t, n, 3, 10_000)
	if _, err := n.ProcessTx(spend); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, redeem, "redeemingtx"); r.hash != *spend.Hash() || r.details != nil {
		t.Fatalf("redeemingtx %+v", r)
	}

	hashes, err := n.Generate(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := n.Chain().BestSnapshot()
	for {
		r := recv(t, recvs, "recvtx of the block")
		if r.details == nil {
			continue
		}
		if r.hash != *toReceived.Hash() || r.details.Hash != hashes[0].String() || r.details.Height != tip.Height {
			t.Fatalf("recvtx in block %+v %+v", r, r.details)
		}
		break
	}

	rescanned, err := c.RescanBlocks([]chainhash.Hash{*hashes[0]})
	if err != nil || len(rescanned) != 1 || len(rescanned[0].Transactions) != 1 {
		t.Fatalf("rescanblocks %+v %v", rescanned, err)
	}
	tx, err := btcutil.NewTxFromBytes(mustHex(t, rescanned[0].Transactions[0]))
	if err != nil || *tx.Hash() != *toFiltered.Hash() {
		t.Fatalf("rescanblocks found %v", tx.Hash())
	}
}

// mustHex decodes hex.
func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWebsocketRescan runs btcd's legacy rescan from the genesis block with
// btcd's rpcclient: recvtx for the payment to a watched address (with its
// block), redeemingtx for the spend of a watched outpoint, then
// rescanfinished at the tip.
func TestWebsocketRescan(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := n.Generate(103, nil); err != nil {
		t.Fatal(err)
	}
	watched := freshAddr(t)
	pkScript, _ := txscript.PayToAddrScript(watched)
	paid := payFromCoinbase(t, n, 1, pkScript)
	spend := spendCoinbase(t, n, 2, 10_000)
	if _, err := n.ProcessTx(spend); err != nil {
		t.Fatal(err)
	}
	hashes, err := n.Generate(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := n.Chain().BestSnapshot()

	recvs := make(chan recvTx, 10)
	redeems := make(chan recvTx, 10)
	finished := make(chan int32, 1)
	c, err := rpcclient.New(&rpcclient.ConnConfig{Host: n.RPCAddrs()[0].String(), Endpoint: "ws",
		User: "user", Pass: "pass", DisableTLS: true}, &rpcclient.NotificationHandlers{
		OnRecvTx:      func(tx *btcutil.Tx, d *btcjson.BlockDetails) { recvs <- recvTx{*tx.Hash(), d} },
		OnRedeemingTx: func(tx *btcutil.Tx, d *btcjson.BlockDetails) { redeems <- recvTx{*tx.Hash(), d} },
		OnRescanFinished: func(h *chainhash.Hash, height int32, _ time.Time) {
			if *h == tip.Hash {
				finished <- height
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	op := wire.OutPoint{Hash: *mustBlock(t, n, 2).Transactions()[0].Hash(), Index: 0}
	genesis := n.Params().GenesisHash
	if err := c.Rescan(genesis, []address.Address{watched}, []*wire.OutPoint{&op}); err != nil {
		t.Fatalf("rescan: %v", err)
	}
	if r := recv(t, recvs, "recvtx"); r.hash != *paid.Hash() || r.details == nil ||
		r.details.Hash != hashes[0].String() || r.details.Height != tip.Height-1 {
		t.Fatalf("recvtx %+v %+v", r, r.details)
	}
	if r := recv(t, redeems, "redeemingtx"); r.hash != *spend.Hash() || r.details == nil || r.details.Hash != hashes[0].String() {
		t.Fatalf("redeemingtx %+v %+v", r, r.details)
	}
	if h := recv(t, finished, "rescanfinished"); h != tip.Height {
		t.Fatalf("rescanfinished at %d, tip %d", h, tip.Height)
	}
}
