package node

import (
	"net"
	"path/filepath"
	"testing"
)

// Loading the options binds no address: --debuglevel=show, with the config
// file of a node that runs and holds its addresses, lists the subsystems.
// The binary checks that the addresses are free only when the node is to
// run (Config.CheckListenersFree).
func TestLoadConfigBindsNothing(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	dir := t.TempDir()
	conf := writeConfigFile(t, "electrumindex=1\nelectrumlisten="+held.Addr().String()+"\n")
	cfg, _, err := LoadConfig([]string{conf, "--regtest", "--datadir=" + filepath.Join(dir, "data"),
		"--logdir=" + filepath.Join(dir, "logs"), "--debuglevel=show"})
	if err != nil {
		t.Fatalf("--debuglevel=show with the running node's config file: %v", err)
	}
	if cfg.DebugLevel != "show" {
		t.Fatalf("debuglevel %q", cfg.DebugLevel)
	}
}

// A profile may be written into the log directory on a first start: the
// binary creates <logdir>/<net> before it creates the profile files.
func TestProfileInLogDirOnFirstStart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, false)
	cfg.CPUProfile = filepath.Join(cfg.LogDir, "cpu.prof")
	cfg.MemoryProfile = filepath.Join(cfg.LogDir, "regtest", "mem.prof")
	if err := cfg.Normalize(); err != nil {
		t.Fatalf("a profile in the log directory, which the binary creates before the profile: %v", err)
	}
}
