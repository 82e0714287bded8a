package node

import "testing"

// TestListenAddrsAccepted: the address forms operators use pass the start's
// listener check.
func TestListenAddrsAccepted(t *testing.T) {
	for _, a := range []string{"[fe80::1%lo]:50001", ":50001", "0.0.0.0:50001", "[::]:50001", "localhost:50001", "127.0.0.1:0", "[::1]:http"} {
		if err := checkListenAddr(a); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
}

// TestNoListenFreesP2PAddress: with --nolisten no peer listener opens, so
// its default address is free for another listener.
func TestNoListenFreesP2PAddress(t *testing.T) {
	_, _, err := LoadConfig([]string{"--regtest", "-C", "/dev/null", "--datadir=" + t.TempDir(), "--logdir=" + t.TempDir(),
		"--nolisten", "--electrumindex", "--electrumlisten=:18444"})
	if err != nil {
		t.Errorf("refused: %v", err)
	}
}
