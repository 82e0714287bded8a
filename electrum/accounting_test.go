package electrum

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"math/rand"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/gorilla/websocket"
)

// TestBatchOverflowSubscribeNotKept: a subscribe inside a batch whose
// answer is replaced by "response too large" (the batch total went over
// MaxSend) told the client the call failed. Like a timed-out subscribe
// (afterAnswer.dropped), it must not be kept: it must not hold a place of
// MaxSubsPerSession / MaxSubsPerIP / MaxSubs nor send notifications.
func TestBatchOverflowSubscribeNotKept(t *testing.T) {
	// The banner's answer leaves room in MaxSend for the subscribe's
	// "response too large" exactly, and its status answer is a byte
	// longer: the array's brackets and commas take 3 bytes, the banner's
	// answer its text and 36.
	tooLarge := fmt.Sprintf(`{"jsonrpc":"2.0","error":{"code":-32600,"message":"response too large (over %d bytes)"},"id":2}`, minMaxSend)
	fx := newFixture(t, func(c *Config) {
		c.MaxSend = minMaxSend
		c.Banner = strings.Repeat("b", minMaxSend-3-36-len(tooLarge))
		c.MaxSubsPerSession = 1
	})
	c := fx.client(t, "1.4")
	c.send(fmt.Sprintf(`[{"jsonrpc":"2.0","id":1,"method":"server.banner"},`+
		`{"jsonrpc":"2.0","id":2,"method":"blockchain.scripthash.subscribe","params":["%s"]}]`, fx.shA))
	var rs []rpcResponse
	select {
	case rs = <-c.batches:
	case <-time.After(30 * time.Second):
		t.Fatal("no batch answer")
	}
	if len(rs) != 2 {
		t.Fatalf("batch answer of %d members", len(rs))
	}
	if rs[0].Error != nil || rs[1].Error == nil {
		t.Fatalf("banner answered %v, subscribe %s: want the subscribe's answer replaced", rs[0].Error, rs[1].Result)
	}
	t.Logf("subscribe answered %d %q", rs[1].Error.Code, rs[1].Error.Message)
	// The client was told its subscribe failed.
	if n := fx.s.SubscriptionCount(); n != 0 {
		t.Errorf("%d subscriptions registered after the subscribe was answered an error", n)
	}
	fx.s.mu.Lock()
	total := fx.s.totalSubs
	fx.s.mu.Unlock()
	if total != 0 {
		t.Errorf("totalSubs %d after the subscribe was answered an error", total)
	}
	// The session's one place is still free.
	if _, rerr := c.call("blockchain.scripthash.subscribe", fx.shB.String()); rerr != nil {
		t.Errorf("first subscription the client believes it holds refused: %v", rerr)
	}
}

// accountingCounters is the accounting state the churn tests check returns to
// baseline.
type accountingCounters struct {
	sessions, totalSubs, perIP, registrations, headerSubs, recheck int
	backlog                                                        int64
	gateHeld, gateWaiting                                          int
	buildFree                                                      bool
	groupSessions                                                  int
	disconnected, admitted                                         uint64
}

func readAccountingCounters(s *Server) accountingCounters {
	var rc accountingCounters
	s.mu.Lock()
	rc.sessions = len(s.sessions)
	rc.totalSubs = s.totalSubs
	rc.perIP = len(s.perIP)
	rc.admitted = s.nextID
	s.mu.Unlock()
	rc.registrations = s.SubscriptionCount()
	s.notifier.rmu.RLock()
	rc.headerSubs = len(s.notifier.headers)
	rc.recheck = len(s.notifier.recheck)
	s.notifier.rmu.RUnlock()
	rc.backlog = s.backlog.Load()
	rc.gateHeld = gateHeld(s.gate)
	rc.gateWaiting = s.gate.waiting()
	if s.building.TryAcquire(s.cfg.buildBudget()) {
		rc.buildFree = true
		s.building.Release(s.cfg.buildBudget())
	}
	s.groups.mu.Lock()
	for _, g := range s.groups.groups {
		rc.groupSessions += g.sessions
	}
	s.groups.mu.Unlock()
	for r := DisconnectReason(0); r < numDisconnectReasons; r++ {
		rc.disconnected += s.counters.disconnected[r].Load()
	}
	return rc
}

