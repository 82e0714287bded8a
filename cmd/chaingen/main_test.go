package main

import (
	"slices"
	"testing"
)

func TestPPMList(t *testing.T) {
	got, err := parsePPMList("56, 29,15")
	if err != nil || !slices.Equal(got, []uint32{560_000, 290_000, 150_000}) {
		t.Fatalf("parsePPMList: %v %v", got, err)
	}
	if s := ppmList(got); s != "56,29,15" {
		t.Fatalf("ppmList: %q", s)
	}
	for _, bad := range []string{"50,40", "60,50,-10", "x", "100,"} {
		if _, err := parsePPMList(bad); err == nil {
			t.Errorf("parsePPMList(%q) accepted", bad)
		}
	}
}
