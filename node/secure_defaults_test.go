package node

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	flags "github.com/jessevdk/go-flags"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// TestRPCDefaultsLoopbackWithCredentials checks the RPC server's defaults
// as the binary loads them: without credentials there is no RPC server;
// with them it listens on loopback only (every address "localhost"
// resolves to is loopback) and over TLS.
func TestRPCDefaultsLoopbackWithCredentials(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--regtest", "--datadir=" + filepath.Join(dir, "data"), "--logdir=" + filepath.Join(dir, "logs")}
	cfg, _, err := LoadConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.DisableRPC {
		t.Fatal("RPC server enabled without credentials")
	}
	cfg, _, err = LoadConfig(append(base, "--rpcuser=u", "--rpcpass=p"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DisableRPC || cfg.DisableTLS {
		t.Fatalf("RPC with credentials: disabled %v, TLS off %v", cfg.DisableRPC, cfg.DisableTLS)
	}
	if len(cfg.RPCListeners) == 0 {
		t.Fatal("no RPC listeners")
	}
	for _, addr := range cfg.RPCListeners {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		ips, err := net.LookupIP(host)
		if err != nil {
			t.Fatal(err)
		}
		for _, ip := range ips {
			if !ip.IsLoopback() {
				t.Errorf("default RPC listener %s resolves to %s, not loopback", addr, ip)
			}
		}
	}
}

// secureNode starts a node with the RPC server over TLS and the Electrum
// server on all four transports, throttling off (the test sends many
// erroneous requests on purpose).
func secureNode(t *testing.T) *Node {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.DisableTLS = false
	cfg.RPCCert, cfg.RPCKey = filepath.Join(dir, "rpc.cert"), filepath.Join(dir, "rpc.key")
	cfg.ElectrumTLSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumWSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumWSSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumCert, cfg.ElectrumKey = filepath.Join(dir, "e.cert"), filepath.Join(dir, "e.key")
	cfg.Electrum.CostHardLimit = -1
	return startNode(t, cfg)
}

// TestTLSVersions checks that the Electrum TLS and WSS listeners and the
// RPC server complete a handshake with TLS 1.2 and 1.3 and refuse a client
// that offers at most TLS 1.1 or 1.0.
func TestTLSVersions(t *testing.T) {
	n := secureNode(t)
	addrs := map[string]string{
		"electrum tls": n.ElectrumAddrs()[electrum.TLS][0].String(),
		"electrum wss": n.ElectrumAddrs()[electrum.WSS][0].String(),
		"rpc":          n.RPCAddrs()[0].String(),
	}
	for name, addr := range addrs {
		for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13} {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: testWait}, "tcp", addr, &tls.Config{
				InsecureSkipVerify: true, MinVersion: v, MaxVersion: v,
			})
			if c != nil {
				c.Close()
			}
			ok := v >= tls.VersionTLS12
			if (err == nil) != ok {
				t.Errorf("%s with %s only: handshake error %v, want success %v", name, tls.VersionName(v), err, ok)
			}
		}
	}
}

// TestRPCRequiresCredentials sends requests to a node's RPC server without
// credentials and with wrong ones: each is answered 401, over HTTP and on
// the websocket endpoint; the right ones are served.
func TestRPCRequiresCredentials(t *testing.T) {
	n := secureNode(t)
	base := "https://" + n.RPCAddrs()[0].String()
	hc := &http.Client{Timeout: testWait, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, tc := range []struct {
		user, pass string
		want       int
	}{{"", "", http.StatusUnauthorized}, {"user", "wrong", http.StatusUnauthorized},
		{"wrong", "pass", http.StatusUnauthorized}, {"user", "pass", http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(`{"jsonrpc":"1.0","id":1,"method":"getblockcount","params":[]}`))
		if tc.user != "" {
			req.SetBasicAuth(tc.user, tc.pass)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("credentials %q/%q: status %d, want %d", tc.user, tc.pass, resp.StatusCode, tc.want)
		}
	}
	// The websocket endpoint: wrong HTTP credentials get 401; without
	// any, as in btcd, the first message must be authenticate with the
	// right ones; anything else gets an error and ends the connection.
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, HandshakeTimeout: testWait}
	wsURL := "wss://" + n.RPCAddrs()[0].String() + "/ws"
	bad := http.Header{"Authorization": {"Basic dXNlcjp3cm9uZw=="}} // user:wrong
	if c, resp, err := d.Dial(wsURL, bad); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		if c != nil {
			c.Close()
		}
		t.Errorf("websocket with wrong credentials: %v %v, want 401", resp, err)
	}
	for _, first := range []string{
		`{"jsonrpc":"1.0","id":1,"method":"getblockcount","params":[]}`,
		`{"jsonrpc":"1.0","id":1,"method":"authenticate","params":["user","wrong"]}`,
	} {
		c, _, err := d.Dial(wsURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(testWait))
		if err := c.WriteMessage(websocket.TextMessage, []byte(first)); err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			_, msg, err := c.ReadMessage()
			if err != nil {
				break
			}
			var reply struct{ Result json.RawMessage }
			if json.Unmarshal(msg, &reply) != nil || (reply.Result != nil && string(reply.Result) != "null") || i > 0 {
				t.Errorf("unauthenticated websocket sent %s: answered %s, want an error and the connection closed", first, msg)
				break
			}
		}
		c.Close()
	}
}

