package electrum

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metricValue returns the value of the series name with the given labels
// (counter, gauge, or a histogram's sample count), and whether it exists.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// TestMetrics drives a server and checks that its metrics move: requests, errors and latency by method (unknown methods under one label), sessions by transport, subscriptions, bytes, refusals and disconnections by reason, and the notification fan-out.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	fx := newFixtureChain(t)
	s, addr := startServerMetrics(t, fx.f, func(c *Config) { c.MaxSessionsPerIP = 2 }, reg)
	if err := s.RegisterMetrics(prometheus.NewRegistry()); err == nil {
		t.Fatal("RegisterMetrics after Start accepted")
	}

	want := func(name string, labels map[string]string, v float64) {
		t.Helper()
		got, ok := metricValue(t, reg, name, labels)
		if !ok || got != v {
			t.Fatalf("%s%v = %v (present %v), want %v", name, labels, got, ok, v)
		}
	}
	a, b := dial(t, addr), dial(t, addr)
	a.negotiate("1.4")
	b.negotiate("1.4")
	want("electrum_sessions", map[string]string{"transport": "tcp"}, 2)
	a.must(nil, "blockchain.scripthash.subscribe", fx.shA.String())
	a.must(nil, "blockchain.scripthash.get_balance", fx.shA.String())
	a.must(nil, "blockchain.scripthash.get_balance", fx.shB.String())
	if _, rerr := a.call("blockchain.scripthash.get_balance", "zz"); rerr == nil {
		t.Fatal("bad script hash accepted")
	}
	if _, rerr := a.call("no.such.method"); rerr == nil {
		t.Fatal("unknown method answered")
	}
	want("electrum_requests_total", map[string]string{"method": "blockchain.scripthash.get_balance"}, 3)
	want("electrum_request_errors_total", map[string]string{"method": "blockchain.scripthash.get_balance"}, 1)
	want("electrum_request_duration_seconds", map[string]string{"method": "blockchain.scripthash.get_balance"}, 3)
	want("electrum_requests_total", map[string]string{"method": "unknown"}, 1)
	want("electrum_requests_total", map[string]string{"method": "server.version"}, 2)
	want("electrum_subscriptions", nil, 1)
	if v, _ := metricValue(t, reg, "electrum_received_bytes_total", map[string]string{"transport": "tcp"}); v < 100 {
		t.Fatalf("bytes received %v", v)
	}
	if v, _ := metricValue(t, reg, "electrum_sent_bytes_total", map[string]string{"transport": "tcp"}); v < 100 {
		t.Fatalf("bytes sent %v", v)
	}

	// A refusal and a protocol disconnection.
	if r, closed := refusedConn(t, addr); r.Error == nil || !closed {
		t.Fatalf("third session: %+v", r)
	}
	want("electrum_sessions_refused_total", map[string]string{"reason": "max_sessions_per_ip"}, 1)
	b.conn.Close()
	// The next session must not be refused for b's slot.
	for deadline := time.Now().Add(30 * time.Second); s.SessionCount() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("closed session still counted")
		}
	}
	c := dial(t, addr)
	c.send(`{"id":1,"method":"server.ping"}`)
	if !c.closedByServer() {
		t.Fatal("session without server.version not closed")
	}
	s.Shutdown(contextWithTimeout(10e9))
	want("electrum_sessions_disconnected_total", map[string]string{"reason": "protocol_error"}, 1)
	want("electrum_sessions_disconnected_total", map[string]string{"reason": "client_closed"}, 1)
	want("electrum_sessions_disconnected_total", map[string]string{"reason": "shutdown"}, 1)
	want("electrum_sessions", map[string]string{"transport": "tcp"}, 0)
}

// TestMetricsFanOut checks that a notification pass is timed and its notifications counted.
func TestMetricsFanOut(t *testing.T) {
	reg := prometheus.NewRegistry()
	fx := newFixtureChain(t)
	fx.s, fx.addr = startServerMetrics(t, fx.f, nil, reg)
	s := fx.s
	c := fx.client(t, "1.4")
	c.must(nil, "blockchain.headers.subscribe")
	c.must(nil, "blockchain.scripthash.subscribe", fx.shA.String())
	fx.mineAndNotify(fx.a)
	c.note()
	c.note()
	if err := s.flushNotifications(contextWithTimeout(10e9)); err != nil {
		t.Fatal(err)
	}
	if v, ok := metricValue(t, reg, "electrum_notification_fanout_seconds", nil); !ok || v < 1 {
		t.Fatalf("fan-out passes observed: %v", v)
	}
	if v, _ := metricValue(t, reg, "electrum_notifications_total", nil); v != 2 {
		t.Fatalf("notifications counted: %v, want 2", v)
	}
}

// BenchmarkMetricsObserve measures what the metrics add to one request
// (the counters and histogram of its method, pre-resolved), from parallel
// goroutines as sessions run.
func BenchmarkMetricsObserve(b *testing.B) {
	s := New(Config{}, nil)
	if err := s.RegisterMetrics(prometheus.NewRegistry()); err != nil {
		b.Fatal(err)
	}
	m := s.methods["blockchain.scripthash.get_balance"]
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			start := time.Now()
			s.mx.observe(m, time.Since(start), false)
		}
	})
}
