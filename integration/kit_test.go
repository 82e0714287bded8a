package integration

import (
	"bytes"
	"crypto/tls"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// newWalletAddress returns a fresh P2WPKH address on regtest and its
// output script, as a wallet under test would derive one.
func newWalletAddress(t *testing.T) (address.Address, []byte) {
	t.Helper()
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr := p2wpkhAddress(t, key)
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	return addr, script
}

// TestMineTo checks MineTo: the blocks pay the address, and the Electrum
// server lists their coinbases when MineTo returns.
func TestMineTo(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{Binary: true})
	addr, script := newWalletAddress(t)
	hashes, err := n.MineTo(addr, 2)
	if err != nil || len(hashes) != 2 {
		t.Fatalf("MineTo: %v %v", hashes, err)
	}
	hist, err := n.Electrum.GetHistory(ctx, ScriptHash(script))
	if err != nil {
		t.Fatal(err)
	}
	want, err := ChainHistory(n.RPC, script)
	if err != nil || len(want) != 2 || want[1].Height != 2 || !equalHistory(hist, want) {
		t.Fatalf("history %+v, the blocks give %+v (%v)", hist, want, err)
	}
	if _, err := n.MineTo(MiningAddressOn(&chaincfg.SimNetParams), 1); err == nil {
		t.Fatal("MineTo a simnet address on regtest succeeded")
	}
}

// TestNilAddressesRefused: MineTo, Faucet and Fund given a nil address
// (nil, or a nil pointer: an address a test failed to decode) return an
// error. The calls run in a child test process, as a panic in a goroutine
// of the RPC client would end every test of the binary.
func TestNilAddressesRefused(t *testing.T) {
	if os.Getenv("HARNESS_NIL_ADDRESS_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNilAddressesRefused$", "-test.count=1")
		cmd.Env = append(os.Environ(), "HARNESS_NIL_ADDRESS_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the nil-address calls failed their test process (%v):\n%s", err, out)
		}
		return
	}
	n := StartNode(t, NodeConfig{})
	var typedNil *address.AddressPubKeyHash
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"MineTo(nil)", func() error { _, err := n.MineTo(nil, 1); return err }},
		{"MineTo(nil pointer)", func() error { _, err := n.MineTo(typedNil, 1); return err }},
		{"Faucet(nil)", func() error { _, err := n.Faucet(nil, 1000); return err }},
		{"Faucet(nil pointer)", func() error { _, err := n.Faucet(typedNil, 1000); return err }},
		{"Fund(nil)", func() error { _, err := n.Fund(nil, 1000); return err }},
		{"Fund(nil pointer)", func() error { _, err := n.Fund(typedNil, 1000); return err }},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s panicked: %v", c.name, r)
				}
			}()
			if err := c.call(); err == nil {
				t.Errorf("%s succeeded", c.name)
			}
		}()
	}
}

// TestWalletFlow is the wallet-style test of the README, on the in-process
// node and on the binary: subscribe to a script, fund it, see the
// notification, reorg the payment away, see the status change, confirm it
// again.
func TestWalletFlow(t *testing.T) {
	for _, binary := range []bool{false, true} {
		t.Run(map[bool]string{false: "inprocess", true: "binary"}[binary], func(t *testing.T) {
			ctx := testContext(t)
			n := StartNode(t, NodeConfig{Binary: binary})
			addr, script := newWalletAddress(t)
			sh := ScriptHash(script)
			if st, err := n.Electrum.SubscribeScriptHash(ctx, sh); err != nil || st != nil {
				t.Fatalf("subscribe: status %v, %v; want null", str(st), err)
			}

			// Fund: the faucet matures coins (101 blocks), pays, one
			// block confirms the payment.
			op, err := n.Fund(addr, btcutil.Amount(150_000_000))
			if err != nil {
				t.Fatal(err)
			}
			_, height, err := n.RPC.GetBestBlock()
			if err != nil {
				t.Fatal(err)
			}
			txid := op.Hash.String()
			waitStatus(t, ctx, n.Electrum, sh, []HistoryItem{{TxHash: txid, Height: height}})
			utxos, err := n.Electrum.ListUnspent(ctx, sh)
			if err != nil || len(utxos) != 1 || utxos[0].TxHash != txid || utxos[0].TxPos != op.Index ||
				utxos[0].Value != 150_000_000 || utxos[0].Height != height {
				t.Fatalf("listunspent = %+v (%v), want %v at %d", utxos, err, op, height)
			}

			// A reorg that leaves the payment out: it is back in the
			// mempool, and the status says so.
			branch, err := n.ReorgDropping(&op.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if len(branch) != 2 {
				t.Fatalf("the new branch has %d blocks, want 2", len(branch))
			}
			waitStatus(t, ctx, n.Electrum, sh, []HistoryItem{{TxHash: txid, Height: 0}})
			tip, err := n.Electrum.SubscribeHeaders(ctx)
			if err != nil || tip.Height != height+1 {
				t.Fatalf("Electrum tip after the reorg at %d (%v), want %d", tip.Height, err, height+1)
			}
			if h, err := tip.Header(); err != nil || h.BlockHash() != *branch[1] {
				t.Fatalf("Electrum tip is not the new branch's (%v)", err)
			}

			// Confirmed again by the next block.
			if _, err := n.Mine(1); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, ctx, n.Electrum, sh, []HistoryItem{{TxHash: txid, Height: height + 2}})
		})
	}
}

