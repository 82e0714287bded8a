package node

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/gorilla/websocket"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// mixLine is one Electrum transport: newline-delimited TCP or WebSocket
// messages.
type mixLine interface {
	send([]byte) error
	recv(deadline time.Time) ([]byte, error)
	close()
}

type mixTCP struct {
	c net.Conn
	r *bufio.Reader
}

func (z *mixTCP) send(b []byte) error {
	_ = z.c.SetWriteDeadline(time.Now().Add(testWait))
	_, err := z.c.Write(append(b, '\n'))
	return err
}
func (z *mixTCP) recv(d time.Time) ([]byte, error) {
	_ = z.c.SetReadDeadline(d)
	return z.r.ReadBytes('\n')
}
func (z *mixTCP) close() { z.c.Close() }

type mixWS struct{ c *websocket.Conn }

func (z *mixWS) send(b []byte) error {
	_ = z.c.SetWriteDeadline(time.Now().Add(testWait))
	return z.c.WriteMessage(websocket.TextMessage, b)
}
func (z *mixWS) recv(d time.Time) ([]byte, error) {
	_ = z.c.SetReadDeadline(d)
	_, b, err := z.c.ReadMessage()
	return b, err
}
func (z *mixWS) close() { z.c.Close() }

// mixClient is an Electrum client owned by one goroutine. It keeps, for each
// script hash it is subscribed to, the last status it was told (the
// subscribe's answer or a later notification, in stream order).
type mixClient struct {
	name   string
	line   mixLine
	id     int
	status map[string]any
	tip    float64
	// state of each script hash: absent/0 not subscribed (unsubscribe
	// answered or never asked), 1 first subscribe asked, 2 subscribed, 3
	// unsubscribe asked.
	state     map[string]int
	violation []string
}

func mixDial(n *Node, name string, ws bool) (*mixClient, error) {
	var line mixLine
	if ws {
		a := n.ElectrumAddrs()[electrum.WS][0].String()
		c, _, err := websocket.DefaultDialer.Dial("ws://"+a+"/", nil)
		if err != nil {
			return nil, err
		}
		line = &mixWS{c}
	} else {
		c, err := net.Dial("tcp", n.ElectrumAddrs()[electrum.TCP][0].String())
		if err != nil {
			return nil, err
		}
		line = &mixTCP{c, bufio.NewReader(c)}
	}
	c := &mixClient{name: name, line: line, status: map[string]any{}, state: map[string]int{}}
	if _, err := c.call("server.version", name, "1.4.2"); err != nil {
		line.close()
		return nil, err
	}
	return c, nil
}

func (c *mixClient) note(msg map[string]any) {
	p, _ := msg["params"].([]any)
	switch msg["method"] {
	case "blockchain.scripthash.subscribe":
		if len(p) == 2 {
			sh, _ := p[0].(string)
			if st := c.state[sh]; st == 0 || st == 1 {
				c.violation = append(c.violation, fmt.Sprintf("notification %v in state %d", p, st))
			}
			if _, ok := c.status[sh]; ok {
				c.status[sh] = p[1]
			}
		}
	case "blockchain.headers.subscribe":
		if len(p) == 1 {
			h, _ := p[0].(map[string]any)
			c.tip, _ = h["height"].(float64)
		}
	}
}

func (c *mixClient) call(method string, params ...any) (any, error) {
	c.id++
	if params == nil {
		params = []any{}
	}
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if err := c.line.send(req); err != nil {
		return nil, fmt.Errorf("%s: send %s: %w", c.name, method, err)
	}
	for {
		b, err := c.line.recv(time.Now().Add(testWait))
		if err != nil {
			return nil, fmt.Errorf("%s: read %s: %w", c.name, method, err)
		}
		var msg map[string]any
		if err := json.Unmarshal(b, &msg); err != nil {
			return nil, fmt.Errorf("%s: bad message %q", c.name, b)
		}
		if _, ok := msg["method"]; ok {
			c.note(msg)
			continue
		}
		if id, _ := msg["id"].(float64); int(id) != c.id {
			return nil, fmt.Errorf("%s: %s: answer id %v, want %d", c.name, method, msg["id"], c.id)
		}
		if e, ok := msg["error"]; ok && e != nil {
			return nil, fmt.Errorf("%s: %s %v: error %v", c.name, method, params, e)
		}
		return msg["result"], nil
	}
}

