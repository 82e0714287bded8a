package electrum

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestAnswerCacheFollowsTheChain checks header chunks and histories
// answered from the answer cache against the chain and the index, asked
// twice each (the second from the cache), after a block paying the script,
// with a mempool transaction paying it, and after a reorganization that
// replaces the last block at the same heights: block.headers in both forms
// and with a proof, get_history with and without mempool entries.
func TestAnswerCacheFollowsTheChain(t *testing.T) {
	n := benchNode(t)
	sh := indexers.ScriptHashFromScript(historyScript)
	c14 := dial(t, n.addr)
	c14.negotiate("1.4")
	c16 := dial(t, n.addr)
	c16.negotiate("1.6")

	checkHistory := func(when string) {
		t.Helper()
		hist, _, err := n.idx.History(sh, 0)
		if err != nil {
			t.Fatal(err)
		}
		var want []historyItem
		for _, e := range hist {
			want = append(want, historyItem{TxHash: e.TxHash.String(), Height: e.Height})
		}
		for _, e := range n.srv.mempoolEntries(sh) {
			fee := e.Fee
			want = append(want, historyItem{TxHash: e.TxHash.String(), Height: e.Height, Fee: &fee})
		}
		for round := 0; round < 2; round++ {
			var got []historyItem
			c16.must(&got, "blockchain.scripthash.get_history", sh.String())
			if fmt.Sprint(deref(got)) != fmt.Sprint(deref(want)) {
				t.Fatalf("%s, round %d: history\n%v\nwant\n%v", when, round, deref(got), deref(want))
			}
		}
	}
	// Every range asked for is asked again at each later check, so a
	// range cached before the reorganization is asked for after it.
	ranges := []struct{ start, count int32 }{{0, 2016}}
	checkHeaders := func(when string) {
		t.Helper()
		tip := n.h.Chain.BestSnapshot().Height
		ranges = append(ranges, struct{ start, count int32 }{tip - 99, 100})
		var hexes []string
		var hashes []chainhash.Hash
		for h := int32(0); h <= tip; h++ {
			hash, err := n.h.Chain.BlockHashByHeight(h)
			if err != nil {
				t.Fatal(err)
			}
			hdr, err := n.h.Chain.HeaderByHash(hash)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			hdr.Serialize(&b)
			hexes = append(hexes, hex.EncodeToString(b.Bytes()))
			hashes = append(hashes, hdr.BlockHash())
		}
		// The whole chain (count clamped at the tip), and 100 headers
		// ending at this tip and at each earlier one.
		for _, r := range ranges {
			count := min(r.count, tip-r.start+1)
			want := hexes[r.start : r.start+count]
			for round := 0; round < 2; round++ {
				// With a proof first: the range is cached without an
				// answer of either form, which the next two build.
				var hs struct {
					Count   int      `json:"count"`
					Headers []string `json:"headers"`
					Root    string   `json:"root"`
					Branch  []string `json:"branch"`
				}
				c16.must(&hs, "blockchain.block.headers", r.start, r.count, tip)
				last := r.start + count - 1
				var branch []chainhash.Hash
				for _, b := range hs.Branch {
					branch = append(branch, mustHash(t, b))
				}
				root := merkleRoot(hashes)
				if strings.Join(hs.Headers, ",") != strings.Join(want, ",") || hs.Root != root.String() ||
					rootFromBranch(hashes[last], branch, int(last)) != root {
					t.Fatalf("%s, round %d: headers(%d, %d) with a proof to %d do not verify", when, round, r.start, r.count, tip)
				}
				var old struct {
					Count int    `json:"count"`
					Hex   string `json:"hex"`
					Max   int    `json:"max"`
				}
				c14.must(&old, "blockchain.block.headers", r.start, r.count)
				if old.Count != int(count) || old.Hex != strings.Join(want, "") || old.Max != DefaultHeadersMax {
					t.Fatalf("%s, round %d: headers(%d, %d) in hex: count %d, %d hex digits", when, round, r.start, r.count, old.Count, len(old.Hex))
				}
				hs.Headers, hs.Root, hs.Branch = nil, "", nil
				c16.must(&hs, "blockchain.block.headers", r.start, r.count)
				if hs.Count != int(count) || strings.Join(hs.Headers, ",") != strings.Join(want, ",") || hs.Root != "" || hs.Branch != nil {
					t.Fatalf("%s, round %d: headers(%d, %d) as a list: count %d, %d headers", when, round, r.start, r.count, hs.Count, len(hs.Headers))
				}
			}
		}
	}

	hits := n.srv.counters.cacheHits.Load()
	checkHistory("at start")
	checkHeaders("at start")
	if n.srv.counters.cacheHits.Load() == hits {
		t.Fatal("nothing was answered from the cache")
	}

	// A block paying the script: a new tip, a longer history.
	coin := n.coin()
	paid := n.mine(nil, testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-100_000, historyScript)))
	checkHistory("after a block")
	checkHeaders("after a block")

	// A transaction paying the script waits in the mempool.
	coin = n.coin()
	var txid string
	c16.must(&txid, "blockchain.transaction.broadcast", txHex(testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-100_000, historyScript))))
	checkHistory("with a mempool entry")

	// The block paying the script is replaced by two others: its
	// transaction goes back to the mempool, and the headers at its
	// height and above are another chain's.
	if err := n.h.Chain.InvalidateBlock(paid.Hash()); err != nil {
		t.Fatal(err)
	}
	if err := n.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	n.mine(nil)
	n.mine(nil)
	n.waitNotified()
	if len(n.srv.mempoolEntries(sh)) != 2 {
		t.Fatalf("%d mempool entries after the reorganization, want 2", len(n.srv.mempoolEntries(sh)))
	}
	checkHistory("after a reorganization")
	checkHeaders("after a reorganization")
}

