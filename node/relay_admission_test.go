package node

import (
	"net"
	"testing"
)

// TestV2SourceRateSurvivesReconnect: a source's v2 handshake rate (a burst
// of 4, then 2 a second) holds across connections made one at a time.
func TestV2SourceRateSurvivesReconnect(t *testing.T) {
	a := newAdmission()
	addr := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1000}
	handshakes := 0
	for conn := 0; conn < 5; conn++ {
		done, v2, ok := a.admit(addr)
		if !ok {
			t.Fatal("admit refused")
		}
		// Both responder phases of one handshake: it is admitted, and
		// charged, once.
		phases := 0
		for phase := 0; phase < 2; phase++ {
			if release, err := v2.Acquire(); err == nil {
				phases++
				release()
			}
		}
		if phases == 2 {
			handshakes++
		}
		done()
	}
	if handshakes > v2SourceBurst+1 || handshakes < v2SourceBurst {
		t.Fatalf("one source had %d v2 handshakes admitted over 5 sequential connections; "+
			"its rate is a burst of %d then %d a second", handshakes, v2SourceBurst, v2SourceRate)
	}
}