// electrumTransportClient sends one request and reads one answer over an
// Electrum transport.
type electrumTransportClient interface {
	roundTrip(req []byte) ([]byte, error)
	Close() error
}

// lineTransport is TCP or TLS: newline-delimited.
type lineTransport struct {
	net.Conn
	r *bufio.Reader
}

func (c *lineTransport) roundTrip(req []byte) ([]byte, error) {
	c.SetDeadline(time.Now().Add(testWait))
	if _, err := c.Write(append(req, '\n')); err != nil {
		return nil, err
	}
	return c.r.ReadBytes('\n')
}

// wsTransport is WS or WSS: one message per frame.
type wsTransport struct{ *websocket.Conn }

func (c wsTransport) roundTrip(req []byte) ([]byte, error) {
	c.SetReadDeadline(time.Now().Add(testWait))
	if err := c.WriteMessage(websocket.TextMessage, req); err != nil {
		return nil, err
	}
	_, b, err := c.ReadMessage()
	return b, err
}

// TestOperatorMethodsNotOnElectrumPorts sends every method of the node's
// RPC server (btcd's, the Electrum operator's: getelectrumsessions,
// disconnectelectrumsession, reloadelectrumtls, verifyelectrumindex, stop,
// generate, ...) to each Electrum transport, as a negotiated client: each is
// answered "unknown method" (-32601), and the session still serves.
func TestOperatorMethodsNotOnElectrumPorts(t *testing.T) {
	n := secureNode(t)
	addrs := n.ElectrumAddrs()
	tlsConf := &tls.Config{InsecureSkipVerify: true}
	dial := map[electrum.Transport]func() (electrumTransportClient, error){
		electrum.TCP: func() (electrumTransportClient, error) {
			c, err := net.DialTimeout("tcp", addrs[electrum.TCP][0].String(), testWait)
			if err != nil {
				return nil, err
			}
			return &lineTransport{Conn: c, r: bufio.NewReader(c)}, nil
		},
		electrum.TLS: func() (electrumTransportClient, error) {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: testWait}, "tcp", addrs[electrum.TLS][0].String(), tlsConf)
			if err != nil {
				return nil, err
			}
			return &lineTransport{Conn: c, r: bufio.NewReader(c)}, nil
		},
		electrum.WS: func() (electrumTransportClient, error) {
			c, _, err := websocket.DefaultDialer.Dial("ws://"+addrs[electrum.WS][0].String(), nil)
			return wsTransport{c}, err
		},
		electrum.WSS: func() (electrumTransportClient, error) {
			d := websocket.Dialer{TLSClientConfig: tlsConf, HandshakeTimeout: testWait}
			c, _, err := d.Dial("wss://"+addrs[electrum.WSS][0].String(), nil)
			return wsTransport{c}, err
		},
	}
	names := rpcext.MethodNames()
	if len(names) < 50 {
		t.Fatalf("only %d RPC methods", len(names))
	}
	for tr, open := range dial {
		c, err := open()
		if err != nil {
			t.Fatalf("%s: %v", tr, err)
		}
		defer c.Close()
		if _, err := c.roundTrip([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["test","1.4"]}`)); err != nil {
			t.Fatalf("%s: server.version: %v", tr, err)
		}
		for i, name := range append(names, "server.ping") {
			req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": name, "params": []any{}})
			b, err := c.roundTrip(req)
			if err != nil {
				t.Fatalf("%s: %s: %v", tr, name, err)
			}
			var resp struct {
				ID    int `json:"id"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &resp); err != nil || resp.ID != i+1 {
				t.Fatalf("%s: %s: answer %q (%v)", tr, name, b, err)
			}
			if name == "server.ping" {
				if resp.Error != nil {
					t.Fatalf("%s: the session stopped serving: %s", tr, b)
				}
				continue
			}
			if resp.Error == nil || resp.Error.Code != -32601 {
				t.Errorf("%s: operator method %s answered %s, want -32601", tr, name, b)
			}
		}
	}
}

