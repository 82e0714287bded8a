package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/node"
)

// As btcctl takes notls from btcd's config file with the credentials, ctl
// takes it from the node's: a node run with notls=1 on loopback is reached
// over plain HTTP without --notls.
func TestCtlNoTLSFromNodeConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := node.DefaultConfig()
	cfg.RegressionTest = true
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.LogDir = filepath.Join(dir, "logs")
	cfg.ConfigFile = filepath.Join(dir, "none.conf")
	cfg.Listeners = []string{"127.0.0.1:0"}
	cfg.RPCListeners = []string{"127.0.0.1:0"}
	cfg.RPCUser, cfg.RPCPass = "operator", "secret"
	cfg.DisableTLS = true // notls=1, on loopback
	cfg.UtxoCacheMaxSizeMiB = 1
	cfg.DisableDNSSeed = true
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		n.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })

	// The node's config file, as the operator wrote it.
	nodeConf := filepath.Join(dir, "btcd-electrum.conf")
	content := "[Application Options]\nrpcuser=operator\nrpcpass=secret\nnotls=1\nrpclisten=" + n.RPCAddrs()[0].String() + "\n"
	if err := os.WriteFile(nodeConf, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	oldCtl, oldNode, oldCert := defaultConfigFile, defaultNodeConfigFile, defaultRPCCertFile
	t.Cleanup(func() { defaultConfigFile, defaultNodeConfigFile, defaultRPCCertFile = oldCtl, oldNode, oldCert })
	defaultConfigFile = filepath.Join(dir, "no-ctl-config", "btcd-electrum-ctl.conf")
	defaultNodeConfigFile = nodeConf
	defaultRPCCertFile = filepath.Join(dir, "no-rpc-cert", "rpc.cert") // notls: no certificate exists

	out, err := ctl(t, "--regtest", "-s", n.RPCAddrs()[0].String(), "getblockcount")
	if err != nil || out != "0\n" {
		t.Fatalf("getblockcount against a node whose config file says notls=1: %q, %v", out, err)
	}
}