func (c *mixClient) subscribe(sh string) error {
	c.status[sh] = nil // marks it subscribed before the answer arrives
	if c.state[sh] == 0 {
		c.state[sh] = 1
	}
	r, err := c.call("blockchain.scripthash.subscribe", sh)
	if err != nil {
		return err
	}
	c.status[sh] = r
	c.state[sh] = 2
	return nil
}

func (c *mixClient) unsubscribe(sh string) error {
	delete(c.status, sh)
	c.state[sh] = 3
	_, err := c.call("blockchain.scripthash.unsubscribe", sh)
	c.state[sh] = 0
	return err
}

// mixAmount is the k-th payment's amount: a power of two, so that any sum
// of distinct payments names them.
func mixAmount(k int) int64 { return 1 << (12 + k) }

type mixStats struct {
	FundedTxoCount int   `json:"funded_txo_count"`
	FundedTxoSum   int64 `json:"funded_txo_sum"`
	SpentTxoCount  int   `json:"spent_txo_count"`
	SpentTxoSum    int64 `json:"spent_txo_sum"`
	TxCount        int   `json:"tx_count"`
}

type mixAddrStats struct {
	ChainStats   mixStats `json:"chain_stats"`
	MempoolStats mixStats `json:"mempool_stats"`
}

type mixEsploraTx struct {
	Txid   string `json:"txid"`
	Status struct {
		Confirmed   bool   `json:"confirmed"`
		BlockHeight int32  `json:"block_height"`
		BlockHash   string `json:"block_hash"`
	} `json:"status"`
}

func mixGet(base, path string, v any) error {
	resp, err := http.Get(base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %s: %v", path, b, err)
	}
	return nil
}

// mixPageAll pages /address/:a/txs/chain to its end. The pages of a chain
// whose top moves by a few blocks still fit together below the first page:
// no transaction twice, no height of the chain missing.
func mixPageAll(base, addr string) ([]mixEsploraTx, error) {
	var all []mixEsploraTx
	last := ""
	for pages := 0; pages < 100; pages++ {
		var page []mixEsploraTx
		p := "/address/" + addr + "/txs/chain"
		if last != "" {
			p += "/" + last
		}
		if err := mixGet(base, p, &page); err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		last = page[len(page)-1].Txid
	}
	return all, nil
}

