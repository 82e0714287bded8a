package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/btcd/addrmgr"
	"github.com/btcsuite/btcd/wire/v2"
)

// --upnp, as btcd: find the Internet Gateway Device by SSDP, map the P2P
// listen port on it (renewed every 15 minutes with a 20-minute lease),
// advertise its external address to peers, remove the mapping at shutdown.
// Everything the network answers is bounded in size and time.

const (
	// defaultSSDPAddr is the SSDP multicast group and port.
	defaultSSDPAddr = "239.255.255.250:1900"
	// upnpSearchTarget is the device searched for, as btcd.
	upnpSearchTarget = "urn:schemas-upnp-org:device:InternetGatewayDevice:1"
	// upnpSearchTries and upnpSearchWait: M-SEARCH is sent this many
	// times, each waiting this long for an answer.
	upnpSearchTries = 3
	upnpSearchWait  = time.Second
	// upnpHTTPTimeout bounds every request to the gateway.
	upnpHTTPTimeout = 10 * time.Second
	// upnpMaxDatagram, upnpMaxDescription and upnpMaxSOAP bound what is
	// read from the gateway.
	upnpMaxDatagram    = 2048
	upnpMaxDescription = 1 << 20
	upnpMaxSOAP        = 64 << 10
	// upnpLease is the mapping's lease (seconds), renewed every
	// upnpRenewInterval, as btcd.
	upnpLease         = 20 * 60
	upnpRenewInterval = 15 * time.Minute
	// upnpDescription names the mapping on the router.
	upnpDescription = "btcd-electrum listen port"
)

// upnpServiceTypes are the WAN connection services that can map ports, in
// order of preference.
var upnpServiceTypes = []string{
	"urn:schemas-upnp-org:service:WANIPConnection:1",
	"urn:schemas-upnp-org:service:WANPPPConnection:1",
}

// igd is a discovered Internet Gateway Device: the control URL of its WAN
// connection service and our address on the LAN it serves.
type igd struct {
	controlURL  string
	serviceType string
	lanIP       net.IP
	client      *http.Client
}

