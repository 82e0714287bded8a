package esplora

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// jsDriver runs testdata/js/driver.mjs: the npm client libraries, called
// one command at a time.
type jsDriver struct {
	t   *testing.T
	in  *json.Encoder
	out *bufio.Scanner
}

type jsResult struct {
	OK     json.RawMessage `json:"ok"`
	Error  string          `json:"error"`
	Status int             `json:"status"`
}

// call calls lib.bitcoin[group][fn](args) and returns its result.
func (d *jsDriver) call(lib, group, fn string, args map[string]any) jsResult {
	d.t.Helper()
	if err := d.in.Encode(map[string]any{"lib": lib, "group": group, "fn": fn, "args": args}); err != nil {
		d.t.Fatal(err)
	}
	if !d.out.Scan() {
		d.t.Fatalf("%s %s.%s: the driver ended: %v", lib, group, fn, d.out.Err())
	}
	var r jsResult
	if err := json.Unmarshal(d.out.Bytes(), &r); err != nil {
		d.t.Fatalf("%s %s.%s: %v in %s", lib, group, fn, err, d.out.Bytes())
	}
	return r
}

// ok calls and decodes a successful result into v.
func (d *jsDriver) ok(lib, group, fn string, args map[string]any, v any) {
	d.t.Helper()
	r := d.call(lib, group, fn, args)
	if r.Error != "" || r.OK == nil {
		d.t.Fatalf("%s %s.%s(%v): %d %s", lib, group, fn, args, r.Status, r.Error)
	}
	if err := json.Unmarshal(r.OK, v); err != nil {
		d.t.Fatalf("%s %s.%s: %v in %s", lib, group, fn, err, r.OK)
	}
}

