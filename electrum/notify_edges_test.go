package electrum

// Subscription edges a wallet meets, on the real chain and index
// (realNode): a notification pass that the server is still sending while
// the same session unsubscribes or subscribes again.
//
// A pass reads its statuses in chunks of statusChunk scripts on a few
// goroutines and queues each session's notifications only once every chunk
// is read. The rig below stops the chunks that do not hold one script, so
// that the pass has recorded that script's new status (and put its
// notification aside) while the rest of the pass is still being read: a
// window every pass of more than one chunk has.

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// chunkStallBackend is IndexBackend whose Statuses, once armed, waits in
// the first call that does not read the script hash spared.
type chunkStallBackend struct {
	*IndexBackend
	mu     sync.Mutex
	armed  bool
	spared indexers.ScriptHash
	// before: the armed call waits before it reads the index (any
	// chunk), not after.
	before  bool
	stalled chan struct{}
	resume  chan struct{}
}

func (b *chunkStallBackend) Statuses(shs []indexers.ScriptHash, limit int) ([]StatusHasher, []error, indexers.Tip, error) {
	b.mu.Lock()
	first := b.armed && b.before
	if first {
		b.armed = false
	}
	b.mu.Unlock()
	if first {
		b.stalled <- struct{}{}
		<-b.resume
	}
	sts, errs, tip, err := b.IndexBackend.Statuses(shs, limit)
	b.mu.Lock()
	stop := b.armed
	for _, sh := range shs {
		if sh == b.spared {
			stop = false
		}
	}
	if stop {
		b.armed = false
	}
	b.mu.Unlock()
	if stop {
		b.stalled <- struct{}{}
		<-b.resume
	}
	return sts, errs, tip, err
}

// arm makes the next Statuses call without spared wait until resume.
func (b *chunkStallBackend) arm(spared indexers.ScriptHash) {
	b.mu.Lock()
	b.armed, b.spared, b.before = true, spared, false
	b.mu.Unlock()
}

// armBefore makes the next Statuses call wait until resume before it
// reads the index.
func (b *chunkStallBackend) armBefore() {
	b.mu.Lock()
	b.armed, b.before = true, true
	b.mu.Unlock()
}

// newChunkStallNode is newRealNode with the server on a chunkStallBackend.
func newChunkStallNode(t testing.TB) (*realNode, *chunkStallBackend) {
	t.Helper()
	var sb *chunkStallBackend
	n := newRealNodeServing(t, 0, nil, func(b *IndexBackend) Backend {
		sb = &chunkStallBackend{IndexBackend: b, stalled: make(chan struct{}, 1), resume: make(chan struct{})}
		return sb
	})
	// Before the server's shutdown (cleanups run last first).
	t.Cleanup(func() {
		select {
		case <-sb.resume:
		default:
			close(sb.resume)
		}
	})
	return n, sb
}

// orderedClient reads what the server writes in the order it wrote it:
// answers and notifications on one list.
type orderedClient struct {
	*lineClient
	id int
	// log is every message read so far, in wire order.
	log []rpcResponse
}

func dialOrdered(t testing.TB, addr string) *orderedClient {
	t.Helper()
	c := &orderedClient{lineClient: dialLines(t, addr)}
	c.negotiate()
	return c
}

// call sends a request and reads until its answer, logging what came
// before it.
func (c *orderedClient) call(method string, params ...any) rpcResponse {
	c.t.Helper()
	c.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	c.send(string(b))
	for {
		var m rpcResponse
		if err := json.Unmarshal(c.line(), &m); err != nil {
			c.t.Fatal(err)
		}
		c.log = append(c.log, m)
		if m.Method == "" && string(m.ID) == fmt.Sprint(c.id) {
			if m.Error != nil {
				c.t.Fatalf("%s: %v", method, m.Error)
			}
			return m
		}
	}
}

// statusEvents lists, in wire order, what the client learned of sh's
// status: "answer:S" for a subscribe answer, "note:S", and "unsubscribed"
// for an unsubscribe answered true.
func (c *orderedClient) statusEvents(t testing.TB, sh string, asked map[string]string) []string {
	var out []string
	for _, m := range c.log {
		switch {
		case m.Method == "blockchain.scripthash.subscribe":
			var p []*string
			if json.Unmarshal(m.Params, &p) == nil && len(p) == 2 && p[0] != nil && *p[0] == sh {
				out = append(out, "note:"+showStatus(p[1]))
			}
		case m.Method == "":
			switch asked[string(m.ID)] {
			case "subscribe":
				var s *string
				decodeInto(t, m.Result, &s)
				out = append(out, "answer:"+showStatus(s))
			case "unsubscribe":
				if string(m.Result) == "true" {
					out = append(out, "unsubscribed")
				}
			}
		}
	}
	return out
}

