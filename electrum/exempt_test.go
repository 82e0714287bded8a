package electrum

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// loopbackNets are the node's default --electrumexemptnets.
func loopbackNets(t testing.TB) []*net.IPNet {
	t.Helper()
	var out []*net.IPNet
	for _, s := range []string{"127.0.0.0/8", "::1/128"} {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// otherNets is an exempt list that does not include loopback.
func otherNets(t testing.TB) []*net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	return []*net.IPNet{n}
}

// logLines collects what the server logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

// logf is a Config.Logf.
func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// matching returns the lines that contain sub.
func (l *logLines) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return out
}

// TestExemptNetsBehindProxy is the reverse-proxy (or Tor daemon) path: every client arrives from 127.0.0.1, and with loopback exempt far more sessions and subscriptions than the per-IP limits allow are served.
func TestExemptNetsBehindProxy(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.MaxSessionsPerIP = 2
		c.MaxSubsPerIP = 2
		c.ExemptNets = loopbackNets(t)
	})
	var clients []*testClient
	for i := 0; i < 20; i++ {
		c := fx.client(t, "1.4")
		c.must(nil, "blockchain.scripthash.subscribe", fx.shA.String())
		clients = append(clients, c)
	}
	for _, c := range clients {
		c.must(nil, "server.ping")
	}
	if got := fx.s.SessionCount(); got != 20 {
		t.Fatalf("%d sessions, want 20", got)
	}
	if st := fx.s.Stats(); st.Refused[RefusedPerIP.String()] != 0 || st.SubscriptionsRefused != 0 {
		t.Fatalf("exempt clients refused: %+v", st)
	}
	for _, s := range fx.s.Sessions() {
		if !s.Exempt || s.GroupCost != nil {
			t.Fatalf("session from loopback not exempt: %+v", s)
		}
	}
}

// TestPerIPLimitsManyAddresses binds clients to several loopback addresses with an exempt list that does not include them: each address gets its own per-IP session and subscription limits, a refusal is answered, counted and logged, and refusals that follow within the log interval are counted but summarised rather than logged one by one.
func TestPerIPLimitsManyAddresses(t *testing.T) {
	logs := &logLines{}
	fx := newFixture(t, func(c *Config) {
		c.MaxSessionsPerIP = 2
		c.MaxSubsPerIP = 3
		c.ExemptNets = otherNets(t)
		c.Logf = logs.logf
	})
	for host := 2; host <= 6; host++ {
		ip := net.IPv4(127, 0, 0, byte(host))
		a, b := dialFrom(t, fx.addr, ip), dialFrom(t, fx.addr, ip)
		a.negotiate("1.4")
		b.negotiate("1.4")
		r, closed := refusedConnFrom(t, fx.addr, ip)
		if r.Error == nil || r.Error.Code != codeExcessiveUsage || !closed {
			t.Fatalf("third session from %v: %+v", ip, r)
		}
		a.must(nil, "blockchain.scripthash.subscribe", fx.shA.String())
		a.must(nil, "blockchain.scripthash.subscribe", fx.shB.String())
		b.must(nil, "blockchain.scripthash.subscribe", fx.shC.String())
		if _, rerr := b.call("blockchain.scripthash.subscribe", fx.shA.String()); rerr == nil || rerr.Code != codeLimitExceeded {
			t.Fatalf("fourth subscription from %v: %v", ip, rerr)
		}
	}
	st := fx.s.Stats()
	if st.Refused[RefusedPerIP.String()] != 5 || st.SubscriptionsRefused != 5 {
		t.Fatalf("refusals counted: %+v", st)
	}
	lines := logs.matching("refused a connection")
	if len(lines) != 1 || !strings.Contains(lines[0], "127.0.0.2") || !strings.Contains(lines[0], "max_sessions_per_ip") {
		t.Fatalf("refusal log lines (one expected within the interval): %q", lines)
	}
}

// TestSubnetCostGroup checks per-subnet cost: sessions from many addresses of one /24, each far under the hard limit on its own cost, are disconnected together once their subnet's cost reaches it, and a new session from the subnet starts at that cost rather than afresh. The same load from exempt addresses is not grouped.
func TestSubnetCostGroup(t *testing.T) {
	const sessions, calls = 10, 4 // each get_balance costs 1 (plus bytes)
	limits := func(c *Config) {
		c.CostSoftLimit = 34
		c.CostHardLimit = 35
		c.RequestSleep = time.Millisecond
	}
	run := func(t *testing.T, fx *fixture) (clients []*testClient, refused int, deadAddrs map[string]bool) {
		for i := 0; i < sessions; i++ {
			c := dialFrom(t, fx.addr, net.IPv4(127, 0, 0, byte(10+i)))
			c.negotiate("1.4")
			clients = append(clients, c)
		}
		dead := make(map[*testClient]bool)
		deadAddrs = make(map[string]bool)
		for round := 0; round < calls; round++ {
			for _, c := range clients {
				if dead[c] {
					continue
				}
				if _, rerr := c.call("blockchain.scripthash.get_balance", fx.shA.String()); rerr != nil {
					if rerr.Code != codeExcessiveUsage {
						t.Fatalf("unexpected error %v", rerr)
					}
					dead[c] = true
					deadAddrs[c.conn.LocalAddr().String()] = true
					refused++
				}
			}
		}
		return clients, refused, deadAddrs
	}
	t.Run("grouped", func(t *testing.T) {
		fx := newFixture(t, func(c *Config) { limits(c); c.ExemptNets = otherNets(t) })
		clients, refused, dead := run(t, fx)
		if refused == 0 {
			t.Fatal("no session of the subnet was refused at the subnet's hard limit")
		}
		// The sessions that were not refused are each under the limit on
		// their own cost, their subnet at it.
		for _, s := range fx.s.Sessions() {
			if dead[s.Address] {
				continue
			}
			if s.Cost >= 35 || s.GroupCost == nil || *s.GroupCost < 35 {
				t.Fatalf("session %+v: own cost should be under the limit, the group's at it", s)
			}
		}
		for _, c := range clients {
			c.conn.Close()
		}
		// Reconnecting from the subnet does not reset its cost.
		c := dialFrom(t, fx.addr, net.IPv4(127, 0, 0, 99))
		if _, rerr := c.call("server.version", "test-client", "1.4"); rerr == nil || rerr.Code != codeExcessiveUsage {
			t.Fatalf("new session from the subnet: %v", rerr)
		}
		if !c.closedByServer() {
			t.Fatal("session over the limit not closed")
		}
		if n := costCounted(fx.s).Disconnected[DisconnectCost.String()]; n == 0 {
			t.Fatal("cost disconnections not counted")
		}
	})
	t.Run("exempt", func(t *testing.T) {
		fx := newFixture(t, func(c *Config) { limits(c); c.ExemptNets = loopbackNets(t) })
		if _, refused, _ := run(t, fx); refused != 0 {
			t.Fatalf("%d requests of exempt sessions refused", refused)
		}
	})
}

