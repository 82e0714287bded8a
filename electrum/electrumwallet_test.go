package electrum

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestElectrumWallet drives the Electrum wallet itself (the `electrum`
// program, e.g. Debian's 4.3.4) against the server on a real chain: it
// restores a wallet, syncs, receives a payment (mempool, then mined), pays
// out with a transaction it signs and broadcasts through the server, and
// sees it confirmed. It is slow (the first connection can stall ~30 s), so
// it runs only with ELECTRUM_WALLET_TEST=1 and an `electrum` on PATH.
func TestElectrumWallet(t *testing.T) {
	if os.Getenv("ELECTRUM_WALLET_TEST") == "" {
		t.Skip("set ELECTRUM_WALLET_TEST=1 to run the Electrum wallet test")
	}
	bin, err := exec.LookPath("electrum")
	if err != nil {
		t.Skip("electrum is not on PATH")
	}
	for _, transport := range []string{"t", "s"} {
		t.Run(map[string]string{"t": "TCP", "s": "TLS"}[transport], func(t *testing.T) {
			electrumWalletFlow(t, bin, transport)
		})
	}
}

// electrumWalletFlow runs the wallet flow over TCP ("t") or TLS ("s", with
// the server's self-signed certificate, which the wallet pins).
func electrumWalletFlow(t *testing.T, bin, transport string) {
	var tlsAddr string
	n := newRealNode(t, 0, func(c *Config) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		tlsAddr = l.Addr().String()
		c.Listeners = append(c.Listeners, Listener{Transport: TLS, Listener: l})
		c.CertDir = t.TempDir()
	})
	server := n.addr
	if transport == "s" {
		server = tlsAddr
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--regtest", "-D", dir}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("electrum %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	poll := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Second)
		}
	}
	seed := strings.Trim(run("--offline", "make_seed"), `"`)
	run("--offline", "restore", seed)
	run("--offline", "setconfig", "server", server+":"+transport)
	run("--offline", "setconfig", "oneserver", "true")
	run("--offline", "setconfig", "auto_connect", "false")
	run("daemon", "-d")
	defer exec.Command(bin, "--regtest", "-D", dir, "stop").Run()
	run("load_wallet")
	poll("the wallet to synchronize", func() bool { return run("is_synchronized") == "true" })

	addr := run("getunusedaddress")
	a, err := address.DecodeAddress(addr, n.h.Params)
	if err != nil {
		t.Fatal(err)
	}
	pkScript, err := txscript.PayToAddrScript(a)
	if err != nil {
		t.Fatal(err)
	}
	coin := n.coin()
	change := &n.h.Pool.Spendable[1]
	pay := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(1_0000_0000, pkScript), wire.NewTxOut(coin.Value-1_0000_0000-20_000, change.PkScript))
	if err := n.backend.Broadcast(pay); err != nil {
		t.Fatal(err)
	}
	balance := func() map[string]string {
		var b map[string]string
		json.Unmarshal([]byte(run("getbalance")), &b)
		return b
	}
	poll("the unconfirmed payment", func() bool { return balance()["unconfirmed"] == "1" })
	n.mine(nil, pay)
	poll("the confirmed payment", func() bool { b := balance(); return b["confirmed"] == "1" && b["unconfirmed"] == "" })

	// Pay back out: the wallet signs, the server relays into btcd's pool.
	dest, _ := address.NewAddressWitnessPubKeyHash(make([]byte, 20), n.h.Params)
	raw := strings.Trim(run("payto", dest.EncodeAddress(), "0.5", "--feerate", "2"), `"`)
	txid := strings.Trim(run("broadcast", raw), `"`)
	h, err := chainhash.NewHashFromStr(txid)
	if err != nil {
		t.Fatalf("broadcast answered %q", txid)
	}
	if !n.pool.IsTransactionInPool(h) {
		t.Fatal("the wallet's transaction is not in btcd's mempool")
	}
	n.mineMempool()
	poll("the wallet's transaction to confirm", func() bool {
		var st map[string]any
		json.Unmarshal([]byte(run("get_tx_status", txid)), &st)
		return fmt.Sprint(st["confirmations"]) == "1"
	})
}
