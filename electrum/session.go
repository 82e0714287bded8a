package electrum

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/gorilla/websocket"
)

// session is one client connection.
type session struct {
	srv   *Server
	conn  msgConn
	id    uint64
	ipKey string
	// ip is the client's address (nil when it does not parse).
	ip        net.IP
	exempt    bool
	transport Transport
	// remote is the client's address as the connection reports it.
	remote  string
	started time.Time
	// group is the session's subnet cost group (subnet.go); nil for
	// exempt sessions and when throttling is off.
	group *costGroup
	// free is set for a session that is never charged or throttled: one
	// from ExemptNets unless Config.ThrottleExempt, or any when throttling
	// is off.
	free bool
	// slowed is set once the session was first delayed by its cost (it
	// is logged and counted once).
	slowed atomic.Bool

	// bytesIn counts the bytes read from the client (received), bytesOut
	// the message bytes written.
	bytesIn, bytesOut atomic.Uint64
	// closeReason is a DisconnectReason plus one; 0 until one is
	// recorded (refusals.go).
	closeReason atomic.Int32

	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once

	// version is the negotiated protocol version, valid once negotiated
	// is set (by the read loop, before any other request runs).
	version    protoVersion
	negotiated atomic.Bool
	clientName string

	// sem bounds the requests running at once.
	sem chan struct{}

	sendMu sync.Mutex
	queue  []outMsg
	queued int
	// held is what running batches keep of their answers until each is
	// queued whole (hold): in the server's total backlog, and the
	// session's own only past twice that total.
	held int
	// backlogDropped is set once close has taken queued off the
	// server's total backlog.
	backlogDropped bool
	closeAfter     bool
	wake           chan struct{}
	// drained is signalled by the writer after every write, for a read
	// loop waiting for the backlog to shrink (waitBacklog).
	drained chan struct{}

	costMu    sync.Mutex
	cost      float64
	costStamp time.Time

	// subMu guards the subscription state; the notifier and the request
	// handlers both hold it while they compare and send statuses.
	subMu      sync.Mutex
	subs       map[indexers.ScriptHash]*subState
	nsubs      atomic.Int32
	headersSub bool
	// headersClaims, headersTold and headersAnswered are a subState's
	// claims, told and answered for the headers subscription (told: the
	// tip last queued to the client).
	headersClaims   int
	headersTold     headerMark
	headersAnswered bool

	// overLimit is set when the session reached the hard cost limit: its
	// answer is the last message it gets.
	overLimit atomic.Bool
	// cutLogged is set once its disconnection at the hard limit is logged.
	cutLogged atomic.Bool
	// finishing is set once finishAnswers runs.
	finishing  atomic.Bool
	lastHeader headerMark
}

// subState is what a session last sent for one script hash.
type subState struct {
	status *string
	// seq is the event sequence number the status was computed after.
	seq uint64
	// mempool reports whether the status included mempool transactions.
	mempool bool
	// claims counts the subscribes whose answers are not yet queued or
	// dropped; meanwhile the notifier only records newer statuses.
	claims int
	// told is the status last queued to the client, in an answer or a
	// notification.
	told *string
	// answered is set once a subscribe answer was queued.
	answered bool
	// name is the script hash as the client spelled it in its last
	// subscribe, when not as sh.String() does (upper-case hex):
	// notifications name it so, as ElectrumX's do, for clients that match
	// them to their subscriptions by the string.
	name string
}

// headerMark identifies the last header sent to a session.
type headerMark struct {
	height int32
	hash   chainhash.Hash
	seq    uint64
	set    bool
	// msg is the notification for this header (nil for an answer).
	msg []byte
}

// ipKeyOf is the per-IP key of addr (AddrKey), its IP and whether it is
// exempt. An exempt address is a key of its own: the sessions of an exempt
// proxy or host count against no neighbour of its /64.
func (s *Server) ipKeyOf(addr net.Addr) (key string, ip net.IP, exempt bool) {
	host, ip := HostIP(addr.String())
	if ip != nil && s.exempt(ip) {
		return host, ip, true
	}
	return AddrKey(host, ip), ip, false
}

// HostIP returns the host of a host:port address, without an IPv6 zone,
// and its IP (nil for a name).
func HostIP(addr string) (string, net.IP) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if i := strings.LastIndexByte(host, '%'); i > 0 {
		host = host[:i]
	}
	return host, net.ParseIP(host)
}

