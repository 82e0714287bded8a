package electrum

// Notifications that behave as docs/PROTOCOL.md §6 says, on the real chain
// and index (realNode): kept as regression checks beside
// notify_edges_test.go.

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestReorgNotifiesMovedAndOrphanedScripts: a reorganization of depth 1
// and 3 onto a branch one block longer. T1 (paying S1) moves from the
// first block of the old branch to the second of the new one; T2 (paying
// S2), in the old branch only, is double-spent in the new one by T3
// (paying S3). Each script's last notified status is the one a fresh
// subscribe has and the one the new chain implies, none is notified twice
// in a row, and the last header notified is the new tip.
func TestReorgNotifiesMovedAndOrphanedScripts(t *testing.T) {
	for _, depth := range []int{1, 3} {
		t.Run(fmt.Sprintf("depth%d", depth), func(t *testing.T) {
			n := newRealNode(t, 0, nil)
			c := dialOrdered(t, n.addr)
			c.call("blockchain.headers.subscribe")
			s1, s2, s3 := p2wpkh(0x81), p2wpkh(0x82), p2wpkh(0x83)
			shs := []indexers.ScriptHash{indexers.ScriptHashFromScript(s1), indexers.ScriptHashFromScript(s2),
				indexers.ScriptHashFromScript(s3)}
			for _, sh := range shs {
				c.call("blockchain.scripthash.subscribe", sh.String())
			}
			c1, c2 := n.coin(), n.coin()
			t1 := testchain.SpendTx([]testchain.Coin{c1}, wire.NewTxOut(c1.Value-10_000, s1))
			t2 := testchain.SpendTx([]testchain.Coin{c2}, wire.NewTxOut(c2.Value-10_000, s2))
			t3 := testchain.SpendTx([]testchain.Coin{c2}, wire.NewTxOut(c2.Value-30_000, s3))

			// The old branch: T1 in its first block, T2 in its last.
			parent := n.mine(nil)
			if depth == 1 {
				n.mine(parent, t1, t2)
			} else {
				n.mine(parent, t1)
				for i := 2; i < depth; i++ {
					n.mine(nil)
				}
				n.mine(nil, t2)
			}
			n.waitNotified()
			c.call("server.ping")
			c.log = nil

			b := n.process(parent, 2*time.Second)
			b2 := b
			for i := 1; i <= depth; i++ {
				if i == 1 {
					b = n.process(b, time.Second, t1, t3)
					b2 = b
				} else {
					b = n.process(b, time.Second)
				}
			}
			if err := n.idx.Sync(); err != nil {
				t.Fatal(err)
			}
			if best := n.h.Chain.BestSnapshot(); best.Hash != *b.Hash() {
				t.Fatalf("the chain did not reorganize: tip %d", best.Height)
			}
			n.waitNotified()
			c.call("server.ping")

			want := []*string{
				statusFromHistory(t, []historyItem{{TxHash: t1.TxHash().String(), Height: b2.Height()}}),
				nil,
				statusFromHistory(t, []historyItem{{TxHash: t3.TxHash().String(), Height: b2.Height()}}),
			}
			f := dial(t, n.addr)
			f.negotiate("1.4")
			var lastHeader int32 = -1
			var lastHex string
			for _, m := range c.log {
				if m.Method == "blockchain.headers.subscribe" {
					var hdrs []headerResult
					decodeInto(t, m.Params, &hdrs)
					lastHeader, lastHex = hdrs[0].Height, hdrs[0].Hex
				}
			}
			tipHex, _ := headerHex(&b.MsgBlock().Header)
			if lastHeader != b.Height() || lastHex != tipHex {
				t.Errorf("last header notified at %d, want the new tip at %d", lastHeader, b.Height())
			}
			for i, sh := range shs {
				var fresh *string
				f.must(&fresh, "blockchain.scripthash.subscribe", sh.String())
				var notes []string
				var last *string
				got := false
				for _, m := range c.log {
					var p []*string
					if m.Method == "blockchain.scripthash.subscribe" && json.Unmarshal(m.Params, &p) == nil && *p[0] == sh.String() {
						if got && equalStatus(last, p[1]) {
							t.Errorf("S%d notified %s twice in a row", i+1, showStatus(p[1]))
						}
						notes = append(notes, showStatus(p[1]))
						last, got = p[1], true
					}
				}
				if !equalStatus(fresh, want[i]) {
					t.Errorf("S%d: fresh subscribe %s, want %s", i+1, showStatus(fresh), showStatus(want[i]))
				}
				if !got || !equalStatus(last, want[i]) {
					t.Errorf("S%d notified %v, want it to end at %s", i+1, notes, showStatus(want[i]))
				}
			}
		})
	}
}

