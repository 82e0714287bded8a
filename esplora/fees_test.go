package esplora

import (
	"errors"
	"testing"
)

// feeIndex answers EstimateFee from a table, in BTC/kvB, as the node's
// relay does (an error for a target btcd's estimator cannot answer).
type feeIndex struct {
	Index
	rates map[int]float64
}

func (f feeIndex) EstimateFee(blocks int, _ string) (float64, error) {
	if r, ok := f.rates[blocks]; ok {
		return r, nil
	}
	return -1, errors.New("can only estimate fees for up to 25 blocks from now")
}

// TestFeeEstimates checks the conversion to sat/vB and that targets without
// an estimate are left out.
func TestFeeEstimates(t *testing.T) {
	s := New(Config{}, feeIndex{rates: map[int]float64{1: 0.0002, 2: 0.00012345, 25: 0.00001, 144: -1}}, nil)
	rep, err := s.feeEstimates()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(rep.body), `{"1":20.0,"2":12.345,"25":1.0}`; got != want || rep.contentType != "application/json" {
		t.Fatalf("fee-estimates %s, want %s", got, want)
	}
	s = New(Config{}, feeIndex{}, nil)
	if rep, _ := s.feeEstimates(); string(rep.body) != "{}" {
		t.Fatalf("without estimates: %s", rep.body)
	}
}