// spendP2WPKH spends a P2WPKH output of key to pkScript, minus fee.
func spendP2WPKH(t *testing.T, key *btcec.PrivateKey, op wire.OutPoint, value int64, pkScript []byte, fee int64) *wire.MsgTx {
	t.Helper()
	prevScript, err := txscript.PayToAddrScript(p2wpkhAddress(t, key))
	if err != nil {
		t.Fatal(err)
	}
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&op, nil, nil))
	tx.AddTxOut(wire.NewTxOut(value-fee, pkScript))
	fetcher := txscript.NewCannedPrevOutputFetcher(prevScript, value)
	w, err := txscript.WitnessSignature(tx, txscript.NewTxSigHashes(tx, fetcher), 0, value, prevScript,
		txscript.SigHashAll, key, true)
	if err != nil {
		t.Fatal(err)
	}
	tx.TxIn[0].Witness = w
	return tx
}

// p2wpkhAddress is key's regtest P2WPKH address.
func p2wpkhAddress(t *testing.T, key *btcec.PrivateKey) address.Address {
	t.Helper()
	addr, err := address.NewAddressWitnessPubKeyHash(
		address.Hash160(key.PubKey().SerializeCompressed()), &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestReorgKeepsTransactions checks Reorg: the replaced blocks'
// transactions, a segwit spend among them (so the new block commits to
// witnesses), are confirmed again at their heights in the new branch, so a
// script's history is unchanged while the blocks' hashes are not; and
// ReorgDropping of a parent also leaves its child out.
func TestReorgKeepsTransactions(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{})
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr := p2wpkhAddress(t, key)
	script, _ := txscript.PayToAddrScript(addr)
	sh := ScriptHash(script)
	op, err := n.Fund(addr, btcutil.Amount(100_000))
	if err != nil {
		t.Fatal(err)
	}
	spend := spendP2WPKH(t, key, op, 100_000, script, 1_000)
	if _, err := n.SendRaw(spend); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Mine(2); err != nil {
		t.Fatal(err)
	}
	before, err := n.Electrum.GetHistory(ctx, sh)
	if err != nil || len(before) != 2 || before[0].TxHash != op.Hash.String() {
		t.Fatalf("history %+v (%v)", before, err)
	}
	oldTip, tipHeight, err := n.RPC.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	branch, err := n.Reorg(3)
	if err != nil {
		t.Fatal(err)
	}
	newTip, newHeight, err := n.RPC.GetBestBlock()
	if err != nil || newHeight != tipHeight+1 || *newTip != *branch[3] || *newTip == *oldTip {
		t.Fatalf("after Reorg(3) the tip is %v at %d (%v); was %v at %d", newTip, newHeight, err, oldTip, tipHeight)
	}
	after, err := n.Electrum.GetHistory(ctx, sh)
	if err != nil || !equalHistory(after, before) {
		t.Fatalf("history after the reorg %+v (%v), before %+v", after, err, before)
	}
	for i, txid := range []chainhash.Hash{op.Hash, spend.TxHash()} {
		res, err := n.RPC.GetRawTransactionVerbose(&txid)
		if err != nil || res.BlockHash != branch[i].String() {
			t.Fatalf("%v is in block %s (%v), want the new branch's %v", txid, res.BlockHash, err, branch[i])
		}
	}

	// Dropping the payment drops the spend of it too: both unconfirmed.
	dropped, err := n.ReorgDropping(&op.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 5 {
		t.Fatalf("ReorgDropping from the payment's block built %d blocks, want 5", len(dropped))
	}
	want := []HistoryItem{{TxHash: op.Hash.String(), Height: 0}, {TxHash: spend.TxHash().String(), Height: -1}}
	// The node puts the dropped transactions back into its mempool, and
	// its mempool view follows the mempool's notifications: wait for both.
	var hist []HistoryItem
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		hist, err = n.Electrum.GetHistory(ctx, sh)
		if err == nil && len(hist) == 2 && (equalHistory(withoutFees(hist), want) ||
			equalHistory(withoutFees(hist), []HistoryItem{want[1], want[0]})) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("history after dropping the payment %+v (%v), want %+v", hist, err, want)
		}
	}
	var none chainhash.Hash
	if _, err := n.ReorgDropping(&none); err == nil {
		t.Fatal("ReorgDropping of an unknown transaction succeeded")
	}
}

