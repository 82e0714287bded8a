package node

import (
	"context"
	"encoding/xml"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// igdDescription is a gateway's description: the WAN IP connection service
// two devices down, with a control URL relative to the description.
const igdDescription = `<?xml version="1.0"?>
<root xmlns="urn:schemas-upnp-org:device-1-0">
 <specVersion><major>1</major><minor>0</minor></specVersion>
 <device>
  <deviceType>urn:schemas-upnp-org:device:InternetGatewayDevice:1</deviceType>
  <serviceList><service>
   <serviceType>urn:schemas-upnp-org:service:Layer3Forwarding:1</serviceType>
   <controlURL>/l3f</controlURL>
  </service></serviceList>
  <deviceList>
   <device>
    <deviceType>urn:schemas-upnp-org:device:WANDevice:1</deviceType>
    <serviceList><service>
     <serviceType>urn:schemas-upnp-org:service:WANCommonInterfaceConfig:1</serviceType>
     <controlURL>/wancic</controlURL>
    </service></serviceList>
    <deviceList>
     <device>
      <deviceType>urn:schemas-upnp-org:device:WANConnectionDevice:1</deviceType>
      <serviceList>
       <service>
        <serviceType>urn:schemas-upnp-org:service:WANPPPConnection:1</serviceType>
        <controlURL>/ppp</controlURL>
       </service>
       <service>
        <serviceType>urn:schemas-upnp-org:service:WANIPConnection:1</serviceType>
        <controlURL>ctl/IPConn</controlURL>
       </service>
      </serviceList>
     </device>
    </deviceList>
   </device>
  </deviceList>
 </device>
</root>`

// soapCall is one SOAP action the fake gateway received.
type soapCall struct {
	action string
	args   map[string]string
}

// fakeIGD is an Internet Gateway Device for the tests: an SSDP responder on
// loopback and an HTTP server with the description and the control
// endpoint, which records every call.
type fakeIGD struct {
	ssdp       *net.UDPConn
	http       *httptest.Server
	externalIP string

	mu       sync.Mutex
	calls    []soapCall
	searches int
}

// startFakeIGD starts a fake gateway answering GetExternalIPAddress with
// externalIP.
func startFakeIGD(t *testing.T, externalIP string) *fakeIGD {
	t.Helper()
	g := &fakeIGD{externalIP: externalIP}
	mux := http.NewServeMux()
	mux.HandleFunc("/igd/desc.xml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		_, _ = io.WriteString(w, igdDescription)
	})
	mux.HandleFunc("/igd/ctl/IPConn", g.control)
	g.http = httptest.NewServer(mux)
	t.Cleanup(g.http.Close)

	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	g.ssdp = conn
	t.Cleanup(func() { _ = conn.Close() })
	go g.answerSearches()
	return g
}

// answerSearches answers each M-SEARCH for the gateway device: first with
// junk and an answer for another device, then with the description's
// location.
func (g *fakeIGD) answerSearches() {
	buf := make([]byte, 2048)
	for {
		n, from, err := g.ssdp.ReadFromUDP(buf)
		if err != nil {
			return
		}
		req := string(buf[:n])
		if !strings.HasPrefix(req, "M-SEARCH * HTTP/1.1\r\n") ||
			!strings.Contains(req, "\r\nST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n") {
			continue
		}
		g.mu.Lock()
		g.searches++
		g.mu.Unlock()
		_, _ = g.ssdp.WriteToUDP([]byte("\x00\xffgarbage"), from)
		_, _ = g.ssdp.WriteToUDP([]byte("HTTP/1.1 200 OK\r\nST: urn:schemas-upnp-org:device:MediaServer:1\r\n"+
			"LOCATION: http://127.0.0.1:1/nothing.xml\r\n\r\n"), from)
		_, _ = g.ssdp.WriteToUDP([]byte("HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=120\r\n"+
			"st: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n"+
			"USN: uuid:fake::urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n"+
			"Location: "+g.http.URL+"/igd/desc.xml\r\n\r\n"), from)
	}
}

