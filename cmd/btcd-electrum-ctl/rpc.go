package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/btcsuite/btcd/btcjson"

	"github.com/btcsuite/go-socks/socks"
)

// requestTimeout bounds one command, connection included.
const requestTimeout = 5 * time.Minute

// sendRequest POSTs a marshalled command to the node and returns its
// result, or the node's error.
func sendRequest(cfg *config, body []byte) (json.RawMessage, error) {
	client, err := httpClient(cfg)
	if err != nil {
		return nil, err
	}
	scheme := "https"
	if cfg.NoTLS {
		scheme = "http"
	}
	req, err := http.NewRequest(http.MethodPost, scheme+"://"+cfg.RPCServer, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Close = true
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(cfg.RPCUser, cfg.RPCPassword)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the reply: %w", err)
	}
	var reply btcjson.Response
	if err := json.Unmarshal(data, &reply); err != nil {
		// Not JSON: an HTTP error such as 401.
		return nil, fmt.Errorf("status %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	if reply.Error != nil {
		return nil, reply.Error
	}
	return reply.Result, nil
}

// httpClient returns a client that connects directly or through the SOCKS5
// proxy and checks the node's certificate against --rpccert.
func httpClient(cfg *config) (*http.Client, error) {
	dialer := &net.Dialer{Timeout: 30 * time.Second}
	transport := &http.Transport{DialContext: dialer.DialContext}
	if cfg.Proxy != "" {
		// btcd's SOCKS5 client, as btcctl uses it.
		p := &socks.Proxy{Addr: cfg.Proxy, Username: cfg.ProxyUser, Password: cfg.ProxyPass}
		transport.DialContext = func(_ context.Context, network, addr string) (net.Conn, error) {
			return p.DialTimeout(network, addr, dialer.Timeout)
		}
	}
	if !cfg.NoTLS {
		tc := &tls.Config{InsecureSkipVerify: cfg.TLSSkipVerify}
		if !cfg.TLSSkipVerify && cfg.RPCCert != "" {
			pem, err := os.ReadFile(cfg.RPCCert)
			if err != nil {
				return nil, fmt.Errorf("reading the RPC certificate (--rpccert): %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%s holds no PEM certificate (--rpccert)", cfg.RPCCert)
			}
			tc.RootCAs = pool
		}
		transport.TLSClientConfig = tc
	}
	return &http.Client{Transport: transport, Timeout: requestTimeout}, nil
}
