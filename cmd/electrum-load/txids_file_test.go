package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingElectrum is a minimal Electrum server (a fake of the node): one tip
// at height 10, every script's history the one confirmed transaction
// historyTxid, and every transaction.get and get_merkle answered (a raw
// transaction, a proof) and its txid recorded by method.
type recordingElectrum struct {
	ln net.Listener
	mu sync.Mutex
	// asked holds the txids each transaction method was asked for.
	asked map[string][]string
}

func startRecordingElectrum(t *testing.T, historyTxid string) *recordingElectrum {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &recordingElectrum{ln: ln, asked: map[string][]string{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				sc.Buffer(make([]byte, 1<<16), 1<<20)
				for sc.Scan() {
					var req struct {
						ID     json.RawMessage `json:"id"`
						Method string          `json:"method"`
						Params []json.RawMessage
					}
					if json.Unmarshal(sc.Bytes(), &req) != nil {
						return
					}
					var result string
					switch req.Method {
					case "server.version":
						result = `["fake 1.0","1.4"]`
					case "blockchain.headers.subscribe":
						result = `{"height":10,"hex":"00"}`
					case "blockchain.scripthash.get_history":
						result = fmt.Sprintf(`[{"tx_hash":%q,"height":5}]`, historyTxid)
					case "blockchain.transaction.get", "blockchain.transaction.get_merkle":
						var txid string
						if len(req.Params) > 0 {
							json.Unmarshal(req.Params[0], &txid)
						}
						f.mu.Lock()
						f.asked[req.Method] = append(f.asked[req.Method], txid)
						f.mu.Unlock()
						result = `"00"`
						if req.Method == "blockchain.transaction.get_merkle" {
							result = `{"merkle":[],"block_height":5,"pos":0}`
						}
					default:
						result = "null"
					}
					if _, err := fmt.Fprintf(c, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result); err != nil {
						return
					}
				}
			}()
		}
	}()
	return f
}

// TestTxidsFileUsedForTransactionGet: transaction.get draws its txids
// from -txids FILE (README.md) also in a mix that names get_merkle, whose
// txids are collected from the heavy scripts' histories with their heights.
func TestTxidsFileUsedForTransactionGet(t *testing.T) {
	historyTxid := strings.Repeat("aa", 32)
	fileTxid := strings.Repeat("bb", 32)
	srv := startRecordingElectrum(t, historyTxid)
	dir := t.TempDir()
	scripts := writeFile(t, dir, "scripts.txt", strings.Repeat("11", 32)+"\n")
	txids := writeFile(t, dir, "txids.txt", fileTxid+"\n")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	cfg := mustParse(t, "-server", srv.ln.Addr().String(), "-scripts", scripts, "-txids", txids,
		"-mix", "transaction.get=1,get_merkle=1", "-heavy", "1", "-single", "0",
		"-sessions", "1", "-warmup", "0", "-duration", "300ms", "-seed", "1")
	rep, err := run(ctx, cfg, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 1 {
		t.Fatalf("%d phases", len(rep.Phases))
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	got := srv.asked["blockchain.transaction.get"]
	if len(got) == 0 || len(srv.asked["blockchain.transaction.get_merkle"]) == 0 {
		t.Fatalf("the load asked transaction.get %d times, get_merkle %d times", len(got),
			len(srv.asked["blockchain.transaction.get_merkle"]))
	}
	other := 0
	for _, txid := range got {
		if txid != fileTxid {
			other++
		}
	}
	if other > 0 {
		t.Fatalf("transaction.get asked %d times, %d of them for a txid not in -txids %s (for example %s, "+
			"collected from the heavy script's history)", len(got), other, txids, got[0])
	}
}