func (rc accountingCounters) baseline() bool {
	return rc.sessions == 0 && rc.totalSubs == 0 && rc.perIP == 0 && rc.registrations == 0 &&
		rc.headerSubs == 0 && rc.recheck == 0 && rc.backlog == 0 && rc.gateHeld == 0 &&
		rc.gateWaiting == 0 && rc.buildFree && rc.groupSessions == 0 && rc.disconnected == rc.admitted
}

// churnLine is one random request line of a churning client.
func churnLine(r *rand.Rand, id int, fx *fixture) string {
	sh := scriptHashN(0x77, r.Intn(40)).String()
	switch k := r.Intn(14); {
	case k < 5:
		if r.Intn(4) == 0 {
			sh = fx.shA.String()
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.subscribe","params":["%s"]}`, id, sh)
	case k < 7:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.unsubscribe","params":["%s"]}`, id, sh)
	case k == 7:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"blockchain.headers.subscribe"}`, id)
	case k == 8:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.get_history","params":["%s"]}`, id, fx.shB.String())
	case k == 9:
		return `{"jsonrpc":"2.0","id":` // a parse error
	case k == 10:
		return fmt.Sprintf(`[{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.subscribe","params":["%s"]},`+
			`{"jsonrpc":"2.0","id":%d,"method":"blockchain.headers.subscribe"},`+
			`{"jsonrpc":"2.0","method":"blockchain.scripthash.subscribe","params":["%s"]}]`, id, sh, id+100000,
			scriptHashN(0x78, r.Intn(40)).String())
	case k == 11:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"no.such.method"}`, id)
	case k == 12:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"blockchain.block.headers","params":[0,200]}`, id)
	default:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"server.ping"}`, id)
	}
}

// TestChurnAccountingReturnsToBaseline: hundreds of sessions from
// a few addresses (IPv4 and one IPv6 /64, over pipes; and loopback TCP)
// open, subscribe, unsubscribe, follow headers, ask for histories, make
// errors, and close abruptly at random points (some never reading, some
// resetting their TCP connection), while blocks and mempool changes run
// notification passes. Afterwards every counter is back at its baseline,
// and a fresh client gets exactly the documented limits.
func TestChurnAccountingReturnsToBaseline(t *testing.T) {
	for _, tc := range []struct {
		name       string
		soft, hard float64
	}{{"unthrottled", 0, -1}, {"throttled", 3000, 1e6}} {
		t.Run(tc.name, func(t *testing.T) { churnSessions(t, tc.soft, tc.hard) })
	}
}

func churnSessions(t *testing.T, soft, hard float64) {
	const perIP, subsPerSession, subsPerIP = 4, 12, 20
	fx := newFixtureChain(t)
	fx.f.setExtraHistory(fx.shB, 4000) // a history over the build budget's minimum
	s, addr := startServer(t, fx.f, func(c *Config) {
		c.MaxSessionsPerIP = perIP
		c.MaxSubsPerSession = subsPerSession
		c.MaxSubsPerIP = subsPerIP
		c.MaxSubs = 150
		c.MaxSendBacklog = 64 << 10
		c.WriteTimeout = 300 * time.Millisecond
		c.RequestTimeout = 2 * time.Second
		c.CostSoftLimit = soft
		c.CostHardLimit = hard
		c.RequestSleep = 5 * time.Millisecond
		c.Workers = 2
	})
	fx.s, fx.addr = s, addr

	stop := make(chan struct{})
	var chainWG sync.WaitGroup
	chainWG.Add(1)
	go func() {
		defer chainWG.Done()
		shs := make([]indexers.ScriptHash, 0, 41)
		for i := 0; i < 40; i++ {
			shs = append(shs, scriptHashN(0x77, i))
		}
		shs = append(shs, fx.shA)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(15 * time.Millisecond):
			}
			if i%5 == 0 {
				fx.mineAndNotify(fx.a)
			}
			s.NotifyScriptHashes(shs)
			if i%7 == 0 {
				s.NotifyAllScriptHashes()
			}
		}
	}()

	ips := []string{"198.51.100.7", "198.51.100.8", "203.0.113.9", "2001:db8:5:6::1", "2001:db8:5:6::2", "2001:db8:5:6:ffff::3"}
	locals := []net.IP{net.IPv4(127, 0, 9, 1), net.IPv4(127, 0, 9, 2), net.IPv4(127, 0, 10, 1)}
	const total, parallel = 360, 24
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	deadline := time.Now().Add(60 * time.Second)
	for k := 0; k < total && time.Now().Before(deadline); k++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			defer func() { <-sem }()
			r := rand.New(rand.NewSource(int64(k)))
			var conn net.Conn
			if k%3 == 0 {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: locals[r.Intn(len(locals))]}}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					return
				}
				conn = c
			} else {
				cli, srv := net.Pipe()
				ip := ips[r.Intn(len(ips))]
				go s.runSession(newLineConn(srv, s.cfg.MaxRecv), &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000 + k}, TCP)
				conn = cli
			}
			reading := r.Intn(8) != 0
			if reading {
				go func() {
					br := bufio.NewReader(conn)
					for {
						if _, err := br.ReadBytes('\n'); err != nil {
							return
						}
					}
				}()
			}
			w := bufio.NewWriter(conn)
			conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":0,"method":"server.version","params":["churn","1.4.2"]}`+"\n")
			n := r.Intn(40)
			for i := 1; i <= n; i++ {
				fmt.Fprintln(w, churnLine(r, i, fx))
				if r.Intn(10) == 0 {
					w.Flush()
					time.Sleep(time.Duration(r.Intn(3)) * time.Millisecond)
				}
			}
			w.Flush()
			time.Sleep(time.Duration(r.Intn(30)) * time.Millisecond)
			if tc, ok := conn.(*net.TCPConn); ok && r.Intn(2) == 0 {
				tc.SetLinger(0)
			}
			conn.Close()
		}(k)
	}
	wg.Wait()
	close(stop)
	chainWG.Wait()

	var rc accountingCounters
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		s.flushNotifications(contextWithTimeout(10 * time.Second))
		if rc = readAccountingCounters(s); rc.baseline() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("after churn: %+v; stats %+v", rc, s.Stats())
	if !rc.baseline() {
		s.mu.Lock()
		for k, st := range s.perIP {
			t.Logf("perIP[%s] = %+v", k, *st)
		}
		s.mu.Unlock()
		t.Fatalf("accounting not back at baseline after every session closed: %+v", rc)
	}

	// A fresh client from a churned address gets exactly the limits.
	var cs []*testClient
	for i := 0; i < perIP; i++ {
		c := sessionFrom(t, s, "2001:db8:5:6::9")
		c.negotiate("1.4")
		cs = append(cs, c)
	}
	if !sessionFrom(t, s, "2001:db8:5:6::a").closedByServer() {
		t.Fatalf("session %d from one /64 admitted with MaxSessionsPerIP %d", perIP+1, perIP)
	}
	got := 0
	for i := 0; i < subsPerIP+5; i++ {
		c := cs[i%len(cs)]
		if _, rerr := c.call("blockchain.scripthash.subscribe", scriptHashN(0x79, i).String()); rerr == nil {
			got++
		}
	}
	if got != subsPerIP {
		t.Fatalf("fresh client held %d subscriptions from one /64, want MaxSubsPerIP %d", got, subsPerIP)
	}
}

