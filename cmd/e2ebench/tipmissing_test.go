package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTipHeavyMissingCountsOnlyMissing: tip_heavy_missing counts the
// heavy scripts' notifications that did not come within tipWait, once
// each. Here block 11's notification of the heavy script never comes and
// block 12's comes 50 ms after submitblock: one is missing (the script is
// not awaited for block 12, whose notification could not be told from a
// late one of block 11).
func TestTipHeavyMissingCountsOnlyMissing(t *testing.T) {
	heavy := strings.Repeat("cc", 32)
	tips := []tipBlock{
		{height: 11, raw: []byte{1}, txs: 1, scripts: []string{strings.Repeat("aa", 32)}, heavy: []string{heavy}},
		{height: 12, raw: []byte{2}, txs: 1, scripts: []string{strings.Repeat("bb", 32)}, heavy: []string{heavy}},
	}
	el, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer el.Close()
	var (
		wmu  sync.Mutex
		conn net.Conn
	)
	send := func(line string) {
		wmu.Lock()
		defer wmu.Unlock()
		if conn != nil {
			io.WriteString(conn, line+"\n")
		}
	}
	go func() {
		c, err := el.Accept()
		if err != nil {
			return
		}
		wmu.Lock()
		conn = c
		wmu.Unlock()
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			var req struct {
				ID int `json:"id"`
			}
			if json.Unmarshal(sc.Bytes(), &req) == nil {
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":null}`, req.ID))
			}
		}
	}()
	status := func(sh string) string {
		return `{"jsonrpc":"2.0","method":"blockchain.scripthash.subscribe","params":["` + sh + `","x"]}`
	}
	var (
		bmu       sync.Mutex
		submitted int
	)
	rpcSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		bmu.Lock()
		submitted++
		b := tips[submitted-1]
		bmu.Unlock()
		go func() {
			time.Sleep(5 * time.Millisecond)
			send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"blockchain.headers.subscribe","params":[{"height":%d,"hex":""}]}`, b.height))
			for _, sh := range b.scripts {
				send(status(sh))
			}
			if b.height == 12 {
				time.Sleep(50 * time.Millisecond)
				send(status(heavy))
			}
		}()
		fmt.Fprint(w, `{"result":null,"error":null,"id":1}`)
	}))
	defer rpcSrv.Close()
	u, _ := url.Parse(rpcSrv.URL)
	rpcPort, _ := strconv.Atoi(u.Port())
	ePort := el.Addr().(*net.TCPAddr).Port

	res, err := runTip(newRPCClient(rpcPort), ePort, tips, []string{heavy},
		func(int32) (time.Time, bool) { return time.Time{}, false })
	if err != nil {
		t.Fatal(err)
	}
	if res.heavyMissing != 1 {
		t.Errorf("tip_heavy_missing %d (heavy timed %v ms): block 11's notification did not come, block 12's came "+
			"50 ms after its block; want 1", res.heavyMissing, res.heavy)
	}
}
