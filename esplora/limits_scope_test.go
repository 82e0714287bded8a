package esplora

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// serveWith serves n's backend and chain with cfg (no cost limits) and
// returns the base URL.
func serveWith(t *testing.T, n *testNode, cfg Config) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listeners = []net.Listener{l}
	cfg.CostHardLimit = -1
	s := New(cfg, n.backend, n.h.Chain)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return "http://" + l.Addr().String()
}

func getURL(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The history limit bounds the outspends that need the script's history
// (a spent output's spender is found there), not those of outputs still
// unspent, which one unspent-row lookup answers.
func TestOutspendsOfUnspentOutputsReadNoHistory(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 424_242)
	coin := n.coin()
	tx1 := testchain.SpendTx([]testchain.Coin{coin},
		&wire.TxOut{Value: 50_000_000, PkScript: script.PkScript},
		&wire.TxOut{Value: coin.Value - 50_000_000 - 1000, PkScript: script.PkScript})
	n.mine(tx1)
	other := testchain.NewSpendableScript(testchain.KindP2SH, 434_343)
	tx2 := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: tx1.TxHash(), Index: 0}, Value: 50_000_000, Script: &script}},
		&wire.TxOut{Value: 50_000_000 - 1000, PkScript: other.PkScript})
	n.mine(tx2)
	tx1id := tx1.TxHash().String()

	spent := `{"spent":true,"txid":"` + tx2.TxHash().String() + `","vin":0,"status":`
	if code, body := n.get("/tx/" + tx1id + "/outspends"); code != 200 || !strings.HasPrefix(body, "["+spent) ||
		!strings.HasSuffix(body, `,{"spent":false}]`) {
		t.Fatalf("default server: %d %s", code, body)
	}
	// The script's two entries are past this server's history limit.
	base := serveWith(t, n, Config{MaxHistory: 1})
	if code, body := getURL(t, base+"/tx/"+tx1id+"/outspend/1"); code != 200 || body != `{"spent":false}` {
		t.Errorf("the unspent output with --esploramaxhistory=1: %d %q", code, body)
	}
	for _, path := range []string{"/tx/" + tx1id + "/outspend/0", "/tx/" + tx1id + "/outspends"} {
		if code, body := getURL(t, base+path); code != 400 || body != "Too many history entries" {
			t.Errorf("%s needs the history, past --esploramaxhistory=1: %d %q", path, code, body)
		}
	}
}

// As electrs' --utxos-limit, --esploramaxutxos bounds the confirmed
// outputs returned; the unconfirmed ones come on top.
func TestUtxoLimitCountsConfirmedOnly(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 515_151)
	coin := n.coin()
	n.mine(testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 1000, PkScript: script.PkScript}))
	coin2 := n.coin()
	unconf := testchain.SpendTx([]testchain.Coin{coin2}, &wire.TxOut{Value: coin2.Value - 1000, PkScript: script.PkScript})
	if code, body := n.post("/tx", txHex(unconf)); code != 200 {
		t.Fatalf("POST /tx: %d %s", code, body)
	}
	base := serveWith(t, n, Config{MaxUtxos: 1})
	path := "/scripthash/" + esploraHash(script.PkScript) + "/utxo"
	code, body := getURL(t, base+path)
	if code != 200 || strings.Count(body, `"txid"`) != 2 {
		t.Fatalf("%s with --esploramaxutxos=1, one confirmed and one unconfirmed output: %d %q", path, code, body)
	}
	n.mine(testchain.SpendTx([]testchain.Coin{n.coin()}, &wire.TxOut{Value: 1000, PkScript: script.PkScript}))
	if code, body := getURL(t, base+path); code != 400 || body != "Too many history entries" {
		t.Fatalf("%s with --esploramaxutxos=1 and more confirmed outputs: %d %q", path, code, body)
	}
}

// JSON answers are written as electrs' serde_json writes them: '<' and '>'
// as they are, which the assembly of a script that stops parsing ends in.
func TestAsmNotHTMLEscaped(t *testing.T) {
	n := newTestNode(t, "")
	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin},
		&wire.TxOut{Value: 1000, PkScript: []byte{0x4c, 0x02}},
		&wire.TxOut{Value: coin.Value - 2000, PkScript: testchain.NewSpendableScript(testchain.KindP2WSH, 616_161).PkScript})
	n.mine(tx)
	body := n.getText("/tx/" + tx.TxHash().String())
	if want := `"scriptpubkey_asm":"OP_PUSHDATA1 <push past end>"`; !strings.Contains(body, want) {
		t.Fatalf("GET /tx/:txid of an output script 4c02: %s; want %s", body, want)
	}
	if strings.HasSuffix(body, "\n") {
		t.Fatal("the answer ends in a newline")
	}
}

// --esploramaxutxos bounds the confirmed outputs /utxo returns: those a
// mempool transaction spends are left out of the answer, and so of the
// count. A script over the limit until a consolidation in the mempool
// confirms is answered.
func TestUtxoLimitLeavesOutMempoolSpent(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 525_252)
	coin := n.coin()
	fan := testchain.SpendTx([]testchain.Coin{coin},
		&wire.TxOut{Value: 20_000, PkScript: script.PkScript},
		&wire.TxOut{Value: 30_000, PkScript: script.PkScript},
		&wire.TxOut{Value: coin.Value - 60_000, PkScript: testchain.NewSpendableScript(testchain.KindP2WSH, 525_253).PkScript})
	n.mine(fan)
	base := serveWith(t, n, Config{MaxUtxos: 1})
	path := "/scripthash/" + esploraHash(script.PkScript) + "/utxo"
	if code, body := getURL(t, base+path); code != 400 || body != "Too many history entries" {
		t.Fatalf("%s with --esploramaxutxos=1 and two confirmed outputs: %d %q", path, code, body)
	}
	// The mempool spends the first output elsewhere: one confirmed output
	// is left to return.
	spend := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: fan.TxHash(), Index: 0}, Value: 20_000, Script: &script}},
		&wire.TxOut{Value: 15_000, PkScript: testchain.NewSpendableScript(testchain.KindP2WSH, 525_254).PkScript})
	if code, body := n.post("/tx", txHex(spend)); code != 200 {
		t.Fatalf("POST /tx: %d %s", code, body)
	}
	var utxos []utxoValue
	code, body := getURL(t, base+path)
	if code != 200 {
		t.Fatalf("%s with --esploramaxutxos=1, one of two confirmed outputs spent in the mempool: %d %q", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), &utxos); err != nil || len(utxos) != 1 ||
		utxos[0].TxID != fan.TxHash().String() || utxos[0].Vout != 1 || utxos[0].Value != 30_000 {
		t.Fatalf("%s: %q (%v), want the second output of %s alone", path, body, err, fan.TxHash())
	}
}
