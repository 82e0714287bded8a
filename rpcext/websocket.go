package rpcext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/gorilla/websocket"
)

// Websocket client limits.
const (
	// wsWriteWait bounds writing one message to a websocket client, and
	// one HTTP answer (Config.writeWait when set).
	wsWriteWait = 30 * time.Second

	// requestReadTimeout bounds reading a request, body included, and a
	// websocket client's time to authenticate (btcd's read timeout).
	requestReadTimeout = 10 * time.Second

	// wsMaxQueuedMessages and wsMaxQueuedBytes bound what may wait for a
	// slow websocket reader; beyond them the client is disconnected
	// rather than holding memory or stalling notifications for others.
	wsMaxQueuedMessages = 10000
	wsMaxQueuedBytes    = 64 << 20

	// wsMaxPendingPerIP bounds the websocket clients of one address that
	// have not authenticated yet (all of them together are bounded by
	// MaxWebsockets), so one client cannot fill their pool alone.
	wsMaxPendingPerIP = 4

	// wsPendingReadLimit bounds a message before authentication: only
	// authenticate, a few hundred bytes, is expected then.
	wsPendingReadLimit = 8 << 10
)

// wsUpgrader upgrades /ws requests. Clients are programs, not browsers, so
// the origin is not checked; authentication is.
var wsUpgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	CheckOrigin:     func(*http.Request) bool { return true },
}

// wsClient is one websocket connection: requests are answered in order and
// notifications are queued behind the answers.
type wsClient struct {
	s    *Server
	conn *websocket.Conn

	// authenticated and limited (authenticated as the limited user) are
	// only touched by the reading goroutine.
	authenticated bool
	limited       bool

	// pending is set while the client has not authenticated and holds a
	// place among the unauthenticated clients of pendingIP instead of a
	// slot of MaxWebsockets; both guarded by the server's mu.
	pending   bool
	pendingIP string

	mu sync.Mutex
	// out holds the messages not yet written, outBytes their size.
	out      [][]byte
	outBytes int
	// blocks is set by notifyblocks; filter by loadtxfilter.
	blocks bool
	filter *txFilter
	// watch holds the transaction subscriptions (wsnotify.go).
	watch wsWatch

	signal    chan struct{}
	quit      chan struct{}
	closeOnce sync.Once
}

// serveWebsocket upgrades an authenticated request (or one that will
// authenticate with its first message) and serves it until it closes.
func (s *Server) serveWebsocket(w http.ResponseWriter, r *http.Request) {
	// Bounds the refusals and the upgrade's answer; after it each message
	// has its own deadline.
	s.setWriteDeadline(w)
	authed, limited := !s.authOn, false
	// Credentials given with the upgrade must be right, as btcd checks
	// any Authorization header; without one the first message must
	// authenticate.
	if r.Header.Get("Authorization") != "" {
		if authed, limited = s.checkAuthLevel(r); !authed {
			authFail(w)
			return
		}
	}

	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		refuse(w, "503 Service Unavailable: shutting down.", http.StatusServiceUnavailable)
		return
	}
	// Reserve the place before upgrading so concurrent upgrades cannot
	// exceed the limits.
	c := &wsClient{
		s:             s,
		authenticated: authed,
		limited:       limited,
		signal:        make(chan struct{}, 1),
		quit:          make(chan struct{}),
	}
	if why := s.reserveWebsocket(c, r.RemoteAddr); why != "" {
		s.mu.Unlock()
		refuse(w, "503 Service Unavailable: "+why+".", http.StatusServiceUnavailable)
		return
	}
	s.ws[c] = struct{}{}
	s.wsWG.Add(1)
	s.mu.Unlock()
	defer s.wsWG.Done()
	defer s.releaseWebsocket(c)

	conn, err := wsUpgrader.Upgrade(w, r, nil)
	if err != nil {
		log.Debugf("Websocket upgrade from %s failed: %v", r.RemoteAddr, err)
		return
	}
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	// The HTTP server's read deadline for the upgrade request holds on
	// the connection: an authenticated client reads without one, another
	// must authenticate within it, in a message of a few KiB, or is
	// closed, for it holds a place among the unauthenticated clients.
	if authed {
		conn.SetReadLimit(s.cfg.MaxRequestBytes)
		conn.SetReadDeadline(time.Time{})
	} else {
		conn.SetReadLimit(wsPendingReadLimit)
		conn.SetReadDeadline(time.Now().Add(requestReadTimeout))
	}
	// Shutdown may have picked this client before conn was set.
	select {
	case <-c.quit:
		conn.Close()
		return
	default:
	}

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	c.close()
	<-writerDone
	log.Debugf("Websocket client %s disconnected", r.RemoteAddr)
}

