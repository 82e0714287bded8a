package electrum

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// hookedBackend is the fake backend that runs a test's hook, where one is
// set, before each of these reads; a hook may stall the read or panic.
type hookedBackend struct {
	*fakeBackend
	onStatus   func(sh indexers.ScriptHash)
	onStatuses func(shs []indexers.ScriptHash)
	onChainTip func()
	onBalance  func(sh indexers.ScriptHash)
}

// Status runs onStatus, then reads (a subscribe's read).
func (b *hookedBackend) Status(sh indexers.ScriptHash, limit int) (StatusHasher, indexers.Tip, error) {
	if b.onStatus != nil {
		b.onStatus(sh)
	}
	return b.fakeBackend.Status(sh, limit)
}

// Statuses runs onStatuses, then reads (the notifier's read).
func (b *hookedBackend) Statuses(shs []indexers.ScriptHash, limit int) ([]StatusHasher, []error, indexers.Tip, error) {
	if b.onStatuses != nil {
		b.onStatuses(shs)
	}
	return b.fakeBackend.Statuses(shs, limit)
}

// ChainTip runs onChainTip, then reads (headers.subscribe's read).
func (b *hookedBackend) ChainTip() (indexers.Tip, error) {
	if b.onChainTip != nil {
		b.onChainTip()
	}
	return b.fakeBackend.ChainTip()
}

// Balance runs onBalance, then reads.
func (b *hookedBackend) Balance(sh indexers.ScriptHash) (int, int64, indexers.Tip, error) {
	if b.onBalance != nil {
		b.onBalance(sh)
	}
	return b.fakeBackend.Balance(sh)
}

// oneShot is a switch a test arms and the next backend hook takes.
type oneShot chan struct{}

// arm makes the next fired report true.
func (o oneShot) arm() { o <- struct{}{} }

// fired reports whether the switch was armed, disarming it.
func (o oneShot) fired() bool {
	select {
	case <-o:
		return true
	default:
		return false
	}
}

// panicIfFired is the hook of a read that fails: once armed, it panics
// with msg (a bug in a backend read, which run recovers from).
func (o oneShot) panicIfFired(msg string) {
	if o.fired() {
		panic(msg)
	}
}

// stall holds one backend read once armed: the read reports on stalled
// and waits until resume is closed.
type stall struct {
	oneShot
	stalled chan struct{}
	resume  chan struct{}
}

// newStall returns a disarmed stall whose resume is closed when the test
// ends, unless the test closed it.
func newStall(t testing.TB) *stall {
	st := &stall{oneShot: make(oneShot, 1), stalled: make(chan struct{}, 1), resume: make(chan struct{})}
	t.Cleanup(func() {
		select {
		case <-st.resume:
		default:
			close(st.resume)
		}
	})
	return st
}

// hold is the hook of the read to stall: once armed, it reports on stalled
// and waits for resume.
func (st *stall) hold() {
	if st.fired() {
		st.stalled <- struct{}{}
		<-st.resume
	}
}

// waitStalled waits for the held read, failing with msg after 30 s (a hang
// guard).
func (st *stall) waitStalled(t testing.TB, msg string) {
	t.Helper()
	select {
	case <-st.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal(msg)
	}
}

// release lets the held read go on.
func (st *stall) release() { close(st.resume) }

// waitUntil polls ok every millisecond, failing with "hang guard: what"
// after 30 s.
func waitUntil(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// onlySession returns one of s's sessions (the only one, in the tests that
// use it), or nil.
func onlySession(s *Server) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.sessions {
		return ss
	}
	return nil
}

// payA returns a transaction paying A from the second block's coinbase: A's
// status changes once it is in the mempool.
func (fx *fixture) payA() *wire.MsgTx {
	return spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, wire.NewTxOut(49_9999_0000, fx.a))
}

// payAInMempool broadcasts payA, notifies A's change and waits until it is
// told (flush).
func (fx *fixture) payAInMempool(t testing.TB) {
	t.Helper()
	if err := fx.f.Broadcast(fx.payA()); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool([]indexers.ScriptHash{fx.shA})
	fx.flush(t)
}

// flush waits (30 s at most) until the notifications of the events pushed
// so far are queued, failing the test on an error.
func (fx *fixture) flush(t testing.TB) {
	t.Helper()
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
}

