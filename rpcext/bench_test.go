package rpcext

import (
	"testing"
)

// BenchmarkProcessBody measures parsing, dispatch and encoding of one
// request without the network.
func BenchmarkProcessBody(b *testing.B) {
	node := newTestNode(b)
	if _, err := node.Generate(10, nil); err != nil {
		b.Fatal(err)
	}
	s := newOfflineServer(b, node)
	body := []byte(`{"jsonrpc":"1.0","method":"getbestblock","params":[],"id":1}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if s.processBody(body, nil) == nil {
			b.Fatal("no reply")
		}
	}
}

// BenchmarkHTTPGetBlockCount measures round trips through rpcclient over
// TLS. rpcclient closes the connection after every request, so each one
// pays a TLS handshake with btcd's P-521 certificate.
func BenchmarkHTTPGetBlockCount(b *testing.B) {
	benchmarkHTTPGetBlockCount(b, false)
}

// BenchmarkHTTPGetBlockCountNoTLS is the same over plain HTTP.
func BenchmarkHTTPGetBlockCountNoTLS(b *testing.B) {
	benchmarkHTTPGetBlockCount(b, true)
}

// benchmarkHTTPGetBlockCount runs getblockcount round trips.
func benchmarkHTTPGetBlockCount(b *testing.B, noTLS bool) {
	node := newTestNode(b)
	ts := startServer(b, node, func(c *Config) { c.DisableTLS = noTLS })
	c := ts.httpClient(b, testUser, testPass)
	if _, err := c.GetBlockCount(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.GetBlockCount(); err != nil {
			b.Fatal(err)
		}
	}
}
