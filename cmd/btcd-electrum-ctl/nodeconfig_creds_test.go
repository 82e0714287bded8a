package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/node"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// OPERATIONS.md, Administration: "its config file
// ~/.btcd-electrum-ctl/btcd-electrum-ctl.conf (rpcuser=, rpcpass=, ...;
// when it does not exist the credentials are read from the node's config
// file)". The node reads its config file as an INI file in which a value
// may be quoted (rpcpass="..."), so the node's own credentials must work.
func TestCtlCredentialsFromNodeConfig(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir) // operator / secret
	nodeConf := filepath.Join(dir, "btcd-electrum.conf")
	content := "[Application Options]\nrpcuser=operator\nrpcpass=\"secret\"\n"
	if err := os.WriteFile(nodeConf, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	// The node itself reads that file as rpcuser operator, rpcpass secret.
	ncfg, _, err := node.LoadConfig([]string{"--configfile=" + nodeConf, "--regtest",
		"--datadir=" + filepath.Join(dir, "x"), "--logdir=" + filepath.Join(dir, "xl")})
	if err != nil {
		t.Fatal(err)
	}
	if ncfg.RPCUser != "operator" || ncfg.RPCPass != "secret" {
		t.Fatalf("the node reads rpcuser %q rpcpass %q", ncfg.RPCUser, ncfg.RPCPass)
	}

	oldCtl, oldNode := defaultConfigFile, defaultNodeConfigFile
	t.Cleanup(func() { defaultConfigFile, defaultNodeConfigFile = oldCtl, oldNode })
	defaultConfigFile = filepath.Join(dir, "no-ctl-config", "btcd-electrum-ctl.conf")
	defaultNodeConfigFile = nodeConf

	out, err := ctl(t, "--regtest", "-s", n.RPCAddrs()[0].String(), "-c", filepath.Join(dir, "rpc.cert"), "getblockcount")
	if err != nil || out != "0\n" {
		t.Fatalf("getblockcount with the node's config file's credentials (%q): %q, %v", content, out, err)
	}
}

// The errors an operator meets: node down, wrong credentials, the RPC
// certificate missing, and a parameter read from stdin ("-").
func TestCtlErrorsAndStdin(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	conf := filepath.Join(dir, "ctl.conf")
	if err := os.WriteFile(conf, []byte("rpcuser=operator\nrpcpass=secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := n.RPCAddrs()[0].String()
	base := []string{"-C", conf, "--regtest", "-s", addr, "-c", filepath.Join(dir, "rpc.cert")}

	// A parameter from stdin.
	var out bytes.Buffer
	if err := run(append(base, "getscripthashinfo", "-"), strings.NewReader(miningAddr+"\n"), &out); err != nil {
		t.Fatalf("getscripthashinfo -: %v", err)
	}
	var info rpcext.ScriptHashInfo
	if err := json.Unmarshal(out.Bytes(), &info); err != nil || info.ScriptHash == "" {
		t.Fatalf("getscripthashinfo -: %q %v", out.String(), err)
	}
	// verifyelectrumindex and its status.
	for _, args := range [][]string{{"verifyelectrumindex"}, {"verifyelectrumindex", "status"}} {
		o, err := ctl(t, append(base, args...)...)
		var v rpcext.VerifyIndexInfo
		if err != nil || json.Unmarshal([]byte(o), &v) != nil || v.Started == 0 {
			t.Errorf("%v: %q %v", args, o, err)
		}
	}
	if o, err := ctl(t, "-V"); err != nil || !strings.Contains(o, "version") {
		t.Errorf("-V: %q %v", o, err)
	}

	// Node down.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	down := l.Addr().String()
	l.Close()
	if _, err := ctl(t, "-C", conf, "--regtest", "-s", down, "-c", filepath.Join(dir, "rpc.cert"), "getblockcount"); err == nil ||
		!strings.Contains(err.Error(), down) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("node down: %v", err)
	}
	// Wrong credentials.
	if _, err := ctl(t, append(base, "-u", "operator", "-P", "nope", "getelectruminfo")...); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong credentials: %v", err)
	}
	// Certificate missing.
	missing := filepath.Join(dir, "nope", "rpc.cert")
	if _, err := ctl(t, "-C", conf, "--regtest", "-s", addr, "-c", missing, "getblockcount"); err == nil ||
		!strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--rpccert") {
		t.Errorf("certificate missing: %v", err)
	}
	// Certificate of another server.
	other := filepath.Join(t.TempDir(), "other")
	startNode(t, other)
	if _, err := ctl(t, "-C", conf, "--regtest", "-s", addr, "-c", filepath.Join(other, "rpc.cert"), "getblockcount"); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("certificate of another server: %v", err)
	}
}