// TestTLSChurnHandshakeAccounting: TLS connections that close before,
// during and after their handshake leave no pending-handshake count and no
// session count behind; a fresh client then gets MaxSessionsPerIP
// sessions.
func TestTLSChurnHandshakeAccounting(t *testing.T) {
	fx := newFixtureChain(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startServer(t, fx.f, func(c *Config) {
		c.Listeners = append(c.Listeners, Listener{Transport: TLS, Listener: l})
		c.CertDir = t.TempDir()
		c.MaxSessionsPerIP = 3
	})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for k := 0; k < 120; k++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			defer func() { <-sem }()
			r := rand.New(rand.NewSource(int64(k)))
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				return
			}
			defer c.Close()
			switch r.Intn(3) {
			case 0: // nothing
			case 1: // half a ClientHello
				c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01})
			case 2:
				tc := tlsClient(c)
				tc.SetDeadline(time.Now().Add(5 * time.Second))
				if tc.Handshake() == nil && r.Intn(2) == 0 {
					fmt.Fprintln(tc, `{"jsonrpc":"2.0","id":0,"method":"server.version","params":["x","1.4"]}`)
					fmt.Fprintln(tc, `{"jsonrpc":"2.0","id":1,"method":"blockchain.headers.subscribe"}`)
				}
			}
			time.Sleep(time.Duration(r.Intn(20)) * time.Millisecond)
			if tcp, ok := c.(*net.TCPConn); ok && r.Intn(2) == 0 {
				tcp.SetLinger(0)
			}
		}(k)
	}
	wg.Wait()
	var hs, hsBy, sessions, perIP int
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		s.mu.Lock()
		hs, hsBy, sessions, perIP = s.handshakes, len(s.handshakesBy), len(s.sessions), len(s.perIP)
		s.mu.Unlock()
		if hs == 0 && hsBy == 0 && sessions == 0 && perIP == 0 {
			break
		}
	}
	if hs != 0 || hsBy != 0 || sessions != 0 || perIP != 0 {
		t.Fatalf("after TLS churn: %d handshakes pending (%d addresses), %d sessions, %d per-IP entries", hs, hsBy, sessions, perIP)
	}
	if rc := readAccountingCounters(s); !rc.baseline() {
		t.Fatalf("after TLS churn: %+v", rc)
	}
}

