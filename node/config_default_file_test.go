package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// useDefaultConfigFile makes path the node's default config file for the
// test.
func useDefaultConfigFile(t *testing.T, path string) {
	old := defaultConfigFile
	defaultConfigFile = path
	t.Cleanup(func() { defaultConfigFile = old })
}

// -C naming the default path is still -C: on regtest, where the default
// file is not read, the file named is.
func TestConfigFileNamedAtDefaultPath(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "btcd-electrum.conf")
	useDefaultConfigFile(t, conf)
	if err := os.WriteFile(conf, []byte("electrumindex=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := "--datadir=" + filepath.Join(t.TempDir(), "data")
	cfg, _, err := LoadConfig([]string{"--regtest", data, "-C", conf})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.ElectrumIndex {
		t.Error("-C naming the default path on regtest: the file was not read")
	}
	cfg, _, err = LoadConfig([]string{"--regtest", data})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ElectrumIndex {
		t.Error("regtest without -C read the default config file")
	}
}

// A default config file that is missing is passed over; one that is there
// but cannot be read stops the start with its path, rather than leaving the
// operator's options silently unapplied.
func TestDefaultConfigFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "btcd-electrum.conf")
	useDefaultConfigFile(t, conf)
	data := "--datadir=" + filepath.Join(dir, "data")
	if _, _, err := LoadConfig([]string{"--testnet", data}); err != nil {
		t.Fatalf("a missing default config file: %v", err)
	}

	// A directory where the file should be: it opens, and reads fail.
	if err := os.Mkdir(conf, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadConfig([]string{"--testnet", data}); err == nil || !strings.Contains(err.Error(), conf) {
		t.Errorf("a default config path that cannot be read: %v, want an error naming it", err)
	}
	if err := os.Remove(conf); err != nil {
		t.Fatal(err)
	}

	if os.Geteuid() == 0 {
		return // root reads a file of any mode
	}
	if err := os.WriteFile(conf, []byte("electrumindex=1\n"), 0o000); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadConfig([]string{"--testnet", data}); err == nil || !strings.Contains(err.Error(), conf) {
		t.Errorf("a default config file of mode 0: %v, want an error naming it", err)
	}
}
