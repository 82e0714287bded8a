package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// rpcClient is a JSON-RPC client over one keep-alive HTTP connection.
type rpcClient struct {
	url, user, pass string
	hc              *http.Client
	id              int
	dials           atomic.Int32 // connections made
}

const (
	rpcUser = "e2ebench"
	rpcPass = "e2ebench"
)

func newRPCClient(port int) *rpcClient {
	c := &rpcClient{url: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/", user: rpcUser, pass: rpcPass}
	d := &net.Dialer{Timeout: 5 * time.Second}
	c.hc = &http.Client{Transport: &http.Transport{
		Proxy: nil, // loopback, never through a proxy
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err == nil {
				c.dials.Add(1)
			}
			return conn, err
		},
		MaxIdleConns:        1,
		MaxIdleConnsPerHost: 1,
		MaxConnsPerHost:     1,
		DisableCompression:  true,
	}}
	return c
}

// rpcError is an error the server answered with.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("RPC error %d: %s", e.Code, e.Message) }

// call sends a request with JSON-encoded params and returns the result.
func (c *rpcClient) call(method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	c.id++
	body := fmt.Appendf(nil, `{"jsonrpc":"1.0","id":%d,"method":%q,"params":%s}`, c.id, method, p)
	return c.post(body)
}

// submitBody builds a submitblock request for a hex-encoded block.
func (c *rpcClient) submitBody(hexBlock []byte) []byte {
	c.id++
	b := make([]byte, 0, len(hexBlock)+80)
	b = fmt.Appendf(b, `{"jsonrpc":"1.0","id":%d,"method":"submitblock","params":["`, c.id)
	b = append(b, hexBlock...)
	return append(b, `"]}`...)
}

// post sends a request body and returns the result.
func (c *rpcClient) post(body []byte) (json.RawMessage, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(c.user, c.pass)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("HTTP %s: %.200s", resp.Status, raw)
	}
	if out.Error != nil {
		return nil, out.Error
	}
	return out.Result, nil
}

// waitRPC polls getblockcount until the server answers, the process exits or
// the timeout passes; it returns the block count.
func waitRPC(c *rpcClient, p *proc, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		res, err := c.call("getblockcount")
		if err == nil {
			var n int64
			if err := json.Unmarshal(res, &n); err != nil {
				return 0, err
			}
			return n, nil
		}
		if _, ok := err.(*rpcError); ok {
			return 0, err
		}
		select {
		case <-p.Exited():
			return 0, p.ExitError()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("RPC not answering after %v: %w", timeout, err)
		}
	}
}