func tlsClient(c net.Conn) *tls.Conn {
	return tls.Client(c, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
}

// TestAnswerCacheSameHeightReorg: a history and a header range
// cached at a tip are not served after the tip block is replaced by
// another at the same height, and a history follows mempool changes.
func TestAnswerCacheSameHeightReorg(t *testing.T) {
	fx := newFixtureChain(t)
	for i := 0; i < 120; i++ {
		fx.f.mine(fx.c)
	}
	s, addr := startServer(t, fx.f, nil)
	fx.s, fx.addr = s, addr
	c := fx.client(t, "1.4")
	type hist = []historyItem
	get := func() hist {
		var h hist
		c.must(&h, "blockchain.scripthash.get_history", fx.shA.String())
		return h
	}
	var hdrs struct {
		Count int    `json:"count"`
		Hex   string `json:"hex"`
	}
	getHeaders := func() string {
		_, tipH := fx.f.tip()
		c.must(&hdrs, "blockchain.block.headers", tipH-119, 120)
		return hdrs.Hex
	}
	fx.mineAndNotify(fx.a) // the tip pays A
	before := get()
	get()
	hBefore := getHeaders()
	getHeaders()
	hits := s.counters.cacheHits.Load()
	if hits == 0 {
		t.Fatal("nothing answered from the cache")
	}
	// Replace the tip with a block at the same height paying B.
	fx.f.disconnect()
	hdr, h, _ := fx.f.mine(fx.b)
	s.NotifyTip(hdr, h)
	after := get()
	if len(after) != len(before)-1 {
		t.Errorf("history after the tip paying A was replaced: %d entries, before %d", len(after), len(before))
	}
	if hAfter := getHeaders(); hAfter == hBefore || hAfter[len(hAfter)-160:] != headerHexOf(t, hdr) {
		t.Errorf("headers range after a same-height reorganization is the old chain's")
	}
	// A mempool transaction paying A shows at once.
	tx := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, wire.NewTxOut(1000, fx.a))
	if err := fx.f.Broadcast(tx); err != nil {
		t.Fatal(err)
	}
	if got := get(); len(got) != len(after)+1 {
		t.Errorf("history with a mempool entry: %d entries, want %d", len(got), len(after)+1)
	}
}

