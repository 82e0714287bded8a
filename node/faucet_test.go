package node

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
)

// paysTo checks that the mempool transaction txid pays amount to pkScript.
func paysTo(t *testing.T, n *Node, txid *chainhash.Hash, pkScript []byte, amount btcutil.Amount) {
	t.Helper()
	tx, err := n.TxPool().FetchTransaction(txid)
	if err != nil {
		t.Fatalf("faucet payment %v not in the mempool: %v", txid, err)
	}
	for _, out := range tx.MsgTx().TxOut {
		if out.Value == int64(amount) && bytes.Equal(out.PkScript, pkScript) {
			return
		}
	}
	t.Fatalf("faucet payment %v has no output of %v to %x", txid, amount, pkScript)
}

// TestFaucetPaysFromMaturedCoins checks the faucet on a fresh chain: the
// first payment mines and matures coins (101 blocks), a second one right
// after spends the first's unconfirmed change, and a payment larger than
// the mature coins mines more first; all pay what was asked and are
// accepted by btcd's mempool, and a block confirms them.
func TestFaucetPaysFromMaturedCoins(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	pkScript, err := txscript.PayToAddrScript(testMiningAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	first, err := n.Faucet(pkScript, btcutil.Amount(100_000_000))
	if err != nil {
		t.Fatal(err)
	}
	if h := n.Chain().BestSnapshot().Height; h != 101 {
		t.Fatalf("the faucet mined to height %d, want 101 (one coinbase matured)", h)
	}
	paysTo(t, n, first, pkScript, 100_000_000)
	second, err := n.Faucet(pkScript, btcutil.Amount(30_000))
	if err != nil {
		t.Fatal(err)
	}
	paysTo(t, n, second, pkScript, 30_000)
	if h := n.Chain().BestSnapshot().Height; h != 101 {
		t.Fatalf("the second payment mined blocks (height %d); it should spend the change", h)
	}
	third, err := n.Faucet(pkScript, btcutil.Amount(120*btcutil.SatoshiPerBitcoin))
	if err != nil {
		t.Fatal(err)
	}
	paysTo(t, n, third, pkScript, 120*btcutil.SatoshiPerBitcoin)
	generate(t, n, 1)
	for _, txid := range []*chainhash.Hash{first, second, third} {
		if n.TxPool().HaveTransaction(txid) {
			t.Fatalf("faucet payment %v still unconfirmed after a block", txid)
		}
		if _, _, err := n.ConfirmedTx(txid); err != nil {
			t.Fatalf("faucet payment %v not confirmed: %v", txid, err)
		}
	}
}

// TestFaucetRefuses checks the faucet's errors: no index, a zero amount,
// and any network but regtest.
func TestFaucetRefuses(t *testing.T) {
	pkScript, err := txscript.PayToAddrScript(testMiningAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	noIndex := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := noIndex.Faucet(pkScript, 1000); err == nil || !strings.Contains(err.Error(), "--electrumindex") {
		t.Fatalf("faucet without the index: %v", err)
	}
	n := startNode(t, testConfig(t, t.TempDir(), true))
	if _, err := n.Faucet(pkScript, 0); err == nil {
		t.Fatal("faucet paid a zero amount")
	}
	simCfg := testConfig(t, t.TempDir(), true)
	simCfg.RegressionTest, simCfg.SimNet, simCfg.MiningAddrs = false, true, nil
	sim := startNode(t, simCfg)
	if _, err := sim.Faucet(pkScript, 1000); err != errFaucetNetwork {
		t.Fatalf("faucet on simnet: %v", err)
	}
}

// TestRegtestMineInterval checks --regtestmineinterval: blocks come by
// themselves, paying the faucet without --miningaddr and the mining
// address with it; the option is refused off regtest.
func TestRegtestMineInterval(t *testing.T) {
	for _, withAddr := range []bool{false, true} {
		cfg := testConfig(t, t.TempDir(), false)
		cfg.RegtestMineInterval = 10 * time.Millisecond
		want := FaucetAddress(&chaincfg.RegressionNetParams).EncodeAddress()
		if withAddr {
			want = testMiningAddr(t).EncodeAddress()
		} else {
			cfg.MiningAddrs = nil
		}
		n := startNode(t, cfg)
		waitFor(t, "interval-mined blocks", func() bool { return n.Chain().BestSnapshot().Height >= 3 })
		block, err := n.Chain().BlockByHeight(2)
		if err != nil {
			t.Fatal(err)
		}
		_, addrs, _, err := txscript.ExtractPkScriptAddrs(block.Transactions()[0].MsgTx().TxOut[0].PkScript, n.Params())
		if err != nil || len(addrs) != 1 || addrs[0].EncodeAddress() != want {
			t.Fatalf("with mining address %v: block 2 pays %v (%v), want %s", withAddr, addrs, err, want)
		}
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"--simnet", "--regtestmineinterval=1s"},
		{"--regtestmineinterval=1s"},
		{"--regtest", "--regtestmineinterval=-1s"},
	} {
		_, _, err := LoadConfig(append([]string{writeConfigFile(t, "")}, args...))
		if err == nil || !strings.Contains(err.Error(), "regtestmineinterval") {
			t.Fatalf("LoadConfig(%v): %v, want a --regtestmineinterval error", args, err)
		}
	}
}