// TestElectrumTransports starts the binary with TLS, WS and WSS Electrum
// listeners and checks that a client over each reports the tip the node
// mined, and that Start without a test removes its directory on Stop.
func TestElectrumTransports(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{Binary: true, ElectrumTLS: true, ElectrumWS: true, ElectrumWSS: true})
	if _, err := n.Mine(2); err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := n.ElectrumTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	clients := map[string]func() (*ElectrumClient, error){
		"tls": func() (*ElectrumClient, error) { return DialElectrumTLS(ctx, n.ElectrumTLSAddr, tlsCfg) },
		"ws":  func() (*ElectrumClient, error) { return DialElectrumWS(ctx, "ws://"+n.ElectrumWSAddr+"/", nil) },
		"wss": func() (*ElectrumClient, error) { return DialElectrumWS(ctx, "wss://"+n.ElectrumWSSAddr+"/", tlsCfg) },
	}
	for name, dial := range clients {
		c, err := dial()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, _, err := c.Version(ctx, "kit-test", "1.4"); err != nil {
			t.Fatalf("%s: server.version: %v", name, err)
		}
		tip, err := c.SubscribeHeaders(ctx)
		if err != nil || tip.Height != 2 || tip.Hex != headerHex(t, n.RPC, 2) {
			t.Fatalf("%s: tip %+v (%v), want the header at 2", name, tip, err)
		}
	}
	if _, err := DialElectrumTLS(ctx, n.ElectrumTLSAddr, &tls.Config{MinVersion: tls.VersionTLS12}); err == nil {
		t.Fatal("TLS without trusting the node's certificate succeeded")
	}

	own, err := Start(NodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own.Dir); !os.IsNotExist(err) {
		t.Fatalf("Start's directory %s is still there after Stop (%v)", own.Dir, err)
	}
}

// TestKitWithIntervalMining runs the kit on a node that also mines a block
// every few milliseconds by itself (--regtestmineinterval): WaitSynced
// settles while the chain moves, and Fund still returns a confirmed
// output the Electrum server lists.
func TestKitWithIntervalMining(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{Args: []string{"--regtestmineinterval=5ms"}})
	WaitFor(t, ctx, "interval-mined blocks", func() bool {
		c, err := n.RPC.GetBlockCount()
		return err == nil && c >= 5
	})
	if err := n.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	addr, script := newWalletAddress(t)
	op, err := n.Fund(addr, btcutil.Amount(25_000))
	if err != nil {
		t.Fatal(err)
	}
	utxos, err := n.Electrum.ListUnspent(ctx, ScriptHash(script))
	if err != nil || len(utxos) != 1 || utxos[0].TxHash != op.Hash.String() || utxos[0].Height <= 0 {
		t.Fatalf("listunspent %+v (%v), want %v confirmed", utxos, err, op)
	}
}

// TestFundAnyScript funds scripts given as bytes: one an address stands
// for (paid by the faucet directly) and two no address stands for, a
// pay-to-pubkey and a bare OP_TRUE (paid through MiningAddress); each is
// confirmed and listed by the Electrum server under its script hash.
func TestFundAnyScript(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{})
	_, p2wpkh := newWalletAddress(t)
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	p2pk, err := txscript.NewScriptBuilder().AddData(key.PubKey().SerializeCompressed()).
		AddOp(txscript.OP_CHECKSIG).Script()
	if err != nil {
		t.Fatal(err)
	}
	for _, script := range [][]byte{p2wpkh, p2pk, {txscript.OP_TRUE}} {
		op, err := n.Fund(script, btcutil.Amount(70_000))
		if err != nil {
			t.Fatalf("fund %x: %v", script, err)
		}
		utxos, err := n.Electrum.ListUnspent(ctx, ScriptHash(script))
		if err != nil || len(utxos) != 1 || utxos[0].TxHash != op.Hash.String() || utxos[0].TxPos != op.Index ||
			utxos[0].Value != 70_000 || utxos[0].Height <= 0 {
			t.Fatalf("listunspent of %x: %+v (%v), want %v confirmed", script, utxos, err, op)
		}
	}
	if _, err := n.Fund("bcrt1...", 1000); err == nil {
		t.Fatal("Fund accepted a string")
	}
}

// TestReadmeShowsWalletTest keeps the README's wallet-style test the one
// that runs: the README holds TestWallet of wallet_test.go verbatim.
func TestReadmeShowsWalletTest(t *testing.T) {
	src, err := os.ReadFile("wallet_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(src, []byte("func TestWallet("))
	if i < 0 {
		t.Fatal("no TestWallet in wallet_test.go")
	}
	if !bytes.Contains(readme, src[i:]) {
		t.Fatal("README.md does not show TestWallet of integration/wallet_test.go verbatim; copy it over")
	}
}
