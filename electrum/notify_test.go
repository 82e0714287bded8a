package electrum

import (
	"github.com/btcd-electrum/btcd-electrum/indexers"

	"bufio"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// mineAndNotify mines a fake block and pushes its events as the node does.
func (fx *fixture) mineAndNotify(script []byte, txs ...*wire.MsgTx) int32 {
	hdr, h, touched := fx.f.mine(script, txs...)
	fx.s.NotifyTip(hdr, h)
	fx.s.NotifyScriptHashes(touched)
	return h
}

// statusOf decodes a scripthash notification into (scripthash, status).
func statusOf(t *testing.T, n rpcResponse) (string, *string) {
	t.Helper()
	if n.Method != "blockchain.scripthash.subscribe" {
		t.Fatalf("notification %s %s, want a scripthash status", n.Method, n.Params)
	}
	var p []*string
	if err := json.Unmarshal(n.Params, &p); err != nil || len(p) != 2 || p[0] == nil {
		t.Fatalf("bad params %s", n.Params)
	}
	return *p[0], p[1]
}

// TestNotifications checks header and status notifications for blocks, mempool changes and a reorg, one per change per session, and none after unsubscribe.
func TestNotifications(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	var hs headerResult
	c.must(&hs, "blockchain.headers.subscribe")
	d := p2wpkh(0xdd)
	var st *string
	c.must(&st, "blockchain.scripthash.subscribe", fx.shC.String())
	first := *st

	// A block paying nobody subscribed: one header notification only.
	h := fx.mineAndNotify(d)
	n := c.note()
	var hdrs []headerResult
	json.Unmarshal(n.Params, &hdrs)
	if n.Method != "blockchain.headers.subscribe" || len(hdrs) != 1 || hdrs[0].Height != h {
		t.Fatalf("header notification %s %s", n.Method, n.Params)
	}
	c.noNote(fx.s)

	// Mining tx2 (C's height-0 tx) changes C's status: tx2 confirms and
	// tx3 goes from -1 to 0. One header and one status notification.
	h = fx.mineAndNotify(d, fx.tx2)
	sawHeader, sawStatus := false, false
	for i := 0; i < 2; i++ {
		n := c.note()
		switch n.Method {
		case "blockchain.headers.subscribe":
			sawHeader = true
		default:
			sh, status := statusOf(t, n)
			if sh != fx.shC.String() || status == nil || *status == first {
				t.Fatalf("status notification %s %v", sh, status)
			}
			sawStatus = true
			var hist []historyItem
			c.must(&hist, "blockchain.scripthash.get_history", fx.shC.String())
			dg := indexers.NewStatusHasher()
			for _, e := range hist {
				dg.Add(mustHash(t, e.TxHash), e.Height)
			}
			if *statusHex(dg.Sum()) != *status {
				t.Fatal("notified status differs from the history's status")
			}
			if len(hist) != 2 || hist[0].Height != h || hist[1].Height != 0 {
				t.Fatalf("history after block %+v", hist)
			}
		}
	}
	if !sawHeader || !sawStatus {
		t.Fatal("missing notifications")
	}
	c.noNote(fx.s)

	// A mempool change: a new payment to C.
	tx5 := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, wire.NewTxOut(1000, fx.c))
	if err := fx.f.Broadcast(tx5); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool(fx.f.txScriptsLocked(tx5))
	if sh, _ := statusOf(t, c.note()); sh != fx.shC.String() {
		t.Fatalf("mempool notification for %s", sh)
	}
	// Pushing the same change again sends nothing: the status is the same.
	fx.s.NotifyMempool(fx.f.txScriptsLocked(tx5))
	c.noNote(fx.s)

	// Reorg: disconnecting the block with tx2 puts it back in the mempool;
	// C's status changes and the header goes back one block.
	touched := fx.f.disconnect()
	hdr, th := fx.f.tip()
	fx.s.NotifyTip(hdr, th)
	fx.s.NotifyScriptHashes(touched)
	gotHeader := false
	for i := 0; i < 2; i++ {
		n := c.note()
		if n.Method == "blockchain.headers.subscribe" {
			json.Unmarshal(n.Params, &hdrs)
			if hdrs[0].Height != th {
				t.Fatalf("reorg header height %d, want %d", hdrs[0].Height, th)
			}
			gotHeader = true
		} else if sh, _ := statusOf(t, n); sh != fx.shC.String() {
			t.Fatalf("reorg status for %s", sh)
		}
	}
	if !gotHeader {
		t.Fatal("no header notification on reorg")
	}
	// The unsubscribed session gets nothing more.
	c2 := fx.client(t, "1.4.2")
	c2.must(&st, "blockchain.scripthash.subscribe", fx.shC.String())
	var ok bool
	c2.must(&ok, "blockchain.scripthash.unsubscribe", fx.shC.String())
	fx.mineAndNotify(fx.c)
	c2.noNote(fx.s)
}

