package electrum

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestJSClients runs real Electrum client libraries from npm against the
// server on a real chain: `electrum-client` over TCP and
// `@electrum-cash/network` with `@electrum-cash/web-socket` over WS. Each
// script subscribes to a script hash and waits; the test then broadcasts a
// transaction paying it (a mempool notification) and mines it (a block
// notification), and checks what the script saw.
func TestJSClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join("testdata", "js", "node_modules")); err != nil {
		t.Fatal("npm modules missing: run `npm ci --prefix electrum/testdata/js` (make deps does)")
	}
	n := newRealNode(t, 0, nil)
	cases := []struct {
		name, script, addr string
		tag                byte
	}{
		{"electrum-client over TCP", "tcp_subscribe.js", n.addr, 0x61},
		{"electrum-cash over WS", "ws_subscribe.mjs", n.wsAddr, 0x62},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := append([]byte{0x00, 0x14}, bytes.Repeat([]byte{tc.tag}, 20)...)
			sh := indexers.ScriptHashFromScript(target)
			_, port, _ := net.SplitHostPort(tc.addr)
			cmd := exec.Command(node, tc.script, port, sh.String())
			cmd.Dir = filepath.Join("testdata", "js")
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := bufio.NewScanner(out)
			lines.Buffer(make([]byte, 1<<20), 1<<20)
			next := func(prefix string) []string {
				t.Helper()
				if !lines.Scan() {
					cmd.Wait()
					t.Fatalf("script ended before %s: %s", prefix, stderr.String())
				}
				f := strings.SplitN(lines.Text(), " ", 7)
				if f[0] != prefix {
					t.Fatalf("script said %q, want %s (stderr %s)", lines.Text(), prefix, stderr.String())
				}
				return f
			}
			status := func(txid chainhash.Hash, height int32) string {
				d := indexers.NewStatusHasher()
				d.Add(txid, height)
				return *statusHex(d.Sum())
			}

			ready := next("READY")
			_, tipH := n.h.Tip()
			if ready[1] != "null" || ready[2] != fmt.Sprint(tipH) {
				t.Fatalf("READY %v, want null status at height %d", ready, tipH)
			}
			coin := n.coin()
			change := &n.h.Pool.Spendable[1]
			tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(7000_0000, target), wire.NewTxOut(coin.Value-7000_0000-15_000, change.PkScript))
			if err := n.backend.Broadcast(tx); err != nil {
				t.Fatal(err)
			}

			f := next("NOTIFIED")
			if f[1] != status(tx.TxHash(), 0) {
				t.Fatalf("mempool status %s, want %s", f[1], status(tx.TxHash(), 0))
			}
			var hist []historyItem
			decodeInto(t, json.RawMessage(f[2]), &hist)
			if len(hist) != 1 || hist[0].TxHash != tx.TxHash().String() || hist[0].Height != 0 || *hist[0].Fee != 15_000 {
				t.Fatalf("client saw history %s", f[2])
			}
			var bal map[string]int64
			decodeInto(t, json.RawMessage(f[3]), &bal)
			if bal["unconfirmed"] != 7000_0000 || bal["confirmed"] != 0 {
				t.Fatalf("client saw balance %s", f[3])
			}

			block := n.mine(nil, tx)
			f = next("CONFIRMED")
			h := block.Height()
			if f[1] != status(tx.TxHash(), h) {
				t.Fatalf("confirmed status %s, want %s", f[1], status(tx.TxHash(), h))
			}
			hist = nil
			decodeInto(t, json.RawMessage(f[2]), &hist)
			if len(hist) != 1 || hist[0].Height != h || hist[0].Fee != nil {
				t.Fatalf("client saw history %s", f[2])
			}
			var utxos []unspentItem
			decodeInto(t, json.RawMessage(f[3]), &utxos)
			if len(utxos) != 1 || utxos[0].Value != 7000_0000 || utxos[0].Height != h {
				t.Fatalf("client saw unspent %s", f[3])
			}
			if f[4] != fmt.Sprint(h) || f[5] != "headers=1" {
				t.Fatalf("client saw merkle height %s and %s", f[4], f[5])
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("script failed: %v %s", err, stderr.String())
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
