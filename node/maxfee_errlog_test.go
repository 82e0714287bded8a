package node

import (
	"strings"
	"sync"
	"testing"
)

// syncLog is a log tap safe to read while the node writes.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRefusedHighFeeBroadcastNotLoggedAsError: a client's invalid
// transaction over the fee cap (a bad signature, an immature coinbase
// spend) is a client's mistake, which btcd's sendrawtransaction logs at
// debug: the checks put to it before the cap log nothing at error level,
// where any client could otherwise fill the operator's log.
func TestRefusedHighFeeBroadcastNotLoggedAsError(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), true)
	n := startNode(t, cfg)
	generate(t, n, 101)
	tap := &syncLog{}
	tapLog(t, tap)

	c := dialElectrum(t, n)
	c.call("server.version", "wallet", "1.4")
	badSig := maxFeeSpend(t, n, 1, 49e8)
	badSig.TxIn[0].SignatureScript[10] ^= 0x01
	immature := maxFeeSpend(t, n, 101, 49e8)
	for _, tx := range []string{txHex(badSig), txHex(immature)} {
		msg := c.rawCall("blockchain.transaction.broadcast", tx)
		if msg["error"] == nil {
			t.Fatalf("precondition: the broadcast is refused: %v", msg)
		}
	}
	// A request after the broadcasts: their log lines are written.
	c.call("server.ping")
	for _, line := range strings.Split(tap.String(), "\n") {
		if strings.Contains(line, "[ERR]") {
			t.Errorf("a client's refused broadcast is logged at error level: %s", line)
		}
	}
}
