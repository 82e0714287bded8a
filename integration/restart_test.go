package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// indexRebuildLogs are the log lines of index work at start-up: blocks
// indexed (a catch-up of several, or one), a rebuild, the index dropped,
// stale blocks removed.
var indexRebuildLogs = []string{"Electrum index: caught up to height", "ELEC: Indexed block", "rebuilding",
	"Dropping the Electrum index", "Electrum index: removed block"}

// catchUpLine returns the log line (without its timing) of the index's
// writer catching up the blocks from..to of c's main chain: it names the
// last height and counts the transactions of exactly those blocks, so a
// catch-up over other blocks (a rebuild from genesis, say) logs another.
func catchUpLine(t *testing.T, c *rpcclient.Client, from, to int32) string {
	t.Helper()
	txs := 0
	for h := from; h <= to; h++ {
		hash, err := c.GetBlockHash(int64(h))
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.GetBlock(hash)
		if err != nil {
			t.Fatal(err)
		}
		txs += len(b.Transactions)
	}
	if from == to {
		return fmt.Sprintf("ELEC: Indexed block %d (%d tx)", to, txs)
	}
	return fmt.Sprintf("Electrum index: caught up to height %d (%d tx in ", to, txs)
}

// otherScript is an output script no node mines to.
func otherScript(t *testing.T) []byte {
	t.Helper()
	return payScript(t, 0x42)
}

