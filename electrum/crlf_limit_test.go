package electrum

import (
	"encoding/json"
	"strings"
	"testing"
)

// A trailing '\r' is framing, not message: a message of exactly MaxRecv
// bytes is answered whether its line ends "\n" or "\r\n", and one byte
// more is refused either way, for a line that fits the reader's buffer and
// for one read past it.
func TestCRLFMessageAtLimit(t *testing.T) {
	for _, limit := range []int{1000, DefaultMaxRecv} {
		fx := newFixture(t, func(c *Config) { c.MaxRecv = limit })
		lc := dialLines(t, fx.addr)
		lc.negotiate()
		head := `{"jsonrpc":"2.0","id":7,"method":"server.ping"`
		for _, size := range []int{limit, limit + 1} {
			msg := head + strings.Repeat(" ", size-len(head)-1) + "}"
			for _, end := range []string{"\n", "\r\n"} {
				if _, err := lc.conn.Write([]byte(msg + end)); err != nil {
					t.Fatal(err)
				}
				var r rpcResponse
				if err := json.Unmarshal(lc.line(), &r); err != nil {
					t.Fatal(err)
				}
				answered := r.Error == nil && string(r.ID) == "7"
				if answered != (size == limit) {
					t.Errorf("MaxRecv %d: a message of %d bytes ending %q answered %+v (id %s)",
						limit, size, end, r.Error, r.ID)
				}
			}
		}
	}
}