// deref prints history items with their fees.
func deref(items []historyItem) []string {
	var out []string
	for _, it := range items {
		s := fmt.Sprintf("%s:%d", it.TxHash, it.Height)
		if it.Fee != nil {
			s += fmt.Sprintf(":%d", *it.Fee)
		}
		out = append(out, s)
	}
	return out
}

// TestAnswerCacheBound checks the cache's byte bound and its order: the
// least recently used entries go first, an entry over an eighth of the
// budget is not kept, a key stored again replaces its entry, and a
// negative budget keeps nothing.
func TestAnswerCacheBound(t *testing.T) {
	entry := func(i int, n int) *cacheEntry {
		return &cacheEntry{key: cacheKey{kind: cacheHistory, start: int64(i)}, body: make([]byte, n)}
	}
	c := newAnswerCache(16 * 1256) // sixteen entries of 1,000 bytes
	for i := 0; i < 16; i++ {
		c.put(entry(i, 1000))
	}
	if n, b := c.stats(); n != 16 || b != 16*1256 {
		t.Fatalf("%d entries, %d bytes; want 16, %d", n, b, 16*1256)
	}
	c.get(cacheKey{kind: cacheHistory, start: 0}) // 0 is now the most recent
	c.put(entry(16, 1000))
	if c.get(cacheKey{kind: cacheHistory, start: 1}) != nil || c.get(cacheKey{kind: cacheHistory, start: 0}) == nil {
		t.Fatal("the least recently used entry was not the one dropped")
	}
	c.put(entry(17, 2000)) // 2,256 bytes: two more go
	if n, b := c.stats(); n != 15 || b > 16*1256 {
		t.Fatalf("%d entries, %d bytes after a larger one", n, b)
	}
	c.put(entry(18, 16*1256/8)) // over an eighth with its overhead
	if c.get(cacheKey{kind: cacheHistory, start: 18}) != nil {
		t.Fatal("an entry over an eighth of the budget was kept")
	}
	c.put(entry(17, 10))
	if e := c.get(cacheKey{kind: cacheHistory, start: 17}); e == nil || len(e.body) != 10 {
		t.Fatal("a key stored again did not replace its entry")
	}
	if _, b := c.stats(); b > 16*1256 {
		t.Fatalf("%d bytes held", b)
	}
	off := newAnswerCache(-1)
	off.put(entry(1, 10))
	if off.get(cacheKey{kind: cacheHistory, start: 1}) != nil {
		t.Fatal("a disabled cache kept an entry")
	}
}