// sessionStatus is the status the server last recorded for sh on the one
// session subscribed to it.
func sessionStatus(s *Server, sh indexers.ScriptHash) (*string, bool) {
	s.notifier.rmu.RLock()
	var subs []*session
	for ss := range s.notifier.byHash[sh] {
		subs = append(subs, ss)
	}
	s.notifier.rmu.RUnlock()
	for _, ss := range subs {
		ss.subMu.Lock()
		st := ss.subs[sh]
		var got *string
		ok := st != nil
		if ok {
			got = st.status
		}
		ss.subMu.Unlock()
		return got, ok
	}
	return nil, false
}

// fanOutTx pays target and fillers from one coin: its acceptance is one
// mempool event touching every one of them.
func fanOutTx(n *realNode, target []byte, fillers [][]byte) *wire.MsgTx {
	coin := n.coin()
	outs := []*wire.TxOut{wire.NewTxOut(100_000, target)}
	for _, f := range fillers {
		outs = append(outs, wire.NewTxOut(100_000, f))
	}
	rest := coin.Value - int64(len(outs))*100_000 - 50_000
	outs = append(outs, wire.NewTxOut(rest, p2wpkh(0xee)))
	return testchain.SpendTx([]testchain.Coin{coin}, outs...)
}

// fillerScripts are count scripts nobody else pays.
func fillerScripts(count int) [][]byte {
	var out [][]byte
	for i := 0; i < count; i++ {
		s := append([]byte{0x00, 0x14}, []byte(fmt.Sprintf("filler-script-%06d", i))...)
		out = append(out, s[:22])
	}
	return out
}

// stallPassAfterTarget subscribes c to target and to enough fillers for
// two chunks, broadcasts (from another client) a transaction paying them
// all and returns once the notifier has recorded target's new status while
// another chunk of the same pass waits. It returns the transaction.
func stallPassAfterTarget(t *testing.T, n *realNode, sb *chunkStallBackend, c *orderedClient, asked map[string]string,
	target []byte) *wire.MsgTx {
	t.Helper()
	sh := indexers.ScriptHashFromScript(target)
	fillers := fillerScripts(statusChunk + 6)
	asked[fmt.Sprint(c.id+1)] = "subscribe"
	c.call("blockchain.scripthash.subscribe", sh.String())
	for _, f := range fillers {
		c.call("blockchain.scripthash.subscribe", indexers.ScriptHashFromScript(f).String())
	}
	tx := fanOutTx(n, target, fillers)
	want := statusFromHistory(t, []historyItem{{TxHash: tx.TxHash().String(), Height: 0}})

	sb.arm(sh)
	b := dial(t, n.addr)
	b.negotiate("1.4")
	b.must(nil, "blockchain.transaction.broadcast", txHex(tx))
	select {
	case <-sb.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("the pass of the broadcast never read a chunk without the target")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, ok := sessionStatus(n.srv, sh)
		if ok && equalStatus(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the notifier never recorded the target's new status (has %s)", showStatus(got))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return tx
}

// TestUnsubscribedScriptNotifiedAfterUnsubscribeAnswer: a session
// unsubscribes a script while a notification pass that changed its status
// is still reading other scripts. The unsubscribe is answered true; the
// pass then sends the script's notification anyway. A client that has
// forgotten the script after the true answer (Electrum's NotificationSession
// closes the connection on a notification for nothing it subscribes to)
// gets a notification for a script it no longer subscribes to.
func TestUnsubscribedScriptNotifiedAfterUnsubscribeAnswer(t *testing.T) {
	n, sb := newChunkStallNode(t)
	c := dialOrdered(t, n.addr)
	asked := map[string]string{}
	target := p2wpkh(0x71)
	sh := indexers.ScriptHashFromScript(target)
	stallPassAfterTarget(t, n, sb, c, asked, target)

	asked[fmt.Sprint(c.id+1)] = "unsubscribe"
	c.call("blockchain.scripthash.unsubscribe", sh.String())
	close(sb.resume)
	n.waitNotified()
	c.call("server.ping")

	ev := c.statusEvents(t, sh.String(), asked)
	for i, e := range ev {
		if e == "unsubscribed" {
			if after := ev[i+1:]; len(after) > 0 {
				t.Fatalf("the script is notified after its unsubscribe was answered true: %v", ev)
			}
		}
	}
}

// TestResubscribeAnswerFollowedByOlderNotification: a session subscribes
// again to a script (which returns the current status, docs/PROTOCOL.md §5)
// while a pass that recorded the script's previous change is still reading
// other scripts. The answer carries the newer status (two transactions);
// the pass then sends the older one (one transaction), and as the session
// is recorded at the newer status, the next pass sends nothing: the wallet
// is left with a status that is no longer the script's (docs/PROTOCOL.md
// §6: "a status ... is never replaced by one read earlier").
func TestResubscribeAnswerFollowedByOlderNotification(t *testing.T) {
	n, sb := newChunkStallNode(t)
	c := dialOrdered(t, n.addr)
	asked := map[string]string{}
	target := p2wpkh(0x72)
	sh := indexers.ScriptHashFromScript(target)
	first := stallPassAfterTarget(t, n, sb, c, asked, target)

	// A second payment while the pass waits; its event queues behind it.
	coin := n.coin()
	second := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-20_000, target))
	b := dial(t, n.addr)
	b.negotiate("1.4")
	b.must(nil, "blockchain.transaction.broadcast", txHex(second))

	asked[fmt.Sprint(c.id+1)] = "subscribe"
	c.call("blockchain.scripthash.subscribe", sh.String())
	close(sb.resume)
	n.waitNotified()
	c.call("server.ping")

	both := []historyItem{{TxHash: first.TxHash().String()}, {TxHash: second.TxHash().String()}}
	if both[1].TxHash < both[0].TxHash {
		both[0], both[1] = both[1], both[0]
	}
	current := statusFromHistory(t, both)
	f := dial(t, n.addr)
	f.negotiate("1.4")
	var fresh *string
	f.must(&fresh, "blockchain.scripthash.subscribe", sh.String())
	if !equalStatus(fresh, current) {
		t.Fatalf("fresh subscribe %s, want %s (both payments unconfirmed)", showStatus(fresh), showStatus(current))
	}
	ev := c.statusEvents(t, sh.String(), asked)
	last := ev[len(ev)-1]
	if want := showStatus(current); !strings.HasSuffix(last, ":"+want) {
		onlyFirst := statusFromHistory(t, []historyItem{{TxHash: first.TxHash().String()}})
		t.Fatalf("the session learned %v in that order: it ends at %s, the script's status is %s "+
			"(%s is the status of the first payment alone)", ev, last, want, showStatus(onlyFirst))
	}
}

