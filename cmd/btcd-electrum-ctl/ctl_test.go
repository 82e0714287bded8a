package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/txscript/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/node"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// miningAddr is a regtest address the test node mines to.
const miningAddr = "bcrt1ql3e9pgs3mmwuwrh95fecme0s0qtn2880hlwwpw"

// startNode runs a regtest node with the Electrum index and a TLS RPC
// server whose certificate it creates in dir.
func startNode(t *testing.T, dir string) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.RegressionTest = true
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.LogDir = filepath.Join(dir, "logs")
	cfg.ConfigFile = filepath.Join(dir, "none.conf")
	cfg.Listeners = []string{"127.0.0.1:0"}
	cfg.RPCListeners = []string{"127.0.0.1:0"}
	cfg.RPCUser, cfg.RPCPass = "operator", "secret"
	cfg.RPCCert = filepath.Join(dir, "rpc.cert")
	cfg.RPCKey = filepath.Join(dir, "rpc.key")
	cfg.MiningAddrs = []string{miningAddr}
	cfg.UtxoCacheMaxSizeMiB = 1
	cfg.DisableDNSSeed = true
	cfg.ElectrumIndex = true
	cfg.ElectrumListeners = []string{"127.0.0.1:0"}
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		n.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	return n
}

// ctl runs the command in-process and returns what it printed.
func ctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(args, strings.NewReader(""), &out)
	return out.String(), err
}

// TestCtlAgainstNode sends btcd's commands and the Electrum commands to a real node over TLS with btcctl's flags and a config file.
func TestCtlAgainstNode(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	if _, err := n.Generate(2, nil); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "ctl.conf")
	if err := os.WriteFile(conf, []byte("rpcuser=operator\nrpcpass=secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"-C", conf, "--regtest", "-s", n.RPCAddrs()[0].String(), "-c", filepath.Join(dir, "rpc.cert")}
	must := func(args ...string) string {
		t.Helper()
		out, err := ctl(t, append(base, args...)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}

	if out := must("getblockcount"); out != "2\n" {
		t.Fatalf("getblockcount printed %q", out)
	}
	// The index follows the chain in a writer of its own: it reaches
	// height 2 soon after the chain.
	var info rpcext.ElectrumInfo
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if err := json.Unmarshal([]byte(must("getelectruminfo")), &info); err != nil {
			t.Fatalf("getelectruminfo: %v", err)
		}
		if info.IndexHeight == 2 && info.ChainHeight == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("getelectruminfo: %+v", info)
		}
	}

	// A wallet session, seen and closed by the operator.
	c, err := net.Dial("tcp", n.ElectrumAddrs()[electrum.TCP][0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintln(c, `{"id":1,"method":"server.version","params":["BlueWallet","1.4"]}`)
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	var sessions []rpcext.ElectrumSession
	if err := json.Unmarshal([]byte(must("getelectrumsessions")), &sessions); err != nil || len(sessions) != 1 || sessions[0].ClientName != "BlueWallet" {
		t.Fatalf("getelectrumsessions: %+v, %v", sessions, err)
	}
	var sh rpcext.ScriptHashInfo
	if err := json.Unmarshal([]byte(must("getscripthashinfo", miningAddr)), &sh); err != nil || sh.HistoryLength != 2 {
		t.Fatalf("getscripthashinfo: %+v, %v", sh, err)
	}
	addr, _ := address.DecodeAddress(miningAddr, &chaincfg.RegressionNetParams)
	script, _ := txscript.PayToAddrScript(addr)
	if sh.ScriptHash != indexers.ScriptHashFromScript(script).String() {
		t.Fatalf("script hash %s", sh.ScriptHash)
	}
	if out := must("disconnectelectrumsession", fmt.Sprint(sessions[0].ID)); out != "" {
		t.Fatalf("disconnectelectrumsession printed %q", out)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("session still open")
	}
	if _, err := ctl(t, append(base, "reloadelectrumtls")...); err == nil || !strings.Contains(err.Error(), "no TLS") {
		t.Fatalf("reloadelectrumtls without a TLS listener: %v", err)
	}

	// Refusals: wrong password, unknown command, bad parameter.
	if _, err := ctl(t, append(base, "-P", "wrong", "getblockcount")...); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := ctl(t, append(base, "nosuchcommand")...); err == nil || !strings.Contains(err.Error(), "unrecognized") {
		t.Fatalf("unknown command: %v", err)
	}
	if _, err := ctl(t, append(base, "disconnectelectrumsession", "x")...); err == nil || !strings.Contains(err.Error(), "Usage") {
		t.Fatalf("bad parameter: %v", err)
	}

	// Through a SOCKS5 proxy (as to a node behind Tor).
	proxy := startSOCKS5(t)
	if out := must("--proxy", proxy, "--proxyuser", "u", "--proxypass", "p", "getblockcount"); out != "2\n" {
		t.Fatalf("getblockcount through the proxy printed %q", out)
	}
	// The proxy is really in the path: it refuses other credentials.
	if _, err := ctl(t, append(base, "--proxy", proxy, "--proxyuser", "u", "--proxypass", "wrong", "getblockcount")...); err == nil {
		t.Fatal("the proxy's refusal did not fail the command")
	}
}

// TestCtlListCommands checks that -l lists btcd's commands and the Electrum ones, and leaves out the websocket-only ones
// and those the node does not serve: the wallet's and bitcoind's, which btcjson also knows.
func TestCtlListCommands(t *testing.T) {
	out, err := ctl(t, "-l")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"getblockcount", "getelectruminfo", "getelectrumsessions", "disconnectelectrumsession id", "getscripthashinfo \"scripthashoraddress\"", "reloadelectrumtls"} {
		if !strings.Contains(out, want) {
			t.Errorf("-l does not list %q", want)
		}
	}
	if strings.Contains(out, "notifyblocks") {
		t.Error("-l lists a websocket-only command")
	}
	for _, unserved := range []string{"getbalance", "sendtoaddress", "walletpassphrase", "getblockstats", "submitpackage", "gettxoutproof"} {
		if strings.Contains(out, unserved+" ") || strings.Contains(out, unserved+"\n") {
			t.Errorf("-l lists %s, which the node does not serve", unserved)
		}
	}
}

// startSOCKS5 runs a minimal SOCKS5 proxy that requires username u and
// password p, and returns its address.
func startSOCKS5(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serveSOCKS5(c)
		}
	}()
	return l.Addr().String()
}