// limitFlags are the options that bound what clients may make the node
// do: the Electrum server's limits and the RPC server's.
var limitFlags = []string{
	"electrummaxsessions", "electrummaxsessionsperip", "electrummaxrecv", "electrummaxsend",
	"electrummaxsendbacklog", "electrumwritetimeout", "electrumrequesttimeout", "electrumidletimeout",
	"electrummaxbatch", "electrummaxsubspersession", "electrummaxsubsperip", "electrummaxsubs",
	"electrumconcurrency", "electrumworkers", "electrumcostsoftlimit", "electrumcosthardlimit", "electrumrequestsleep",
	"electrumbandwidthunit", "electrumanswercache", "electrumexemptnets", "electrumthrottleexempt",
	"rpcmaxclients", "rpcmaxconcurrentreqs", "rpcmaxwebsockets", "rpcmaxrequestbytes", "rpcmaxbatch",
	"maxpeers", "banthreshold", "banduration", "maxorphantx", "esploramaxconnections",
}

// TestLimitsDocumented checks that every limit is an option with a default
// and that docs/OPERATIONS.md's "Secure defaults and limits" table lists it
// with that default. Every field of the Electrum limits group must be in
// limitFlags (or be one of its two texts), so a new limit cannot be added
// without a row.
func TestLimitsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## Secure defaults and limits")
	if start < 0 {
		t.Fatal(`docs/OPERATIONS.md has no "Secure defaults and limits" section`)
	}
	section := doc[start+3:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	rows := map[string][]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z0-9]+)` \\|(.*)$").FindAllStringSubmatch(section, -1) {
		rows[m[1]] = strings.Split(m[2], "|")
	}

	listed := map[string]bool{}
	for _, name := range limitFlags {
		listed[name] = true
	}
	lt := reflect.TypeOf(ElectrumLimits{})
	for i := 0; i < lt.NumField(); i++ {
		name := lt.Field(i).Tag.Get("long")
		if name != "" && !listed[name] && name != "electrumbanner" && name != "electrumdonationaddress" {
			t.Errorf("Electrum option --%s is not in limitFlags", name)
		}
	}

	parser := flags.NewParser(DefaultConfig(), flags.None)
	defaultIn := regexp.MustCompile(`\(default ([^;)]+)`)
	for _, name := range limitFlags {
		o := parser.FindOptionByLongName(name)
		if o == nil {
			t.Errorf("limit --%s is not an option", name)
			continue
		}
		// The default: the description's for the Electrum limits (zero
		// there means the server's default), the value otherwise.
		def := fmt.Sprint(o.Value())
		if list, ok := o.Value().([]string); ok {
			def = strings.Join(list, ",")
		}
		if m := defaultIn.FindStringSubmatch(o.Description); m != nil {
			def = m[1]
		} else if v := reflect.ValueOf(o.Value()); v.IsZero() {
			t.Errorf("limit --%s has no default", name)
			continue
		}
		row, ok := rows[name]
		if !ok {
			t.Errorf("limit --%s is not in the table", name)
			continue
		}
		if len(row) < 4 {
			t.Errorf("row of --%s: want default, what it limits, what happens when exceeded", name)
			continue
		}
		if !strings.Contains(row[0], "`"+def+"`") {
			t.Errorf("row of --%s gives the default %q, want `%s`", name, strings.TrimSpace(row[0]), def)
		}
	}
}
