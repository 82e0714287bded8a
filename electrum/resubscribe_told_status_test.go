package electrum

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// ChunkStall is the test chain (fakeBackend) whose notifier read
// (Statuses) of a chunk without x waits once, when armed: it widens the
// window every multi-chunk pass has between delivering one chunk's statuses
// and queueing the pass's notifications (fanOut waits for every chunk).
type ChunkStall struct {
	*fakeBackend
	x       indexers.ScriptHash
	armed   chan struct{}
	stalled chan struct{}
	resume  chan struct{}
}

func (b *ChunkStall) Statuses(shs []indexers.ScriptHash, limit int) ([]StatusHasher, []error, indexers.Tip, error) {
	if !slices.Contains(shs, b.x) {
		select {
		case <-b.armed:
			b.stalled <- struct{}{}
			<-b.resume
		default:
		}
	}
	return b.fakeBackend.Statuses(shs, limit)
}

// docs/PROTOCOL.md §6: a scripthash notification is sent "when a subscribed
// script's status differs from the last one sent to that session". A
// client re-subscribes while a pass that read the same new status is
// still queueing its notifications: it is answered S1, and must not be
// notified S1 again.
func TestResubscribeAnswerNotNotifiedAgain(t *testing.T) {
	fx := newFixtureChain(t)
	x := p2wpkh(0x71)
	shX := indexers.ScriptHashFromScript(x)
	sb := &ChunkStall{fakeBackend: fx.f, x: shX, armed: make(chan struct{}, 1),
		stalled: make(chan struct{}, 1), resume: make(chan struct{})}
	fx.s, fx.addr = startServer(t, sb, nil)
	t.Cleanup(func() {
		select {
		case <-sb.resume:
		default:
			close(sb.resume)
		}
	})

	lc := dialLines(t, fx.addr)
	lc.negotiate()
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
	sb.armed <- struct{}{}
	fx.s.NotifyScriptHashes(work)
	select {
	case <-sb.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("hang guard: the pass never read the chunk without X")
	}
	// Wait (hang guard only) until the other chunk delivered X's new status.
	ss := func() *session {
		fx.s.mu.Lock()
		defer fx.s.mu.Unlock()
		for s := range fx.s.sessions {
			return s
		}
		return nil
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ss.subMu.Lock()
		st := ss.subs[shX]
		done := st != nil && st.status != nil
		ss.subMu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("hang guard: X's status never delivered")
		}
		time.Sleep(time.Millisecond)
	}

	// The client re-subscribes X: answered S1.
	ans := subscribe("x1", shX)
	var r rpcResponse
	decodeInto(t, []byte(ans), &r)
	var s1 *string
	if err := json.Unmarshal(r.Result, &s1); err != nil || s1 == nil {
		t.Fatalf("re-subscribe answer: %s", ans)
	}
	close(sb.resume)
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	lc.send(`{"jsonrpc":"2.0","id":"end","method":"server.ping"}`)
	for {
		l := string(lc.line())
		if strings.Contains(l, `"id":"end"`) {
			break
		}
		if strings.Contains(l, `"method":"blockchain.scripthash.subscribe"`) && strings.Contains(l, shX.String()) {
			if strings.Contains(l, *s1) {
				t.Errorf("re-subscribe answered status %s, then the same status notified again: %.200s", *s1, l)
			} else {
				t.Logf("notification: %.200s", l)
			}
		}
	}
}