// TestStatusAtNewHeightBeforeItsHeader: a pass for a mempool change reads
// its statuses after the index committed the next block (and the node
// queued that block's events): it sends the script's status with the
// transaction at the new height, and only the next pass sends the new tip.
// A header-subscribed wallet is told of a confirmation at a height it has
// no header for (Electrum cannot verify it then and shows the transaction
// unverified); the headers notification is to come before or with the
// statuses read at its tip.
func TestStatusAtNewHeightBeforeItsHeader(t *testing.T) {
	n, sb := newChunkStallNode(t)
	c := dialOrdered(t, n.addr)
	var hs headerResult
	decodeInto(t, c.call("blockchain.headers.subscribe").Result, &hs)
	target := p2wpkh(0x73)
	sh := indexers.ScriptHashFromScript(target)
	c.call("blockchain.scripthash.subscribe", sh.String())

	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-20_000, target))
	sb.armBefore()
	b := dial(t, n.addr)
	b.negotiate("1.4")
	b.must(nil, "blockchain.transaction.broadcast", txHex(tx))
	select {
	case <-sb.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("the pass of the broadcast never read")
	}
	blk := n.mine(nil, tx)
	close(sb.resume)
	n.waitNotified()
	c.call("server.ping")

	mined := statusFromHistory(t, []historyItem{{TxHash: tx.TxHash().String(), Height: blk.Height()}})
	var seen []string
	headerAt := int32(hs.Height)
	early := int32(0)
	for _, m := range c.log {
		switch m.Method {
		case "blockchain.headers.subscribe":
			var hdrs []headerResult
			decodeInto(t, m.Params, &hdrs)
			seen = append(seen, fmt.Sprintf("header %d", hdrs[0].Height))
			headerAt = max(headerAt, hdrs[0].Height)
		case "blockchain.scripthash.subscribe":
			var p []*string
			decodeInto(t, m.Params, &p)
			if equalStatus(p[1], mined) {
				seen = append(seen, fmt.Sprintf("status with the tx at %d", blk.Height()))
				if headerAt < blk.Height() && early == 0 {
					early = headerAt
				}
			} else {
				seen = append(seen, "status "+showStatus(p[1]))
			}
		}
	}
	if headerAt < blk.Height() {
		t.Fatalf("no header notification of height %d: %v", blk.Height(), seen)
	}
	if early != 0 {
		t.Fatalf("the status with the transaction confirmed at %d comes while the last header sent is at %d; "+
			"notifications in order: %v", blk.Height(), early, seen)
	}
}
