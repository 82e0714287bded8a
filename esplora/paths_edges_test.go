// Edges of paths and parameters, each against electrs' answer.

package esplora

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
)

// TestAfterTxidNotFoundIs422: ?after_txid= naming a transaction neither
// confirmed nor among the script's unconfirmed ones is mempool.space's
// electrs' 422 "after_txid not found" (docs/OPERATIONS.md), which its
// clients tell from a script without transactions; a confirmed one answers
// the confirmed page after it.
func TestAfterTxidNotFoundIs422(t *testing.T) {
	n := newTestNode(t, "")
	coin := n.coin()
	esh := esploraHash(coin.Script.PkScript)
	var all []txValue
	n.getJSON("/scripthash/"+esh+"/txs", &all)
	if len(all) == 0 {
		t.Fatalf("precondition: the coin's script %s has no transactions", esh)
	}
	unknown := strings.Repeat("ab", 32)
	code, body := n.get("/scripthash/" + esh + "/txs?after_txid=" + unknown)
	if code != http.StatusUnprocessableEntity || body != "after_txid not found" {
		t.Errorf("GET /scripthash/:hash/txs?after_txid=<unknown txid>: %d %q, want 422 \"after_txid not found\"", code, body)
	}
	var rest []txValue
	n.getJSON("/scripthash/"+esh+"/txs?after_txid="+all[0].TxID, &rest)
	if len(all) < 2 || len(rest) < len(all)-1 || rest[0].TxID != all[1].TxID {
		t.Errorf("GET /txs?after_txid=<the newest confirmed>: %d txs, want those after it (from %s)", len(rest), all[1].TxID)
	}
}

// TestBlockTxsStartAtCount: /block/:hash/txs/:start_index with start equal
// to the block's transaction count is electrs' 404 "start index out of
// range" (start >= count), for a block of one transaction and for the
// block of more than a page.
func TestBlockTxsStartAtCount(t *testing.T) {
	n := newTestNode(t, "")
	tip := n.h.Chain.BestSnapshot()
	seen := map[bool]bool{}
	for h := tip.Height; h > 0 && len(seen) < 2; h-- {
		b, err := n.h.Chain.BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		count := len(b.Transactions())
		big := count > chainTxsPerPage
		if (count != 1 && !big) || seen[big] {
			continue
		}
		seen[big] = true
		path := fmt.Sprintf("/block/%s/txs/%d", b.Hash(), count)
		if code, body := n.get(path); code != http.StatusNotFound || body != "start index out of range" {
			t.Errorf("GET %s (a block of %d transactions): %d %q, want 404 \"start index out of range\"", path, count, code, body)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("precondition: a block of one transaction and one of more than %d: %v", chainTxsPerPage, seen)
	}
}

// TestChainTxsLastSeenNotATxid: /txs/chain/:last_seen_txid with a segment
// that is not a txid answers the first page, as electrs ignores it
// (Txid::from_hex(..).ok()); a txid of the history pages on after it.
func TestChainTxsLastSeenNotATxid(t *testing.T) {
	n := newTestNode(t, "")
	path := "/scripthash/" + esploraHash(n.coin().Script.PkScript) + "/txs/chain"
	var first []txValue
	n.getJSON(path, &first)
	if len(first) < 2 {
		t.Fatalf("precondition: %s has %d transactions", path, len(first))
	}
	for _, last := range []string{"not-a-txid", "abcd"} {
		var page []txValue
		n.getJSON(path+"/"+last, &page)
		if len(page) != len(first) || page[0].TxID != first[0].TxID {
			t.Errorf("GET %s/%s: %d txs, want the first page's %d", path, last, len(page), len(first))
		}
	}
	var next []txValue
	n.getJSON(path+"/"+first[0].TxID, &next)
	if len(next) == 0 || next[0].TxID != first[1].TxID {
		t.Errorf("GET %s/<first txid>: want the page from the second", path)
	}
}

// TestUnparsedParamsIgnored: electrs reads /blocks/:start_height and
// mempool.space's ?after_txid= with .parse().ok(): a value that does not
// parse is as if absent. /blocks/x lists from the tip as /blocks does, and
// /txs?after_txid=x answers the first page as /txs does.
func TestUnparsedParamsIgnored(t *testing.T) {
	n := newTestNode(t, "")
	if a, b := n.getText("/blocks"), n.getText("/blocks/x"); a != b {
		t.Errorf("GET /blocks/x: %.100s..., want /blocks' %.100s...", b, a)
	}
	path := "/scripthash/" + esploraHash(n.coin().Script.PkScript) + "/txs"
	if a, b := n.getText(path), n.getText(path+"?after_txid=x"); a != b {
		t.Errorf("GET %s?after_txid=x: %.100s..., want %s's %.100s...", path, b, path, a)
	}
}

// TestNoEndpointAnswerCut: the 404 for a path that is no endpoint quotes
// the path cut at 200 bytes: a long request line is not answered with its
// whole (escaped and quoted) text.
func TestNoEndpointAnswerCut(t *testing.T) {
	n := newTestNode(t, "")
	path := "/" + strings.Repeat("a", 1000)
	code, body := n.get(path)
	want := "endpoint does not exist " + strconv.Quote(path[:200]+"...")
	if code != http.StatusNotFound || body != want {
		t.Fatalf("GET of a %d-byte path: %d, %d bytes %.80q..., want 404 %q", len(path), code, len(body), body, want)
	}
}

// TestOutspendPastLastOutput: /tx/:txid/outspend/:vout for the index one
// past a transaction's last output is electrs' {"spent":false} (an
// outpoint with no spender), not a dropped connection.
func TestOutspendPastLastOutput(t *testing.T) {
	n := newTestNode(t, "")
	tip := n.h.Chain.BestSnapshot()
	block, err := n.h.Chain.BlockByHash(&tip.Hash)
	if err != nil {
		t.Fatal(err)
	}
	tx := block.Transactions()[0]
	path := fmt.Sprintf("/tx/%s/outspend/%d", tx.Hash(), len(tx.MsgTx().TxOut))
	resp, err := n.http.Get(n.base + path)
	if err != nil {
		t.Fatalf("GET %s (past its %d outputs): %v, want 200 {\"spent\":false}", path, len(tx.MsgTx().TxOut), err)
	}
	resp.Body.Close()
	if got := n.getText(path); got != `{"spent":false}` {
		t.Fatalf("GET %s: %s, want {\"spent\":false}", path, got)
	}
}

// TestPathPrefixWholeSegment: under the prefix /api, a path that only
// starts with the same letters (/apix/...) is no endpoint: the prefix is a
// whole path segment.
func TestPathPrefixWholeSegment(t *testing.T) {
	n := newTestNode(t, "/api")
	if got := n.getText("/blocks/tip/height"); got == "" {
		t.Fatal("precondition: /api/blocks/tip/height answered nothing")
	}
	base := n.base[:len(n.base)-len("/api")]
	resp, err := n.http.Get(base + "/apix/blocks/tip/height")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /apix/blocks/tip/height under the prefix /api: %d, want 404", resp.StatusCode)
	}
}