// AddrKey is what per-address limits count a client as: its IP, and for
// IPv6 its /64, the block one home or one server is given; a link-local
// address stands for itself, as a LAN's devices are not one.
func AddrKey(host string, ip net.IP) string {
	if ip != nil && ip.To4() == nil && !ip.IsLinkLocalUnicast() {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

// runSession serves one connection over transport t until it closes.
func (s *Server) runSession(c msgConn, remote net.Addr, t Transport) {
	key, ip, exempt := s.ipKeyOf(remote)
	now := time.Now()
	ss := &session{
		srv:       s,
		conn:      c,
		ipKey:     key,
		ip:        ip,
		exempt:    exempt,
		transport: t,
		remote:    remote.String(),
		started:   now,
		sem:       make(chan struct{}, s.cfg.Concurrency),
		wake:      make(chan struct{}, 1),
		drained:   make(chan struct{}, 1),
		subs:      make(map[indexers.ScriptHash]*subState),
		costStamp: now,
	}
	ss.ctx, ss.cancel = context.WithCancel(s.ctx)
	c.account(ss.received, s.lines)
	if rerr, why := s.admit(ss); rerr != nil {
		ss.cancel()
		s.refused(why, ss.remote)
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.WriteMessage(encodeResponse(true, nil, nil, rerr))
		c.Close()
		return
	}
	defer s.wg.Done()
	done := make(chan struct{})
	go func() {
		ss.writeLoop()
		close(done)
	}()
	ss.readLoop()
	<-done
}

// close ends the session once: the connection is closed and the session's
// subscriptions are dropped.
func (ss *session) close() {
	ss.once.Do(func() {
		ss.cancel()
		ss.conn.Close()
		ss.subMu.Lock()
		n := len(ss.subs)
		subs := ss.subs
		ss.subs = make(map[indexers.ScriptHash]*subState)
		ss.headersSub, ss.headersClaims, ss.headersAnswered = false, 0, false
		ss.subMu.Unlock()
		ss.srv.notifier.dropSession(ss, subs)
		ss.sendMu.Lock()
		ss.srv.backlog.Add(-int64(ss.queued + ss.held))
		ss.queued, ss.held, ss.queue, ss.backlogDropped = 0, 0, nil, true
		ss.sendMu.Unlock()
		if ss.srv.ctx.Err() != nil {
			ss.setCloseReason(DisconnectShutdown)
		}
		ss.srv.counters.disconnected[ss.reason()].Add(1)
		if ss.group != nil {
			ss.srv.groups.leave(ss.group, time.Now(), ss.srv.cfg.groupDecay())
		}
		// Last: once the session is out of the count, everything it
		// held is accounted for.
		ss.srv.release(ss, n)
		select {
		case ss.wake <- struct{}{}:
		default:
		}
	})
}

// closed reports whether the session has ended.
func (ss *session) closed() bool { return ss.ctx.Err() != nil }

// send queues one message. It never blocks: a client whose backlog exceeds
// MaxSendBacklog is too slow and is disconnected.
func (ss *session) send(msg []byte) bool { return ss.enqueue(msg, false) }

// sendAll queues several messages at once, so the writer sends them in one
// write: a block notifies many subscriptions of a session together. It
// returns how many it queued before the session ended.
func (ss *session) sendAll(msgs [][]byte) (queued int) {
	// Past the server's total backlog the session is judged by what it
	// left unread before these: a block's notifications for a wallet of
	// many addresses are all queued before its writer wakes, however fast
	// the wallet reads.
	ss.sendMu.Lock()
	before := ss.queued
	ss.sendMu.Unlock()
	for i, m := range msgs {
		if !ss.enqueueBefore(outMsg{head: m}, false, i == len(msgs)-1, before) {
			return i
		}
	}
	return len(msgs)
}

// enqueue queues msg; last marks it as the final message, after which the
// writer closes the session.
func (ss *session) enqueue(msg []byte, last bool) bool {
	return ss.enqueueWake(msg, last, true)
}

// enqueueWake is enqueue that wakes the writer only when wake is set.
func (ss *session) enqueueWake(msg []byte, last, wake bool) bool {
	return ss.enqueueMsg(outMsg{head: msg}, last, wake)
}

// enqueueMsg is enqueueWake for a message in parts.
func (ss *session) enqueueMsg(m outMsg, last, wake bool) bool {
	return ss.enqueueBefore(m, last, wake, math.MaxInt)
}

// enqueueBefore is enqueueMsg for one of a group of messages queued
// together, before which the session had before bytes queued.
func (ss *session) enqueueBefore(m outMsg, last, wake bool, before int) bool {
	size := m.size()
	ss.sendMu.Lock()
	if ss.closed() || ss.closeAfter {
		ss.sendMu.Unlock()
		return false
	}
	if !ss.roomLocked(size, before, false) {
		queued := ss.queued
		ss.sendMu.Unlock()
		ss.cutNotReading(queued)
		return false
	}
	ss.queue = append(ss.queue, m)
	ss.queued += size
	ss.srv.backlog.Add(int64(size))
	ss.closeAfter = last
	ss.sendMu.Unlock()
	// Bytes out are charged as they are queued, not as the client reads
	// them: a client that reads nothing pays for what it asked for.
	ss.charge(float64(size) / float64(ss.srv.cfg.BandwidthUnit))
	if wake {
		select {
		case ss.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// roomLocked reports whether size more bytes may wait for the session, of
// a group queued together before which it had before bytes waiting, or,
// holding, be kept by a batch (hold). A session with nothing else queued
// may always take one message. Over the server's total, the sessions that
// have a backlog of their own go first: a client reading its answers has
// little or none, beyond the group being queued (a block's notifications)
// and what its batches keep. Over twice the total, the group and the
// batches' answers count too, so the total stays bounded however many
// sessions a block notifies or hold batches. sendMu is held.
func (ss *session) roomLocked(size, before int, holding bool) bool {
	queued := ss.queued
	overOwn := !holding && queued+size > ss.srv.cfg.MaxSendBacklog && queued > 0
	total, limit, own := ss.srv.backlog.Load()+int64(size), ss.srv.cfg.maxBacklogTotal(), min(queued, before)
	if total > 2*limit {
		own = queued + ss.held
	}
	overTotal := total > limit && own >= totalBacklogMinOwn
	return !overOwn && !overTotal
}

// cutNotReading disconnects the session for what waits for it, queued
// bytes of it.
func (ss *session) cutNotReading(queued int) {
	ss.srv.logf("electrum: session %d (%s) disconnected: not reading (%d bytes queued, %d for all sessions)", ss.id, ss.ipKey, queued, ss.srv.backlog.Load())
	ss.setCloseReason(DisconnectNotReading)
	abortive(ss.conn)
	// The caller may hold subMu (the notifier does), which close takes:
	// mark the session closed now and finish closing apart.
	ss.cancel()
	go ss.close()
}

// hold counts size bytes of an answer a batch keeps until its last member
// is answered (held) in the server's backlog, until unhold gives them back
// when the batch is queued: a throttled session's batch keeps its answers
// for minutes, and they are the server's memory as much as queued ones
// are. Past the server's limits the session is disconnected as one not
// reading, judged by what it had waiting before the batch (before) and,
// past twice the total, by what its batches keep. False when the session
// ended.
func (ss *session) hold(size, before int) bool {
	ss.sendMu.Lock()
	if ss.closed() {
		ss.sendMu.Unlock()
		return false
	}
	if !ss.roomLocked(size, before, true) {
		queued := ss.queued
		ss.sendMu.Unlock()
		ss.cutNotReading(queued)
		return false
	}
	ss.held += size
	ss.srv.backlog.Add(int64(size))
	ss.sendMu.Unlock()
	return true
}

// unhold gives back size bytes counted by hold.
func (ss *session) unhold(size int) {
	if size == 0 {
		return
	}
	ss.sendMu.Lock()
	if !ss.backlogDropped {
		ss.held -= size
		ss.srv.backlog.Add(-int64(size))
	}
	ss.sendMu.Unlock()
}

// abortive makes the next Close of a TCP connection reset it, so the
// kernel drops what a client that does not read left queued.
func abortive(c msgConn) {
	var nc net.Conn
	switch x := c.(type) {
	case *lineConn:
		nc = x.Conn
	case *wsConn:
		nc = x.Conn.NetConn()
	}
	if wc, ok := nc.(*wsCounted); ok {
		nc = wc.Conn
	}
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}

// sendAndClose queues a last message and closes the session once it is
// written.
func (ss *session) sendAndClose(msg []byte) {
	if !ss.enqueue(msg, true) {
		ss.close()
	}
}

// writeLoop writes queued messages, each within WriteTimeout.
func (ss *session) writeLoop() {
	for {
		ss.sendMu.Lock()
		q := ss.queue
		ss.queue = nil
		closeAfter := ss.closeAfter
		ss.sendMu.Unlock()
		// Messages queued together go out in one write (at most
		// writeBatchBytes at a time), which matters when a block
		// notifies many subscriptions of one session.
		for len(q) > 0 {
			if ss.closed() {
				return
			}
			k, size := 0, 0
			for k < len(q) && (k == 0 || size+q[k].size() <= writeBatchBytes) {
				size += q[k].size()
				k++
			}
			ss.conn.SetWriteDeadline(time.Now().Add(ss.srv.cfg.WriteTimeout))
			err := ss.conn.WriteMessages(q[:k])
			if err != nil {
				ss.setCloseReason(DisconnectWriteFailed)
				abortive(ss.conn)
				ss.close()
				return
			}
			q = q[k:]
			ss.sendMu.Lock()
			if !ss.backlogDropped {
				ss.queued -= size
				ss.srv.backlog.Add(-int64(size))
			}
			ss.sendMu.Unlock()
			select {
			case ss.drained <- struct{}{}:
			default:
			}
			ss.bytesOut.Add(uint64(size))
			ss.srv.counters.bytesOut[ss.transport].Add(uint64(size))
		}
		if len(q) == 0 && closeAfter {
			ss.close()
			return
		}
		select {
		case <-ss.wake:
		case <-ss.ctx.Done():
			return
		}
	}
}

// writeBatchBytes bounds how many queued bytes are joined into one write.
const writeBatchBytes = 256 << 10

// readPauseBytes is the backlog of answers at which a session stops
// reading requests until its client has read enough of them (or
// MaxSendBacklog, when smaller). Without it a client that sends requests
// and never reads the answers made the server hold MaxSendBacklog bytes
// for it before it was cut off: 16 GB for 1,000 such clients with the
// defaults, and the garbage collector at its memory limit stalled every
// other session. With it a session holds at most this much plus the
// answers of the requests already running (Concurrency of them), and a
// client that reads nothing is cut off by WriteTimeout.
const readPauseBytes = 512 << 10

// waitBacklog returns once the session's backlog is under readPauseBytes;
// false when the session ended first.
func (ss *session) waitBacklog() bool {
	limit := min(readPauseBytes, ss.srv.cfg.MaxSendBacklog)
	for {
		ss.sendMu.Lock()
		queued := ss.queued
		ss.sendMu.Unlock()
		if queued < limit {
			return true
		}
		select {
		case <-ss.drained:
		case <-ss.ctx.Done():
			return false
		}
	}
}

// readLoop reads and dispatches messages until the connection ends.
func (ss *session) readLoop() {
	defer func() {
		ss.sendMu.Lock()
		after := ss.closeAfter
		ss.sendMu.Unlock()
		if !after && !ss.overLimit.Load() {
			ss.close()
		}
	}()
	for {
		if !ss.waitBacklog() {
			return
		}
		ss.conn.SetReadDeadline(time.Now().Add(ss.srv.cfg.IdleTimeout))
		frame, err := ss.conn.ReadMessage()
		if errors.Is(err, errFrameTooLarge) || errors.Is(err, errNoRoom) {
			// The message was read to its end, its bytes charged as
			// they were read: past MaxRecv bytes, or past what the
			// server's budget for long messages had left.
			rerr := rpcErrorf(codeInvalidRequest, "request too large (over %d bytes)", ss.srv.cfg.MaxRecv)
			if errors.Is(err, errNoRoom) {
				rerr = rpcErrorf(codeServerBusy, "server busy - too many long requests")
			}
			ss.charge(errorCost)
			ss.send(encodeResponse(true, nil, nil, rerr))
			if !ss.checkHardLimit() || !ss.pauseReading() {
				return
			}
			continue
		}
		if errors.Is(err, errCostLimit) {
			// The requests read before are answered first (the
			// throttle refuses them), then the -101 if none carried it.
			ss.finishAnswers(true)
			return
		}
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				ss.setCloseReason(DisconnectIdle)
			case errors.Is(err, websocket.ErrReadLimit), errors.Is(err, errWSProtocol):
				// gorilla/websocket closed the connection with 1009
				// or 1002.
				ss.setCloseReason(DisconnectProtocol)
			}
			if _, line := ss.conn.(*lineConn); line && errors.Is(err, io.EOF) {
				ss.finishAnswers(false)
			}
			return
		}
		m := decodeMessageLimit(frame, ss.srv.cfg.MaxBatch)
		m.detach()
		ss.conn.ReleaseMessage()
		if !ss.dispatch(m) {
			return
		}
		if ss.closed() || ss.overLimit.Load() {
			return
		}
	}
}

// received counts and charges n bytes read from the client as they are
// read, not once their message is complete: a line that is never finished
// (held until the idle timeout, or cut by a reset) and empty lines, which
// are skipped, cost what the same bytes in requests do. It returns
// errCostLimit, which ends the reading, once the session is at the hard
// cost limit: a client sending no request would otherwise never meet it.
func (ss *session) received(n int) error {
	ss.bytesIn.Add(uint64(n))
	ss.srv.counters.bytesIn[ss.transport].Add(uint64(n))
	ss.charge(float64(n) / float64(ss.srv.cfg.BandwidthUnit))
	if !ss.free && ss.currentCost() >= ss.srv.cfg.CostHardLimit {
		return errCostLimit
	}
	return nil
}

// finishAnswers ends a session whose client closed its sending side (as
// a script piping requests in does), or which reached the hard cost
// limit: the requests running are answered, and the session closes once
// the answers are written; with tell, a -101 goes last unless an answer
// carried one (the reading, not a request, met the limit). Only the first
// call acts. A WebSocket client closes with a close frame, after which
// nothing more is sent to it.
func (ss *session) finishAnswers(tell bool) {
	if ss.finishing.Swap(true) {
		return
	}
	// Holding every request slot means no request is running.
	for range cap(ss.sem) {
		if !ss.acquire() {
			return
		}
	}
	if tell && !ss.overLimit.Load() {
		ss.cutOff(ss.currentCost())
		return
	}
	ss.sendMu.Lock()
	ss.closeAfter = true
	ss.sendMu.Unlock()
	select {
	case ss.wake <- struct{}{}:
	default:
	}
}

// errorCost is the cost added for every error answer, as ElectrumX.
const errorCost = 100

// dispatch handles one frame; false stops reading.
func (ss *session) dispatch(m *message) bool {
	if m.err != nil {
		ss.charge(errorCost * 10)
		ss.send(encodeResponse(true, nil, nil, m.err))
		return ss.checkHardLimit() && ss.pauseReading()
	}
	if !ss.negotiated.Load() {
		first := m.requests[0]
		// A server.version with bad params is answered its own error
		// by the version handlers below, as a failed negotiation.
		if first.isResponse || first.method != "server.version" {
			ss.setCloseReason(DisconnectProtocol)
			if first.isNotification() || first.isResponse {
				ss.close()
				return false
			}
			ss.sendAndClose(encodeResponse(first.v2, first.id, nil, badRequest("use server.version to identify client")))
			return false
		}
		if !m.batch {
			return ss.handleVersion(first)
		}
		if m.count() > ss.srv.cfg.MaxBatch {
			// Refused whole, server.version included: nothing is
			// negotiated.
			ss.charge(errorCost)
			ss.send(encodeResponse(true, nil, nil, batchLimitError(ss.srv.cfg.MaxBatch)))
			return ss.checkHardLimit() && ss.pauseReading()
		}
		// A batch that opens with server.version: negotiate first, then
		// run the rest as a batch whose first answer is the version's.
		if !ss.handleVersionInBatch(m) {
			return false
		}
		return true
	}
	if m.batch {
		if m.count() > ss.srv.cfg.MaxBatch {
			ss.charge(errorCost)
			ss.send(encodeResponse(true, nil, nil, batchLimitError(ss.srv.cfg.MaxBatch)))
			return ss.checkHardLimit() && ss.pauseReading()
		}
		if !ss.acquire() {
			return false
		}
		ss.srv.workers.run(func() {
			defer ss.releaseSlot()
			ss.runBatch(m.requests, nil)
		})
		return true
	}
	r := m.requests[0]
	if r.isResponse {
		return true
	}
	if !ss.acquire() {
		return false
	}
	ss.srv.workers.run(func() {
		defer ss.releaseSlot()
		resp, ok, after := ss.executeMsg(r)
		if ok {
			ss.enqueueMsg(resp, false, true)
		}
		if after != nil {
			after()
		}
	})
	return true
}

// acquire waits for a free request slot; false when the session ended.
func (ss *session) acquire() bool {
	select {
	case ss.sem <- struct{}{}:
		return true
	case <-ss.ctx.Done():
		return false
	}
}

// releaseSlot frees a request slot. Past the hard cost limit the session
// then ends once the requests running are answered: the -101 is not the
// only answer a client with requests in flight is owed.
func (ss *session) releaseSlot() {
	<-ss.sem
	if ss.overLimit.Load() {
		go ss.finishAnswers(false)
	}
}

// handleVersion runs server.version as the first message.
func (ss *session) handleVersion(r *request) bool {
	resp, ok, _ := ss.execute(r)
	if !ss.negotiated.Load() {
		// No common version: answer (unless the request was a
		// notification, which gets no answer) and disconnect.
		ss.setCloseReason(DisconnectProtocol)
		if ok {
			ss.sendAndClose(resp)
		} else {
			ss.close()
		}
		return false
	}
	if ok {
		ss.send(resp)
	}
	return true
}

// handleVersionInBatch negotiates with the first member of a batch and runs
// the rest.
func (ss *session) handleVersionInBatch(m *message) bool {
	first, ok, _ := ss.execute(m.requests[0])
	if !ok {
		// A notification: the batch's answer starts with the next member.
		first = nil
	}
	if !ss.negotiated.Load() {
		ss.setCloseReason(DisconnectProtocol)
		if ok {
			ss.sendAndClose(encodeBatch([][]byte{first}))
		} else {
			ss.close()
		}
		return false
	}
	if !ss.acquire() {
		return false
	}
	ss.srv.workers.run(func() {
		defer ss.releaseSlot()
		ss.runBatch(m.requests[1:], first)
	})
	return true
}

// runBatch executes batch members in order and sends one array with their
// answers, keeping the whole array within MaxSend. The answers it keeps
// count in the server's backlog until the array is queued (hold).
func (ss *session) runBatch(rs []*request, first []byte) {
	var (
		out    [][]byte
		afters []func()   // what to run once out[i] is queued
		ran    []*request // the member of each answer in out, nil for first
		others []func()   // what to run for the members without an answer
		quiet  []*request // the members without an id
		qafter []func()   // what to run for each of quiet
		held   int        // the bytes of out counted by hold
	)
	ss.sendMu.Lock()
	before := ss.queued
	ss.sendMu.Unlock()
	unhold := func() {
		ss.unhold(held)
		held = 0
	}
	defer func() {
		unhold()
		for _, f := range slices.Concat(afters, qafter, others) {
			if f != nil {
				f()
			}
		}
	}()
	// Each answer takes its bytes and a comma; the brackets, less the
	// comma the first answer does not have, take one more. An answer that
	// would take the array past MaxSend is replaced by its error when that
	// is shorter: a short answer held costs no more than its error would.
	total := 1
	if first != nil {
		if !ss.hold(len(first), before) {
			return
		}
		held += len(first)
		out, afters, ran = append(out, first), append(afters, nil), append(ran, nil)
		total += len(first) + 1
	}
	for _, r := range rs {
		if ss.closed() {
			return
		}
		resp, ok, after := ss.execute(r)
		if !ok {
			quiet, qafter = append(quiet, r), append(qafter, after)
			continue
		}
		if total+len(resp)+1 > ss.srv.cfg.MaxSend && len(ss.tooLargeAnswer(r)) < len(resp) {
			resp, after = ss.tooLarge(r, after)
		}
		if !ss.hold(len(resp), before) {
			others = append(others, after)
			return
		}
		held += len(resp)
		total += len(resp) + 1
		out, afters, ran = append(out, resp), append(afters, after), append(ran, r)
	}
	if total > ss.srv.cfg.MaxSend {
		// The largest answers give way to their errors until the array
		// fits. When even the errors do not fit (ids of hundreds of bytes
		// each), the batch is refused whole and what it subscribed is
		// undone.
		order := make([]int, 0, len(out))
		for i, r := range ran {
			if r != nil && !r.failed {
				order = append(order, i)
			}
		}
		slices.SortFunc(order, func(a, b int) int { return len(out[b]) - len(out[a]) })
		for _, i := range order {
			if total <= ss.srv.cfg.MaxSend {
				break
			}
			if e := ss.tooLargeAnswer(ran[i]); len(e) < len(out[i]) {
				resp, after := ss.tooLarge(ran[i], afters[i])
				total += len(resp) - len(out[i])
				out[i], afters[i] = resp, after
			}
		}
		if total > ss.srv.cfg.MaxSend {
			for i, r := range ran {
				if r != nil && !r.failed {
					_, afters[i] = ss.tooLarge(r, afters[i])
				}
			}
			for i, r := range quiet {
				if r.undo != nil {
					r.undo()
					r.undo, qafter[i] = nil, nil
				}
			}
			unhold()
			ss.send(encodeResponse(true, nil, nil, responseTooLarge(ss)))
			return
		}
	}
	if len(out) > 0 {
		b := encodeBatch(out)
		unhold()
		ss.send(b)
	}
}

// encodeBatch joins responses into a JSON array.
func encodeBatch(items [][]byte) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// execute runs one request and returns its encoded answer; ok is false for
// notifications and client responses, which get none.
func (ss *session) execute(r *request) ([]byte, bool, func()) {
	m, ok, after := ss.executeMsg(r)
	return m.join(), ok, after
}

// partsFrom is the size of a result from which its response is sent in
// parts (outMsg) instead of being copied into one buffer.
const partsFrom = 32 << 10

// executeMsg is execute with the answer in parts: a large result is sent
// as the handler returned it (it may be shared: a cached answer).
func (ss *session) executeMsg(r *request) (outMsg, bool, func()) {
	if r.isResponse {
		return outMsg{}, false, nil
	}
	result, rerr, after, release := ss.call(r)
	if release != nil {
		// The answer's build bytes are free once it is encoded below
		// (or dropped); from then on the backlog bounds it.
		defer release()
	}
	if r.isNotification() {
		// Charged as if answered (an error, the answer's bytes): work
		// asked for without an id costs what a request's does.
		if rerr != nil {
			ss.charge(errorCost)
		} else {
			ss.charge(float64(len(result)) / float64(ss.srv.cfg.BandwidthUnit))
		}
		// Over the hard limit the session ends once the requests
		// running are answered (releaseSlot). after is the caller's to
		// run: a batch refused whole undoes what its members subscribed.
		return outMsg{}, false, after
	}
	var m outMsg
	switch {
	case rerr != nil:
		ss.charge(errorCost)
		m = outMsg{head: encodeResponse(r.v2, r.id, nil, rerr)}
	case len(result) >= partsFrom:
		m = responseParts(r.id, result)
	default:
		m = outMsg{head: encodeResponse(r.v2, r.id, result, nil)}
	}
	if m.size() > ss.srv.cfg.MaxSend {
		// The id and the envelope count too: no answer is over MaxSend.
		var head []byte
		head, after = ss.tooLarge(r, after)
		m = outMsg{head: head}
	}
	return m, true, after
}

// tooLarge returns the answer to r that replaces one over MaxSend, and the
// function to run once it is queued. What the call subscribed is undone
// now, before the client can read that it failed: a client subscribing
// again at once must find its place free and keep what it is answered.
// (An undo tells nothing ahead of an answer still to queue: each answer
// holds a claim on its subscription until it is queued.)
func (ss *session) tooLarge(r *request, after func()) ([]byte, func()) {
	resp := ss.tooLargeAnswer(r)
	if r.undo != nil {
		r.undo()
		r.undo, after = nil, nil
	}
	if mx := ss.srv.mx; mx != nil && !r.failed {
		mx.failed(ss.srv.methods[r.method])
	}
	r.failed = true
	return resp, after
}

// tooLargeAnswer is the error answer to r saying its answer is over
// MaxSend. An id too long for even that (possible only when MaxRecv is over
// MaxSend) is answered as null.
func (ss *session) tooLargeAnswer(r *request) []byte {
	resp := encodeResponse(r.v2, r.id, nil, responseTooLarge(ss))
	if len(resp) > ss.srv.cfg.MaxSend {
		resp = encodeResponse(r.v2, nil, nil, responseTooLarge(ss))
	}
	return resp
}

// builtAnswer is a handler result holding bytes of the server's build
// budget (reserveBuild): release gives them back once the answer is
// encoded into its response.
type builtAnswer struct {
	v       any
	release func()
}

// afterAnswer is a handler result whose after function must run once the
// answer is queued (or dropped): subscriptions hold back notifications
// until then, so a client never sees a notification before the answer
// that subscribed it.
type afterAnswer struct {
	v     any
	after func()
	// dropped, when not nil, runs instead of after when the answer is
	// never sent (the request timed out, or its answer was replaced by an
	// error): it undoes the subscription.
	dropped func()
	// unsent, when not nil, runs instead of after when the request had
	// no id: nothing is sent, and the subscription is kept.
	unsent func()
}

// call runs the method of r within the request timeout and cost limits,
// and records it in the metrics. after, when not nil, must be called once
// the answer is queued.
func (ss *session) call(r *request) (json.RawMessage, *RPCError, func(), func()) {
	ss.srv.requests.Add(1)
	start := time.Now()
	res, rerr, after, release, m := ss.run(r)
	if rerr == nil && len(res) > ss.srv.cfg.MaxSend {
		res, rerr = nil, responseTooLarge(ss)
		if release != nil {
			release()
			release = nil
		}
	}
	r.failed = rerr != nil
	if mx := ss.srv.mx; mx != nil {
		mx.observe(m, time.Since(start), r.failed)
	}
	return res, rerr, after, release
}

// run is call without the metrics; it also returns the method of r (nil
// when the server has none of that name).
func (ss *session) run(r *request) (json.RawMessage, *RPCError, func(), func(), *method) {
	if r.err != nil {
		return nil, r.err, nil, nil, nil
	}
	m := ss.srv.methods[r.method]
	ctx, cancel := context.WithTimeout(ss.ctx, ss.srv.cfg.RequestTimeout)
	defer cancel()
	if rerr := ss.throttle(ctx); rerr != nil {
		return nil, rerr, nil, nil, m
	}
	v := ss.version
	if r.method == "server.version" {
		v = protocolMax
	}
	if m == nil || v.less(m.since) || (m.until != protoVersion{} && !v.less(m.until)) {
		return nil, rpcErrorf(codeMethodNotFound, "unknown method %q", echo(r.method)), nil, nil, m
	}
	args, rerr := m.params(v).positional(r.params)
	if rerr != nil {
		return nil, rerr, nil, nil, m
	}
	ss.charge(m.cost)
	type answer struct {
		v                       any
		rerr                    *RPCError
		after, dropped, release func()
	}
	ch := make(chan answer, 1)
	ss.srv.workers.run(func() {
		defer func() {
			if p := recover(); p != nil {
				ss.srv.errorf("electrum: panic in %s: %v", r.method, p)
				ch <- answer{rerr: rpcErrorf(codeInternalError, "internal server error")}
			}
		}()
		leave, err := ss.enterGate(ctx)
		if err != nil {
			ch <- answer{rerr: rpcErrorf(codeServerBusy, "server busy - request timed out")}
			return
		}
		defer leave()
		res, err := m.handler(ctx, ss, args)
		a := answer{v: res, rerr: toRPCError(ss.srv, r.method, err)}
		if ba, ok := res.(builtAnswer); ok {
			a.v, a.release = ba.v, ba.release
		}
		if aa, ok := res.(afterAnswer); ok {
			a.v, a.after, a.dropped = aa.v, aa.after, aa.dropped
			if r.isNotification() && aa.unsent != nil {
				a.after = aa.unsent
			}
		}
		if _, raw := a.v.(json.RawMessage); a.rerr == nil && !raw {
			// Encoding is part of the request's work: inside the gate.
			if b, err := json.Marshal(a.v); err != nil {
				a.rerr = rpcErrorf(codeInternalError, "internal server error")
			} else {
				a.v = json.RawMessage(b)
			}
		}
		ch <- a
	})
	select {
	case a := <-ch:
		r.undo = a.dropped
		if a.rerr != nil {
			return nil, a.rerr, a.after, a.release, m
		}
		return a.v.(json.RawMessage), nil, a.after, a.release, m
	case <-ctx.Done():
		// The handler finishes on its own; a subscription it made is
		// undone, as the client was told the call failed.
		go func() {
			a := <-ch
			if a.release != nil {
				a.release()
			}
			if a.dropped != nil {
				a.dropped()
			} else if a.after != nil {
				a.after()
			}
		}()
		return nil, rpcErrorf(codeServerBusy, "server busy - request timed out"), nil, nil, m
	}
}

// toRPCError turns a handler error into its protocol form.
func toRPCError(s *Server, method string, err error) *RPCError {
	if err == nil {
		return nil
	}
	var rerr *RPCError
	if errors.As(err, &rerr) {
		return rerr
	}
	if errors.Is(err, indexers.ErrHistoryTooLarge) {
		return badRequest("history too large")
	}
	s.errorf("electrum: %s: %v", method, err)
	return rpcErrorf(codeInternalError, "internal server error")
}
