package electrum

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// docs/PROTOCOL.md §6: a scripthash notification is sent "when a subscribed
// script's status differs from the last one sent to that session". A
// client re-subscribes while a pass that read the same new status is
// still queueing its notifications: it is answered S1, and must not be
// notified S1 again.
func TestResubscribeAnswerNotNotifiedAgain(t *testing.T) {
	fx := newFixtureChain(t)
	x := p2wpkh(0x71)
	shX := indexers.ScriptHashFromScript(x)
	// The notifier's read (Statuses) of a chunk without X waits once, when
	// armed: it widens the window every multi-chunk pass has between
	// delivering one chunk's statuses and queueing the pass's notifications
	// (fanOut waits for every chunk).
	pass := newStall(t)
	sb := &hookedBackend{fakeBackend: fx.f, onStatuses: func(shs []indexers.ScriptHash) {
		if !slices.Contains(shs, shX) {
			pass.hold()
		}
	}}
	fx.s, fx.addr = startServer(t, sb, nil)

	lc := dialNegotiated(t, fx.addr)
	// X and 64 other scripts: a pass touching them all reads two chunks.
	work := []indexers.ScriptHash{shX}
	subscribe := func(id string, sh indexers.ScriptHash) string {
		lc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","method":"blockchain.scripthash.subscribe","params":["%s"]}`, id, sh))
		for {
			l := string(lc.line())
			if strings.Contains(l, `"id":"`+id+`"`) {
				return l
			}
		}
	}
	subscribe("x0", shX)
	for i := 0; i < statusChunk; i++ {
		sh := indexers.ScriptHashFromScript(append([]byte{0x00, 0x14, 0x55, byte(i)}, make([]byte, 18)...))
		subscribe(fmt.Sprintf("o%d", i), sh)
		work = append(work, sh)
	}

	// X's status changes (S0 -> S1) in the mempool.
	pay := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, wire.NewTxOut(1_0000_0000, x))
	if err := fx.f.Broadcast(pay); err != nil {
		t.Fatal(err)
	}
	pass.arm()
	fx.s.NotifyScriptHashes(work)
	pass.waitStalled(t, "hang guard: the pass never read the chunk without X")
	// Wait (hang guard only) until the other chunk delivered X's new status.
	waitUntil(t, "X's status never delivered", func() bool { s, _ := sessionStatus(fx.s, shX); return s != nil })

	// The client re-subscribes X: answered S1.
	ans := subscribe("x1", shX)
	var r rpcResponse
	decodeInto(t, []byte(ans), &r)
	var s1 *string
	if err := json.Unmarshal(r.Result, &s1); err != nil || s1 == nil {
		t.Fatalf("re-subscribe answer: %s", ans)
	}
	pass.release()
	fx.flush(t)
	lc.toPing(func(raw []byte) {
		l := string(raw)
		if strings.Contains(l, `"method":"blockchain.scripthash.subscribe"`) && strings.Contains(l, shX.String()) {
			if strings.Contains(l, *s1) {
				t.Errorf("re-subscribe answered status %s, then the same status notified again: %.200s", *s1, l)
			} else {
				t.Logf("notification: %.200s", l)
			}
		}
	})
}
