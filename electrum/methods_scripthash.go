package electrum

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// consistencyTries is how often a read that combines the index and the
// mempool is retried when the tip moves underneath it.
const consistencyTries = 3

// sameTip reports whether the chain tip is still t.
func (s *Server) sameTip(t indexers.Tip) bool {
	now, ok := s.currentTip()
	return ok && now == t
}

// latestTipper is a Backend that knows the tip it last wrote without a
// database read. sameTip asks it: a tip a moment ahead of what readers see
// (while a block commits) only makes a read retry, and a read of ChainTip,
// a database view of its own, cost as much as the balance it checked.
type latestTipper interface {
	LatestTip() (indexers.Tip, bool)
}

// mempoolEntries returns the mempool part of a script in canonical order.
// A transaction the index already holds as confirmed (the mempool overlay
// has not caught up with a block yet) is left out, so that status and
// history never list a transaction twice.
func (s *Server) mempoolEntries(sh indexers.ScriptHash) []MempoolEntry {
	src := s.backend.MempoolEntries(sh)
	es := make([]MempoolEntry, 0, len(src))
	for _, e := range src {
		if _, err := s.backend.TxLocation(e.TxHash); err == nil {
			continue
		}
		es = append(es, e)
	}
	sortMempool(es)
	return es
}

// status computes a script's status (docs/PROTOCOL.md §4.2): the confirmed part
// from the index, then the mempool in canonical order. hasMempool reports
// whether mempool entries were included.
func (s *Server) status(sh indexers.ScriptHash) (*string, bool, error) {
	return s.statusTries(sh, consistencyTries)
}

// statusTries is status with a given number of attempts at reading the
// index and the mempool at one tip. The notifier makes one: if the tip
// moves, the event that moved it brings another pass.
func (s *Server) statusTries(sh indexers.ScriptHash, tries int) (*string, bool, error) {
	status, mempool, _, err := s.statusLen(sh, tries)
	return status, mempool, err
}

// statusLen is statusTries that also returns the number of history
// entries the status covers (what computing it cost).
func (s *Server) statusLen(sh indexers.ScriptHash, tries int) (*string, bool, int, error) {
	for try := 0; ; try++ {
		hasher, tip, err := s.backend.Status(sh, s.cfg.historyLimit())
		if err != nil {
			return nil, false, 0, err
		}
		es := s.mempoolEntries(sh)
		if try+1 < tries && !s.sameTip(tip) {
			continue
		}
		n := hasher.Len() + len(es)
		if n > s.cfg.historyLimit() {
			return nil, false, n, indexers.ErrHistoryTooLarge
		}
		for _, e := range es {
			hasher.Add(e.TxHash, e.Height)
		}
		return statusHex(hasher.Sum()), len(es) > 0, n, nil
	}
}

// statusResult is one status the notifier computed.
type statusResult struct {
	status     *string
	hasMempool bool
	err        error
	// moved: the index tip moved while the status was read, or the
	// mempool view has yet to be reconciled with it, so its confirmed and
	// unconfirmed parts may describe two tips, or the notifier has yet to
	// send its header; the notifier reads it again.
	moved bool
}

// statuses computes the statuses of many scripts with one index read (the
// notifier's path).
func (s *Server) statuses(shs []indexers.ScriptHash) []statusResult {
	out := make([]statusResult, len(shs))
	hashers, errs, tip, err := s.backend.Statuses(shs, s.cfg.historyLimit())
	defer func() {
		if err == nil && (!s.sameTip(tip) || !s.notifier.settledAt(tip.Hash)) {
			for i := range out {
				out[i].moved = true
			}
		}
	}()
	// A read error is logged once per read: the notifier reads these
	// statuses again on the next tip.
	logged := err != nil
	if logged {
		s.errorf("electrum: reading %d statuses: %v", len(shs), err)
	}
	for i, sh := range shs {
		switch {
		case err != nil:
			out[i].err = err
			continue
		case errs[i] != nil:
			out[i].err = errs[i]
			if !logged && !errors.Is(errs[i], indexers.ErrHistoryTooLarge) {
				s.errorf("electrum: reading the status of %s: %v", sh, errs[i])
				logged = true
			}
			continue
		}
		es := s.mempoolEntries(sh)
		h := hashers[i]
		if h.Len()+len(es) > s.cfg.historyLimit() {
			out[i].err = indexers.ErrHistoryTooLarge
			continue
		}
		for _, e := range es {
			h.Add(e.TxHash, e.Height)
		}
		out[i] = statusResult{status: statusHex(h.Sum()), hasMempool: len(es) > 0}
	}
	return out
}