// TestJSClients drives mempool.space's @mempool/mempool.js (over HTTP) and
// the esplora-client package (over HTTPS, the only scheme it speaks)
// against a regtest chain: fund an address, confirm, spend it 30 times
// over several blocks, page its history past 25 and read its unspent
// outputs, each answer checked against the Electrum server's for the same
// script; every transaction is broadcast through the libraries.
func TestJSClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the npm client test needs Node.js")
	}
	dir := filepath.Join("testdata", "js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal("npm modules missing: run `npm ci --prefix esplora/testdata/js` (make deps does)")
	}
	certPEM, keyPEM, err := btcutil.NewTLSCertPair("btcd-electrum esplora test", time.Now().Add(24*time.Hour), []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	certFile := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := newTestNode(t, "/api", tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}))
	httpHost := strings.TrimSuffix(strings.TrimPrefix(n.base, "http://"), "/api")

	cmd := exec.Command(node, "driver.mjs", httpHost, tl.Addr().String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+certFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("driver stderr: %s", stderr.String())
		}
	})
	out := bufio.NewScanner(stdout)
	out.Buffer(make([]byte, 1<<20), 16<<20)
	d := &jsDriver{t: t, in: json.NewEncoder(stdin), out: out}
	libs := []string{"mempool", "esplora"}
	el := n.dialElectrum()

	for _, lib := range libs {
		var height int32
		d.ok(lib, "blocks", "getBlocksTipHeight", nil, &height)
		if height != n.h.Chain.BestSnapshot().Height {
			t.Fatalf("%s tip height %d, chain %d", lib, height, n.h.Chain.BestSnapshot().Height)
		}
	}
	var tipHash string
	d.ok("mempool", "blocks", "getBlocksTipHash", nil, &tipHash)
	var txids []string
	d.ok("mempool", "blocks", "getBlockTxids", map[string]any{"hash": tipHash}, &txids)
	tip, _ := n.h.Chain.BlockByHeight(n.h.Chain.BestSnapshot().Height)
	if tipHash != tip.Hash().String() || len(txids) != len(tip.Transactions()) {
		t.Fatalf("mempool.js tip %s with %d txids, chain %s", tipHash, len(txids), tip.Hash())
	}

	script := testchain.NewSpendableScript(testchain.KindP2WSH, 77_777)
	addr := scriptAddress(script.PkScript, n.h.Params)
	sh := indexers.ScriptHashFromScript(script.PkScript)
	args := map[string]any{"address": addr}

	// Fund: broadcast through mempool.js, seen unconfirmed by both.
	coin := n.coin()
	prev := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 10_000, PkScript: script.PkScript})
	var txid string
	d.ok("mempool", "transactions", "postTx", map[string]any{"txhex": txHex(prev)}, &txid)
	if txid != prev.TxHash().String() {
		t.Fatalf("postTx: %s, want %s", txid, prev.TxHash())
	}
	type statsView struct {
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	for _, lib := range libs {
		var st statsView
		d.ok(lib, "addresses", "getAddress", args, &st)
		if st.MempoolStats.TxCount != 1 || st.MempoolStats.FundedTxoSum != coin.Value-10_000 || st.ChainStats.TxCount != 0 {
			t.Fatalf("%s getAddress while unconfirmed: %+v", lib, st)
		}
	}
	var memTxs []txValue
	d.ok("mempool", "addresses", "getAddressTxsMempool", args, &memTxs)
	if len(memTxs) != 1 || memTxs[0].TxID != txid || memTxs[0].Fee != 10_000 {
		t.Fatalf("getAddressTxsMempool: %+v", memTxs)
	}

	// Confirm, then spend it 30 times, each spend paying the address again,
	// through both libraries in turn, mining every seventh.
	n.mineMempool()
	var st txStatus
	d.ok("mempool", "transactions", "getTxStatus", map[string]any{"txid": txid}, &st)
	if !st.Confirmed || *st.BlockHeight != n.h.Chain.BestSnapshot().Height {
		t.Fatalf("getTxStatus once mined: %+v", st)
	}
	first := prev
	for i := 0; i < 30; i++ {
		in := testchain.Coin{OutPoint: wire.OutPoint{Hash: prev.TxHash(), Index: 0}, Value: prev.TxOut[0].Value, Script: &script}
		tx := testchain.SpendTx([]testchain.Coin{in}, &wire.TxOut{Value: in.Value - 1000, PkScript: script.PkScript})
		lib := libs[i%2]
		var got string
		d.ok(lib, "transactions", "postTx", map[string]any{"txhex": txHex(tx)}, &got)
		if got != tx.TxHash().String() {
			t.Fatalf("%s postTx: %s, want %s", lib, got, tx.TxHash())
		}
		if i%7 == 6 {
			n.mineMempool()
		}
		prev = tx
	}
	var spends []spendValue
	d.ok("mempool", "transactions", "getTxOutspends", map[string]any{"txid": first.TxHash().String()}, &spends)
	if len(spends) != 1 || !spends[0].Spent || *spends[0].Vin != 0 || !spends[0].Status.Confirmed {
		t.Fatalf("getTxOutspends of the funding: %+v", spends)
	}

	// Both views, unconfirmed spends included, then all confirmed: every
	// page through after_txid is the Electrum mempool by txid, then the
	// Electrum history reversed (newest first).
	for round := 0; round < 2; round++ {
		var elHist []struct {
			TxHash string `json:"tx_hash"`
			Height int32  `json:"height"`
		}
		el.call(t, "blockchain.scripthash.get_history", []any{sh.String()}, &elHist)
		confirmed := elHist[:0]
		for _, e := range elHist {
			if e.Height > 0 { // get_history lists the unconfirmed too
				confirmed = append(confirmed, e)
			}
		}
		elHist = confirmed
		var elMem []struct {
			TxHash string `json:"tx_hash"`
		}
		el.call(t, "blockchain.scripthash.get_mempool", []any{sh.String()}, &elMem)
		want := make([]string, 0, len(elHist)+len(elMem))
		for _, e := range elMem {
			want = append(want, e.TxHash)
		}
		slices.Sort(want)
		for i := len(elHist) - 1; i >= 0; i-- {
			want = append(want, elHist[i].TxHash)
		}
		if len(elHist) <= chainTxsPerPage || (round == 0) != (len(elMem) > 0) {
			t.Fatalf("round %d: %d confirmed, %d unconfirmed", round, len(elHist), len(elMem))
		}
		for _, lib := range libs {
			var all []string
			var after string
			for pages := 0; ; pages++ {
				a := map[string]any{"address": addr}
				if after != "" {
					a["after_txid"] = after
				}
				var page []txValue
				d.ok(lib, "addresses", "getAddressTxs", a, &page)
				if len(page) == 0 || pages > 10 {
					break
				}
				for _, v := range page {
					all = append(all, v.TxID)
				}
				after = page[len(page)-1].TxID
			}
			if strings.Join(all, " ") != strings.Join(want, " ") {
				t.Fatalf("round %d: %s pages of getAddressTxs:\n%v\nElectrum:\n%v", round, lib, all, want)
			}

			var utxos []utxoValue
			d.ok(lib, "addresses", "getAddressTxsUtxo", args, &utxos)
			var elUnspent []struct {
				TxHash string `json:"tx_hash"`
				TxPos  uint32 `json:"tx_pos"`
				Value  int64  `json:"value"`
			}
			el.call(t, "blockchain.scripthash.listunspent", []any{sh.String()}, &elUnspent)
			if len(utxos) != 1 || len(elUnspent) != 1 || utxos[0].TxID != elUnspent[0].TxHash || utxos[0].Value != elUnspent[0].Value {
				t.Fatalf("round %d: %s utxo %+v, Electrum %+v", round, lib, utxos, elUnspent)
			}

			var stv statsView
			d.ok(lib, "addresses", "getAddress", args, &stv)
			var bal struct {
				Confirmed   int64 `json:"confirmed"`
				Unconfirmed int64 `json:"unconfirmed"`
			}
			el.call(t, "blockchain.scripthash.get_balance", []any{sh.String()}, &bal)
			if stv.ChainStats.TxCount != len(elHist) || stv.MempoolStats.TxCount != len(elMem) ||
				stv.ChainStats.FundedTxoSum-stv.ChainStats.SpentTxoSum != bal.Confirmed ||
				stv.MempoolStats.FundedTxoSum-stv.MempoolStats.SpentTxoSum != bal.Unconfirmed {
				t.Fatalf("round %d: %s getAddress %+v, Electrum balance %+v", round, lib, stv, bal)
			}
		}
		if round == 0 {
			n.mineMempool()
		}
	}

	// A reorganization: the block holding the last spend is replaced by a
	// longer branch without it; both libraries see it unconfirmed, then
	// confirmed again in the new branch.
	best := n.h.Chain.BestSnapshot()
	tipBlock, err := n.h.Chain.BlockByHash(&best.Hash)
	if err != nil {
		t.Fatal(err)
	}
	parent, err := n.h.Chain.BlockByHash(&tipBlock.MsgBlock().Header.PrevBlock)
	if err != nil {
		t.Fatal(err)
	}
	parent.SetHeight(best.Height - 1)
	lastID := prev.TxHash().String()
	n.mineOn(n.mineOn(parent))
	for _, lib := range libs {
		var v txValue
		d.ok(lib, "transactions", "getTx", map[string]any{"txid": lastID}, &v)
		if v.Status.Confirmed {
			t.Fatalf("%s getTx after the reorganization: %+v", lib, v.Status)
		}
	}
	n.mineMempool()
	d.ok("mempool", "transactions", "getTxStatus", map[string]any{"txid": lastID}, &st)
	if !st.Confirmed || *st.BlockHeight != best.Height+2 {
		t.Fatalf("getTxStatus once mined again: %+v", st)
	}

	// A transaction the node refuses reaches each library as an error with
	// Esplora's status and text.
	var tx txValue
	d.ok("esplora", "transactions", "getTx", map[string]any{"txid": prev.TxHash().String()}, &tx)
	if tx.Status.Confirmed != true || tx.Vin[0].Prevout == nil || tx.Vin[0].Prevout.ScriptPubKeyAddr != addr {
		t.Fatalf("esplora-client getTx: %+v", tx)
	}
	for _, lib := range libs {
		r := d.call(lib, "transactions", "postTx", map[string]any{"txhex": "00" + txHex(first)})
		if r.Error == "" || !strings.Contains(r.Error, `sendrawtransaction RPC error: {"code":-22`) || (lib == "mempool" && r.Status != 400) {
			t.Fatalf("%s postTx of garbage: %+v", lib, r)
		}
	}
	var fees map[string]float64
	d.ok("esplora", "fees", "getFeeEstimates", nil, &fees)
	// The estimator may have no estimate yet on a short chain; what it
	// answers is for Esplora's targets, in sat/vB.
	targets := map[string]bool{}
	for _, target := range feeTargets {
		targets[fmt.Sprint(target)] = true
	}
	for k, v := range fees {
		if !targets[k] || v <= 0 {
			t.Fatalf("fee estimate %s: %v", k, v)
		}
	}
}
