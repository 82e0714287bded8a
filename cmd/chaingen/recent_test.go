package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/internal/chaingen"
)

// TestRecentRounds: -recent is a percentage turned into parts per million
// by rounding, as -inputs' are: 0.57 × 10^4 is 5699.999… in float64, and
// the chain gets 5,700.
func TestRecentRounds(t *testing.T) {
	out := t.TempDir()
	defer func(fs *flag.FlagSet, args []string) { flag.CommandLine, os.Args = fs, args }(flag.CommandLine, os.Args)
	flag.CommandLine = flag.NewFlagSet("chaingen", flag.ContinueOnError)
	os.Args = []string{"chaingen", "-out", out, "-txs", "10", "-quiet", "-recent", "0.57"}
	stdout := os.Stdout
	os.Stdout, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	err := run()
	os.Stdout = stdout
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, chaingen.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s chaingen.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.Shape.RecentPPM != 5_700 {
		t.Errorf("-recent 0.57 gave RecentPPM %d, want 5700", s.Shape.RecentPPM)
	}
}
