package integration

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
)

// jsDir holds the npm client libraries the JavaScript tests use.
var jsDir = filepath.Join("..", "electrum", "testdata", "js")

// TestFaucetFromJavaScript drives a bare node binary the way a wallet test
// in another language would: a Node.js script pays an address with the
// faucet RPC (over Node's http module), sees the payment over Electrum
// with the `electrum-client` npm library, mines a block with
// generatetoaddress and sees it confirmed. The test checks what the script
// saw against the node.
func TestFaucetFromJavaScript(t *testing.T) {
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(jsDir, "node_modules")); err != nil {
		t.Fatal("npm modules missing: run `npm ci --prefix electrum/testdata/js` (make deps does)")
	}
	n := StartNode(t, NodeConfig{Binary: true})
	addr, script := newWalletAddress(t)
	sh := ScriptHash(script)
	_, rpcPort, _ := net.SplitHostPort(n.RPCAddr)
	_, elPort, _ := net.SplitHostPort(n.ElectrumAddr)
	cmd := exec.Command(nodeJS, "regtest_faucet.js", rpcPort, RPCUser, RPCPass, elPort, addr.EncodeAddress(), sh,
		MiningAddress().EncodeAddress())
	cmd.Dir = jsDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v\n%s%s", err, out, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "FUNDED ") || !strings.HasPrefix(lines[1], "CONFIRMED ") {
		t.Fatalf("script printed %q", out)
	}
	funded := strings.SplitN(lines[0], " ", 4)
	confirmed := strings.SplitN(lines[1], " ", 4)
	txid, err := chainhash.NewHashFromStr(funded[1])
	if err != nil {
		t.Fatal(err)
	}

	// The faucet paid 1.5 BTC to the address.
	tx, err := n.RPC.GetRawTransaction(txid)
	if err != nil {
		t.Fatal(err)
	}
	paid := false
	for _, out := range tx.MsgTx().TxOut {
		paid = paid || (out.Value == 150_000_000 && bytes.Equal(out.PkScript, script))
	}
	if !paid {
		t.Fatalf("faucet transaction %v does not pay 1.5 BTC to %v", txid, addr)
	}
	if cls := txscript.GetScriptClass(script); cls != txscript.WitnessV0PubKeyHashTy {
		t.Fatalf("script class %v", cls)
	}

	// In the mempool first, then confirmed in the block the script mined
	// (the faucet itself mined 101 blocks to mature a coinbase).
	var hist []HistoryItem
	if err := json.Unmarshal([]byte(funded[3]), &hist); err != nil {
		t.Fatal(err)
	}
	want := []HistoryItem{{TxHash: txid.String(), Height: 0}}
	if funded[2] != str(Status(want)) || !equalHistory(withoutFees(hist), want) {
		t.Fatalf("mempool: status %s history %s, want %v", funded[2], funded[3], want)
	}
	_, tip, err := n.RPC.GetBestBlock()
	if err != nil || tip != 102 {
		t.Fatalf("tip at %d (%v), want 102", tip, err)
	}
	hist = nil
	var utxos []Unspent
	if err := json.Unmarshal([]byte(confirmed[2]), &hist); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(confirmed[3]), &utxos); err != nil {
		t.Fatal(err)
	}
	want = []HistoryItem{{TxHash: txid.String(), Height: tip}}
	if confirmed[1] != str(Status(want)) || !equalHistory(withoutFees(hist), want) {
		t.Fatalf("confirmed: status %s history %s, want %v", confirmed[1], confirmed[2], want)
	}
	if len(utxos) != 1 || utxos[0].TxHash != txid.String() || utxos[0].Value != 150_000_000 || utxos[0].Height != tip {
		t.Fatalf("listunspent %+v", utxos)
	}
}
