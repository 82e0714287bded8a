package integration

import (
	"testing"
	"time"
)

// BenchmarkStartNode measures the wall time from StartNode to an Electrum
// client's server.version answer on a fresh regtest datadir, for a node in
// this process and for the built binary (built before the timer starts),
// each also with TLS RPC and every Electrum transport (TLS, WS, WSS), whose
// certificates are generated at start.
// Stopping the node is not timed.
//
//	go test -run '^$' -bench StartNode -benchtime 10x ./integration/
func BenchmarkStartNode(b *testing.B) {
	tls := NodeConfig{RPCTLS: true, ElectrumTLS: true, ElectrumWS: true, ElectrumWSS: true}
	binTLS := tls
	binTLS.Binary = true
	for _, mode := range []struct {
		name string
		cfg  NodeConfig
	}{{"inprocess", NodeConfig{}}, {"binary", NodeConfig{Binary: true}},
		{"inprocess-tls", tls}, {"binary-tls", binTLS}} {
		b.Run(mode.name, func(b *testing.B) {
			if mode.cfg.Binary {
				if _, err := NodeBinary(); err != nil {
					b.Fatal(err)
				}
			}
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := b.TempDir()
				b.StartTimer()
				start := time.Now()
				cfg := mode.cfg
				cfg.Dir = dir
				n, err := startNode(b, cfg)
				if err != nil {
					b.Fatal(err)
				}
				// StartNode returns once n.Electrum has its server.version
				// answer.
				total += time.Since(start)
				b.StopTimer()
				if err := n.Stop(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/start")
		})
	}
}
