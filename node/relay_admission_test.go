package node

import (
	"net"
	"testing"

	"github.com/btcsuite/btcd/mempool"
)

// TestElectrumEstimateFeeTargetPast2To32: the node's relay answers an
// estimatefee target past 2^32 with -1, not the estimate of its low 32
// bits.
func TestElectrumEstimateFeeTargetPast2To32(t *testing.T) {
	n := &Node{feeEstimator: mempool.NewFeeEstimator(mempool.DefaultEstimateFeeMaxRollback, 0)}
	r := electrumRelay{n}
	if _, err := r.EstimateFee(26, ""); err == nil {
		t.Fatal("sanity: btcd's estimator refuses a target past 25")
	}
	if _, err := r.EstimateFee(1, ""); err != nil {
		t.Fatalf("sanity: target 1: %v", err)
	}
	if fee, err := r.EstimateFee(1<<32+1, ""); err == nil {
		t.Fatalf("estimatefee target 2^32+1 answered %v (the estimate of its low 32 bits, 1 block); want an error (-1)", fee)
	}
}

// TestV2SourceRateSurvivesReconnect: a source's v2 handshake rate (a burst
// of 4, then 2 a second) holds across connections made one at a time.
func TestV2SourceRateSurvivesReconnect(t *testing.T) {
	a := newAdmission()
	addr := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1000}
	granted := 0
	for conn := 0; conn < 5; conn++ {
		done, v2, ok := a.admit(addr)
		if !ok {
			t.Fatal("admit refused")
		}
		// Both responder phases of one handshake.
		for phase := 0; phase < 2; phase++ {
			if release, err := v2.Acquire(); err == nil {
				granted++
				release()
			}
		}
		done()
	}
	if granted > v2SourceBurst+1 {
		t.Fatalf("one source had %d v2 phases admitted at once over 5 sequential connections; "+
			"its rate is a burst of %d then %d a second", granted, v2SourceBurst, v2SourceRate)
	}
}