// control serves the WAN IP connection service's SOAP actions.
func (g *fakeIGD) control(w http.ResponseWriter, r *http.Request) {
	const st = "urn:schemas-upnp-org:service:WANIPConnection:1"
	action := strings.Trim(r.Header.Get("SOAPAction"), `"`)
	if r.Method != http.MethodPost || !strings.HasPrefix(action, st+"#") {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	action = strings.TrimPrefix(action, st+"#")
	args, err := soapArgs(r.Body, action)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	g.calls = append(g.calls, soapCall{action, args})
	g.mu.Unlock()

	var out string
	switch action {
	case "AddPortMapping", "DeletePortMapping":
		out = "<u:" + action + "Response xmlns:u=\"" + st + "\"/>"
	case "GetExternalIPAddress":
		out = "<u:GetExternalIPAddressResponse xmlns:u=\"" + st + "\"><NewExternalIPAddress>" +
			g.externalIP + "</NewExternalIPAddress></u:GetExternalIPAddressResponse>"
	default:
		http.Error(w, "unknown action", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", `text/xml; charset="utf-8"`)
	_, _ = io.WriteString(w, `<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" `+
		`s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>`+out+`</s:Body></s:Envelope>`)
}

// soapArgs returns the arguments of action in a SOAP request body.
func soapArgs(r io.Reader, action string) (map[string]string, error) {
	dec := xml.NewDecoder(r)
	args := map[string]string{}
	in, name := false, ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == action {
				in = true
			} else if in {
				name = tok.Name.Local
				args[name] = ""
			}
		case xml.CharData:
			if in && name != "" {
				args[name] += string(tok)
			}
		case xml.EndElement:
			if tok.Name.Local == action {
				in = false
			}
			name = ""
		}
	}
	return args, nil
}

// callsOf returns the recorded calls of action.
func (g *fakeIGD) callsOf(action string) []soapCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []soapCall
	for _, c := range g.calls {
		if c.action == action {
			out = append(out, c)
		}
	}
	return out
}

// TestUPnPMapsAndAdvertises runs a node with --upnp against a fake gateway:
// it maps its real listen port to its LAN address, advertises the gateway's
// external address to peers, and removes the mapping when it stops.
func TestUPnPMapsAndAdvertises(t *testing.T) {
	const extIP = "1.2.3.5"
	g := startFakeIGD(t, extIP)
	cfg := testConfig(t, t.TempDir(), false)
	cfg.Upnp = true
	cfg.upnpSSDPAddr = g.ssdp.LocalAddr().String()
	n := startNode(t, cfg)
	port := n.P2PAddrs()[0].(*net.TCPAddr).Port
	ps := strconv.Itoa(port)

	remote := wire.NetAddressV2FromBytes(time.Now(), wire.SFNodeNetwork, net.ParseIP("8.8.8.8"), 8333)
	waitFor(t, "the external address advertised", func() bool {
		best := n.addrManager.GetBestLocalAddress(remote)
		return best.Addr.String() == extIP && int(best.Port) == port
	})

	adds := g.callsOf("AddPortMapping")
	if len(adds) != 1 {
		t.Fatalf("%d AddPortMapping calls", len(adds))
	}
	want := map[string]string{
		"NewRemoteHost": "", "NewExternalPort": ps, "NewProtocol": "TCP", "NewInternalPort": ps,
		"NewInternalClient": "127.0.0.1", "NewEnabled": "1",
		"NewPortMappingDescription": "btcd-electrum listen port", "NewLeaseDuration": "1200",
	}
	for k, v := range want {
		if got, ok := adds[0].args[k]; !ok || got != v {
			t.Errorf("AddPortMapping %s = %q, want %q", k, got, v)
		}
	}
	if len(g.callsOf("GetExternalIPAddress")) != 1 {
		t.Fatal("external address not asked for once")
	}
	if len(g.callsOf("DeletePortMapping")) != 0 {
		t.Fatal("mapping removed while running")
	}

	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	dels := g.callsOf("DeletePortMapping")
	if len(dels) != 1 || dels[0].args["NewExternalPort"] != ps || dels[0].args["NewProtocol"] != "TCP" {
		t.Fatalf("DeletePortMapping calls %v", dels)
	}
}