// mempoolItems encodes mempool entries as get_mempool answers them.
func mempoolItems(es []MempoolEntry) json.RawMessage {
	return jsonList(len(es), historyEntryLen+20, func(b []byte, i int) []byte {
		return appendHistoryItem(b, &es[i].TxHash, es[i].Height, max(es[i].Fee, 0))
	})
}

// historyItems encodes a confirmed history followed by mempool entries as
// get_history answers them.
func historyItems(hist []indexers.HistoryEntry, es []MempoolEntry) json.RawMessage {
	return jsonList(len(hist)+len(es), historyEntryLen, func(b []byte, i int) []byte {
		if i < len(hist) {
			return appendHistoryItem(b, &hist[i].TxHash, hist[i].Height, -1)
		}
		e := &es[i-len(hist)]
		return appendHistoryItem(b, &e.TxHash, e.Height, max(e.Fee, 0))
	})
}

// reserveBuild takes the bytes an answer of n entries of entryLen bytes
// needs while it is built and copied into its response from the server's
// build budget, waiting for them within the request's time; release gives
// them back once the answer is encoded. Small answers take nothing.
func (s *Server) reserveBuild(ctx context.Context, n, entryLen int) (release func(), err error) {
	w := 2 * int64(n) * int64(entryLen)
	if w < buildBudgetMin {
		return nil, nil
	}
	w = min(w, s.cfg.buildBudget())
	if err := s.building.Acquire(ctx, w); err != nil {
		return nil, rpcErrorf(codeServerBusy, "server busy - request timed out")
	}
	return func() { s.building.Release(w) }, nil
}

// gone answers a request whose session closed or whose time ran out before
// its work started: nothing is computed for it.
func gone(ctx context.Context) error {
	if ctx.Err() != nil {
		return rpcErrorf(codeServerBusy, "server busy - request cancelled")
	}
	return nil
}

// hGetBalance returns the confirmed and unconfirmed balance. It is charged
// for the unspent outputs it sums, as listunspent and ElectrumX charge:
// the sum is a scan of all of them.
func hGetBalance(ctx context.Context, ss *session, args []json.RawMessage) (any, error) {
	sh, err := argScriptHash(args[0])
	if err != nil {
		return nil, err
	}
	b := ss.srv.backend
	for try := 0; ; try++ {
		if err := gone(ctx); err != nil {
			return nil, err
		}
		n, conf, tip, err := b.Balance(sh)
		if err != nil {
			return nil, internal("balance", err)
		}
		unconf := b.MempoolBalance(sh)
		if try+1 < consistencyTries && !ss.srv.sameTip(tip) {
			continue
		}
		ss.charge(float64(n) / 50)
		return map[string]int64{"confirmed": conf, "unconfirmed": unconf}, nil
	}
}

// hGetHistory returns confirmed history in chain order, then the mempool.
// The confirmed part of a long history comes from the answer cache while
// the index tip is the one it was read at.
func hGetHistory(ctx context.Context, ss *session, args []json.RawMessage) (any, error) {
	sh, err := argScriptHash(args[0])
	if err != nil {
		return nil, err
	}
	limit := ss.srv.cfg.historyLimit()
	for try := 0; ; try++ {
		if err := gone(ctx); err != nil {
			return nil, err
		}
		conf, n, tip, err := ss.srv.confirmedHistory(sh, limit)
		if err != nil {
			if errors.Is(err, indexers.ErrHistoryTooLarge) {
				return nil, err
			}
			return nil, internal("history", err)
		}
		es := ss.srv.mempoolEntries(sh)
		if try+1 < consistencyTries && !ss.srv.sameTip(tip) {
			continue
		}
		if n+len(es) > limit {
			return nil, indexers.ErrHistoryTooLarge
		}
		ss.charge(0.001 * float64(n+len(es)))
		release, err := ss.srv.reserveBuild(ctx, n+len(es), historyEntryLen)
		if err != nil {
			return nil, err
		}
		return builtAnswer{v: withMempool(conf, n, es), release: release}, nil
	}
}

