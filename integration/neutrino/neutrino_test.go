// Package neutrino_test runs a real BIP 157 light client, Lightning Labs'
// Neutrino, against the built btcd-electrum binary on regtest. It is a
// module of its own because Neutrino is built on an older btcd than the
// node; the two only meet over the P2P protocol.
package neutrino_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/gcs/builder"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
	"github.com/btcsuite/btcwallet/walletdb"
	_ "github.com/btcsuite/btcwallet/walletdb/bdb" // the walletdb driver Neutrino's stores use
	"github.com/lightninglabs/neutrino"
)

// wait bounds every wait of the test (a hang guard, not a timing
// assertion).
const wait = 2 * time.Minute

// nodeBinary returns the node binary: $BTCD_ELECTRUM_BIN, or one built from
// the repository root into a temporary directory.
func nodeBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("BTCD_ELECTRUM_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	bin := filepath.Join(t.TempDir(), "btcd-electrum")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/btcd-electrum")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitUntil polls cond until it holds or the hang guard fires.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// node is the running binary and its RPC client.
type node struct {
	p2p string
	rpc *rpcclient.Client
}

// startNode runs the binary on regtest in a temporary datadir.
func startNode(t *testing.T) *node {
	t.Helper()
	dir := t.TempDir()
	p2p, rpcAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(nodeBinary(t), "--regtest", "--datadir="+filepath.Join(dir, "data"),
		"--logdir="+filepath.Join(dir, "logs"), "--listen="+p2p, "--rpclisten="+rpcAddr,
		"--rpcuser=user", "--rpcpass=pass", "--notls", "--nodnsseed", "--utxocachemaxsize=1",
		"--miningaddr=bcrt1ql3e9pgs3mmwuwrh95fecme0s0qtn2880hlwwpw",
		"--electrumindex", "--electrumlisten="+freeAddr(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "logs", "regtest", "btcd-electrum.log")); err == nil {
				t.Logf("node log:\n%s", b)
			}
		}
	})
	c, err := rpcclient.New(&rpcclient.ConnConfig{Host: rpcAddr, User: "user", Pass: "pass",
		HTTPPostMode: true, DisableTLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	waitUntil(t, "the node's RPC server", func() bool {
		_, err := c.GetBlockCount()
		return err == nil
	})
	return &node{p2p: p2p, rpc: c}
}

// raw calls an RPC method with JSON parameters.
func (n *node) raw(t *testing.T, method string, params ...any) json.RawMessage {
	t.Helper()
	ps := make([]json.RawMessage, len(params))
	for i, p := range params {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		ps[i] = b
	}
	r, err := n.rpc.RawRequest(method, ps)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return r
}

// generate mines blocks and returns their hashes.
func (n *node) generate(t *testing.T, blocks int) []chainhash.Hash {
	t.Helper()
	var hexes []string
	if err := json.Unmarshal(n.raw(t, "generate", blocks), &hexes); err != nil {
		t.Fatal(err)
	}
	out := make([]chainhash.Hash, len(hexes))
	for i, h := range hexes {
		hash, err := chainhash.NewHashFromStr(h)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = *hash
	}
	return out
}

// tip returns the node's best block.
func (n *node) tip(t *testing.T) (chainhash.Hash, int32) {
	t.Helper()
	hash, height, err := n.rpc.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	return *hash, height
}

// filterHeader returns the node's BIP 157 filter header of a block.
func (n *node) filterHeader(t *testing.T, hash chainhash.Hash) chainhash.Hash {
	t.Helper()
	var s string
	if err := json.Unmarshal(n.raw(t, "getcfilterheader", hash.String(), 0), &s); err != nil {
		t.Fatal(err)
	}
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		t.Fatal(err)
	}
	return *h
}

// light is a Neutrino chain service connected to the node only.
type light struct {
	svc *neutrino.ChainService
}

