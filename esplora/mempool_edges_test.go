// Edges of the mempool endpoints and of package submission.

package esplora

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestSubmitPackageMaxBurnAtMaxMoney: bitcoind reads maxburnamount with
// AmountFromValue, whose MoneyRange takes 0 to MAX_MONEY (21,000,000 BTC)
// inclusive: 21000000 is taken, one satoshi more is "Amount out of range".
func TestSubmitPackageMaxBurnAtMaxMoney(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 63_001)
	tx := spendWithChange(n.coin(), 1_000, script.PkScript, &wire.TxOut{Value: 1_000_000, PkScript: script.PkScript})
	want := `submitpackage RPC error: {"code":-3,"message":"Amount out of range"}`
	if code, body, _ := n.submitPackage("?maxburnamount=21000000.00000001", tx); code != http.StatusBadRequest || body != want {
		t.Errorf("maxburnamount=21000000.00000001: %d %s, want 400 %s", code, body, want)
	}
	if code, body, p := n.submitPackage("?maxburnamount=21000000", tx); code != http.StatusOK || p.Msg != "success" {
		t.Errorf("maxburnamount=21000000 (MAX_MONEY): %d %s, want 200 success", code, body)
	}
}

// TestSubmitPackageSizeBounds: electrs refuses an item of fewer than 120
// hex characters (60 bytes) or of 800,000 or more before it asks bitcoind;
// an item of exactly 120 passes that check and is bitcoind's to judge (here
// its decode error, -22). 25 items pass the count check
// (26 are refused: TestSubmitPackageBadRequests).
func TestSubmitPackageSizeBounds(t *testing.T) {
	n := newTestNode(t, "")
	min := strings.Repeat("00", 60)
	for _, c := range []struct {
		name, item, want string
	}{
		{"119 hex characters", min[1:], "Invalid transaction size for item 0"},
		{"120 hex characters", min,
			`submitpackage RPC error: {"code":-22,"message":"TX decode failed: ` + min + ` Make sure the tx has at least one input."}`},
		{"800,000 hex characters", strings.Repeat("00", 400_000), "Invalid transaction size for item 0"},
	} {
		code, body := n.post("/txs/package", `["`+c.item+`"]`)
		if code != http.StatusBadRequest || body != c.want {
			t.Errorf("POST /txs/package of one item of %s: %d %.200q, want 400 %q", c.name, code, body, c.want)
		}
	}
	// 25 items, the most electrs takes (it refuses more than 25): judged
	// item by item, the first one's decode error.
	item := `"` + strings.Repeat("00", 70) + `"`
	code, body := n.post("/txs/package", "["+strings.TrimSuffix(strings.Repeat(item+",", 25), ",")+"]")
	want := `submitpackage RPC error: {"code":-22,"message":"TX decode failed: ` + strings.Repeat("00", 70) + ` Make sure the tx has at least one input."}`
	if code != http.StatusBadRequest || body != want {
		t.Errorf("POST /txs/package of 25 items: %d %.200q, want 400 %q", code, body, want)
	}
}

// sizedTx returns an unconfirmed transaction without witness of exactly
// vsize virtual bytes paying rate sat/vB.
func sizedTx(t *testing.T, vsize int, rate int64, tag byte) electrum.UnconfirmedTx {
	t.Helper()
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Index: uint32(tag)}, nil, nil))
	// 59 bytes besides the script and its 3-byte length.
	tx.AddTxOut(wire.NewTxOut(1000, make([]byte, vsize-62)))
	u := electrum.UnconfirmedTx{Tx: btcutil.NewTx(tx), Fee: rate * int64(vsize)}
	if got := vsizeOf(tx); got != int64(vsize) {
		t.Fatalf("precondition: vsize %d, want %d", got, vsize)
	}
	return u
}

// TestFeeHistogramBinEdge: electrs' make_fee_histogram starts a new bin
// only once the current one holds more than 50,000 vbytes (bin_size >
// VSIZE_BIN_WIDTH) and the rate changes: a bin of exactly 50,000 goes on.
func TestFeeHistogramBinEdge(t *testing.T) {
	for _, c := range []struct {
		sizes []int // at 10 sat/vB, then one of 1,000 at 5
		want  string
	}{
		{[]int{25_000, 25_000}, "[[5.0,51000]]"},
		{[]int{25_000, 25_001}, "[[10.0,50001],[5.0,1000]]"},
	} {
		var txs []electrum.UnconfirmedTx
		for i, s := range c.sizes {
			txs = append(txs, sizedTx(t, s, 10, byte(i)))
		}
		txs = append(txs, sizedTx(t, 1000, 5, 9))
		b, err := json.Marshal(feeHistogram(txs))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("fee histogram of %v vbytes at 10 sat/vB and 1000 at 5: %s, want %s", c.sizes, b, c.want)
		}
	}
}

// TestMempoolRecentTen: /mempool/recent lists the ten transactions that
// entered the pool last (electrs' RECENT_TXS_SIZE), not the whole pool.
func TestMempoolRecentTen(t *testing.T) {
	n := newTestNode(t, "")
	posted := make(map[string]bool)
	var first []string // the two posted first, which ten later ones push out
	for i := 0; i < recentTxs+2; i++ {
		coin := n.coin()
		tx := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 1000,
			PkScript: testchain.NewSpendableScript(testchain.KindP2WSH, int64(62_000+i)).PkScript})
		if code, body := n.post("/tx", txHex(tx)); code != http.StatusOK {
			t.Fatalf("POST /tx: %d %s", code, body)
		}
		posted[tx.TxHash().String()] = true
		if i < 2 {
			first = append(first, tx.TxHash().String())
		}
	}
	var recent []txOverview
	n.getJSON("/mempool/recent", &recent)
	if len(recent) != recentTxs {
		t.Fatalf("/mempool/recent with %d transactions in the pool: %d listed, want %d", len(posted), len(recent), recentTxs)
	}
	for _, r := range recent {
		if !posted[r.TxID] {
			t.Fatalf("/mempool/recent lists %s, not in the pool", r.TxID)
		}
		if r.TxID == first[0] || r.TxID == first[1] {
			t.Fatalf("/mempool/recent lists %s, one of the two that entered the pool first", r.TxID)
		}
	}
}
