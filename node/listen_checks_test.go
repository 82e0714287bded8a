package node

import (
	"strings"
	"testing"
)

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

// TestOverlappingListenersRefused: two listeners that cannot both bind are
// refused at start with both options named, however their addresses are
// spelled; listeners on one port but distinct addresses are not.
func TestOverlappingListenersRefused(t *testing.T) {
	load := func(args ...string) error {
		_, _, err := LoadConfig(append([]string{"--regtest", "-C", "/dev/null", "--datadir=" + t.TempDir(),
			"--logdir=" + t.TempDir(), "--nolisten", "--electrumindex"}, args...))
		return err
	}
	for _, args := range [][]string{
		{"--electrumlisten=localhost:51147", "--electrumwslisten=127.0.0.1:51147"},
		{"--esploralisten=:51148", "--metricslisten=127.0.0.1:51148"},
		{"--electrumlisten=127.0.0.1:51149", "--electrumtlslisten=0.0.0.0:51149"},
		{"--electrumlisten=[::1]:51150", "--electrumwsslisten=[::]:51150"},
		{"--electrumlisten=127.0.0.1:51151", "--esploralisten=[::ffff:127.0.0.1]:51151"},
	} {
		err := load(args...)
		first, second := strings.SplitN(args[0], "=", 2)[0], strings.SplitN(args[1], "=", 2)[0]
		if err == nil || !strings.Contains(err.Error(), first) || !strings.Contains(err.Error(), second) {
			t.Errorf("%v: %v, want both options named", args, err)
		}
	}
	for _, args := range [][]string{
		{"--electrumlisten=127.0.0.1:51152", "--electrumwslisten=127.0.0.2:51152"},
		{"--electrumlisten=127.0.0.1:51153", "--electrumwslisten=[::1]:51153"},
		{"--electrumlisten=:51154", "--electrumwslisten=:51155"},
	} {
		if err := load(args...); err != nil {
			t.Errorf("%v refused: %v", args, err)
		}
	}
}