// payScript is a P2PKH script to the key hash of twenty bytes b.
func payScript(t *testing.T, b byte) []byte {
	t.Helper()
	addr, err := address.NewAddressPubKeyHash(bytes.Repeat([]byte{b}, 20), &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	s, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// spendCoinbaseAt is SpendCoinbaseAt with a fee of 10,000 satoshis,
// failing the test on error.
func spendCoinbaseAt(t *testing.T, c *rpcclient.Client, height int64, pkScript []byte) *wire.MsgTx {
	t.Helper()
	tx, err := SpendCoinbaseAt(c, height, pkScript, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// electrumInfo is ElectrumInfo, failing the test on error.
func electrumInfo(t *testing.T, c *rpcclient.Client) rpcext.ElectrumInfo {
	t.Helper()
	info, err := ElectrumInfo(c)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// checkIndexAtTip checks with getelectruminfo that the index is at the
// chain tip and not catching up.
func checkIndexAtTip(t *testing.T, c *rpcclient.Client) {
	t.Helper()
	best, height, err := c.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	info := electrumInfo(t, c)
	if info.CatchingUp || info.IndexHeight != height || info.ChainHeight != height || info.IndexHash != best.String() {
		t.Fatalf("getelectruminfo %+v, chain tip %v@%d", info, best, height)
	}
}

// query is one Electrum request whose answer must survive a restart.
type query struct {
	method string
	params []any
}

// answers makes every query and returns the raw results.
func answers(t *testing.T, ctx context.Context, ec *ElectrumClient, qs []query) []string {
	t.Helper()
	out := make([]string, len(qs))
	for i, q := range qs {
		raw, err := ec.Call(ctx, q.method, q.params...)
		if err != nil {
			t.Fatalf("%s %v: %v", q.method, q.params, err)
		}
		out[i] = string(raw)
	}
	return out
}

// TestRestartKeepsIndex runs the binary, mines 103 blocks with two
// transactions to a script, stops it with SIGINT and starts it again on the
// same datadir: the index is not caught up or rebuilt (no such log line
// after the restart; getelectruminfo shows it at the tip), and a set of
// Electrum queries over headers, histories, balances, unspent outputs,
// statuses, merkle proofs and transactions gets byte-identical answers.
func TestRestartKeepsIndex(t *testing.T) {
	ctx := testContext(t)
	ours := StartNode(t, NodeConfig{Binary: true})
	if _, err := ours.Mine(101); err != nil {
		t.Fatal(err)
	}
	paid := otherScript(t)
	var txids []*chainhash.Hash
	for h := int64(1); h <= 2; h++ {
		tx := spendCoinbaseAt(t, ours.RPC, h, paid)
		txid, err := ours.SendRaw(tx)
		if err != nil {
			t.Fatalf("sendrawtransaction: %v", err)
		}
		txids = append(txids, txid)
		if _, err := ours.Mine(1); err != nil {
			t.Fatal(err)
		}
	}
	checkIndexAtTip(t, ours.RPC)

	shPaid, shMining := ScriptHash(paid), ScriptHash(MiningScript())
	qs := []query{
		{"blockchain.headers.subscribe", nil},
		{"blockchain.block.header", []any{0}},
		{"blockchain.block.header", []any{102}},
		{"blockchain.block.header", []any{103, 103}},
		{"blockchain.block.headers", []any{90, 14}},
		{"blockchain.scripthash.subscribe", []any{shPaid}},
		{"blockchain.scripthash.subscribe", []any{shMining}},
		{"blockchain.scripthash.get_history", []any{shPaid}},
		{"blockchain.scripthash.get_history", []any{shMining}},
		{"blockchain.scripthash.listunspent", []any{shPaid}},
		{"blockchain.scripthash.listunspent", []any{shMining}},
		{"blockchain.scripthash.get_balance", []any{shPaid}},
		{"blockchain.scripthash.get_balance", []any{shMining}},
		{"blockchain.transaction.get", []any{txids[0].String()}},
		{"blockchain.transaction.get", []any{txids[1].String(), true}},
		{"blockchain.transaction.get_merkle", []any{txids[0].String(), 102}},
		{"blockchain.transaction.get_merkle", []any{txids[1].String(), 103}},
		{"blockchain.transaction.id_from_pos", []any{103, 1, true}},
	}
	ec := ours.DialElectrum(t, ctx)
	before := answers(t, ctx, ec, qs)
	hist, err := ec.GetHistory(ctx, shPaid)
	if err != nil {
		t.Fatal(err)
	}
	want := []HistoryItem{{TxHash: txids[0].String(), Height: 102}, {TxHash: txids[1].String(), Height: 103}}
	if !equalHistory(hist, want) {
		t.Fatalf("get_history %+v, want %+v", hist, want)
	}
	_ = ec.Close()

	if err := ours.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	firstRun, err := ours.Log()
	if err != nil {
		t.Fatal(err)
	}
	ours = ours.Restart(t)
	log, err := ours.Log()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(log, firstRun) || !strings.Contains(firstRun, "Shutdown complete") {
		t.Fatalf("the first run did not shut down cleanly into %s", ours.LogFile)
	}
	secondRun := log[len(firstRun):]
	for _, line := range indexRebuildLogs {
		if strings.Contains(secondRun, line) {
			t.Fatalf("the restart logged %q:\n%s", line, secondRun)
		}
	}
	checkIndexAtTip(t, ours.RPC)

	after := answers(t, ctx, ours.DialElectrum(t, ctx), qs)
	for i := range qs {
		if before[i] != after[i] {
			t.Errorf("%s %v before the restart:\n%s\nafter:\n%s", qs[i].method, qs[i].params, before[i], after[i])
		}
	}
}

// TestIndexTurnedOffAndOn runs the binary with the index, then without it
// while blocks (one with a payment) are mined, then with it again: the
// index catches up exactly the blocks it missed (logged) and answers for
// them, matching a scan of the blocks.
func TestIndexTurnedOffAndOn(t *testing.T) {
	ctx := testContext(t)
	cfg := NodeConfig{Binary: true}
	ours := StartNode(t, cfg)
	cfg.Dir = ours.Dir
	if _, err := ours.Mine(101); err != nil {
		t.Fatal(err)
	}
	if err := ours.Stop(); err != nil {
		t.Fatal(err)
	}

	cfg.NoElectrumIndex = true
	ours = StartNode(t, cfg)
	paid := otherScript(t)
	txid, err := ours.SendRaw(spendCoinbaseAt(t, ours.RPC, 1, paid))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ours.Mine(4); err != nil {
		t.Fatal(err)
	}
	if err := ours.Stop(); err != nil {
		t.Fatal(err)
	}
	before, err := ours.Log()
	if err != nil {
		t.Fatal(err)
	}

	cfg.NoElectrumIndex = false
	ours = StartNode(t, cfg)
	log, err := ours.Log()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log[len(before):], catchUpLine(t, ours.RPC, 102, 105)) {
		t.Fatalf("no catch-up over the missed blocks:\n%s", log[len(before):])
	}
	checkIndexAtTip(t, ours.RPC)
	ec := ours.Electrum
	hist, err := ec.GetHistory(ctx, ScriptHash(paid))
	if err != nil || !equalHistory(hist, []HistoryItem{{TxHash: txid.String(), Height: 102}}) {
		t.Fatalf("get_history of the paid script = %+v (%v), want %v at 102", hist, err, txid)
	}
	scan, err := ChainHistory(ours.RPC, MiningScript())
	if err != nil {
		t.Fatal(err)
	}
	status, err := ec.SubscribeScriptHash(ctx, ScriptHash(MiningScript()))
	if err != nil {
		t.Fatal(err)
	}
	if hist := checkStatus(t, ctx, ec, ScriptHash(MiningScript()), status); !equalHistory(hist, scan) {
		t.Fatalf("get_history of the mining script %+v, the blocks give %+v", hist, scan)
	}
}
