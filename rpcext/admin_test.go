package rpcext

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/txscript/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// recordingAdmin is an ElectrumAdmin that records what it is asked; the
// node's own (over a real Electrum server) is tested in package node.
type recordingAdmin struct {
	mu           sync.Mutex
	scriptHashes []string
	closed       []uint64
}

func (a *recordingAdmin) Sessions() []ElectrumSession { return nil }

func (a *recordingAdmin) DisconnectSession(id uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id != 7 {
		return ErrNoSession
	}
	a.closed = append(a.closed, id)
	return nil
}

func (a *recordingAdmin) ScriptHashInfo(sh string) (*ScriptHashInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.scriptHashes = append(a.scriptHashes, sh)
	return &ScriptHashInfo{ScriptHash: sh}, nil
}

func (a *recordingAdmin) ReloadTLS() (*TLSCertificate, error) { return &TLSCertificate{}, nil }

// TestAdminCommands checks the server side of the operator's Electrum commands: an address becomes the script hash Electrum wallets use, a 64-digit hex hash passes as is, anything else is an invalid parameter; an empty session list is [] and an unknown session id an invalid parameter; the commands are refused without an Electrum server and on a server without credentials.
func TestAdminCommands(t *testing.T) {
	node := newTestNode(t)
	admin := &recordingAdmin{}
	ts := startServer(t, node, func(c *Config) { c.ElectrumAdmin = admin })

	addr, _ := newAddress(t, node)
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	want := indexers.ScriptHashFromScript(script).String()
	for _, arg := range []string{addr.EncodeAddress(), want} {
		r := ts.call(t, `{"method":"getscripthashinfo","params":["`+arg+`"],"id":1}`)
		var info ScriptHashInfo
		if r.Error != nil || json.Unmarshal(r.Result, &info) != nil || info.ScriptHash != want {
			t.Fatalf("getscripthashinfo %s: %+v %s", arg, r.Error, r.Result)
		}
	}
	for _, bad := range []string{"nonsense", "1BoatSLRHtKNngkdXEeobR76b53LETtpyT", strings.Repeat("ab", 31)} {
		if r := ts.call(t, `{"method":"getscripthashinfo","params":["`+bad+`"],"id":1}`); r.Error == nil || !strings.Contains(r.Error.Message, "Not a script hash") {
			t.Fatalf("getscripthashinfo %s: %+v", bad, r.Error)
		}
	}

	if r := ts.call(t, `{"method":"getelectrumsessions","params":[],"id":1}`); r.Error != nil || string(r.Result) != "[]" {
		t.Fatalf("getelectrumsessions: %+v %s", r.Error, r.Result)
	}
	if r := ts.call(t, `{"method":"disconnectelectrumsession","params":[7],"id":1}`); r.Error != nil || string(r.Result) != "null" {
		t.Fatalf("disconnectelectrumsession 7: %+v %s", r.Error, r.Result)
	}
	if r := ts.call(t, `{"method":"disconnectelectrumsession","params":[8],"id":1}`); r.Error == nil || !strings.Contains(r.Error.Message, "No Electrum session") {
		t.Fatalf("disconnectelectrumsession 8: %+v", r.Error)
	}
	if r := ts.call(t, `{"method":"help","params":["getscripthashinfo"],"id":1}`); r.Error != nil || !strings.Contains(string(r.Result), "wallets see it") {
		t.Fatalf("help getscripthashinfo: %+v %s", r.Error, r.Result)
	}

	noElectrum := startServer(t, node, nil)
	if r := noElectrum.call(t, `{"method":"getelectrumsessions","params":[],"id":1}`); r.Error == nil || !strings.Contains(r.Error.Message, "--electrumindex") {
		t.Fatalf("without an Electrum server: %+v", r.Error)
	}
	noAuth := startServer(t, node, func(c *Config) {
		c.ElectrumAdmin, c.User, c.Pass, c.DisableTLS = admin, "", "", true
	})
	if r := noAuth.call(t, `{"method":"reloadelectrumtls","params":[],"id":1}`); r.Error == nil || !strings.Contains(r.Error.Message, "credentials") {
		t.Fatalf("without credentials: %+v", r.Error)
	}
}