// TestUPnPNoGateway: without a gateway answering, --upnp searches again
// (and gives up with a warning) while the node runs on and stops cleanly;
// without listening or with --externalip it does not search.
func TestUPnPNoGateway(t *testing.T) {
	silent, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	got := make(chan struct{}, 10)
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := silent.ReadFromUDP(buf); err != nil {
				return
			}
			got <- struct{}{}
		}
	}()
	cfg := testConfig(t, t.TempDir(), false)
	cfg.Upnp = true
	cfg.upnpSSDPAddr = silent.LocalAddr().String()
	n := startNode(t, cfg)
	for range upnpSearchTries {
		recv(t, got, "an M-SEARCH")
	}
	if _, err := n.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	// Not listening, or addresses given: no search at all.
	for _, set := range []func(*Config){
		func(c *Config) { c.DisableListen = true },
		func(c *Config) { c.ExternalIPs = []string{"1.2.3.4"} },
	} {
		cfg := testConfig(t, t.TempDir(), false)
		cfg.Upnp = true
		set(cfg)
		if err := cfg.Normalize(); err != nil {
			t.Fatal(err)
		}
		n := &Node{cfg: cfg, p2pListeners: []net.Listener{nil}}
		if n.upnpWanted() {
			t.Errorf("UPnP wanted with nolisten=%v externalip=%v", cfg.DisableListen, cfg.ExternalIPs)
		}
	}
}

// TestUPnPDescriptionParsing finds the WAN connection service in nested
// devices and resolves its control URL.
func TestUPnPDescriptionParsing(t *testing.T) {
	ctl, st, err := parseDescription([]byte(igdDescription), "http://192.168.1.1:5000/igd/desc.xml")
	if err != nil {
		t.Fatal(err)
	}
	if ctl != "http://192.168.1.1:5000/igd/ctl/IPConn" || st != "urn:schemas-upnp-org:service:WANIPConnection:1" {
		t.Fatalf("got %s %s", ctl, st)
	}

	// URLBase, when given, is what relative URLs resolve against.
	withBase := strings.Replace(igdDescription, "<specVersion>",
		"<URLBase>http://192.168.1.1:49000/</URLBase><specVersion>", 1)
	if ctl, _, err := parseDescription([]byte(withBase), "http://192.168.1.1:5000/igd/desc.xml"); err != nil ||
		ctl != "http://192.168.1.1:49000/ctl/IPConn" {
		t.Fatalf("with URLBase: %s %v", ctl, err)
	}

	// Only a PPP connection: that one.
	ppp := strings.Replace(igdDescription, "WANIPConnection", "WANIPv6FirewallControl", 1)
	if ctl, st, err := parseDescription([]byte(ppp), "http://10.0.0.1/d.xml"); err != nil ||
		ctl != "http://10.0.0.1/ppp" || st != "urn:schemas-upnp-org:service:WANPPPConnection:1" {
		t.Fatalf("PPP: %s %s %v", ctl, st, err)
	}

	for name, tc := range map[string]struct{ body, want string }{
		"malformed":  {igdDescription[:len(igdDescription)/2], "UPnP device description"},
		"not xml":    {"\x00\x01\x02", "UPnP device description"},
		"not an IGD": {strings.Replace(igdDescription, "InternetGatewayDevice", "MediaServer", 1), "no InternetGatewayDevice"},
		"no service": {strings.NewReplacer("WANIPConnection", "X", "WANPPPConnection", "Y").Replace(igdDescription), "no WANIPConnection"},
		"bad scheme": {strings.Replace(igdDescription, "ctl/IPConn", "file:///etc/passwd", 1), "not an HTTP URL"},
	} {
		if _, _, err := parseDescription([]byte(tc.body), "http://10.0.0.1/d.xml"); err == nil ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
	}
}

