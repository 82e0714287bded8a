package electrum

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// A client that pipelines its requests reaches the hard cost limit with
// several in flight: they are answered, the -101 among them, and the
// session closes once all is written (PROTOCOL.md: "At CostHardLimit the
// request is answered -101 ... and the session is closed once the answer
// is written").
func TestHardLimitAnsweredWhenPipelined(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.CostSoftLimit = 5
		c.CostHardLimit = 15
		c.RequestSleep = time.Millisecond
	})
	sh := fx.shA.String()
	missing := 0
	const rounds = 10
	for round := 0; round < rounds; round++ {
		// Each round from a subnet of its own: the cost of one does not
		// carry over to the next.
		local := &net.TCPAddr{IP: net.IPv4(127, 1, byte(round+1), 1)}
		raddr, _ := net.ResolveTCPAddr("tcp", fx.addr)
		c, err := net.DialTCP("tcp", local, raddr)
		if err != nil {
			t.Fatal(err)
		}
		// 25 requests, sent at once (under 4 KB: the server reads them
		// all before it closes, so the close is an orderly one).
		var b strings.Builder
		b.WriteString(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["pipelining","1.4"]}` + "\n")
		for i := 1; i <= 25; i++ {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.get_balance","params":["%s"]}`+"\n", i, sh)
		}
		if _, err := c.Write([]byte(b.String())); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
		r := bufio.NewReader(c)
		answers, got101 := 0, false
		var end error
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				end = err
				break
			}
			answers++
			if strings.Contains(l, `"code":-101`) {
				got101 = true
			}
		}
		c.Close()
		if !got101 {
			missing++
			t.Logf("round %d: %d answers, then %v, and no -101", round, answers, end)
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d sessions cut at the hard cost limit got no -101 \"excessive resource usage\" answer", missing, rounds)
	}
}