// discoverIGD sends SSDP M-SEARCHes to ssdpAddr, fetches the description of
// the first gateway answering and returns its WAN connection service.
func discoverIGD(ctx context.Context, ssdpAddr string) (*igd, error) {
	location, err := ssdpSearch(ctx, ssdpAddr)
	if err != nil {
		return nil, err
	}
	client := &http.Client{
		Timeout: upnpHTTPTimeout,
		// A gateway's answers come from the gateway.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	controlURL, serviceType, err := fetchDescription(ctx, client, location)
	if err != nil {
		return nil, err
	}
	lanIP, err := lanAddressFor(controlURL)
	if err != nil {
		return nil, err
	}
	return &igd{controlURL: controlURL, serviceType: serviceType, lanIP: lanIP, client: client}, nil
}

// ssdpSearch multicasts the M-SEARCH and returns the LOCATION of the first
// valid answer.
func ssdpSearch(ctx context.Context, ssdpAddr string) (string, error) {
	dst, err := net.ResolveUDPAddr("udp4", ssdpAddr)
	if err != nil {
		return "", err
	}
	conn, err := net.ListenUDP("udp4", nil)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	// Shutdown interrupts the wait.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	msg := []byte("M-SEARCH * HTTP/1.1\r\n" +
		"HOST: " + defaultSSDPAddr + "\r\n" +
		"ST: " + upnpSearchTarget + "\r\n" +
		"MAN: \"ssdp:discover\"\r\n" +
		"MX: 2\r\n\r\n")
	buf := make([]byte, upnpMaxDatagram)
	for range upnpSearchTries {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if _, err := conn.WriteToUDP(msg, dst); err != nil {
			return "", err
		}
		deadline := time.Now().Add(upnpSearchWait)
		if err := conn.SetReadDeadline(deadline); err != nil {
			return "", err
		}
		for {
			n, _, err := conn.ReadFromUDP(buf)
			if err != nil {
				break // this try timed out (or shutdown)
			}
			if loc, ok := parseSSDPResponse(buf[:n]); ok {
				return loc, nil
			}
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return "", errors.New("UPnP port discovery failed")
}

// parseSSDPResponse returns the LOCATION of an SSDP answer for the gateway
// device; ok is false for anything else.
func parseSSDPResponse(b []byte) (string, bool) {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
	status, err := r.ReadLine()
	if err != nil || !strings.HasPrefix(status, "HTTP/1.") || !strings.Contains(status, " 200") {
		return "", false
	}
	hdr, err := r.ReadMIMEHeader()
	if err != nil && len(hdr) == 0 {
		return "", false
	}
	if !strings.EqualFold(strings.TrimSpace(hdr.Get("St")), upnpSearchTarget) {
		return "", false
	}
	loc := strings.TrimSpace(hdr.Get("Location"))
	u, err := url.Parse(loc)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return loc, true
}

// upnpDevice is a device of a UPnP description: its type, services and
// embedded devices.
type upnpDevice struct {
	DeviceType string        `xml:"deviceType"`
	Services   []upnpService `xml:"serviceList>service"`
	Devices    []upnpDevice  `xml:"deviceList>device"`
}

// upnpService is a service of a UPnP device.
type upnpService struct {
	ServiceType string `xml:"serviceType"`
	ControlURL  string `xml:"controlURL"`
}

// upnpRoot is a UPnP device description.
type upnpRoot struct {
	XMLName xml.Name   `xml:"root"`
	URLBase string     `xml:"URLBase"`
	Device  upnpDevice `xml:"device"`
}

// fetchDescription fetches the device description at location and returns
// the absolute control URL and type of its WAN connection service.
func fetchDescription(ctx context.Context, client *http.Client, location string) (string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, location, nil)
	if err != nil {
		return "", "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body, upnpMaxDescription)
	if err != nil {
		return "", "", fmt.Errorf("UPnP device description: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("UPnP device description: HTTP %d", resp.StatusCode)
	}
	return parseDescription(body, location)
}

// readBounded reads r to its end, failing if it holds more than max bytes.
func readBounded(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("response larger than %d bytes", max)
	}
	return b, nil
}

// parseDescription finds the WAN connection service (WANIPConnection
// preferred to WANPPPConnection) anywhere under the root gateway device and
// resolves its control URL against URLBase, else the description's
// location.
func parseDescription(body []byte, location string) (controlURL, serviceType string, err error) {
	var root upnpRoot
	if err := xml.Unmarshal(body, &root); err != nil {
		return "", "", fmt.Errorf("UPnP device description: %w", err)
	}
	if strings.TrimSpace(root.Device.DeviceType) != upnpSearchTarget {
		return "", "", errors.New("no InternetGatewayDevice")
	}
	var svc *upnpService
	for _, st := range upnpServiceTypes {
		if svc = findService(&root.Device, st, 0); svc != nil {
			break
		}
	}
	if svc == nil || strings.TrimSpace(svc.ControlURL) == "" {
		return "", "", errors.New("no WANIPConnection or WANPPPConnection service")
	}
	base, err := url.Parse(location)
	if err != nil {
		return "", "", err
	}
	if b := strings.TrimSpace(root.URLBase); b != "" {
		if base, err = base.Parse(b); err != nil {
			return "", "", fmt.Errorf("UPnP URLBase: %w", err)
		}
	}
	u, err := base.Parse(strings.TrimSpace(svc.ControlURL))
	if err != nil {
		return "", "", fmt.Errorf("UPnP control URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("UPnP control URL %q is not an HTTP URL", u)
	}
	return u.String(), svc.ServiceType, nil
}

// findService searches d and its embedded devices, depth first, for a
// service of type st.
func findService(d *upnpDevice, st string, depth int) *upnpService {
	if depth > 16 {
		return nil
	}
	for i := range d.Services {
		if strings.TrimSpace(d.Services[i].ServiceType) == st {
			return &d.Services[i]
		}
	}
	for i := range d.Devices {
		if s := findService(&d.Devices[i], st, depth+1); s != nil {
			return s
		}
	}
	return nil
}

// lanAddressFor returns the local address the host routes to the gateway
// at controlURL from: the internal client of the mapping.
func lanAddressFor(controlURL string) (net.IP, error) {
	u, err := url.Parse(controlURL)
	if err != nil {
		return nil, err
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	// No packet is sent: connecting a UDP socket only picks the route.
	conn, err := net.Dial("udp4", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return nil, fmt.Errorf("no route to the UPnP gateway: %w", err)
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP, nil
}

// soapArg is one argument of a SOAP action, in order.
type soapArg struct{ name, value string }

// soapReply is the part of a SOAP answer the node reads.
type soapReply struct {
	Body struct {
		ExternalIP string `xml:"GetExternalIPAddressResponse>NewExternalIPAddress"`
		Fault      *struct {
			Code        string `xml:"detail>UPnPError>errorCode"`
			Description string `xml:"detail>UPnPError>errorDescription"`
		} `xml:"Fault"`
	} `xml:"Body"`
}

// call invokes action on the gateway's WAN connection service.
func (g *igd) call(ctx context.Context, action string, args []soapArg) (*soapReply, error) {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?>` + "\r\n" +
		`<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" ` +
		`s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>`)
	fmt.Fprintf(&b, `<u:%s xmlns:u="%s">`, action, g.serviceType)
	for _, a := range args {
		b.WriteString("<" + a.name + ">")
		_ = xml.EscapeText(&b, []byte(a.value))
		b.WriteString("</" + a.name + ">")
	}
	fmt.Fprintf(&b, `</u:%s></s:Body></s:Envelope>`, action)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.controlURL, strings.NewReader(b.String()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", `text/xml; charset="utf-8"`)
	req.Header.Set("SOAPAction", `"`+g.serviceType+"#"+action+`"`)
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body, upnpMaxSOAP)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", action, err)
	}
	var reply soapReply
	xmlErr := xml.Unmarshal(body, &reply)
	if resp.StatusCode != http.StatusOK {
		if xmlErr == nil && reply.Body.Fault != nil && reply.Body.Fault.Code != "" {
			return nil, fmt.Errorf("%s: UPnP error %s (%s)", action,
				strings.TrimSpace(reply.Body.Fault.Code), strings.TrimSpace(reply.Body.Fault.Description))
		}
		return nil, fmt.Errorf("%s: HTTP %d", action, resp.StatusCode)
	}
	if xmlErr != nil {
		return nil, fmt.Errorf("%s: %w", action, xmlErr)
	}
	return &reply, nil
}

// addPortMapping maps TCP port on the gateway to the same port of our LAN
// address for lease seconds.
func (g *igd) addPortMapping(ctx context.Context, port, lease int) error {
	_, err := g.call(ctx, "AddPortMapping", []soapArg{
		{"NewRemoteHost", ""},
		{"NewExternalPort", strconv.Itoa(port)},
		{"NewProtocol", "TCP"},
		{"NewInternalPort", strconv.Itoa(port)},
		{"NewInternalClient", g.lanIP.String()},
		{"NewEnabled", "1"},
		{"NewPortMappingDescription", upnpDescription},
		{"NewLeaseDuration", strconv.Itoa(lease)},
	})
	return err
}

// deletePortMapping removes the TCP mapping of port.
func (g *igd) deletePortMapping(ctx context.Context, port int) error {
	_, err := g.call(ctx, "DeletePortMapping", []soapArg{
		{"NewRemoteHost", ""},
		{"NewExternalPort", strconv.Itoa(port)},
		{"NewProtocol", "TCP"},
	})
	return err
}

// externalIP asks the gateway for its external address.
func (g *igd) externalIP(ctx context.Context) (net.IP, error) {
	reply, err := g.call(ctx, "GetExternalIPAddress", nil)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(strings.TrimSpace(reply.Body.ExternalIP))
	if ip == nil {
		return nil, errors.New("unable to parse ip address")
	}
	return ip, nil
}

// upnpWanted reports whether --upnp applies: as btcd, only when the node
// listens and no --externalip names its addresses.
func (n *Node) upnpWanted() bool {
	return n.cfg.Upnp && !n.cfg.DisableListen && len(n.cfg.ExternalIPs) == 0 && len(n.p2pListeners) > 0
}

// upnpLoop discovers the gateway, then maps the P2P listen port (that of
// the first listener) at once and every 15 minutes, adding the gateway's
// external address to the advertised local addresses; at shutdown it
// removes the mapping. Without a gateway the node runs on without it.
func (n *Node) upnpLoop() {
	defer n.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.quit:
			cancel()
		case <-ctx.Done():
		}
	}()

	ssdp := n.cfg.upnpSSDPAddr
	if ssdp == "" {
		ssdp = defaultSSDPAddr
	}
	gw, err := discoverIGD(ctx, ssdp)
	if err != nil {
		if ctx.Err() == nil {
			srvrLog.Warnf("Can't discover upnp: %v", err)
		}
		return
	}
	_, portStr, _ := net.SplitHostPort(n.p2pListeners[0].Addr().String())
	port, _ := strconv.Atoi(portStr)

	timer := time.NewTimer(0)
	defer timer.Stop()
	var bound string
loop:
	for {
		select {
		case <-timer.C:
			n.upnpRenew(ctx, gw, port, &bound)
			timer.Reset(upnpRenewInterval)
		case <-n.quit:
			break loop
		}
	}

	dctx, dcancel := context.WithTimeout(context.Background(), upnpHTTPTimeout)
	defer dcancel()
	if err := gw.deletePortMapping(dctx, port); err != nil {
		srvrLog.Warnf("unable to remove UPnP port mapping: %v", err)
	} else {
		srvrLog.Debugf("successfully disestablished UPnP port mapping")
	}
}

// upnpRenew (re)creates the mapping and advertises the external address;
// bound is the address last advertised, logged when it changes.
func (n *Node) upnpRenew(ctx context.Context, gw *igd, port int, bound *string) {
	if err := gw.addPortMapping(ctx, port, upnpLease); err != nil {
		if ctx.Err() == nil {
			srvrLog.Warnf("can't add UPnP port mapping: %v", err)
		}
		return
	}
	ip, err := gw.externalIP(ctx)
	if err != nil {
		if ctx.Err() == nil {
			srvrLog.Warnf("UPnP can't get external address: %v", err)
		}
		return
	}
	na := wire.NetAddressV2FromBytes(time.Now(), n.services, ip, uint16(port))
	if err := n.addrManager.AddLocalAddress(na, addrmgr.UpnpPrio); err != nil {
		srvrLog.Warnf("Not advertising the UPnP external address: %v", err)
		return
	}
	if key := addrmgr.NetAddressKey(na); key != *bound {
		*bound = key
		srvrLog.Warnf("Successfully bound via UPnP to %s", key)
	}
}