// TestUPnPHostileResponses: oversized, malformed or failing answers from the
// gateway are errors, never hangs or huge reads.
func TestUPnPHostileResponses(t *testing.T) {
	mux := http.NewServeMux()
	huge := func(w http.ResponseWriter, _ *http.Request) {
		chunk := strings.Repeat("<a>", 1<<14)
		for range (upnpMaxDescription / len(chunk)) + 2 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}
	mux.HandleFunc("/huge.xml", huge)
	mux.HandleFunc("/500.xml", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	})
	mux.HandleFunc("/ctl/huge", huge)
	mux.HandleFunc("/ctl/fault", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault>`+
			`<faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring><detail>`+
			`<UPnPError xmlns="urn:schemas-upnp-org:control-1-0"><errorCode>718</errorCode>`+
			`<errorDescription>ConflictInMappingEntry</errorDescription></UPnPError></detail></s:Fault></s:Body></s:Envelope>`)
	})
	mux.HandleFunc("/ctl/badip", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>`+
			`<u:GetExternalIPAddressResponse xmlns:u="x"><NewExternalIPAddress>not-an-ip</NewExternalIPAddress>`+
			`</u:GetExternalIPAddressResponse></s:Body></s:Envelope>`)
	})
	mux.HandleFunc("/ctl/garbage", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<<<>>>")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	client := &http.Client{Timeout: 5 * time.Second}

	for path, want := range map[string]string{
		"/huge.xml": "larger than",
		"/500.xml":  "HTTP 500",
		"/nothing":  "HTTP 404",
	} {
		if _, _, err := fetchDescription(ctx, client, srv.URL+path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error about %q", path, err, want)
		}
	}

	gw := func(path string) *igd {
		return &igd{controlURL: srv.URL + path, serviceType: upnpServiceTypes[0],
			lanIP: net.IPv4(192, 168, 1, 2), client: client}
	}
	if err := gw("/ctl/fault").addPortMapping(ctx, 8333, upnpLease); err == nil ||
		!strings.Contains(err.Error(), "UPnP error 718 (ConflictInMappingEntry)") {
		t.Errorf("fault: %v", err)
	}
	if _, err := gw("/ctl/huge").externalIP(ctx); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("huge SOAP answer: %v", err)
	}
	if _, err := gw("/ctl/badip").externalIP(ctx); err == nil || !strings.Contains(err.Error(), "parse ip") {
		t.Errorf("bad ip: %v", err)
	}
	if _, err := gw("/ctl/garbage").externalIP(ctx); err == nil {
		t.Error("garbage SOAP answer accepted")
	}

	// SSDP answers that are not a gateway's.
	for _, b := range []string{
		"",
		"\x00\xff\xfe",
		"NOTIFY * HTTP/1.1\r\nST: " + upnpSearchTarget + "\r\nLOCATION: http://10.0.0.1/d.xml\r\n\r\n",
		"HTTP/1.1 200 OK\r\nST: urn:other\r\nLOCATION: http://10.0.0.1/d.xml\r\n\r\n",
		"HTTP/1.1 200 OK\r\nST: " + upnpSearchTarget + "\r\n\r\n",
		"HTTP/1.1 200 OK\r\nST: " + upnpSearchTarget + "\r\nLOCATION: file:///etc/passwd\r\n\r\n",
	} {
		if loc, ok := parseSSDPResponse([]byte(b)); ok {
			t.Errorf("%q accepted: %s", b, loc)
		}
	}
	if loc, ok := parseSSDPResponse([]byte("HTTP/1.1 200 OK\r\nst:" + upnpSearchTarget +
		"\r\nlocation:  http://10.0.0.1:80/d.xml \r\n\r\n")); !ok || loc != "http://10.0.0.1:80/d.xml" {
		t.Errorf("valid answer: %q %v", loc, ok)
	}
}
