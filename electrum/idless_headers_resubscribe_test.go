package electrum

import "testing"

// TestIdlessHeadersResubscribeKeepsNewTip: a client subscribed to
// headers (answered tip H0) sends blockchain.headers.subscribe again as a
// JSON-RPC notification (no id, so no answer). While it runs a block H1 is
// connected. Nothing was sent for the id-less subscribe, so H1, which its
// claim held back, is owed to the client as a notification (PROTOCOL.md §6:
// a notification of every new tip).
func TestIdlessHeadersResubscribeKeepsNewTip(t *testing.T) {
	fx := newFixtureChain(t)
	// The next ChainTip read (the one headers.subscribe makes) waits once
	// armed.
	st := newStall(t)
	sb := &hookedBackend{fakeBackend: fx.f, onChainTip: st.hold}
	fx.s, fx.addr = startServer(t, sb, func(c *Config) { c.Concurrency = 1 })

	lc := dialNegotiated(t, fx.addr)
	first := lc.ask(`{"jsonrpc":"2.0","id":"first","method":"blockchain.headers.subscribe","params":[]}`)
	var h0 headerResult
	decodeInto(t, first.Result, &h0)
	if first.Error != nil || h0.Hex == "" {
		t.Fatalf("test setup: first subscribe %s %v", first.Result, first.Error)
	}

	st.arm()
	lc.send(`{"jsonrpc":"2.0","method":"blockchain.headers.subscribe","params":[]}`)
	st.waitStalled(t, "id-less headers.subscribe never read the tip")
	h1 := fx.mineAndNotify(p2wpkh(0xdd))
	fx.flush(t)
	st.release()

	told := tipsToPing(t, lc)
	if h1 <= h0.Height {
		t.Fatalf("test setup: mined height %d not above %d", h1, h0.Height)
	}
	if len(told) == 0 || told[len(told)-1] != h1 {
		t.Fatalf("after its answer at height %d the client was told heights %v, never the new tip %d", h0.Height, told, h1)
	}
}