// TestNotifierSurvivesSlowSubscriber fills the send queue of a subscriber
// that stops reading with notifications: the notifier disconnects it
// (without waiting on it) and keeps notifying everyone else.
func TestNotifierSurvivesSlowSubscriber(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.MaxSendBacklog = 2000; c.WriteTimeout = time.Hour })
	good := fx.client(t, "1.4")
	good.must(nil, "blockchain.headers.subscribe")

	srvEnd, cliEnd := net.Pipe()
	defer cliEnd.Close()
	go fx.s.runSession(newLineConn(srvEnd, DefaultMaxRecv), srvEnd.RemoteAddr(), TCP)
	r := bufio.NewReader(cliEnd)
	for i, req := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["slow","1.4"]}`,
		`{"jsonrpc":"2.0","id":2,"method":"blockchain.headers.subscribe"}`,
	} {
		cliEnd.Write([]byte(req + "\n"))
		if _, err := r.ReadBytes('\n'); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
	}
	if fx.s.SessionCount() != 2 {
		t.Fatalf("%d sessions", fx.s.SessionCount())
	}
	// The subscribe answer can be read before its request goroutine
	// releases the hold on header notifications (the answer's after
	// function). Until then each block only replaces the held header; a
	// delay of that goroutine longer than the 30 blocks below (a 3 s sleep
	// in it reproduces it) left nothing to overflow, and the test failed
	// as it once did in CI. Wait for it.
	deadline := time.Now().Add(20 * time.Second)
	for fx.s.headersHeld() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// The pipe is unbuffered and no longer read: every notification stays
	// queued until the backlog overflows.
	for i := 0; i < 30; i++ {
		fx.mineAndNotify(fx.c)
		if err := fx.s.flushNotifications(contextWithTimeout(20 * time.Second)); err != nil {
			t.Fatalf("notifier stuck: %v", err)
		}
		good.note()
	}
	deadline = time.Now().Add(20 * time.Second)
	for fx.s.SessionCount() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if fx.s.SessionCount() != 1 {
		t.Fatal("the subscriber that stopped reading is still connected")
	}
}

// headersHeld reports whether a session holds header notifications back
// until its headers.subscribe answer is queued.
func (s *Server) headersHeld() bool {
	s.mu.Lock()
	sessions := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.subMu.Lock()
		held := ss.headersClaims > 0
		ss.subMu.Unlock()
		if held {
			return true
		}
	}
	return false
}

// TestNoNotificationBeforeSubscribeAnswer subscribes while blocks that
// change the script's status keep arriving, and checks on the raw stream
// that no status notification precedes the subscribe answer and that the
// last status the client sees is the final one.
func TestNoNotificationBeforeSubscribeAnswer(t *testing.T) {
	fx := newFixture(t, nil)
	for round := 0; round < 10; round++ {
		conn, err := net.Dial("tcp", fx.addr)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(conn)
		conn.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["t","1.4"]}` + "\n"))
		r.ReadBytes('\n')
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 5; i++ {
				fx.mineAndNotify(fx.c)
			}
		}()
		conn.Write([]byte(`{"jsonrpc":"2.0","id":"sub","method":"blockchain.scripthash.subscribe","params":["` + fx.shC.String() + `"]}` + "\n"))
		<-done
		// Read until the subscribe answer, then until a ping sent after it
		// and after everything the notifier had to do.
		var last *string
		answered := false
		readUntil := func(id string) {
			for {
				line, err := r.ReadBytes('\n')
				if err != nil {
					t.Fatal(err)
				}
				var m rpcResponse
				decodeInto(t, line, &m)
				if string(m.ID) == id {
					if id == `"sub"` {
						answered = true
						decodeInto(t, m.Result, &last)
					}
					return
				}
				if !answered {
					t.Fatalf("round %d: %s before the subscribe answer", round, line)
				}
				_, last = statusOf(t, m)
			}
		}
		readUntil(`"sub"`)
		if err := fx.s.flushNotifications(contextWithTimeout(20 * time.Second)); err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(`{"jsonrpc":"2.0","id":"end","method":"server.ping"}` + "\n"))
		readUntil(`"end"`)
		want, _, err := fx.s.status(fx.shC)
		if err != nil {
			t.Fatal(err)
		}
		if !equalStatus(last, want) {
			t.Fatalf("round %d: last status seen is not the final status", round)
		}
		conn.Close()
	}
}