// startLight starts Neutrino on regtest with the node as its only peer.
func startLight(t *testing.T, peer string) *light {
	t.Helper()
	dir := t.TempDir()
	db, err := walletdb.Create("bdb", filepath.Join(dir, "neutrino.db"), true, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	svc, err := neutrino.NewChainService(neutrino.Config{
		DataDir:      dir,
		Database:     db,
		ChainParams:  chaincfg.RegressionNetParams,
		ConnectPeers: []string{peer},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	return &light{svc: svc}
}

// syncedTo waits until Neutrino's headers and filter headers reach the
// block hash.
func (l *light) syncedTo(t *testing.T, hash chainhash.Hash, height int32) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("Neutrino to sync to %v (%d)", hash, height), func() bool {
		best, err := l.svc.BestBlock()
		return err == nil && best.Hash == hash && best.Height == height
	})
}

// findPayment walks every block's filter (fetched from the node by
// Neutrino, which checks each against the filter header chain it synced),
// downloads the blocks whose filter matches pkScript and returns where the
// transaction paying it is, as a wallet restoring from a seed does.
func (l *light) findPayment(t *testing.T, pkScript []byte, height int32) (chainhash.Hash, int32, []int32) {
	t.Helper()
	var (
		found       chainhash.Hash
		foundHeight int32 = -1
		matches     []int32
	)
	for h := int32(0); h <= height; h++ {
		hash, err := l.svc.GetBlockHash(int64(h))
		if err != nil {
			t.Fatal(err)
		}
		filter, err := l.svc.GetCFilter(*hash, wire.GCSFilterRegular)
		if err != nil {
			t.Fatalf("filter of block %d: %v", h, err)
		}
		key := builder.DeriveKey(hash)
		match, err := filter.Match(key, pkScript)
		if err != nil {
			t.Fatal(err)
		}
		if !match {
			continue
		}
		matches = append(matches, h)
		block, err := l.svc.GetBlock(*hash)
		if err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
		for _, tx := range block.Transactions() {
			for _, out := range tx.MsgTx().TxOut {
				if string(out.PkScript) == string(pkScript) {
					found, foundHeight = *tx.Hash(), h
				}
			}
		}
	}
	return found, foundHeight, matches
}

// TestNeutrinoSyncsFiltersAndFollowsReorg pays a fresh P2WPKH script on the
// node, lets Neutrino sync block headers, filter headers (checked against
// the node's cfcheckpt) and filters from it, and finds the payment through
// its filter; then the node reorganizes the payment's block away and
// confirms the payment again in another block of a longer branch: Neutrino
// follows to the new tip, its filter header there is the node's, and the
// payment is found in the new block.
func TestNeutrinoSyncsFiltersAndFollowsReorg(t *testing.T) {
	n := startNode(t)
	n.generate(t, 101)

	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr, err := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(key.PubKey().SerializeCompressed()),
		&chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	pkScript, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	var txid string
	if err := json.Unmarshal(n.raw(t, "faucet", addr.EncodeAddress(), 1.5), &txid); err != nil {
		t.Fatal(err)
	}
	payBlock := n.generate(t, 1)[0]
	n.generate(t, 2)
	tip, height := n.tip(t)

	l := startLight(t, n.p2p)
	l.syncedTo(t, tip, height)
	if got := l.filterHeaderTip(t); got != n.filterHeader(t, tip) {
		t.Fatalf("Neutrino's filter header tip %v, the node's %v", got, n.filterHeader(t, tip))
	}
	found, foundHeight, matches := l.findPayment(t, pkScript, height)
	if found.String() != txid || foundHeight != height-2 {
		t.Fatalf("payment %v found at %d (filter matches %v), want %s at %d", found, foundHeight, matches, txid, height-2)
	}
	if gotHash, _ := l.svc.GetBlockHash(int64(foundHeight)); *gotHash != payBlock {
		t.Fatalf("payment block %v, want %v", gotHash, payBlock)
	}

	// Reorganize: the payment's block and its two successors are replaced
	// by a longer branch; the payment returns to the mempool and is mined
	// again in the branch's first block.
	n.raw(t, "invalidateblock", payBlock.String())
	waitUntil(t, "the payment back in the mempool", func() bool {
		hashes, err := n.rpc.GetRawMempool()
		return err == nil && len(hashes) == 1 && hashes[0].String() == txid
	})
	newPayBlock := n.generate(t, 5)[0]
	newTip, newHeight := n.tip(t)
	if newHeight != height+2 || newPayBlock == payBlock {
		t.Fatalf("branch to height %d from %v", newHeight, newPayBlock)
	}
	l.syncedTo(t, newTip, newHeight)
	if got := l.filterHeaderTip(t); got != n.filterHeader(t, newTip) {
		t.Fatalf("after the reorg Neutrino's filter header tip %v, the node's %v", got, n.filterHeader(t, newTip))
	}
	found, foundHeight, matches = l.findPayment(t, pkScript, newHeight)
	if found.String() != txid || foundHeight != height-2 {
		t.Fatalf("after the reorg payment %v found at %d (filter matches %v), want %s at %d",
			found, foundHeight, matches, txid, height-2)
	}
	if gotHash, _ := l.svc.GetBlockHash(int64(foundHeight)); *gotHash != newPayBlock {
		t.Fatalf("payment block after the reorg %v, want %v", gotHash, newPayBlock)
	}
}

// filterHeaderTip returns Neutrino's filter header at its tip.
func (l *light) filterHeaderTip(t *testing.T) chainhash.Hash {
	t.Helper()
	h, _, err := l.svc.RegFilterHeaders.ChainTip()
	if err != nil {
		t.Fatal(err)
	}
	return *h
}