// reserveWebsocket takes a place for a new client, or returns why there is
// none. An authenticated client takes a slot of MaxWebsockets; one that is
// still to authenticate takes a place among the unauthenticated clients,
// bounded apart in all and by address, so clients that never authenticate
// cannot keep those with credentials out. Called with s.mu held.
func (s *Server) reserveWebsocket(c *wsClient, remote string) string {
	if c.authenticated {
		if s.wsAuthed >= s.cfg.MaxWebsockets {
			return "too many websocket clients"
		}
		s.wsAuthed++
		return ""
	}
	key := ipKey(remote)
	if s.wsPending >= s.cfg.MaxWebsockets || s.wsPendingIP[key] >= wsMaxPendingPerIP {
		return "too many unauthenticated websocket clients"
	}
	s.wsPending++
	s.wsPendingIP[key]++
	c.pending, c.pendingIP = true, key
	return ""
}

// unpend gives up c's place among the unauthenticated clients. Called
// with s.mu held.
func (s *Server) unpend(c *wsClient) {
	s.wsPending--
	if s.wsPendingIP[c.pendingIP]--; s.wsPendingIP[c.pendingIP] <= 0 {
		delete(s.wsPendingIP, c.pendingIP)
	}
	c.pending = false
}

// releaseWebsocket forgets a client that has disconnected.
func (s *Server) releaseWebsocket(c *wsClient) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ws, c)
	if c.pending {
		s.unpend(c)
	} else {
		s.wsAuthed--
	}
}

// promoteWebsocket moves a client that has just authenticated in-band to a
// slot of MaxWebsockets; false when none is free.
func (s *Server) promoteWebsocket(c *wsClient) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wsAuthed >= s.cfg.MaxWebsockets {
		return false
	}
	s.unpend(c)
	s.wsAuthed++
	return true
}

// ipKey groups remote addresses for the per-address bound: the IP, and
// for IPv6 its /64, which one home or server is given.
func ipKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

// readLoop answers requests until the connection fails or closes. Once
// the client has authenticated, its requests run beside each other, at
// most MaxConcurrentRequests at once, as btcd runs them, so a rescan or a
// long poll does not hold up the client's other requests. Those two run
// apart, at most maxLongRequests at once; up to MaxConcurrentRequests more
// wait their turn (lnd sends a rescan for each spend it looks back for,
// and btcd runs them all), further ones are refused: each holds its
// message, up to MaxRequestBytes. So the loop never waits
// long to read on, and a client that leaves is seen at once, which ends
// its rescans and long polls (they watch c.quit).
func (c *wsClient) readLoop() {
	sem := make(chan struct{}, max(c.s.cfg.MaxConcurrentRequests, 1))
	long := make(chan struct{}, maxLongRequests)
	waiting := max(c.s.cfg.MaxConcurrentRequests, 1)
	longTaken := make(chan struct{}, maxLongRequests+waiting)
	var running sync.WaitGroup
	defer func() {
		c.close()
		running.Wait()
	}()
	for {
		kind, msg, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		if kind != websocket.TextMessage && kind != websocket.BinaryMessage {
			continue
		}
		if !c.authenticated {
			if !c.admitUnauthenticated(msg) {
				return
			}
			reply := c.s.processBody(msg, c)
			if !c.authenticated {
				// Refused (wrong credentials, a malformed
				// authenticate, no slot of MaxWebsockets free):
				// the answer is the last word, written at once
				// as nothing else is queued yet.
				if reply != nil {
					c.writeNow(reply)
				}
				return
			}
			// Authenticated in time: no deadline from now on, and
			// requests up to MaxRequestBytes.
			c.conn.SetReadDeadline(time.Time{})
			c.conn.SetReadLimit(c.s.cfg.MaxRequestBytes)
			if reply != nil && !c.queue(reply) {
				return
			}
			continue
		}
		method, ver, id, isLong := longRequest(msg)
		if isLong {
			select {
			case longTaken <- struct{}{}:
			default:
				if !c.queue(marshalReply(ver, id, nil, btcjson.NewRPCError(btcjson.ErrRPCMisc,
					fmt.Sprintf("%s: %d rescans and long polls of this client are running or waiting already",
						method, maxLongRequests+waiting)))) {
					return
				}
				continue
			}
		} else {
			select {
			case sem <- struct{}{}:
			case <-c.quit:
				return
			}
		}
		running.Add(1)
		go func() {
			defer running.Done()
			if isLong {
				defer func() { <-longTaken }()
				select {
				case long <- struct{}{}:
				case <-c.quit:
					return
				}
			}
			reply := c.s.processBody(msg, c)
			// The slot is free before the answer is queued, so a
			// client that has its answer may send the next request
			// at once (a miner's next long poll).
			if isLong {
				<-long
			} else {
				<-sem
			}
			if reply != nil && !c.queue(reply) {
				c.close()
			}
		}()
	}
}

// maxLongRequests bounds the rescans and long polls one websocket client
// runs at once.
const maxLongRequests = 2