// TestMixedWorkload runs Electrum sessions over TCP and WebSocket,
// Esplora pagers and stats readers, an RPC websocket client and the admin
// RPCs against a node whose chain grows, reorganizes (invalidateblock /
// reconsiderblock) and whose pool takes, replaces and mines transactions;
// then every subscribed client's last status is a fresh subscribe's and
// the index verifies.
func TestMixedWorkload(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.ElectrumWSListeners = []string{"127.0.0.1:0"}
	cfg.EsploraListeners = []string{"127.0.0.1:0"}
	n := startNode(t, cfg)
	generate(t, n, 140)

	base := "http://" + n.EsploraAddrs()[0].String()
	mining := testMiningAddr(t)
	miningScript, _ := txscript.PayToAddrScript(mining)
	miningSH := indexers.ScriptHashFromScript(miningScript).String()
	const nScripts = 3
	var scripts [nScripts][]byte
	var shs [nScripts]string
	var addrs [nScripts]string
	var addrObjs []address.Address
	for i := range scripts {
		scripts[i] = scenarioScript(byte(0x70 + i))
		shs[i] = indexers.ScriptHashFromScript(scripts[i]).String()
		a, err := address.NewAddressWitnessPubKeyHash(scripts[i][2:], &chaincfg.RegressionNetParams)
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = a.EncodeAddress()
		addrObjs = append(addrObjs, a)
	}
	allSH := append([]string{miningSH}, shs[:]...)

	stop := make(chan struct{})
	var ops atomic.Int64 // requests the readers made: paces the chain's moves
	var wg sync.WaitGroup
	var clientsMu sync.Mutex
	var finalClients []*mixClient
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}

	// Electrum sessions: subscribe, unsubscribe, read histories.
	for i := 0; i < int(mixSessions); i++ {
		ws := i%2 == 1
		c, err := mixDial(n, fmt.Sprintf("mix-%d", i), ws)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.line.close)
		wg.Add(1)
		go func(i int, c *mixClient) {
			defer wg.Done()
			hd, err := c.call("blockchain.headers.subscribe")
			if err != nil {
				t.Error(err)
				return
			}
			c.tip, _ = hd.(map[string]any)["height"].(float64)
			for r := 0; !stopped(); r++ {
				sh := allSH[(i+r)%len(allSH)]
				var err error
				switch r % 5 {
				case 0, 1:
					err = c.subscribe(sh)
				case 2:
					if _, ok := c.status[sh]; ok {
						err = c.unsubscribe(sh)
					}
				case 3:
					var h any
					h, err = c.call("blockchain.scripthash.get_history", sh)
					seen := map[string]bool{}
					hl, _ := h.([]any)
					for _, e := range hl {
						id := fmt.Sprint(e.(map[string]any)["tx_hash"])
						if seen[id] {
							t.Errorf("%s: get_history lists %s twice", c.name, id)
						}
						seen[id] = true
					}
				case 4:
					_, err = c.call("blockchain.scripthash.get_mempool", sh)
					if err == nil && sh != miningSH {
						var b any
						b, err = c.call("blockchain.scripthash.get_balance", sh)
						bm, _ := b.(map[string]any)
						conf, _ := bm["confirmed"].(float64)
						unconf, _ := bm["unconfirmed"].(float64)
						if err == nil && (int64(conf)&int64(unconf) != 0 || unconf < 0) {
							t.Errorf("%s: get_balance mixes two states: %v", c.name, bm)
						}
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
				ops.Add(1)
			}
			for _, sh := range allSH { // ends subscribed to all
				if err := c.subscribe(sh); err != nil {
					t.Error(err)
					return
				}
			}
			if len(c.violation) > 0 {
				t.Errorf("%s: notifications outside their subscription: %v", c.name, c.violation)
			}
			clientsMu.Lock()
			finalClients = append(finalClients, c)
			clientsMu.Unlock()
		}(i, c)
	}

	// Short-lived sessions the admin disconnects.
	var victims, verifies atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := 0; !stopped(); r++ {
			c, err := mixDial(n, "victim", r%2 == 0)
			if err != nil {
				continue // the admin may close it before version's answer
			}
			_ = c.subscribe(miningSH)
			_, _ = c.call("blockchain.headers.subscribe")
			victims.Add(1)
			_, _ = c.call("blockchain.scripthash.get_history", miningSH)
			c.line.close()
		}
	}()

	// Admin RPCs.
	admin := adminClient(t, n, "user", "pass")
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := 0; !stopped(); r++ {
			raw, err := admin.RawRequest("getelectrumsessions", nil)
			if err != nil {
				t.Error("getelectrumsessions:", err)
				return
			}
			var sessions []rpcext.ElectrumSession
			if err := json.Unmarshal(raw, &sessions); err != nil {
				t.Error(err)
				return
			}
			for _, s := range sessions {
				if s.ClientName == "victim" {
					id, _ := json.Marshal(s.ID)
					_, _ = admin.RawRequest("disconnectelectrumsession", []json.RawMessage{id})
				}
			}
			if r%10 == 0 {
				act, _ := json.Marshal("start")
				_, _ = admin.RawRequest(rpcext.VerifyElectrumIndexMethod, []json.RawMessage{act})
			}
			st, _ := json.Marshal("status")
			if raw, err := admin.RawRequest(rpcext.VerifyElectrumIndexMethod, []json.RawMessage{st}); err == nil {
				var info rpcext.VerifyIndexInfo
				if json.Unmarshal(raw, &info) == nil && info.Result != nil {
					verifies.Add(1)
					if !info.Result.OK || info.Error != "" {
						t.Errorf("verifyelectrumindex while the chain moves: %s", raw)
					}
				}
			}
			_, _ = admin.RawRequest("getelectruminfo", nil)
			_, _ = admin.RawRequest("getscripthashinfo", []json.RawMessage{json.RawMessage(`"` + miningSH + `"`)})
		}
	}()

	// RPC websocket client: notifyblocks and loadtxfilter.
	var connected, disconnected atomic.Int64
	wsc, err := rpcclient.New(&rpcclient.ConnConfig{Host: n.RPCAddrs()[0].String(), Endpoint: "ws",
		User: "user", Pass: "pass", DisableTLS: true}, &rpcclient.NotificationHandlers{
		OnFilteredBlockConnected:    func(int32, *wire.BlockHeader, []*btcutil.Tx) { connected.Add(1) },
		OnFilteredBlockDisconnected: func(int32, *wire.BlockHeader) { disconnected.Add(1) },
		OnRelevantTxAccepted:        func([]byte) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer wsc.Shutdown()
	if err := wsc.NotifyBlocks(); err != nil {
		t.Fatal(err)
	}
	if err := wsc.LoadTxFilter(true, addrObjs, nil); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stopped() {
			if err := wsc.LoadTxFilter(false, []address.Address{mining}, nil); err != nil {
				t.Error("loadtxfilter:", err)
				return
			}
			if _, err := wsc.GetBestBlockHash(); err != nil {
				t.Error(err)
				return
			}
		}
	}()

	// Esplora: stats of the paid scripts never count a payment twice
	// (chain and mempool), pages fit together.
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for r := 0; !stopped(); r++ {
				if i == 0 {
					for j, a := range addrs {
						var st mixAddrStats
						if err := mixGet(base, "/address/"+a, &st); err != nil {
							t.Error(err)
							return
						}
						c, m := st.ChainStats, st.MempoolStats
						if c.FundedTxoSum&m.FundedTxoSum != 0 || c.FundedTxoCount != bits.OnesCount64(uint64(c.FundedTxoSum)) ||
							m.FundedTxoCount != bits.OnesCount64(uint64(m.FundedTxoSum)) || c.TxCount != c.FundedTxoCount ||
							m.TxCount != m.FundedTxoCount {
							t.Errorf("script %d: stats mix two states: chain %+v mempool %+v (chain∧mempool %b)",
								j, c, m, c.FundedTxoSum&m.FundedTxoSum)
						}
						var txs []mixEsploraTx
						if err := mixGet(base, "/address/"+a+"/txs", &txs); err != nil {
							t.Error(err)
							return
						}
						seen := map[string]bool{}
						for _, tx := range txs {
							if seen[tx.Txid] {
								t.Errorf("script %d: /txs lists %s twice", j, tx.Txid)
							}
							seen[tx.Txid] = true
						}
					}
					continue
				}
				ops.Add(1)
				all, err := mixPageAll(base, mining.EncodeAddress())
				if err != nil {
					t.Error(err)
					return
				}
				seen := map[string]bool{}
				heights := map[int32]bool{}
				var top int32
				for k, tx := range all {
					if seen[tx.Txid] {
						t.Errorf("paging: %s twice (entry %d of %d)", tx.Txid, k, len(all))
					}
					seen[tx.Txid] = true
					heights[tx.Status.BlockHeight] = true
					if tx.Status.BlockHeight > top {
						top = tx.Status.BlockHeight
					}
				}
				for h := int32(1); h <= top-30; h++ {
					if !heights[h] {
						t.Errorf("paging: height %d missing below top %d (%d entries)", h, top, len(all))
						break
					}
				}
			}
		}(i)
	}

	// The chain and the pool move.
	rpc := adminClient(t, n, "user", "pass")
	nextCB := int32(1)
	var ks [nScripts]int   // payments made to each script
	var pooled *wire.MsgTx // last payment, replaceable
	var pooledCB int32
	pay := func(cbHeight int32, j int, fee int64) *btcutil.Tx {
		cb := coinbaseOf(t, n, cbHeight)
		amt := mixAmount(ks[j])
		ks[j]++
		return scenarioSpend(t, cb, 0, 0xfffffffd, wire.NewTxOut(amt, scripts[j]),
			wire.NewTxOut(cb.TxOut[0].Value-amt-fee, miningScript))
	}
	var invalidated []*chainhash.Hash
	pace := func() {
		from := ops.Load()
		waitFor(t, "the readers", func() bool { return ops.Load() >= from+mixPace || t.Failed() })
	}
	for round := 0; round < 60; round++ {
		pace()
		switch round % 6 {
		case 0, 3:
			tx := pay(nextCB, round%nScripts, 10_000)
			if _, err := n.ProcessTx(tx); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			pooled, pooledCB = tx.MsgTx(), nextCB
			nextCB++
		case 1:
			if pooled != nil && n.TxPool().HaveTransaction(hashPtr(pooled.TxHash())) {
				tx := pay(pooledCB, (round+1)%nScripts, 50_000)
				if _, err := n.ProcessTx(tx); err != nil {
					t.Fatalf("round %d: replacement: %v", round, err)
				}
				pooled = tx.MsgTx()
			}
		case 2, 4:
			if _, err := n.Generate(1, nil); err != nil {
				t.Fatal(err)
			}
		case 5:
			best := n.Chain().BestSnapshot()
			rpcHash := func(method string, h *chainhash.Hash) {
				p, _ := json.Marshal(h.String())
				if _, err := rpc.RawRequest(method, []json.RawMessage{p}); err != nil {
					t.Fatalf("%s: %v", method, err)
				}
			}
			if (round/6)%2 == 0 {
				// The tip leaves; its payment returns to the pool, is
				// replaced there, and the new branch confirms the
				// replacement.
				rpcHash("invalidateblock", &best.Hash)
				if n.TxPool().HaveTransaction(hashPtr(pooled.TxHash())) {
					tx := pay(pooledCB, (round+2)%nScripts, 80_000)
					if _, err := n.ProcessTx(tx); err != nil {
						t.Fatalf("round %d: replacement after the reorganization: %v", round, err)
					}
				}
				if _, err := n.Generate(2, nil); err != nil {
					t.Fatal(err)
				}
				invalidated = append(invalidated, &best.Hash)
			} else {
				// Two blocks leave; a shorter branch confirms a
				// double-spend of the tip's payment; then the old
				// branch is reconsidered and wins again.
				parent, err := n.Chain().BlockHashByHeight(best.Height - 1)
				if err != nil {
					t.Fatal(err)
				}
				rpcHash("invalidateblock", parent)
				ds := pay(pooledCB, (round+2)%nScripts, 90_000)
				mineWith(t, n, ds)
				rpcHash("reconsiderblock", parent)
				if n.Chain().BestSnapshot().Hash != best.Hash {
					t.Fatalf("round %d: reconsiderblock did not bring back the old branch", round)
				}
			}
			if len(invalidated) > 1 {
				// Reconsider an older one: a shorter branch, no move.
				rpcHash("reconsiderblock", invalidated[0])
				invalidated = invalidated[1:]
			}
		}
	}
	if _, err := n.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	syncIndex(t, n)
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d victims, %d/%d filtered blocks connected/disconnected, %d verify statuses", victims.Load(), connected.Load(), disconnected.Load(), verifies.Load())

	startTip := int64(140)
	endTip := int64(n.Chain().BestSnapshot().Height)
	waitFor(t, "notifyblocks to tell every connect and disconnect", func() bool {
		return connected.Load()-disconnected.Load() == endTip-startTip
	})
	// End state: every client's last status is a fresh subscribe's.
	fresh, err := mixDial(n, "fresh", false)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := fresh.call("blockchain.headers.subscribe")
	if err != nil {
		t.Fatal(err)
	}
	wantTip, _ := fh.(map[string]any)["height"].(float64)
	want := map[string]any{}
	for _, sh := range allSH {
		r, err := fresh.call("blockchain.scripthash.subscribe", sh)
		if err != nil {
			t.Fatal(err)
		}
		want[sh] = r
	}
	for _, c := range finalClients {
		deadline := time.Now().Add(testWait) // hang guard
		for {
			if _, err := c.call("server.ping"); err != nil {
				t.Fatal(err)
			}
			var bad []string
			for _, sh := range allSH {
				if c.status[sh] != want[sh] {
					bad = append(bad, fmt.Sprintf("%s… has %v, fresh %v", sh[:8], c.status[sh], want[sh]))
				}
			}
			if c.tip != wantTip {
				bad = append(bad, fmt.Sprintf("tip %v, fresh %v", c.tip, wantTip))
			}
			if len(bad) == 0 {
				break
			}
			if time.Now().After(deadline) {
				sort.Strings(bad)
				t.Errorf("%s: last statuses differ from a fresh subscribe's: %s", c.name, strings.Join(bad, "; "))
				break
			}
			time.Sleep(100 * time.Millisecond) // then ping again: notifications arrive before its answer
		}
	}
	// The Esplora stats agree with Electrum's balance.
	for j, a := range addrs {
		var st mixAddrStats
		if err := mixGet(base, "/address/"+a, &st); err != nil {
			t.Fatal(err)
		}
		bal, err := fresh.call("blockchain.scripthash.get_balance", shs[j])
		if err != nil {
			t.Fatal(err)
		}
		b := bal.(map[string]any)
		if float64(st.ChainStats.FundedTxoSum-st.ChainStats.SpentTxoSum) != b["confirmed"] ||
			float64(st.MempoolStats.FundedTxoSum-st.MempoolStats.SpentTxoSum) != b["unconfirmed"] {
			t.Errorf("script %d: esplora %+v, electrum %v", j, st, b)
		}
	}
	res := verifyOverRPC(t, n)
	if !res.OK {
		t.Errorf("the index does not verify: %+v", res)
	}
	_ = hex.EncodeToString
	_ = btcjson.ErrRPCInvalidParameter
}

// mixSessions and mixPace shape the workload: Electrum sessions, and reader
// requests between two moves of the chain.
const mixSessions, mixPace = 6, 40