// serveSOCKS5 handles one proxied connection.
func serveSOCKS5(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 512)
	// Greeting: version, number of methods, methods; username and
	// password (2) must be among them.
	if _, err := io.ReadFull(c, buf[:2]); err != nil || buf[0] != 5 {
		return
	}
	methods := make([]byte, buf[1])
	if _, err := io.ReadFull(c, methods); err != nil || !bytes.Contains(methods, []byte{2}) {
		return
	}
	c.Write([]byte{5, 2})
	io.ReadFull(c, buf[:2])
	user := make([]byte, buf[1])
	io.ReadFull(c, user)
	io.ReadFull(c, buf[:1])
	pass := make([]byte, buf[0])
	io.ReadFull(c, pass)
	if string(user) != "u" || string(pass) != "p" {
		c.Write([]byte{1, 1})
		return
	}
	c.Write([]byte{1, 0})
	io.ReadFull(c, buf[:4])
	var host string
	switch buf[3] {
	case 1:
		io.ReadFull(c, buf[:4])
		host = net.IP(buf[:4]).String()
	case 3:
		io.ReadFull(c, buf[:1])
		name := make([]byte, buf[0])
		io.ReadFull(c, name)
		host = string(name)
	default:
		return
	}
	io.ReadFull(c, buf[:2])
	target, err := net.Dial("tcp", net.JoinHostPort(host, fmt.Sprint(binary.BigEndian.Uint16(buf[:2]))))
	if err != nil {
		c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer target.Close()
	c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	go io.Copy(target, c)
	io.Copy(c, target)
}
