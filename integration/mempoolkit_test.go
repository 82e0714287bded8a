package integration

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// kitWalletT is one P2WPKH key with its address and script.
type kitWalletT struct {
	key    *btcec.PrivateKey
	addr   address.Address
	script []byte
	sh     string
}

func kitWallet(t *testing.T) *kitWalletT {
	t.Helper()
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr := p2wpkhAddress(t, key)
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	return &kitWalletT{key: key, addr: addr, script: script, sh: ScriptHash(script)}
}

// spend spends op (value sats, paying w) to outs, with the input's
// sequence seq.
func (w *kitWalletT) spend(t *testing.T, op wire.OutPoint, value int64, seq uint32, outs ...*wire.TxOut) *wire.MsgTx {
	t.Helper()
	return w.spendVersion(t, 2, op, value, seq, outs...)
}

// spendVersion is spend with the transaction's version.
func (w *kitWalletT) spendVersion(t *testing.T, version int32, op wire.OutPoint, value int64, seq uint32, outs ...*wire.TxOut) *wire.MsgTx {
	t.Helper()
	tx := wire.NewMsgTx(version)
	in := wire.NewTxIn(&op, nil, nil)
	in.Sequence = seq
	tx.AddTxIn(in)
	for _, o := range outs {
		tx.AddTxOut(o)
	}
	fetcher := txscript.NewCannedPrevOutputFetcher(w.script, value)
	wit, err := txscript.WitnessSignature(tx, txscript.NewTxSigHashes(tx, fetcher), 0, value, w.script,
		txscript.SigHashAll, w.key, true)
	if err != nil {
		t.Fatal(err)
	}
	tx.TxIn[0].Witness = wit
	return tx
}

// mineWith builds a block on the node's tip holding exactly txs and
// submits it, then waits for the Electrum server to reach it.
func mineWith(t *testing.T, n *Node, txs ...*wire.MsgTx) *chainhash.Hash {
	t.Helper()
	best, height, err := n.RPC.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	times, err := n.timesUpTo(height)
	if err != nil {
		t.Fatal(err)
	}
	last := slices.MaxFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	ts := time.Now().Truncate(time.Second)
	if !ts.After(last) {
		ts = last.Add(time.Second)
	}
	var btxs []*btcutil.Tx
	for _, tx := range txs {
		btxs = append(btxs, btcutil.NewTx(tx))
	}
	block, err := n.buildBlock(*best, height+1, ts, btxs)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.RPC.SubmitBlock(block, nil); err != nil {
		t.Fatalf("submitblock: %v", err)
	}
	if err := n.waitSynced(); err != nil {
		t.Fatal(err)
	}
	return block.Hash()
}

// getJSON fetches an Esplora path into out.
func getJSON(t *testing.T, n *Node, path string, out any) {
	t.Helper()
	resp, err := http.Get(n.EsploraURL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
}

// notifyBarrier sends an unrelated payment to a fresh subscribed script and
// waits for its notification: every notification the server queued to ec
// before that event's pass has arrived by then.
func notifyBarrier(t *testing.T, ctx context.Context, n *Node, ec *ElectrumClient) {
	t.Helper()
	w := kitWallet(t)
	if _, err := ec.SubscribeScriptHash(ctx, w.sh); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Faucet(w.addr, 10_000); err != nil {
		t.Fatal(err)
	}
	if _, err := ec.NextStatus(ctx, w.sh, func(s *string) bool { return s != nil }); err != nil {
		t.Fatal(err)
	}
}

// statusNotes takes every queued status notification of sh, in order.
func statusNotes(ec *ElectrumClient, sh string) []*string {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	var out []*string
	kept := ec.notes[:0]
	for _, note := range ec.notes {
		if s, st, ok := decodeStatus(note.Notification); ok && note.Method == "blockchain.scripthash.subscribe" && s == sh {
			out = append(out, st)
			continue
		}
		kept = append(kept, note)
	}
	ec.notes = kept
	return out
}

// canonHistory puts the mempool part of want in the protocol's order (height 0
// before -1, then txid).
func canonHistory(want ...HistoryItem) []HistoryItem {
	var conf, mem []HistoryItem
	for _, h := range want {
		if h.Height > 0 {
			conf = append(conf, h)
		} else {
			mem = append(mem, h)
		}
	}
	sort.SliceStable(mem, func(i, j int) bool {
		if mem[i].Height != mem[j].Height {
			return mem[i].Height > mem[j].Height
		}
		return mem[i].TxHash < mem[j].TxHash
	})
	return append(conf, mem...)
}

// txHexOf serializes tx.
func txHexOf(t *testing.T, tx *wire.MsgTx) string {
	t.Helper()
	var buf bytes.Buffer
	if err := tx.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(buf.Bytes())
}

// txHashOf returns tx's id.
func txHashOf(tx *wire.MsgTx) *chainhash.Hash {
	h := tx.TxHash()
	return &h
}
