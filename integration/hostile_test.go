package integration

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/hostile"
)

// TestHostileClients is the short form of the hostile-clients benchmark
// (e2ebench hostile, docs/RELIABILITY.md): every attack runs at
// a small scale against the node binary (TCP, TLS, WS and WSS listeners,
// loopback not exempt from the per-IP limits, the attackers spread over
// several addresses and /24s) while a well-behaved wallet keeps asking.
// For each attack: every answer the wallet gets during and after it equals
// the answer before any attack, on the same session; every attacker
// connection gets the protocol error or limit code it is meant to, or is
// disconnected, and never anything else; and once the attack stops the
// server's session count is back where it was. Nothing here is timed.
func TestHostileClients(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{Binary: true, ElectrumTLS: true, ElectrumWS: true, ElectrumWSS: true,
		Args: []string{
			"--electrumexemptnets=none",
			// Small subscription limits, so the flood reaches them; a
			// short write timeout, so slow readers are cut quickly.
			"--electrummaxsubspersession=300", "--electrummaxsubsperip=400", "--electrummaxsubs=1500",
			"--electrumwritetimeout=1s",
			// Short throttling delays (of requests, and of reading
			// after a refused message), so attackers reach the cost
			// limit's disconnect quickly.
			"--electrumrequestsleep=100ms",
			// Large answers, so slow readers fill their buffers fast.
			"--electrumbanner=" + strings.Repeat("b", 100_000),
		}})
	t.Cleanup(func() {
		if t.Failed() {
			if log, err := n.Log(); err == nil {
				t.Logf("node log (last 4 KB):\n%s", log[max(0, len(log)-4096):])
			}
		}
	})
	// A chain with some history: coinbases to the mining address and
	// payments to three wallets.
	if _, err := n.Mine(20); err != nil {
		t.Fatal(err)
	}
	scripts := []string{ScriptHash(MiningScript())}
	var txids []string
	for i := 0; i < 3; i++ {
		_, script := newWalletAddress(t)
		op, err := n.Fund(script, btcutil.Amount(1_000_000*(i+1)))
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, ScriptHash(script))
		txids = append(txids, op.Hash.String())
	}
	if err := n.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}

	mix := hostile.Mix(scripts, txids, []int{0, 5, 10, 23})
	first, err := hostile.NewGoodClient(ctx, n.ElectrumAddr, nil, mix, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := first.Ref()
	first.Close()

	// Each attack's size and the outcomes it must produce before it is
	// stopped.
	cases := []struct {
		kind hostile.Kind
		cfg  hostile.Config
		done func(s hostile.Summary) bool
		// check runs on the final counts.
		check func(t *testing.T, s hostile.Summary)
	}{
		{hostile.Idle, hostile.Config{Conns: 100},
			func(s hostile.Summary) bool { return s.Expected >= 100 },
			func(t *testing.T, s hostile.Summary) {
				if s.PeakHeld != 100 || s.Refused != 0 || s.Disconnects != 0 {
					t.Errorf("idle sessions: %v", s)
				}
			}},
		{hostile.SlowRead, hostile.Config{Conns: 20, Scripts: scripts},
			// The server cuts every slow reader (write timeout 1 s).
			func(s hostile.Summary) bool { return s.Disconnects >= 20 }, nil},
		{hostile.BigLine, hostile.Config{Workers: 4},
			// "request too large" on TCP, a close (1009) on WS, and at
			// the cost limit -101 and a disconnect.
			func(s hostile.Summary) bool { return s.Expected >= 20 && s.Refused >= 1 }, nil},
		{hostile.BigBatch, hostile.Config{Workers: 2},
			func(s hostile.Summary) bool { return s.Expected >= 10 && s.Refused >= 1 }, nil},
		{hostile.SubFlood, hostile.Config{Workers: 6, Scripts: scripts},
			// Code 4 at the per-session, per-IP or total limit.
			func(s hostile.Summary) bool { return s.Expected >= 6 }, nil},
		{hostile.BadJSON, hostile.Config{Workers: 2},
			// Every bad line answered with its error, then -101.
			func(s hostile.Summary) bool { return s.Expected >= 24 && s.Refused >= 2 }, nil},
		{hostile.TLSHalfOpen, hostile.Config{Conns: 40},
			// Plaintext on the TLS port is closed; half handshakes
			// are held (until the server's handshake timeout).
			func(s hostile.Summary) bool { return s.Expected >= 4 },
			func(t *testing.T, s hostile.Summary) {
				if s.PeakHeld < 36 {
					t.Errorf("half-open handshakes: %v", s)
				}
			}},
		{hostile.WSBad, hostile.Config{Workers: 4},
			func(s hostile.Summary) bool { return s.Expected >= 2*int64(hostile.WSCases()) }, nil},
		{hostile.Churn, hostile.Config{Rate: 200},
			func(s hostile.Summary) bool { return s.Expected >= 200 }, nil},
	}
	for i, tc := range cases {
		t.Run(string(tc.kind), func(t *testing.T) {
			// Four addresses in each of 8 /24s of the attack's own
			// (the cost of a subnet outlives its sessions);
			// 127.0.0.0/24, the wallet's, is not among them.
			target := &hostile.Target{TCP: n.ElectrumAddr, TLS: n.ElectrumTLSAddr, WS: n.ElectrumWSAddr, WSS: n.ElectrumWSSAddr,
				Sources: hostile.LoopbackSources(8*i, 32, 8)}
			// The wallet: a new session for each attack, from a /24 of
			// its own.
			good, err := hostile.NewGoodClient(ctx, n.ElectrumAddr, net.IPv4(127, 1, byte(i), 1), mix, ref)
			if err != nil {
				t.Fatal(err)
			}
			defer good.Close()
			baseline := sessions(t, n)
			st := &hostile.Stats{}
			actx, stop := context.WithCancel(ctx)
			defer stop()
			ready := make(chan struct{})
			cfg := tc.cfg
			cfg.Ready = func() { close(ready) }
			finished := make(chan error, 1)
			go func() { finished <- hostile.Run(actx, tc.kind, target, cfg, st) }()
			select {
			case <-ready:
			case err := <-finished:
				t.Fatalf("attack ended before it was ready: %v", err)
			case <-ctx.Done():
				t.Fatal("attack not ready in time")
			}
			// The wallet asks while the attack goes on, until the
			// attack has produced what it must.
			gctx, gstop := context.WithCancel(ctx)
			during := make(chan hostile.Result, 1)
			go func() { during <- good.Run(gctx, 5*time.Millisecond, 0) }()
			start := good.Sent()
			for (!tc.done(st.Summary()) || good.Sent()-start < 50) && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
			}
			gstop()
			res := <-during
			stop()
			if err := <-finished; err != nil {
				t.Fatal(err)
			}
			s := st.Summary()
			t.Logf("attack: %v", s)
			t.Logf("wallet during the attack: %v", res)
			if !tc.done(s) {
				t.Fatalf("the attack did not produce its outcomes: %v %v", s, s.Notes)
			}
			if s.Unexpected != 0 {
				t.Errorf("unexpected answers to the attacker: %v", s.Notes)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
			if !res.OK() {
				t.Errorf("the wallet was not served correctly during the attack: %v %v", res, res.Notes)
			}
			// Every attacker session ends on the server too. The
			// baseline may still count the previous attack's wallet,
			// whose session closes on its own time: not above it.
			waitSessions(t, ctx, n, baseline)
			if after := good.Run(ctx, 0, 20); !after.OK() {
				t.Errorf("the wallet was not served correctly after the attack: %v %v", after, after.Notes)
			}
		})
	}
}

// sessions returns the node's Electrum session count.
func sessions(t *testing.T, n *Node) int {
	t.Helper()
	info, err := ElectrumInfo(n.RPC)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sessions
}

// waitSessions waits until the node holds at most want sessions.
func waitSessions(t *testing.T, ctx context.Context, n *Node, want int) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for sessions(t, n) > want {
		select {
		case <-wctx.Done():
			raw, _ := n.RPC.RawRequest("getelectrumsessions", nil)
			t.Fatalf("the session count is not back at %d or below; sessions: %s", want, raw)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
