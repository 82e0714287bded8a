package electrum

import (
	"fmt"
	"strings"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// docs/PROTOCOL.md §2.2: "A batch whose error answers alone would not fit
// (long ids) is answered with that error alone, id null, and what its
// members subscribed is undone." Members without an id subscribe as well
// (§2.2: a notification "runs and gets no answer"); a batch refused whole
// must not leave their subscriptions behind.
func TestBatchRefusedWholeUndoesIdlessSubscribes(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.MaxSend = minMaxSend
		c.Concurrency = 1 // the ping below runs only once the batch's afters ran
	})
	sh := indexers.ScriptHashFromScript(fx.c).String()
	var b strings.Builder
	b.WriteString(`[{"jsonrpc":"2.0","method":"blockchain.headers.subscribe","params":[]}`)
	b.WriteString(`,{"jsonrpc":"2.0","method":"blockchain.scripthash.subscribe","params":["` + sh + `"]}`)
	// 800 pings with 450-byte ids answer in about 390 KB, past MaxSend;
	// their errors are longer still.
	for i := 0; i < 800; i++ {
		fmt.Fprintf(&b, `,{"jsonrpc":"2.0","id":"%0450d","method":"server.ping"}`, i)
	}
	b.WriteString("]")

	lc := dialNegotiated(t, fx.addr)
	lc.send(b.String())
	ans := string(lc.line())
	if !strings.HasPrefix(ans, "{") || !strings.Contains(ans, "response too large") {
		t.Fatalf("test setup: batch not refused whole: %.200s", ans)
	}
	lc.ping("p")
	for _, si := range fx.s.Sessions() {
		if si.HeadersSubscribed {
			t.Errorf("a batch refused whole left its session subscribed to headers (id-less member)")
		}
	}
	if n := fx.s.SubscriptionCount(); n != 0 {
		t.Errorf("a batch refused whole left %d scripthash subscription(s) (id-less member)", n)
	}

	// What the client sees: notifications for subscriptions of a batch it
	// was told was refused.
	fx.mineAndNotify(p2wpkh(0xdd), fx.tx2)
	fx.flush(t)
	lc.toPing(func(l []byte) {
		if strings.Contains(string(l), `"method":"blockchain.`) {
			t.Errorf("notification after a batch refused whole: %.160s", l)
		}
	})
}