// longRequest reports whether msg may run until the chain's tip or its
// next block: a rescan, or a getblocktemplate long poll (one with a
// longpollid), alone or in a batch, which then runs as one long request. It returns the method and
// the version and id to refuse it with: for a batch JSON-RPC 2.0 and none,
// as a batch is refused as a whole.
func longRequest(msg []byte) (method string, ver btcjson.RPCVersion, id interface{}, ok bool) {
	isLong := func(raw []byte, m string) bool {
		return m == "rescan" || (m == "getblocktemplate" && isLongPoll(raw))
	}
	trimmed := bytes.TrimSpace(msg)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return "", "", nil, false
		}
		for _, raw := range batch {
			var req rawRequest
			if json.Unmarshal(raw, &req) == nil && isLong(raw, req.Method) {
				return req.Method, btcjson.RpcVersion2, nil, true
			}
		}
		return "", "", nil, false
	}
	var req rawRequest
	if json.Unmarshal(trimmed, &req) != nil || !isLong(trimmed, req.Method) {
		return "", "", nil, false
	}
	ver = btcjson.RpcVersion1
	if req.Jsonrpc == string(btcjson.RpcVersion2) {
		ver = btcjson.RpcVersion2
	}
	_ = json.Unmarshal(req.ID, &id)
	return req.Method, ver, id, true
}

// admitUnauthenticated screens a message from a client that has not
// authenticated yet: only an authenticate command may pass (the handler
// then checks the credentials). It reports whether the connection may
// continue.
func (c *wsClient) admitUnauthenticated(msg []byte) bool {
	var req rawRequest
	if json.Unmarshal(msg, &req) != nil || req.Method != "authenticate" {
		reply := marshalReply(btcjson.RpcVersion1, nil, nil,
			btcjson.NewRPCError(btcjson.ErrRPCInvalidRequest.Code, "Request before authentication"))
		c.writeNow(reply)
		return false
	}
	return true
}

// handleAuthenticate answers authenticate, the in-band alternative to
// basic auth on the websocket upgrade.
func handleAuthenticate(c *wsClient, cmd interface{}) (interface{}, error) {
	a := cmd.(*btcjson.AuthenticateCmd)
	if c.authenticated {
		// As btcd: authenticating twice ends the connection (and a
		// client's level never changes while its requests run).
		c.close()
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidRequest.Code, "Already authenticated")
	}
	// A refusal leaves the client unauthenticated, which ends the
	// connection once the answer is written (readLoop).
	ok, limited := c.s.credentialsLevel(a.Username, a.Passphrase)
	if c.s.authOn && !ok {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidRequest.Code, "Authentication failed")
	}
	if !c.s.promoteWebsocket(c) {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCMisc, "Too many websocket clients")
	}
	c.authenticated = true
	c.limited = limited
	return nil, nil
}

// writeNow writes one message directly, for the last words before a
// disconnect.
func (c *wsClient) writeNow(msg []byte) {
	c.conn.SetWriteDeadline(time.Now().Add(c.s.cfg.writeWait))
	c.conn.WriteMessage(websocket.TextMessage, msg)
}

// queue appends a message for the writer. It returns false, and
// disconnects the client, when the client is closed or too far behind.
func (c *wsClient) queue(msg []byte) bool {
	c.mu.Lock()
	select {
	case <-c.quit:
		c.mu.Unlock()
		return false
	default:
	}
	if len(c.out) >= wsMaxQueuedMessages || c.outBytes+len(msg) > wsMaxQueuedBytes {
		c.mu.Unlock()
		log.Warnf("Disconnecting websocket client: %d messages queued", wsMaxQueuedMessages)
		c.close()
		return false
	}
	c.out = append(c.out, msg)
	c.outBytes += len(msg)
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
	return true
}

// writeLoop sends queued messages in order until the client closes. A
// message leaves the queue, and stops counting against wsMaxQueuedMessages
// and wsMaxQueuedBytes, only once written, so the bounds hold for all that
// waits for the client, the message being written included.
func (c *wsClient) writeLoop() {
	for {
		select {
		case <-c.quit:
			return
		case <-c.signal:
		}
		for {
			c.mu.Lock()
			if len(c.out) == 0 {
				// Drop the emptied array rather than keep its
				// capacity for a client that seldom needs it.
				c.out = nil
				c.mu.Unlock()
				break
			}
			msg := c.out[0]
			c.mu.Unlock()
			c.conn.SetWriteDeadline(time.Now().Add(c.s.cfg.writeWait))
			if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				c.close()
				return
			}
			c.mu.Lock()
			c.out[0] = nil
			c.out = c.out[1:]
			c.outBytes -= len(msg)
			c.mu.Unlock()
		}
	}
}

// close disconnects the client; safe to call from any goroutine, more
// than once.
func (c *wsClient) close() {
	c.closeOnce.Do(func() {
		close(c.quit)
		c.mu.Lock()
		conn := c.conn
		c.mu.Unlock()
		if conn != nil {
			conn.Close()
		}
	})
}

// handleNotifyBlocks answers notifyblocks: the client receives
// blockconnected/blockdisconnected and their filtered forms from now on.
func handleNotifyBlocks(c *wsClient, _ interface{}) (interface{}, error) {
	c.mu.Lock()
	c.blocks = true
	c.mu.Unlock()
	return nil, nil
}

// handleStopNotifyBlocks answers stopnotifyblocks.
func handleStopNotifyBlocks(c *wsClient, _ interface{}) (interface{}, error) {
	c.mu.Lock()
	c.blocks = false
	c.mu.Unlock()
	return nil, nil
}
