package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBtcdRefusedOptionCombinationsAreRefused: btcd v0.26.2's loadConfig
// refuses these combinations of its own options (config.go, with these
// messages), and so does the node, before anything is opened: a btcd
// config file btcd refuses must not start the node with part of it
// silently dropped (the stall handler off on mainnet, the --addpeer peers,
// the --onion proxy). LoadConfig is what the binary runs first.
func TestBtcdRefusedOptionCombinationsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name, btcd string
		args       []string
	}{{
		name: "nostalldetect on mainnet",
		btcd: "stall handler cannot be disabled on mainnet",
		args: []string{"--nostalldetect"},
	}, {
		name: "addpeer with connect",
		btcd: "the --addpeer and --connect options can not be mixed",
		args: []string{"--testnet", "--addpeer=192.0.2.1", "--connect=192.0.2.2"},
	}, {
		name: "noonion with onion",
		btcd: "the --noonion and --onion options may not be activated at the same time",
		args: []string{"--testnet", "--noonion", "--onion=127.0.0.1:9050"},
	}, {
		name: "nostalldetect on regtest",
		args: []string{"--regtest", "--nostalldetect"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"-C", os.DevNull, "--datadir=" + filepath.Join(dir, "data"),
				"--logdir=" + filepath.Join(dir, "logs")}, tc.args...)
			_, _, err := LoadConfig(args)
			switch {
			case tc.btcd == "" && err != nil:
				t.Errorf("%v is refused (%v); btcd v0.26.2 accepts it", tc.args, err)
			case tc.btcd != "" && err == nil:
				t.Errorf("%v is accepted; btcd v0.26.2 refuses it: %q", tc.args, tc.btcd)
			case tc.btcd != "" && !strings.Contains(err.Error(), tc.btcd):
				t.Errorf("%v is refused with %q; btcd v0.26.2 says %q", tc.args, err, tc.btcd)
			}
		})
	}
}
