package electrum

import (
	"encoding/hex"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// The notifier turns chain and mempool events into notifications. Events
// are queued by the Notify* methods without blocking (the chain's goroutine
// calls them); one goroutine drains the queue, coalesces what piled up,
// computes each changed status once (in parallel) and sends it to every
// subscribed session whose last status differs.
//
// Ordering: every event gets a sequence number when it is queued, after the
// backend state it reports has changed. A status computed after reading
// sequence number n reflects at least every event up to n, and maybe
// changes whose events are still to come: two statuses read at the same n
// may differ, and the later event brings a pass that settles it. Each
// session remembers the sequence number of the status (and tip) it was last
// given, and the notifier replaces them only with ones read at a newer
// sequence number, so a subscribe answer and a notification racing each
// other cannot leave a client with a stale status or tip. A pass queues a
// session's notifications once all its statuses are read, each only if the
// session still holds the status the pass recorded: an unsubscribe or a
// subscribe answered meanwhile comes after what the pass read. A new
// subscription is registered before its status is computed (no change can
// slip between the two), but stays pending until its answer is queued:
// meanwhile the notifier only records newer statuses, and one that differs
// from the answer is sent right after it. So a client never sees a
// notification before its subscribe answer.
//
// Sends never block the notifier: a session whose queue overflows is marked
// closed at once and torn down on another goroutine.

// event is one queued chain or mempool change.
type event struct {
	tip     *tipEvent
	touched []indexers.ScriptHash
	// all: every subscribed script hash may have changed.
	all bool
	// done, when set, is closed once every event queued before it has
	// been handled (Server.flushNotifications).
	done chan struct{}
}

// tipEvent is a new chain tip.
type tipEvent struct {
	header wire.BlockHeader
	height int32
	// hash is the header's, set when the event is queued.
	hash chainhash.Hash
	// handled is set once a pass has sent the tip to header subscribers
	// (or found the index past it).
	handled atomic.Bool
}

// notifier holds the queue and the subscription registry.
type notifier struct {
	srv *Server
	seq atomic.Uint64
	// settled is the last tip event queued: the node queues it once the
	// mempool view is reconciled with the commit, so a status read at
	// another tip may miss what the view has yet to learn, and one read at
	// its tip before a pass handles it would reach clients before the
	// tip's header.
	settled atomic.Pointer[tipEvent]
	// requeues counts the passes in a row that queued statuses to read
	// again.
	requeues int

	qmu   sync.Mutex
	queue []event
	wake  chan struct{}

	// rmu guards the registry: which sessions subscribe to what.
	rmu     sync.RWMutex
	byHash  map[indexers.ScriptHash]map[*session]struct{}
	headers map[*session]struct{}
	// recheck are script hashes re-read on every new tip: those whose
	// last status had mempool entries (-1 becomes 0 when a parent
	// confirms), and those whose last read failed (their subscribers
	// still hold an older status).
	recheck map[indexers.ScriptHash]struct{}
	// peak is the most scripts byHash held since it was last built.
	peak int
}

// Go maps keep the storage of their largest size: byHash, at 63 bytes a
// script, would hold 630 MB for the life of the process once MaxSubs had
// been subscribed at once. It is rebuilt at its size (recheck, a part of
// it, with it) when it has shrunk to a quarter of its peak of at least
// shrinkFrom scripts; each rebuild copies a third as many scripts as were
// removed since the peak, a constant cost per removal.
const shrinkFrom = 1024

// newNotifier returns an idle notifier for s.
func newNotifier(s *Server) *notifier {
	n := &notifier{
		srv:     s,
		wake:    make(chan struct{}, 1),
		byHash:  make(map[indexers.ScriptHash]map[*session]struct{}),
		headers: make(map[*session]struct{}),
		recheck: make(map[indexers.ScriptHash]struct{}),
	}
	return n
}

// push queues an event; it never blocks.
func (n *notifier) push(e event) {
	n.qmu.Lock()
	if e.tip != nil {
		// In queue order: the last tip queued is the settled one.
		e.tip.hash = e.tip.header.BlockHash()
		n.settled.Store(e.tip)
	}
	n.queue = append(n.queue, e)
	n.seq.Add(1)
	n.qmu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// currentSeq is the sequence number of the newest queued event.
func (n *notifier) currentSeq() uint64 { return n.seq.Load() }

// run drains the queue until the server stops.
func (n *notifier) run() {
	defer n.srv.wg.Done()
	for {
		select {
		case <-n.wake:
		case <-n.srv.ctx.Done():
			return
		}
		for {
			n.qmu.Lock()
			seq := n.seq.Load()
			q := n.queue
			n.queue = nil
			n.qmu.Unlock()
			if len(q) == 0 {
				break
			}
			n.pass(q, seq)
		}
	}
}

// pass handles a batch of events observed at sequence number seq and
// records how long it took (the fan-out time).
func (n *notifier) pass(q []event, seq uint64) {
	// Flushes waiting on this batch are released once its notifications
	// are queued and counted; when some of its statuses are to be read
	// again (requeued), once that pass is done too.
	defer func() {
		for _, e := range q {
			switch {
			case e.done == nil:
			case n.requeues > 0:
				n.push(event{done: e.done})
			default:
				close(e.done)
			}
		}
	}()
	mx := n.srv.mx
	if mx == nil {
		n.fanOut(q, seq)
		return
	}
	start := time.Now()
	sent := n.fanOut(q, seq)
	mx.fanout.Observe(time.Since(start).Seconds())
	mx.notifications.Add(float64(sent))
}

// fanOut turns a batch of events into notifications and returns how many
// it queued.
func (n *notifier) fanOut(q []event, seq uint64) (sent int) {
	var tip *tipEvent
	everyone := false
	for _, e := range q {
		if e.tip != nil {
			tip = e.tip
		}
		everyone = everyone || e.all
	}
	if tip != nil {
		sent += n.notifyHeaders(tip, seq)
		tip.handled.Store(true)
	}
	// The script hashes somebody subscribes to among those the events
	// changed: a block touches thousands, of which few have subscribers.
	changed := make(map[indexers.ScriptHash]struct{})
	n.rmu.RLock()
	for _, e := range q {
		for _, sh := range e.touched {
			if !everyone && len(n.byHash[sh]) > 0 {
				changed[sh] = struct{}{}
			}
		}
	}
	if everyone {
		for sh := range n.byHash {
			changed[sh] = struct{}{}
		}
	}
	if tip != nil {
		for sh := range n.recheck {
			changed[sh] = struct{}{}
		}
	}
	work := make([]indexers.ScriptHash, 0, len(changed))
	for sh := range changed {
		if len(n.byHash[sh]) > 0 {
			work = append(work, sh)
		}
	}
	n.rmu.RUnlock()
	if len(work) == 0 {
		return
	}
	// Statuses are read in chunks, each chunk in one index view with one
	// cursor, on a few goroutines.
	chunks := (len(work) + statusChunk - 1) / statusChunk
	workers := runtime.GOMAXPROCS(0) * 2
	if workers > chunks {
		workers = chunks
	}
	// Each session's notifications of the pass are queued together at the
	// end, so its writer sends them in one write.
	var next atomic.Int64
	var wg sync.WaitGroup
	var again sync.Mutex
	var retry []indexers.ScriptHash
	outs := make([]outbox, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		outs[w] = make(outbox)
		go func(out outbox) {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				part := work[c*statusChunk : min((c+1)*statusChunk, len(work))]
				for i, r := range n.srv.statuses(part) {
					if r.moved && n.requeues < maxRequeues {
						again.Lock()
						retry = append(retry, part[i])
						again.Unlock()
						continue
					}
					n.deliver(part[i], r, seq, out)
				}
			}
		}(outs[w])
	}
	wg.Wait()
	if len(retry) > 0 {
		// Read while the index tip moved, or before the view caught up
		// with it or a pass sent its header: read again in a pass of
		// their own, behind the tip's event (which need not touch them),
		// after a pause when the last pass did the same, so that the
		// wait is not a spin.
		if n.requeues > 0 {
			time.Sleep(requeuePause)
		}
		n.push(event{touched: retry})
		n.requeues++
	} else {
		n.requeues = 0
	}
	all := outs[0]
	for _, o := range outs[1:] {
		for ss, notes := range o {
			all[ss] = append(all[ss], notes...)
		}
	}
	for ss, notes := range all {
		sent += ss.sendNotes(notes, seq)
	}
	return sent
}

// sendNotes queues a session's notes of the pass at seq together, so its
// writer sends them in one write. It checks each under the session's lock,
// as it queues it: a note whose subscription the session has dropped or
// made again, or whose status a subscribe answer has since replaced or
// already told, is left out, since the client was answered after the pass
// read it; so is one for a subscription a subscribe holds a claim on,
// whose settling tells the status if its answer did not.
func (ss *session) sendNotes(notes []note, seq uint64) int {
	msgs := make([][]byte, 0, len(notes))
	ss.subMu.Lock()
	defer ss.subMu.Unlock()
	for _, nt := range notes {
		st := nt.st
		if ss.subs[nt.sh] != st || st.seq != seq || !equalStatus(st.status, nt.status) || equalStatus(st.told, nt.status) ||
			st.claims > 0 {
			continue
		}
		st.told = nt.status
		msg := nt.msg
		switch {
		case st.name != "":
			msg = statusNotification(st.name, nt.status)
		case msg == nil:
			msg = statusNotification(nt.sh.String(), nt.status)
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		return 0
	}
	return ss.sendAll(msgs)
}

// requeuePause spaces passes that only wait for the index tip to settle,
// and maxRequeues bounds them (about a second): should a commit's tip event
// never come, the statuses are sent as read, and the next block's event
// corrects them.
const (
	requeuePause = 5 * time.Millisecond
	maxRequeues  = 200
)

// settledAt reports whether the mempool view is reconciled with the index
// at tip and a pass has sent tip's header (or no tip event came yet).
func (n *notifier) settledAt(tip chainhash.Hash) bool {
	p := n.settled.Load()
	return p == nil || (p.hash == tip && p.handled.Load())
}

// outbox collects the notifications of a pass per session.
type outbox map[*session][]note

// note is a status deliver recorded for a session's subscription st to sh;
// msg notifies it under sh.String().
type note struct {
	sh     indexers.ScriptHash
	st     *subState
	status *string
	msg    []byte
}

// statusChunk is how many statuses the notifier reads in one index view.
const statusChunk = 64

// notifyHeaders sends the new tip to header subscribers and returns how
// many it sent it to.
func (n *notifier) notifyHeaders(t *tipEvent, seq uint64) (sent int) {
	// A tip the index has already left is not sent: a client may have
	// been given the newer one, and the event that moved the tip on
	// brings it.
	if cur, ok := n.srv.currentTip(); ok && cur.Hash != t.header.BlockHash() {
		return 0
	}
	hexHdr, err := headerHex(&t.header)
	if err != nil {
		return 0
	}
	msg, err := encodeNotification("blockchain.headers.subscribe", []headerResult{{Height: t.height, Hex: hexHdr}})
	if err != nil {
		return 0
	}
	mark := headerMark{height: t.height, hash: t.header.BlockHash(), seq: seq, set: true, msg: msg}
	n.rmu.RLock()
	sessions := make([]*session, 0, len(n.headers))
	for ss := range n.headers {
		sessions = append(sessions, ss)
	}
	n.rmu.RUnlock()
	for _, ss := range sessions {
		ss.subMu.Lock()
		last := ss.lastHeader
		if ss.headersSub && (!last.set || last.seq < seq) && (last.hash != mark.hash || last.height != mark.height) {
			ss.lastHeader = mark
			if ss.headersClaims == 0 {
				ss.headersTold = mark
				if ss.send(msg) {
					sent++
				}
			}
		}
		ss.subMu.Unlock()
	}
	return sent
}

// deliver records a recomputed status as changed for the sessions where it
// changed, and puts their notes in out.
func (n *notifier) deliver(sh indexers.ScriptHash, r statusResult, seq uint64, out outbox) {
	status, hasMempool, err := r.status, r.hasMempool, r.err
	n.rmu.RLock()
	subs := make([]*session, 0, len(n.byHash[sh]))
	for ss := range n.byHash[sh] {
		subs = append(subs, ss)
	}
	n.rmu.RUnlock()
	if errors.Is(err, indexers.ErrHistoryTooLarge) {
		// As ElectrumX: a status that can no longer be computed (history
		// too large) silently ends the subscription.
		for _, ss := range subs {
			ss.unsubscribe(sh)
		}
		return
	}
	// A failed read (a store error) says nothing about the script: its
	// subscriptions stay, and it is read again on the next tip.
	again := err != nil || hasMempool
	n.rmu.RLock()
	_, had := n.recheck[sh]
	n.rmu.RUnlock()
	if had != again {
		n.rmu.Lock()
		// A script whose last subscriber left meanwhile is not kept.
		if again && len(n.byHash[sh]) > 0 {
			n.recheck[sh] = struct{}{}
		} else {
			delete(n.recheck, sh)
		}
		n.rmu.Unlock()
	}
	if err != nil {
		return
	}
	var msg []byte
	for _, ss := range subs {
		ss.subMu.Lock()
		st := ss.subs[sh]
		if st != nil && st.claims > 0 {
			// The subscribe answer is being computed; it will carry the
			// newer of its own status and this one.
			if st.seq < seq {
				st.status, st.seq, st.mempool = status, seq, hasMempool
			}
			ss.subMu.Unlock()
			continue
		}
		if st != nil && st.seq < seq && !equalStatus(st.status, status) {
			st.status, st.seq, st.mempool = status, seq, hasMempool
			if msg == nil && st.name == "" {
				msg = statusNotification(sh.String(), status)
			}
			out[ss] = append(out[ss], note{sh: sh, st: st, status: status, msg: msg})
		}
		ss.subMu.Unlock()
	}
}

// statusNotification encodes a blockchain.scripthash.subscribe
// notification of the script hash in hex without reflection (the notifier
// sends many).
func statusNotification(hexHash string, status *string) []byte {
	b := make([]byte, 0, 192)
	b = append(b, `{"jsonrpc":"2.0","method":"blockchain.scripthash.subscribe","params":["`...)
	b = append(b, hexHash...)
	if status == nil {
		b = append(b, `",null]}`...)
	} else {
		b = append(b, `","`...)
		b = append(b, *status...)
		b = append(b, `"]}`...)
	}
	return b
}

// equalStatus compares two statuses (nil is null).
func equalStatus(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// addSub registers ss for sh.
func (n *notifier) addSub(ss *session, sh indexers.ScriptHash, hasMempool bool) {
	n.rmu.Lock()
	m := n.byHash[sh]
	if m == nil {
		m = make(map[*session]struct{})
		n.byHash[sh] = m
	}
	m[ss] = struct{}{}
	n.peak = max(n.peak, len(n.byHash))
	if hasMempool {
		n.recheck[sh] = struct{}{}
	}
	n.rmu.Unlock()
}

// removeSub unregisters ss for sh.
func (n *notifier) removeSub(ss *session, sh indexers.ScriptHash) {
	n.rmu.Lock()
	n.removeSubLocked(ss, sh)
	n.rmu.Unlock()
}

// removeSubLocked is removeSub with rmu held.
func (n *notifier) removeSubLocked(ss *session, sh indexers.ScriptHash) {
	if m := n.byHash[sh]; m != nil {
		delete(m, ss)
		if len(m) == 0 {
			delete(n.byHash, sh)
			delete(n.recheck, sh)
			if n.peak >= shrinkFrom && len(n.byHash) <= n.peak/4 {
				n.byHash = rebuilt(n.byHash)
				n.recheck = rebuilt(n.recheck)
				n.peak = len(n.byHash)
			}
		}
	}
}

// rebuilt returns a copy of m sized for what it holds (maps.Clone keeps
// m's capacity).
func rebuilt[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// addHeaders registers ss for new tips.
func (n *notifier) addHeaders(ss *session) {
	n.rmu.Lock()
	n.headers[ss] = struct{}{}
	n.rmu.Unlock()
}

// dropSession forgets every subscription of a closed session.
func (n *notifier) dropSession(ss *session, subs map[indexers.ScriptHash]*subState) {
	n.rmu.Lock()
	delete(n.headers, ss)
	for sh := range subs {
		n.removeSubLocked(ss, sh)
	}
	n.rmu.Unlock()
}

// headerHex returns the 80-byte serialized header in hex.
func headerHex(h *wire.BlockHeader) (string, error) {
	var b headerBuf
	if err := h.Serialize(&b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b.b), nil
}

// headerBuf is a small io.Writer for one header.
type headerBuf struct{ b []byte }

// Write appends p.
func (w *headerBuf) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
