package integration

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestEsploraURL runs a node with NodeConfig.Esplora, in-process and as
// the binary: its EsploraURL serves the chain the node's RPC reports, and
// a script's history as the Electrum server gives it.
func TestEsploraURL(t *testing.T) {
	for _, binary := range []bool{false, true} {
		ctx := testContext(t)
		n := StartNode(t, NodeConfig{Esplora: true, Binary: binary, Args: []string{"--esplorapath=/api"}})
		if n.EsploraURL == "" {
			t.Fatal("no Esplora URL")
		}
		addr, script := newWalletAddress(t)
		if _, err := n.MineTo(addr, 3); err != nil {
			t.Fatal(err)
		}
		get := func(path string) string {
			t.Helper()
			resp, err := http.Get(n.EsploraURL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
			}
			return string(b)
		}
		_, height, err := n.RPC.GetBestBlock()
		if err != nil {
			t.Fatal(err)
		}
		if got := get("/blocks/tip/height"); got != strconv.Itoa(int(height)) {
			t.Fatalf("binary %v: tip height %s, RPC %d", binary, got, height)
		}
		hist, err := n.Electrum.GetHistory(ctx, ScriptHash(script))
		if err != nil {
			t.Fatal(err)
		}
		sh := indexers.ScriptHashFromScript(script)
		var txs []struct {
			TxID string `json:"txid"`
		}
		if err := json.Unmarshal([]byte(get("/scripthash/"+hex.EncodeToString(sh[:])+"/txs/chain")), &txs); err != nil {
			t.Fatal(err)
		}
		if len(txs) != len(hist) || len(txs) != 3 {
			t.Fatalf("binary %v: %d transactions, Electrum %d", binary, len(txs), len(hist))
		}
		for i := range txs {
			if txs[i].TxID != hist[len(hist)-1-i].TxHash {
				t.Fatalf("binary %v: txs/chain[%d] %s, Electrum %v", binary, i, txs[i].TxID, hist[len(hist)-1-i])
			}
		}
	}
}