// TestSubnetKey pins the grouping: /24 for IPv4 (IPv4-mapped IPv6 included), /48 for IPv6.
func TestSubnetKey(t *testing.T) {
	for _, tc := range []struct{ ip, want string }{
		{"198.51.100.7", "198.51.100.0/24"},
		{"198.51.100.255", "198.51.100.0/24"},
		{"::ffff:198.51.100.7", "198.51.100.0/24"},
		{"2001:db8:1:2::5", "2001:db8:1::/48"},
		{"2001:db8:1:ffff::1", "2001:db8:1::/48"},
	} {
		if got := subnetKey(net.ParseIP(tc.ip), tc.ip); got != tc.want {
			t.Errorf("subnetKey(%s) = %s, want %s", tc.ip, got, tc.want)
		}
	}
	if got := subnetKey(nil, "pipe"); got != "pipe" {
		t.Errorf("unparsed address grouped as %q", got)
	}
}

// TestExemptSessionsNotThrottled checks cost throttling against the exempt
// networks: a session from them is never charged, slowed or disconnected by
// cost unless ThrottleExempt is set, and then it is, on its own cost; a
// session slowed by cost is counted and logged once however many of its
// requests are delayed, and a disconnection at the hard limit is logged with
// its cost.
func TestExemptSessionsNotThrottled(t *testing.T) {
	const calls = 12 // each error costs 100
	limits := func(logs *logLines, throttleExempt bool) func(c *Config) {
		return func(c *Config) {
			c.ExemptNets = loopbackNets(t)
			c.ThrottleExempt = throttleExempt
			c.CostSoftLimit = 250
			c.CostHardLimit = 1050
			c.RequestSleep = time.Millisecond
			c.Logf = logs.logf
		}
	}
	t.Run("exempt", func(t *testing.T) {
		var logs logLines
		fx := newFixture(t, limits(&logs, false))
		c := fx.client(t, "1.4")
		for i := 0; i < calls; i++ {
			if _, rerr := c.call("no.such.method"); rerr == nil || rerr.Code != codeMethodNotFound {
				t.Fatalf("call %d of an exempt session: %v", i, rerr)
			}
		}
		c.must(nil, "server.ping")
		for _, s := range fx.s.Sessions() {
			if !s.Exempt || s.Cost != 0 {
				t.Fatalf("exempt session %+v: charged", s)
			}
		}
		if st := fx.s.Stats(); st.Throttled != 0 || st.SessionsThrottled != 0 || st.Disconnected[DisconnectCost.String()] != 0 {
			t.Fatalf("exempt session throttled: %+v", st)
		}
		if l := logs.matching("slowed"); len(l) != 0 {
			t.Fatalf("logged: %q", l)
		}
	})
	t.Run("throttle exempt", func(t *testing.T) {
		var logs logLines
		fx := newFixture(t, limits(&logs, true))
		c := fx.client(t, "1.4")
		var last *RPCError
		for i := 0; i < calls; i++ {
			if _, last = c.call("no.such.method"); last != nil && last.Code == codeExcessiveUsage {
				break
			}
		}
		if last == nil || last.Code != codeExcessiveUsage || !c.closedByServer() {
			t.Fatalf("exempt session under ThrottleExempt not stopped at the hard limit: %v", last)
		}
		st := costCounted(fx.s)
		if st.Throttled < 2 || st.SessionsThrottled != 1 || st.Disconnected[DisconnectCost.String()] != 1 {
			t.Fatalf("stats: %+v", st)
		}
		slowed := logs.matching("slowed: cost")
		if len(slowed) != 1 || !strings.Contains(slowed[0], "127.0.0.1") || !strings.Contains(slowed[0], "soft limit 250") {
			t.Fatalf("slowed log lines: %q", slowed)
		}
		if l := logs.matching("disconnected: excessive resource usage (cost"); len(l) != 1 || !strings.Contains(l[0], "hard limit 1050") {
			t.Fatalf("disconnection log lines: %q", l)
		}
	})
}

// costCounted returns the server's stats once they count a disconnection
// for cost, or after ten seconds: a client sees its session closed before
// the server's teardown of the session counts it.
func costCounted(s *Server) Stats {
	st := s.Stats()
	for end := time.Now().Add(10 * time.Second); st.Disconnected[DisconnectCost.String()] == 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
		st = s.Stats()
	}
	return st
}