// A block whose touched scripts were never reported (the index caught it up
// in a batch while trailing the chain) notifies nobody but header
// subscribers; NotifyAllScriptHashes then recomputes every subscription and
// notifies exactly the statuses that changed.
func TestNotifyAllScriptHashes(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	var hs headerResult
	c.must(&hs, "blockchain.headers.subscribe")
	d := p2wpkh(0xdd)
	shD := indexers.ScriptHashFromScript(d)
	var stA, stD *string
	c.must(&stA, "blockchain.scripthash.subscribe", fx.shA.String())
	c.must(&stD, "blockchain.scripthash.subscribe", shD.String())
	if stA == nil || stD != nil {
		t.Fatalf("statuses before: A %v, D %v", stA, stD)
	}

	hdr, h, _ := fx.f.mine(d)
	fx.s.NotifyTip(hdr, h)
	if n := c.note(); n.Method != "blockchain.headers.subscribe" {
		t.Fatalf("notification %s %s, want the header", n.Method, n.Params)
	}
	c.noNote(fx.s)

	fx.s.NotifyAllScriptHashes()
	sh, status := statusOf(t, c.note())
	if sh != shD.String() || status == nil {
		t.Fatalf("status notification %s %v, want D's new status", sh, status)
	}
	var again *string
	c.must(&again, "blockchain.scripthash.subscribe", shD.String())
	if again == nil || *again != *status {
		t.Fatalf("notified status %v, subscribe answers %v", *status, again)
	}
	c.noNote(fx.s)
}

// TestStatusNotificationNamesScripthashAsSubscribed: a script hash
// subscribed in upper-case hex (accepted, as ElectrumX accepts it) is
// named so in its notifications, as ElectrumX names it, for clients that
// match notifications to subscriptions by the string; a lower-case
// subscriber of the same script in another session still gets its own.
func TestStatusNotificationNamesScripthashAsSubscribed(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	lower := fx.client(t, "1.4")
	upper := strings.ToUpper(fx.shC.String())
	var st *string
	c.must(&st, "blockchain.scripthash.subscribe", upper)
	lower.must(&st, "blockchain.scripthash.subscribe", fx.shC.String())
	if st == nil {
		t.Fatal("C has history: status must not be null")
	}
	// Mining tx2 changes C's status (tx2 confirms, tx3 goes -1 -> 0).
	fx.mineAndNotify(p2wpkh(0xdd), fx.tx2)
	sh, status := statusOf(t, c.note())
	if status == nil || *status == *st {
		t.Fatalf("notified status %v, want a new one", status)
	}
	if sh != upper {
		t.Fatalf("notification names scripthash %s, want the subscribed %s", sh, upper)
	}
	if sh, _ := statusOf(t, lower.note()); sh != fx.shC.String() {
		t.Fatalf("the lower-case subscriber's notification names %s, want %s", sh, fx.shC)
	}
}

// failingStatuses is the fake backend whose batched status read (the
// notifier's) fails while failing is set, as a store read error does.
type failingStatuses struct {
	*fakeBackend
	failing atomic.Bool
}

func (f *failingStatuses) Statuses(shs []indexers.ScriptHash, limit int) ([]StatusHasher, []error, indexers.Tip, error) {
	if f.failing.Load() {
		return nil, nil, indexers.Tip{}, errors.New("transient read error")
	}
	return f.fakeBackend.Statuses(shs, limit)
}

// TestStatusReadErrorKeepsSubscription: only a status that can no longer be
// computed (history too large) ends a subscription (docs/PROTOCOL.md §6). A
// status the notifier fails to read keeps its subscribers, and is read
// again on the next tip, which brings the wallet the status it missed.
func TestStatusReadErrorKeepsSubscription(t *testing.T) {
	fx := newFixtureChain(t)
	fb := &failingStatuses{fakeBackend: fx.f}
	s, addr := startServer(t, fb, nil)
	c := dial(t, addr)
	c.negotiate("1.4")
	var first *string
	c.must(&first, "blockchain.scripthash.subscribe", fx.shA.String())
	// A block pays A while its status cannot be read.
	fb.failing.Store(true)
	_, _, touched := fx.f.mine(fx.a)
	s.NotifyScriptHashes(touched)
	if err := s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	fb.failing.Store(false)
	if n := s.SubscriptionCount(); n != 1 {
		t.Fatalf("after one failed status read the session holds %d subscriptions, want 1", n)
	}
	// The next tip, paying nobody subscribed, reads A again.
	hdr, h, _ := fx.f.mine(p2wpkh(0xdd))
	s.NotifyTip(hdr, h)
	sh, status := statusOf(t, c.note())
	if sh != fx.shA.String() || status == nil || (first != nil && *status == *first) {
		t.Fatalf("status notification %s %v, want A's new status", sh, status)
	}
	var now *string
	c.must(&now, "blockchain.scripthash.subscribe", fx.shA.String())
	if now == nil || *now != *status {
		t.Fatalf("notified status %v, subscribe answers %v", *status, now)
	}
	c.noNote(s)
}