// dialNegotiated connects a lineClient to addr and negotiates its version.
func dialNegotiated(t testing.TB, addr string) *lineClient {
	t.Helper()
	lc := dialLines(t, addr)
	lc.negotiate()
	return lc
}

// ask sends one request line and decodes the next line as its answer.
func (lc *lineClient) ask(line string) rpcResponse {
	lc.t.Helper()
	lc.send(line)
	var r rpcResponse
	decodeInto(lc.t, lc.line(), &r)
	return r
}

// subscribeStatus subscribes to sh with the (string) id and returns the
// answer and its status (nil for null or an error).
func (lc *lineClient) subscribeStatus(id string, sh indexers.ScriptHash) (rpcResponse, *string) {
	lc.t.Helper()
	r := lc.ask(fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","method":"blockchain.scripthash.subscribe","params":["%s"]}`, id, sh))
	var s *string
	if r.Error == nil {
		decodeInto(lc.t, r.Result, &s)
	}
	return r, s
}

// firstStatus subscribes lc to sh (id "first") and returns its status,
// failing the test on an error or a null status.
func firstStatus(t testing.TB, lc *lineClient, sh indexers.ScriptHash) *string {
	t.Helper()
	first, s0 := lc.subscribeStatus("first", sh)
	if first.Error != nil || s0 == nil {
		t.Fatalf("test setup: first subscribe %s %v", first.Result, first.Error)
	}
	return s0
}

// probeStatus is sh's status now, as a new session subscribing to it is
// answered.
func probeStatus(t testing.TB, addr string, sh indexers.ScriptHash) *string {
	t.Helper()
	_, now := dialNegotiated(t, addr).subscribeStatus("p", sh)
	return now
}

// ping sends server.ping with the string id and fails the test unless the
// next line is its answer.
func (lc *lineClient) ping(id string) {
	lc.t.Helper()
	lc.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"server.ping"}`)
	if l := string(lc.line()); !strings.Contains(l, `"id":"`+id+`"`) {
		lc.t.Fatalf("ping: %.200s", l)
	}
}

// toPing sends server.ping with id "end" and hands each line read before
// its answer to each.
func (lc *lineClient) toPing(each func(l []byte)) {
	lc.t.Helper()
	lc.send(`{"jsonrpc":"2.0","id":"end","method":"server.ping"}`)
	for {
		l := lc.line()
		if strings.Contains(string(l), `"id":"end"`) {
			return
		}
		each(l)
	}
}

// toBatch hands each line read before a batch's array to each, and returns
// the array's answers.
func (lc *lineClient) toBatch(each func(l []byte)) []rpcResponse {
	lc.t.Helper()
	for {
		l := lc.line()
		if len(l) > 0 && l[0] == '[' {
			var rs []rpcResponse
			decodeInto(lc.t, l, &rs)
			return rs
		}
		each(l)
	}
}

// scriptNote is the status line l notifies for sh; false for another line,
// another script or a null status.
func scriptNote(t testing.TB, l []byte, sh indexers.ScriptHash) (string, bool) {
	t.Helper()
	var n rpcResponse
	decodeInto(t, l, &n)
	if n.Method != "blockchain.scripthash.subscribe" {
		return "", false
	}
	var p []*string
	decodeInto(t, n.Params, &p)
	if len(p) != 2 || p[1] == nil || !strings.EqualFold(*p[0], sh.String()) {
		return "", false
	}
	return *p[1], true
}

// statusesToPing collects, in order, the statuses notified for sh before
// the answer to a ping (toPing).
func statusesToPing(t testing.TB, lc *lineClient, sh indexers.ScriptHash) []string {
	t.Helper()
	var told []string
	lc.toPing(func(l []byte) {
		if s, ok := scriptNote(t, l, sh); ok {
			told = append(told, s)
		}
	})
	return told
}

// tipsToPing collects, in order, the heights of the tips notified before
// the answer to a ping (toPing).
func tipsToPing(t testing.TB, lc *lineClient) []int32 {
	t.Helper()
	var told []int32
	lc.toPing(func(l []byte) {
		var n rpcResponse
		decodeInto(t, l, &n)
		if n.Method == "blockchain.headers.subscribe" {
			var p []headerResult
			decodeInto(t, n.Params, &p)
			if len(p) == 1 {
				told = append(told, p[0].Height)
			}
		}
	})
	return told
}