// withMempool returns the JSON list conf (of n confirmed entries) followed
// by the mempool entries es: conf itself, never changed, when there are
// none.
func withMempool(conf []byte, n int, es []MempoolEntry) json.RawMessage {
	if len(es) == 0 {
		return json.RawMessage(conf)
	}
	b := make([]byte, 0, len(conf)+len(es)*(historyEntryLen+20))
	b = append(b, conf[:len(conf)-1]...)
	for i := range es {
		if n > 0 || i > 0 {
			b = append(b, ',')
		}
		b = appendHistoryItem(b, &es[i].TxHash, es[i].Height, max(es[i].Fee, 0))
	}
	return json.RawMessage(append(b, ']'))
}

// hGetMempool returns the mempool part of a script's history.
func hGetMempool(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	sh, err := argScriptHash(args[0])
	if err != nil {
		return nil, err
	}
	es := ss.srv.mempoolEntries(sh)
	if len(es) > ss.srv.cfg.historyLimit() {
		return nil, indexers.ErrHistoryTooLarge
	}
	ss.charge(float64(len(es)) / 50)
	return mempoolItems(es), nil
}

// responseTooLarge is the refusal of an answer over MaxSend (an unspent
// list refused before it is built among them): it is the answer that is
// too large, not the script's history.
func responseTooLarge(ss *session) *RPCError {
	return rpcErrorf(codeInvalidRequest, "response too large (over %d bytes)", ss.srv.cfg.MaxSend)
}

// hListUnspent returns confirmed unspent outputs not spent in the mempool,
// then unconfirmed outputs (height 0). The limit is of the answer: the
// index read leaves room for the script's outputs the mempool spends,
// which the answer leaves out.
func hListUnspent(ctx context.Context, ss *session, args []json.RawMessage) (any, error) {
	sh, err := argScriptHash(args[0])
	if err != nil {
		return nil, err
	}
	b := ss.srv.backend
	limit := ss.srv.cfg.unspentLimit()
	for try := 0; ; try++ {
		if err := gone(ctx); err != nil {
			return nil, err
		}
		utxos, tip, err := b.Unspent(sh, limit+b.MempoolSpends(sh))
		if err != nil {
			if errors.Is(err, indexers.ErrHistoryTooLarge) {
				return nil, responseTooLarge(ss)
			}
			return nil, internal("unspent", err)
		}
		read := len(utxos)
		conf := utxos[:0]
		for _, u := range utxos {
			if !b.MempoolIsSpent(wire.OutPoint{Hash: u.TxHash, Index: u.Vout}) {
				conf = append(conf, u)
			}
		}
		mem := b.MempoolUnspent(sh)
		if try+1 < consistencyTries && !ss.srv.sameTip(tip) {
			continue
		}
		n := len(conf) + len(mem)
		if n > limit {
			return nil, responseTooLarge(ss)
		}
		ss.charge(float64(read+len(mem)) / 50)
		release, err := ss.srv.reserveBuild(ctx, n, unspentEntryLen)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, 2+n*unspentEntryLen)
		out = append(out, '[')
		for i := range conf {
			u := &conf[i]
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = appendUnspentItem(out, &u.TxHash, u.Vout, u.Height, u.Value)
		}
		for i := range mem {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = appendUnspentItem(out, &mem[i].TxHash, mem[i].Vout, 0, mem[i].Value)
		}
		return builtAnswer{v: json.RawMessage(append(out, ']')), release: release}, nil
	}
}