// TestBlockTxidIndexRange: /block/:hash/txid/:index answers the txid at
// each index of the block, and the index one past the last is electrs' 404
// "tx index out of range" (not a dropped connection).
func TestBlockTxidIndexRange(t *testing.T) {
	n := newTestNode(t, "")
	tip := n.h.Chain.BestSnapshot()
	block, err := n.h.Chain.BlockByHash(&tip.Hash)
	if err != nil {
		t.Fatal(err)
	}
	txs := block.Transactions()
	for i, tx := range txs {
		if got := n.getText(fmt.Sprintf("/block/%s/txid/%d", tip.Hash, i)); got != tx.Hash().String() {
			t.Fatalf("/block/tip/txid/%d: %s, want %s", i, got, tx.Hash())
		}
	}
	path := fmt.Sprintf("/block/%s/txid/%d", tip.Hash, len(txs))
	resp, err := n.http.Get(n.base + path)
	if err != nil {
		t.Fatalf("GET %s (one past the block's %d transactions): %v, want 404 tx index out of range", path, len(txs), err)
	}
	resp.Body.Close()
	if code, body := n.get(path); code != http.StatusNotFound || body != "tx index out of range" {
		t.Fatalf("GET %s: %d %q, want 404 \"tx index out of range\"", path, code, body)
	}
}

// TestAddressBIP350Invalid: addresses BIP 173 and BIP 350 list as invalid,
// which rust-bitcoin (and so electrs) refuses: a version 0 program of 16
// bytes (version 0 takes 20 or 32 only), version 0 with a bech32m checksum
// and version 2 with a bech32 one. An uppercase address is valid (BIP 173).
func TestAddressBIP350Invalid(t *testing.T) {
	for _, c := range []struct{ addr, err string }{
		{"BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P", "Invalid Bitcoin address"},
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh", "Invalid Bitcoin address"},
		{"bc1zw508d6qejxtdg4y5r3zarvaryvqyzf3du", "Invalid Bitcoin address"},
		{"BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", ""},
	} {
		_, err := decodeAddress(c.addr, &chaincfg.MainNetParams)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.err {
			t.Errorf("%s: %q, want %q", c.addr, got, c.err)
		}
	}
}