func headerHexOf(t *testing.T, h wire.BlockHeader) string {
	s, err := headerHex(&h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// heapInUse returns the live heap after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSubscriptionMemoryFreedOnDisconnect: once every session that
// subscribed has gone, the server holds about what it held before. The
// notifier's registry, a Go map, kept the storage of its largest size: 63
// bytes for every script ever subscribed at once, for the life of the
// process.
func TestSubscriptionMemoryFreedOnDisconnect(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.CostHardLimit = -1 // as for exempt (Tor, proxy) sessions
		c.MaxSubsPerSession = 1 << 30
		c.MaxSubsPerIP = 1 << 30
	})
	const sessions, per = 4, 25_000
	base := heapInUse()
	var lcs []*lineClient
	for s := 0; s < sessions; s++ {
		lc := dialLines(t, fx.addr)
		lc.negotiate()
		lcs = append(lcs, lc)
		for b := 0; b < per/1000; b++ {
			var sb strings.Builder
			sb.WriteString("[")
			for i := 0; i < 1000; i++ {
				if i > 0 {
					sb.WriteString(",")
				}
				fmt.Fprintf(&sb, `{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.subscribe","params":["%s"]}`,
					i+1, scriptHashN(byte(s+1), b*1000+i))
			}
			sb.WriteString("]")
			lc.send(sb.String())
			lc.line()
		}
	}
	if n := fx.s.SubscriptionCount(); n != sessions*per {
		t.Fatalf("%d subscriptions, want %d", n, sessions*per)
	}
	held := heapInUse()
	for _, lc := range lcs {
		lc.conn.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for (fx.s.SessionCount() != 0 || fx.s.SubscriptionCount() != 0) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	after := heapInUse()
	retained := int64(after) - int64(base)
	t.Logf("%.0f bytes per subscription held; %d bytes (%.0f per former subscription) retained after every session left",
		float64(held-base)/float64(sessions*per), retained, float64(retained)/float64(sessions*per))
	if retained > 2<<20 {
		t.Fatalf("%d bytes retained after %d subscriptions came and went", retained, sessions*per)
	}
}

// TestUnfinishedWebSocketMessageCharged: over WebSocket as over TCP, a
// message's bytes are charged to the session as they are read, before its
// last frame arrives.
func TestUnfinishedWebSocketMessageCharged(t *testing.T) {
	fx := newFixture(t, nil)
	s := New(Config{WSListen: []string{"127.0.0.1:0"}}, fx.f)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+s.Addrs()[WS][0].String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["x","1.4"]}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	before := openSessionFrom(s, "127.0.0.1")
	// The writer sends a frame each time its buffer fills; the message's
	// last frame is never sent.
	w, err := ws.NextWriter(websocket.TextMessage)
	if err != nil {
		t.Fatal(err)
	}
	line := unfinishedLine()
	if _, err := w.Write(line); err != nil {
		t.Fatal(err)
	}
	want := float64(len(line)) / float64(s.cfg.BandwidthUnit)
	var info *SessionInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if info = openSessionFrom(s, "127.0.0.1"); info != nil && info.Cost-before.Cost >= want*0.9 {
			return
		}
	}
	t.Fatalf("%d bytes of an unfinished message sent: the session's cost went from %.2f to %.2f (bytes in %d), want at least %.0f more",
		len(line), before.Cost, info.Cost, info.BytesIn, want*0.9)
}