// hSubscribe subscribes to a script's status and returns it.
func hSubscribe(ctx context.Context, ss *session, args []json.RawMessage) (any, error) {
	sh, err := argScriptHash(args[0])
	if err != nil {
		return nil, err
	}
	if err := gone(ctx); err != nil {
		return nil, err
	}
	srv := ss.srv
	n := srv.notifier

	// Register before computing, so no change between the computation
	// and the registration can be missed. The state holds one claim per
	// subscribe whose answer is undecided; meanwhile the notifier only
	// records newer statuses, and the last claim settled tells what the
	// client has not been told (settleSubLocked). The claim is settled
	// on every way out: by the answer's functions, or here.
	ss.subMu.Lock()
	if ss.closed() {
		ss.subMu.Unlock()
		return nil, rpcErrorf(codeServerBusy, "session closed")
	}
	st := ss.subs[sh]
	fresh := st == nil
	if fresh {
		if int(ss.nsubs.Load()) >= srv.cfg.MaxSubsPerSession {
			ss.subMu.Unlock()
			srv.counters.subsRefused.Add(1)
			return nil, rpcErrorf(codeLimitExceeded, "subscription limit reached (%d per session)", srv.cfg.MaxSubsPerSession)
		}
		if rerr := srv.reserveSub(ss); rerr != nil {
			ss.subMu.Unlock()
			return nil, rerr
		}
		st = &subState{}
		ss.subs[sh] = st
		ss.nsubs.Add(1)
		// With the session's entry, under its lock: an unsubscribe
		// between the two would leave a registration the session no
		// longer holds.
		n.addSub(ss, sh, false)
	}
	st.claims++
	st.name = spelling(args[0], sh)
	ss.subMu.Unlock()
	handedOff := false
	defer func() {
		if !handedOff {
			ss.subMu.Lock()
			ss.settleSubLocked(sh, st)
			ss.subMu.Unlock()
		}
	}()
	if fresh {
		if ss.closed() {
			// close() may have dropped the session's registrations
			// before this one was made.
			n.removeSub(ss, sh)
			return nil, rpcErrorf(codeServerBusy, "session closed")
		}
	}

	seq := n.currentSeq()
	status, hasMempool, entries, err := srv.statusLen(sh, consistencyTries)
	// The status is computed over the whole history: charged as
	// get_history charges it, so subscribing to the longest histories is
	// not cheaper than asking for them.
	ss.charge(0.001 * float64(entries))

	ss.subMu.Lock()
	defer ss.subMu.Unlock()
	if err != nil {
		return nil, err
	}
	if ss.subs[sh] != st {
		// The session closed meanwhile.
		return status, nil
	}
	if st.seq <= seq {
		st.status, st.seq, st.mempool = status, seq, hasMempool
	}
	if hasMempool {
		n.addSub(ss, sh, true)
	}
	answered := st.status
	handedOff = true
	return afterAnswer{v: answered, after: func() {
		ss.subMu.Lock()
		defer ss.subMu.Unlock()
		if ss.subs[sh] == st {
			st.answered, st.told = true, answered
			ss.settleSubLocked(sh, st)
		}
	}, unsent: func() {
		// Without an id: subscribed, told nothing. A fresh subscription
		// starts from the status read, as an answer would have.
		ss.subMu.Lock()
		defer ss.subMu.Unlock()
		if ss.subs[sh] == st {
			if !st.answered {
				st.answered, st.told = true, answered
			}
			ss.settleSubLocked(sh, st)
		}
	}, dropped: func() {
		// Never sent (timed out, or replaced by an error): the client
		// holds what it was told before.
		ss.subMu.Lock()
		defer ss.subMu.Unlock()
		ss.settleSubLocked(sh, st)
	}}, nil
}

// settleSubLocked settles one claim of a subscribe on st. The last one
// drops a subscription no answer was sent for, and otherwise tells the
// status found meanwhile when the client was last told another: no answer
// for sh is then left to queue, so the notification follows every one.
// subMu is held.
func (ss *session) settleSubLocked(sh indexers.ScriptHash, st *subState) {
	if ss.subs[sh] != st {
		return
	}
	if st.claims--; st.claims > 0 {
		return
	}
	if !st.answered {
		ss.dropSubLocked(sh, st)
		return
	}
	if !equalStatus(st.status, st.told) {
		st.told = st.status
		ss.sendHeld(statusNotification(cmp.Or(st.name, sh.String()), st.status))
	}
}

// dropSubLocked undoes the subscription st to sh that a subscribe made but
// did not answer, unless the session no longer holds it. subMu is held.
func (ss *session) dropSubLocked(sh indexers.ScriptHash, st *subState) {
	if ss.subs[sh] != st {
		return
	}
	delete(ss.subs, sh)
	ss.nsubs.Add(-1)
	ss.srv.notifier.removeSub(ss, sh)
	ss.srv.releaseSubs(ss, 1)
}

// sendHeld queues a notification a pass held back until a subscription's
// answer was queued. It counts in electrum_notifications_total as the
// pass's own do, before the client can see it, unless the session has
// ended.
func (ss *session) sendHeld(msg []byte) {
	if ss.closed() {
		return
	}
	if mx := ss.srv.mx; mx != nil {
		mx.notifications.Inc()
	}
	ss.send(msg)
}

// unsubscribe drops one subscription; it reports whether there was one.
func (ss *session) unsubscribe(sh indexers.ScriptHash) bool {
	ss.subMu.Lock()
	defer ss.subMu.Unlock()
	st, ok := ss.subs[sh]
	if ok {
		ss.dropSubLocked(sh, st)
	}
	return ok
}

// hUnsubscribe ends a subscription (1.4.2).
func hUnsubscribe(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	sh, err := argScriptHash(args[0])
	if err != nil {
		return nil, err
	}
	return ss.unsubscribe(sh), nil
}
