package node

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// As btcd reads them, --rpcmaxwebsockets=0 and --rpcmaxclients=0 are limits
// of zero: every websocket client, and every HTTP request, is refused.
func TestRPCLimitZeroAsBtcd(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := LoadConfig([]string{"--regtest", "--datadir=" + filepath.Join(dir, "d"),
		"--logdir=" + filepath.Join(dir, "l"), "--rpcuser=u", "--rpcpass=p",
		"--rpcmaxwebsockets=0", "--rpcmaxclients=0"}); err != nil {
		t.Fatalf("--rpcmaxwebsockets=0 --rpcmaxclients=0 refused at start: %v", err)
	}

	cfg := testConfig(t, t.TempDir(), false)
	cfg.RPCMaxWebsockets = 0
	cfg.RPCMaxClients = 0
	n := startNode(t, cfg)
	addr := n.RPCAddrs()[0].String()

	auth := http.Header{"Authorization": {"Basic dXNlcjpwYXNz"}} // user:pass
	d := websocket.Dialer{HandshakeTimeout: testWait}
	if c, resp, err := d.Dial("ws://"+addr+"/ws", auth); err == nil {
		c.Close()
		t.Errorf("--rpcmaxwebsockets=0: websocket client accepted (status %d); btcd refuses every one", resp.StatusCode)
	}

	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/",
		strings.NewReader(`{"jsonrpc":"1.0","id":1,"method":"getblockcount","params":[]}`))
	req.SetBasicAuth("user", "pass")
	resp, err := (&http.Client{Timeout: testWait}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("--rpcmaxclients=0: HTTP request answered %d; btcd answers 503 to every one", resp.StatusCode)
	}
}
