package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// TestTipHeavyNotificationTimedForItsBlock: a heavy script's notification
// slower than the pause between tip blocks is timed for the block that
// touched the script, from that block's submitblock answer, and not lost
// or charged to the next block. Here block 11 touches the heavy script,
// whose notification comes 600 ms after the block was submitted; block 12
// does not touch it.
func TestTipHeavyNotificationTimedForItsBlock(t *testing.T) {
	heavy := strings.Repeat("cc", 32)
	tips := []tipBlock{
		{height: 11, raw: []byte{1}, txs: 1, scripts: []string{strings.Repeat("aa", 32)}, heavy: []string{heavy}},
		{height: 12, raw: []byte{2}, txs: 1, scripts: []string{strings.Repeat("bb", 32)}},
	}

	// The Electrum side: answers every request, then sends notifications.
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

	// The RPC side: each submitblock is a block; its notifications follow.
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
		at := time.Now()
		go func() {
			time.Sleep(5 * time.Millisecond)
			send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"blockchain.headers.subscribe","params":[{"height":%d,"hex":""}]}`, b.height))
			for _, sh := range b.scripts {
				send(status(sh))
			}
			if b.height == 11 {
				time.Sleep(time.Until(at.Add(600 * time.Millisecond)))
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
	t.Logf("submit %v ms, notify %v ms, heavy %v ms, %d missing", res.submit, res.notify, res.heavy, res.heavyMissing)
	if len(res.heavy) != 1 || res.heavy[0] < 550 || res.heavyMissing != 0 {
		t.Errorf("heavy notifications %v ms, %d missing; the one notification came about 600 ms after block 11's "+
			"submitblock", res.heavy, res.heavyMissing)
	}
}

// TestMarkTipHeavy: a tip block touches a heavy script when it pays it or
// spends an output that paid it, however far back.
func TestMarkTipHeavy(t *testing.T) {
	heavyScript, otherScript := []byte{0x52}, []byte{0x51}
	heavy := electrumScriptHash(heavyScript)
	other := electrumScriptHash([]byte{0x53})
	coinbase := func(h int, pk []byte) *wire.MsgTx {
		tx := wire.NewMsgTx(1)
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 0xffffffff}, SignatureScript: []byte{byte(h), 1}})
		tx.AddTxOut(&wire.TxOut{Value: 50, PkScript: pk})
		return tx
	}
	// Block 1 pays the heavy script; block 3 spends that output; block 4
	// pays it; block 5 neither.
	var txs [][]*wire.MsgTx
	txs = append(txs, []*wire.MsgTx{coinbase(0, otherScript)})
	txs = append(txs, []*wire.MsgTx{coinbase(1, heavyScript)})
	txs = append(txs, []*wire.MsgTx{coinbase(2, otherScript)})
	spend := wire.NewMsgTx(1)
	spend.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: txs[1][0].TxHash(), Index: 0}})
	spend.AddTxOut(&wire.TxOut{Value: 40, PkScript: otherScript})
	txs = append(txs, []*wire.MsgTx{coinbase(3, otherScript), spend})
	txs = append(txs, []*wire.MsgTx{coinbase(4, otherScript), func() *wire.MsgTx {
		tx := wire.NewMsgTx(1)
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: spend.TxHash(), Index: 0}})
		tx.AddTxOut(&wire.TxOut{Value: 30, PkScript: heavyScript})
		return tx
	}()})
	txs = append(txs, []*wire.MsgTx{coinbase(5, otherScript)})

	var buf bytes.Buffer
	var prev [32]byte
	for h, bt := range txs {
		blk := wire.MsgBlock{Header: wire.BlockHeader{Version: 1, PrevBlock: prev, Nonce: uint32(h)}}
		for _, tx := range bt {
			blk.AddTransaction(tx)
		}
		var raw bytes.Buffer
		if err := blk.Serialize(&raw); err != nil {
			t.Fatal(err)
		}
		binary.Write(&buf, binary.LittleEndian, uint32(raw.Len()))
		buf.Write(raw.Bytes())
		prev = blk.BlockHash()
	}
	path := filepath.Join(t.TempDir(), "blocks.dat")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tips, err := readTipBlocks(path, 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := markTipHeavy(path, tips, []string{heavy, other}); err != nil {
		t.Fatal(err)
	}
	got := map[int32][]string{}
	for _, b := range tips {
		got[b.height] = b.heavy
	}
	want := map[int32][]string{3: {heavy}, 4: {heavy}, 5: nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("heavy scripts per tip block %v, want %v", got, want)
	}
}
