package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPortsBelowEphemeralRangeDistinctAndFree: every port is outside the
// range other sockets draw from, is never handed twice, and can be bound.
func TestPortsBelowEphemeralRangeDistinctAndFree(t *testing.T) {
	top := ephemeralLow()
	seen := map[int]bool{}
	for range 200 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if p < lowest || p >= top {
			t.Fatalf("port %d outside [%d, %d)", p, lowest, top)
		}
		if seen[p] {
			t.Fatalf("port %d handed twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d not free: %v", p, err)
		}
		l.Close()
	}
}