// TestSubscriptionLimitPerSessionAndTotal: at MaxSubsPerSession a new
// script is refused with code 4 and the session goes on; subscribing again
// to a script it holds still answers; an unsubscribe frees a place; a
// refused script is never notified; at MaxSubs a second session is refused.
func TestSubscriptionLimitPerSessionAndTotal(t *testing.T) {
	n := newRealNode(t, 0, func(c *Config) { c.MaxSubsPerSession, c.MaxSubs = 2, 3 })
	c := dial(t, n.addr)
	c.negotiate("1.4.2")
	shOf := func(b byte) string { return indexers.ScriptHashFromScript(p2wpkh(b)).String() }
	c.must(nil, "blockchain.scripthash.subscribe", shOf(0x91))
	c.must(nil, "blockchain.scripthash.subscribe", shOf(0x92))
	if _, rerr := c.call("blockchain.scripthash.subscribe", shOf(0x93)); rerr == nil || rerr.Code != codeLimitExceeded {
		t.Fatalf("third subscribe: %v, want code 4", rerr)
	}
	c.must(nil, "blockchain.scripthash.subscribe", shOf(0x91))
	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, p2wpkh(0x93)))
	c.must(nil, "blockchain.transaction.broadcast", txHex(tx))
	c.noNote(n.srv)
	var ok bool
	c.must(&ok, "blockchain.scripthash.unsubscribe", shOf(0x92))
	var st *string
	c.must(&st, "blockchain.scripthash.subscribe", shOf(0x93))
	if st == nil {
		t.Fatal("a subscribe after an unsubscribe freed a place answers null for a paid script")
	}
	d := dial(t, n.addr)
	d.negotiate("1.4")
	d.must(nil, "blockchain.scripthash.subscribe", shOf(0x94))
	if _, rerr := d.call("blockchain.scripthash.subscribe", shOf(0x95)); rerr == nil || rerr.Code != codeLimitExceeded {
		t.Fatalf("subscribe over MaxSubs: %v, want code 4", rerr)
	}
}

// TestSameScriptOnTwoSessions: two sessions subscribe to one script; one
// unsubscribes; a payment then notifies the other once, with the status a
// fresh subscribe answers, and not the one that left.
func TestSameScriptOnTwoSessions(t *testing.T) {
	n := newRealNode(t, 0, nil)
	a, b := dial(t, n.addr), dial(t, n.addr)
	a.negotiate("1.4.2")
	b.negotiate("1.4.2")
	sh := indexers.ScriptHashFromScript(p2wpkh(0xa1)).String()
	a.must(nil, "blockchain.scripthash.subscribe", sh)
	b.must(nil, "blockchain.scripthash.subscribe", sh)
	b.must(nil, "blockchain.scripthash.unsubscribe", sh)
	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, p2wpkh(0xa1)))
	a.must(nil, "blockchain.transaction.broadcast", txHex(tx))
	notes := a.drain(n.srv)
	b.noNote(n.srv)
	var fresh *string
	f := dial(t, n.addr)
	f.negotiate("1.4")
	f.must(&fresh, "blockchain.scripthash.subscribe", sh)
	if len(notes) != 1 {
		t.Fatalf("the subscribed session got %d notifications, want 1", len(notes))
	}
	if _, got := statusOf(t, notes[0]); !equalStatus(got, fresh) || fresh == nil {
		t.Fatalf("notified %s, fresh subscribe %s", showStatus(got), showStatus(fresh))
	}
}
