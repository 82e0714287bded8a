package electrum

import (
	"testing"
)

// TestSessionsAndDisconnect checks what an operator sees of the sessions (address, transport, client name, protocol, subscriptions, bytes) and that closing one by id ends it alone, counted under "admin".
func TestSessionsAndDisconnect(t *testing.T) {
	fx := newFixture(t, nil)
	a := fx.client(t, "1.4")
	b := dial(t, fx.addr)
	b.must(nil, "server.version", "Sparrow 2.0", "1.6")
	b.must(nil, "blockchain.scripthash.subscribe", fx.shA.String())
	b.must(nil, "blockchain.scripthash.subscribe", fx.shB.String())
	b.must(nil, "blockchain.headers.subscribe")

	list := fx.s.Sessions()
	if len(list) != 2 {
		t.Fatalf("%d sessions listed, want 2", len(list))
	}
	sb := list[1]
	if sb.Address != b.conn.LocalAddr().String() || sb.Transport != "tcp" || sb.ClientName != "Sparrow 2.0" ||
		sb.Protocol != "1.6" || sb.Subscriptions != 2 || !sb.HeadersSubscribed || sb.BytesIn == 0 || sb.BytesOut == 0 ||
		sb.Cost <= 0 || sb.AgeSeconds <= 0 {
		t.Fatalf("session listed as %+v", sb)
	}
	if list[0].ClientName != "test-client" || list[0].Protocol != "1.4" {
		t.Fatalf("first session listed as %+v", list[0])
	}

	if err := fx.s.DisconnectSession(sb.ID); err != nil {
		t.Fatal(err)
	}
	if !b.closedByServer() {
		t.Fatal("session not closed")
	}
	if err := fx.s.DisconnectSession(sb.ID); err != ErrNoSession {
		t.Fatalf("closing it again: %v", err)
	}
	a.must(nil, "server.ping")
	if n := fx.s.Stats().Disconnected[DisconnectAdmin.String()]; n != 1 {
		t.Fatalf("admin disconnections counted: %d", n)
	}
	if n := fx.s.SubscriptionCount(); n != 0 {
		t.Fatalf("%d subscriptions left after the close", n)
	}
}

// TestScriptHashInfo checks the diagnosis of one script hash against what a wallet is told: history length (confirmed and mempool), unspent count, balances and status, subscribers, and a history too large to serve.
func TestScriptHashInfo(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	var status *string
	c.must(&status, "blockchain.scripthash.subscribe", fx.shB.String())
	var hist []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", fx.shB.String())
	var unspent []map[string]any
	c.must(&unspent, "blockchain.scripthash.listunspent", fx.shB.String())
	var bal map[string]int64
	c.must(&bal, "blockchain.scripthash.get_balance", fx.shB.String())

	info, err := fx.s.ScriptHashInfo(fx.shB)
	if err != nil {
		t.Fatal(err)
	}
	mem := 0
	for _, h := range hist {
		if h.Height <= 0 {
			mem++
		}
	}
	if info.HistoryLength != len(hist) || info.Mempool != mem || info.Confirmed != len(hist)-mem ||
		info.UnspentCount != len(unspent) || info.ConfirmedBalance != bal["confirmed"] ||
		info.UnconfirmedBalance != bal["unconfirmed"] || status == nil || info.Status == nil ||
		*info.Status != *status || info.Subscribers != 1 || info.TooLarge {
		t.Fatalf("info %+v; wallet sees history %d (%d mempool), %d unspent, balance %v, status %v",
			info, len(hist), mem, len(unspent), bal, *status)
	}

	// A history over the send limit is described, not refused.
	fx.f.setExtraHistory(fx.shA, fx.s.cfg.historyLimit()+1)
	info, err = fx.s.ScriptHashInfo(fx.shA)
	if err != nil || !info.TooLarge || info.HistoryLength <= fx.s.cfg.historyLimit() {
		t.Fatalf("too-large history: %+v, %v", info, err)
	}
}
