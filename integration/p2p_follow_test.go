package integration

// Our node following a real btcd v0.26.2 over P2P through reorganizations,
// restarts, kills and invalid blocks, its Electrum and Esplora answers and
// notifications checked against the chain.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// p2pFollow is the state of a node following a real btcd over P2P.
type p2pFollow struct {
	t       *testing.T
	ctx     context.Context
	rng     *rand.Rand
	src     *testchain.Harness
	spec    testchain.BlockSpec
	a       *BtcdProcess
	ours    *Node
	sub     *ElectrumClient
	subs    []indexers.ScriptHash
	args    []string
	hashes  map[chainhash.Hash]chainhash.Hash
	base    time.Time
	heights map[chainhash.Hash]int32
	outs    map[string][][]p2pOut
	last    map[indexers.ScriptHash]string
	lastTip HeaderTip
	sent    []*btcutil.Block
	// noPoolWait: our node restarted, its pool is not btcd's.
	noPoolWait bool
}

// retime gives a testchain block a current timestamp (btcd serves headers
// only while its tip is less than a day old) on the retimed parent.
func (f *p2pFollow) retime(b *btcutil.Block) *btcutil.Block {
	f.t.Helper()
	if f.hashes == nil {
		f.hashes = map[chainhash.Hash]chainhash.Hash{}
		f.base = time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	}
	mb := *b.MsgBlock()
	hdr := mb.Header
	if f.heights == nil {
		f.heights = map[chainhash.Hash]int32{}
	}
	height := f.heights[hdr.PrevBlock] + 1
	if p, ok := f.hashes[hdr.PrevBlock]; ok {
		hdr.PrevBlock = p
	}
	f.heights[*b.Hash()] = height
	hdr.Timestamp = f.base.Add(time.Duration(height) * time.Second)
	target := blockchain.CompactToBig(hdr.Bits)
	for hdr.Nonce = 0; ; hdr.Nonce++ {
		h := hdr.BlockHash()
		if blockchain.HashToBig(&h).Cmp(target) <= 0 {
			break
		}
	}
	mb.Header = hdr
	f.hashes[*b.Hash()] = hdr.BlockHash()
	return btcutil.NewBlock(&mb)
}

func (f *p2pFollow) submit(blocks []*btcutil.Block) {
	f.t.Helper()
	for _, b := range blocks {
		b = f.retime(b)
		f.sent = append(f.sent, b)
		if err := f.a.RPC.SubmitBlock(b, nil); err != nil {
			f.t.Fatalf("submitblock %v to btcd: %v", b.Hash(), err)
		}
	}
}

func (f *p2pFollow) mine(n int) {
	f.t.Helper()
	var bs []*btcutil.Block
	for i := 0; i < n; i++ {
		b, err := f.src.Mine(f.rng, f.spec)
		if err != nil {
			f.t.Fatal(err)
		}
		bs = append(bs, b)
	}
	f.submit(bs)
}

func (f *p2pFollow) reorg(depth int) {
	f.t.Helper()
	bs, err := f.src.Reorg(f.rng, depth, f.spec)
	if err != nil {
		f.t.Fatal(err)
	}
	f.submit(bs)
}

// subscribe subscribes the scripts of the newest blocks of the model.
func (f *p2pFollow) subscribe(m *testchain.Model) {
	t := f.t
	f.sub = f.ours.DialElectrum(t, f.ctx)
	tip, err := f.sub.SubscribeHeaders(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.lastTip = tip
	seen := map[indexers.ScriptHash]bool{}
	f.subs = nil
	for sh, hist := range m.History {
		if len(hist) > 0 && slices.ContainsFunc(hist, func(e testchain.HistoryItem) bool { return e.Height > m.Height-12 }) && !seen[sh] {
			seen[sh] = true
			f.subs = append(f.subs, sh)
		}
	}
	slices.SortFunc(f.subs, func(a, b indexers.ScriptHash) int { return strings.Compare(a.String(), b.String()) })
	if len(f.subs) > 300 {
		f.subs = f.subs[:300]
	}
	f.last = map[indexers.ScriptHash]string{}
	for _, sh := range f.subs {
		st, err := f.sub.SubscribeScriptHash(f.ctx, sh.String())
		if err != nil {
			t.Fatal(err)
		}
		f.last[sh] = str(st)
	}
}

// check waits for our node to be at btcd's tip and checks the index.
func (f *p2pFollow) check(step string) *testchain.Model {
	t := f.t
	t.Helper()
	waitSameTip(t, f.ctx, f.a.RPC, f.ours.RPC)
	if err := f.ours.WaitSynced(f.ctx); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	checkIndexAtTip(t, f.ours.RPC)
	if res := verifyIndexRPC(t, f.ctx, f.ours.RPC); !res.OK {
		t.Fatalf("%s: verifyelectrumindex: %+v", step, res)
	}
	m := modelOverRPC(t, f.ours.RPC)
	ec := f.ours.DialElectrum(t, f.ctx)
	defer ec.Close()
	var scripts []indexers.ScriptHash
	for sh := range m.History {
		scripts = append(scripts, sh)
	}
	slices.SortFunc(scripts, func(a, b indexers.ScriptHash) int { return strings.Compare(a.String(), b.String()) })
	f.rng.Shuffle(len(scripts), func(i, j int) { scripts[i], scripts[j] = scripts[j], scripts[i] })
	// Merkle proofs and positions of the newest blocks' transactions.
	for h := max(1, m.Height-6); h <= m.Height; h++ {
		for pos, txid := range m.Blocks[h] {
			if pos > 4 {
				break
			}
			checkMerkle(t, f.ctx, ec, f.ours.RPC, txid.String(), h)
			raw, err := ec.Call(f.ctx, "blockchain.transaction.id_from_pos", h, pos)
			if err != nil {
				t.Fatalf("%s: id_from_pos %d %d: %v", step, h, pos, err)
			}
			if string(raw) != `"`+txid.String()+`"` {
				t.Errorf("%s: id_from_pos %d %d = %s, want %v", step, h, pos, raw, txid)
			}
		}
	}
	f.checkMempool(step, ec)
	spent := f.mempoolSpends()
	for _, sh := range scripts[:min(len(scripts), 40)] {
		compareScript(t, f.ctx, ec, m, sh, spent)
	}
	for _, sh := range f.subs {
		compareScript(t, f.ctx, ec, m, sh, spent)
	}
	// Every subscription ends at the status of the server's history: the
	// last notification (or the subscribe answer) of each script.
	if f.sub != nil {
		_, tipH, _ := f.ours.RPC.GetBestBlock()
		tipHex := headerHex(t, f.ours.RPC, tipH)
		done, cancel0 := context.WithCancel(context.Background())
		cancel0()
		for {
			n, err := f.sub.Notification(done, "blockchain.headers.subscribe", nil)
			if err != nil {
				break
			}
			if tip, ok := decodeTip(n); ok {
				f.lastTip = tip
			}
		}
		if f.lastTip.Hex != tipHex {
			cctx, cancel := context.WithTimeout(f.ctx, SyncTimeout)
			tip, err := f.sub.NextHeaderMatching(cctx, func(h HeaderTip) bool { return h.Hex == tipHex })
			cancel()
			if err != nil {
				t.Errorf("%s: last header notified %d %s, tip %d %s", step, f.lastTip.Height, f.lastTip.Hex, tipH, tipHex)
			}
			f.lastTip = tip
		}
		f.drain()
		for _, sh := range f.subs {
			hist, err := ec.GetHistory(f.ctx, sh.String())
			if err != nil {
				t.Fatal(err)
			}
			want := str(Status(hist))
			if f.last[sh] == want {
				continue
			}
			cctx, cancel := context.WithTimeout(f.ctx, SyncTimeout)
			prev := f.last[sh]
			_, err = f.sub.NextStatus(cctx, sh.String(), func(s *string) bool {
				if str(s) == prev {
					t.Errorf("%s: script %s: a notification repeats the status the session had, %s", step, sh, prev)
				}
				prev = str(s)
				return str(s) == want
			})
			cancel()
			if err != nil {
				t.Errorf("%s: script %s: status %s, but the last notified (or subscribed) is %s", step, sh, want, f.last[sh])
				continue
			}
			f.drain()
			f.last[sh] = want
		}
	}
	if f.ours.EsploraURL != "" {
		f.checkEsplora(step, m)
	}
	t.Logf("%s: ok at %d", step, m.Height)
	return m
}

// checkEsplora compares /scripthash/:hash chain_stats of the subscribed
// scripts with the stats the node's blocks give.
func (f *p2pFollow) checkEsplora(step string, m *testchain.Model) {
	t := f.t
	t.Helper()
	type fund struct {
		n   int
		sum int64
	}
	want := map[indexers.ScriptHash]*fund{}
	for _, sh := range f.subs {
		want[sh] = &fund{}
	}
	for h := int32(0); h <= m.Height; h++ {
		hash, err := f.ours.RPC.GetBlockHash(int64(h))
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range f.block(hash.String()) {
			for _, out := range tx {
				if w := want[out.sh]; w != nil {
					w.n++
					w.sum += out.v
				}
			}
		}
	}
	// Transactions of the newest blocks sent, on either branch: their
	// status is the chain's, the pool's, or unknown.
	pool, err := f.ours.RPC.GetRawMempool()
	if err != nil {
		t.Fatal(err)
	}
	inPool := map[chainhash.Hash]bool{}
	for _, h := range pool {
		inPool[*h] = true
	}
	for _, b := range f.sent[max(0, len(f.sent)-15):] {
		for _, tx := range b.Transactions() {
			txid := *tx.Hash()
			got := p2pGet(t, f.ours.EsploraURL+"/tx/"+txid.String()+"/status")
			var want string
			if pos, ok := m.Txs[txid]; ok {
				bh, err := f.ours.RPC.GetBlockHash(int64(pos.Height))
				if err != nil {
					t.Fatal(err)
				}
				want = fmt.Sprintf("200 confirmed %d %s", pos.Height, bh)
			} else {
				// As electrs: unconfirmed for any transaction not in
				// the chain, in the pool or not.
				want = "200 unconfirmed"
			}
			var st struct {
				Confirmed bool   `json:"confirmed"`
				Height    int32  `json:"block_height"`
				Hash      string `json:"block_hash"`
			}
			g := got[:3]
			if g == "200" {
				if err := json.Unmarshal([]byte(got[4:]), &st); err != nil {
					t.Fatal(err)
				}
				if st.Confirmed {
					g = fmt.Sprintf("200 confirmed %d %s", st.Height, st.Hash)
				} else {
					g = "200 unconfirmed"
				}
			}
			if g != want {
				t.Errorf("%s: /tx/%v/status: %s (%s), want %s", step, txid, g, got, want)
			}
			v, verr := f.ours.RPC.GetRawTransactionVerbose(&txid)
			if pos, ok := m.Txs[txid]; ok {
				bh, _ := f.ours.RPC.GetBlockHash(int64(pos.Height))
				if verr != nil || v.BlockHash != bh.String() {
					t.Errorf("%s: getrawtransaction %v confirmed at %d (%v): %+v %v", step, txid, pos.Height, bh, v, verr)
				}
			} else if inPool[txid] {
				if verr != nil || v.BlockHash != "" {
					t.Errorf("%s: getrawtransaction %v in the pool: blockhash %q %v", step, txid, v.BlockHash, verr)
				}
			} else if verr == nil {
				t.Errorf("%s: getrawtransaction %v of a replaced block, not in the pool: blockhash %s confirmations %d", step, txid, v.BlockHash, v.Confirmations)
			}
			if _, ok := m.Txs[txid]; !ok && !inPool[txid] {
				// Neither confirmed nor unconfirmed: unknown, as electrs
				// and ElectrumX (bitcoind) answer.
				if got := p2pGet(t, f.ours.EsploraURL+"/tx/"+txid.String()); !strings.HasPrefix(got, "404") {
					t.Errorf("%s: /tx/%v of a replaced block, not in the pool: %.120s", step, txid, got)
				}
				if f.sub == nil {
					continue
				}
				if raw, err := f.sub.GetTransaction(f.ctx, txid.String()); err == nil {
					t.Errorf("%s: blockchain.transaction.get %v of a replaced block, not in the pool: %.60s", step, txid, raw)
				}
			}
		}
	}
	for _, sh := range f.subs {
		var unspentN int
		var unspentSum int64
		for _, u := range m.Unspent[sh] {
			unspentN++
			unspentSum += u.Value
		}
		w := want[sh]
		exp := fmt.Sprintf(`{"funded_txo_count":%d,"funded_txo_sum":%d,"spent_txo_count":%d,"spent_txo_sum":%d,"tx_count":%d}`,
			w.n, w.sum, w.n-unspentN, w.sum-unspentSum, len(m.History[sh]))
		got := p2pGet(t, f.ours.EsploraURL+"/scripthash/"+hex.EncodeToString(sh[:]))
		var g struct {
			ChainStats json.RawMessage `json:"chain_stats"`
		}
		if err := json.Unmarshal([]byte(got[4:]), &g); err != nil {
			t.Fatalf("%s: %s", step, got)
		}
		if string(g.ChainStats) != exp {
			t.Errorf("%s: esplora /scripthash/%s chain_stats %s, the chain gives %s", step, sh, g.ChainStats, exp)
		}
	}
}

type p2pOut struct {
	sh indexers.ScriptHash
	v  int64
}

// block returns the outputs of each transaction of a block.
func (f *p2pFollow) block(hash string) [][]p2pOut {
	if f.outs == nil {
		f.outs = map[string][][]p2pOut{}
	}
	if o, ok := f.outs[hash]; ok {
		return o
	}
	h, _ := chainhash.NewHashFromStr(hash)
	b, err := f.ours.RPC.GetBlock(h)
	if err != nil {
		f.t.Fatal(err)
	}
	var o [][]p2pOut
	for _, tx := range b.Transactions {
		var outs []p2pOut
		for _, out := range tx.TxOut {
			if !testchain.Indexed(out.PkScript) {
				continue
			}
			sh := indexers.ScriptHashFromScript(out.PkScript)
			outs = append(outs, p2pOut{sh, out.Value})
		}
		o = append(o, outs)
	}
	f.outs[hash] = o
	return o
}

func p2pGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

func TestP2PReorgs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), p2pWait)
	defer cancel()
	src, err := testchain.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.MineMature(); err != nil {
		t.Fatal(err)
	}
	spec := testchain.DefaultSpec()
	spec.Txs = 30
	spec.MaxOutputs = 5
	f := &p2pFollow{t: t, ctx: ctx, rng: rand.New(rand.NewSource(53)), src: src, spec: spec}
	f.a = StartBtcdProcess(t, BtcdProcessConfig{DataDir: t.TempDir()})
	var pre []*btcutil.Block
	_, h := src.Tip()
	for i := int32(1); i <= h; i++ {
		b, err := src.Chain.BlockByHeight(i)
		if err != nil {
			t.Fatal(err)
		}
		pre = append(pre, b)
	}
	f.submit(pre)
	f.mine(150)

	f.args = []string{"--connect=" + f.a.P2PAddr, "--electrumundoblocks=2", "--electrumcatchupbatch=24"}
	f.ours = StartNode(t, NodeConfig{Binary: true, Esplora: true, Args: f.args})
	t.Cleanup(func() {
		if t.Failed() {
			l, _ := f.ours.Log()
			if len(l) > 6000 {
				l = l[len(l)-6000:]
			}
			t.Logf("our log:\n%s\nbtcd:\n%s", l, tailOf(f.a.LogDir+"/regtest/btcd.log", 40))
		}
	})
	m := f.check("initial sync")
	f.subscribe(m)

	f.reorg(1)
	f.check("reorg 1")
	f.mine(2)
	f.reorg(3)
	f.check("reorg 3")
	f.mine(2)
	f.reorg(6)
	f.check("reorg 6 (> undo blocks, records young)")
	f.reorg(25)
	f.check("reorg 25")

	// Restarted: the earlier run's records deeper than 2 go.
	f.ours = f.ours.Restart(t)
	f.noPoolWait = true
	f.sub = nil
	f.check("restart")
	f.subscribe(modelOverRPC(t, f.ours.RPC))
	f.reorg(7)
	f.check("reorg 7 after restart")
	f.ours = f.ours.Restart(t)
	f.sub = nil
	f.subscribe(modelOverRPC(t, f.ours.RPC))
	f.reorg(30)
	f.check("reorg 30 after restart")

	// Reorg while stopped.
	dir := f.ours.Dir
	if err := f.ours.Stop(); err != nil {
		t.Fatal(err)
	}
	f.mine(3)
	f.reorg(5)
	f.ours = StartNode(t, NodeConfig{Binary: true, Esplora: true, Dir: dir, Args: f.args})
	f.sub = nil
	f.subscribe(modelOverRPC(t, f.ours.RPC))
	f.mine(1)
	f.check("reorg 5 while stopped")

	// The peer invalidates its block 3 deep and mines a longer branch,
	// confirming its pool (the replaced blocks' transactions) again.
	_, th, err := f.a.RPC.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.a.RPC.InvalidateBlock(mustHash(t, f.a.RPC, int64(th-2))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.RPC.Generate(4); err != nil {
		t.Fatal(err)
	}
	f.check("invalidateblock 3 deep and generate 4 on the peer")
	if err := f.a.RPC.InvalidateBlock(mustHash(t, f.a.RPC, int64(th-6))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.RPC.Generate(9); err != nil {
		t.Fatal(err)
	}
	f.check("invalidateblock 7 deep and generate 9 on the peer")

	// A fresh node built from scratch on the same chain answers the same.
	fresh := StartNode(t, NodeConfig{Binary: true, Esplora: true, Args: []string{"--connect=" + f.a.P2PAddr}})
	waitSameTip(t, ctx, f.a.RPC, fresh.RPC)
	if err := fresh.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	mm := modelOverRPC(t, fresh.RPC)
	n := 0
	for sh := range mm.History {
		if n++; n > 80 {
			break
		}
		for _, p := range []string{"/scripthash/" + sh.String(), "/scripthash/" + sh.String() + "/utxo"} {
			got, want := p2pGet(t, f.ours.EsploraURL+p), p2pGet(t, fresh.EsploraURL+p)
			var g, w map[string]any
			if json.Unmarshal([]byte(got[4:]), &g) == nil && json.Unmarshal([]byte(want[4:]), &w) == nil {
				delete(g, "mempool_stats")
				delete(w, "mempool_stats")
				gb, _ := json.Marshal(g)
				wb, _ := json.Marshal(w)
				got, want = string(gb), string(wb)
			}
			if got != want && !strings.HasSuffix(p, "/utxo") {
				t.Errorf("esplora %s: ours %s, fresh %s", p, got, want)
			}
		}
	}
}

// p2pWait bounds each test (a hang guard).
var p2pWait = 2 * testWait

// mempoolSpends is the outpoints our node's mempool spends.
func (f *p2pFollow) mempoolSpends() map[string]bool {
	pool, err := f.ours.RPC.GetRawMempool()
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, h := range pool {
		tx, err := f.ours.RPC.GetRawTransaction(h)
		if err != nil {
			continue
		}
		for _, in := range tx.MsgTx().TxIn {
			out[fmt.Sprintf("%v:%d", in.PreviousOutPoint.Hash, in.PreviousOutPoint.Index)] = true
		}
	}
	return out
}

// TestSubscribedDuringIBD: a client subscribed to scripts before our node
// downloads a chain from btcd (which reorganizes meanwhile) ends with
// every status of the index notified.
func TestSubscribedDuringIBD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), p2pWait)
	defer cancel()
	src, err := testchain.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.MineMature(); err != nil {
		t.Fatal(err)
	}
	spec := testchain.DefaultSpec()
	spec.Txs = 30
	spec.MaxOutputs = 5
	f := &p2pFollow{t: t, ctx: ctx, rng: rand.New(rand.NewSource(54)), src: src, spec: spec}
	f.a = StartBtcdProcess(t, BtcdProcessConfig{DataDir: t.TempDir()})
	var pre []*btcutil.Block
	_, h := src.Tip()
	for i := int32(1); i <= h; i++ {
		b, err := src.Chain.BlockByHeight(i)
		if err != nil {
			t.Fatal(err)
		}
		pre = append(pre, b)
	}
	f.submit(pre)
	f.mine(250)
	m0, err := testchain.BuildModel(src)
	if err != nil {
		t.Fatal(err)
	}
	f.args = []string{"--electrumundoblocks=2"}
	f.ours = StartNode(t, NodeConfig{Binary: true, Args: f.args})
	f.subscribe(m0)
	if err := f.ours.RPC.AddNode(f.a.P2PAddr, "add"); err != nil {
		t.Fatal(err)
	}
	// The peer reorganizes while we download.
	f.reorg(4)
	f.mine(1)
	f.check("ibd with a reorg")
}

// TestKilledDuringP2PSync kills our node with SIGKILL while it downloads
// and indexes a chain from btcd, at several heights, and restarts it: each
// restart must reconcile without a rebuild and end equal to the chain.
func TestKilledDuringP2PSync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), p2pWait)
	defer cancel()
	src, err := testchain.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.MineMature(); err != nil {
		t.Fatal(err)
	}
	spec := testchain.DefaultSpec()
	spec.Txs = 40
	spec.MaxOutputs = 5
	f := &p2pFollow{t: t, ctx: ctx, rng: rand.New(rand.NewSource(55)), src: src, spec: spec}
	f.a = StartBtcdProcess(t, BtcdProcessConfig{DataDir: t.TempDir()})
	var pre []*btcutil.Block
	_, h := src.Tip()
	for i := int32(1); i <= h; i++ {
		b, err := src.Chain.BlockByHeight(i)
		if err != nil {
			t.Fatal(err)
		}
		pre = append(pre, b)
	}
	f.submit(pre)
	f.mine(350)
	f.args = []string{"--connect=" + f.a.P2PAddr, "--electrumundoblocks=2", "--electrumcatchupbatch=24"}
	dir := t.TempDir()
	for i, at := range []int32{130, 250, 330} {
		n, err := startNode(t, NodeConfig{Binary: true, Dir: dir, Args: f.args})
		if err != nil {
			t.Fatal(err)
		}
		WaitFor(t, ctx, "the index to pass the kill height", func() bool {
			info, err := ElectrumInfo(n.RPC)
			return err == nil && info.IndexHeight >= at
		})
		kill(n)
		_ = n.Stop()
		t.Logf("kill %d at index height >= %d", i, at)
		if i == 1 {
			// The peer reorganizes while we are down.
			f.reorg(5)
		}
	}
	f.ours = StartNode(t, NodeConfig{Binary: true, Dir: dir, Args: f.args})
	f.noPoolWait = true
	f.check("after kills")
	logged, err := f.ours.Log()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"rebuilding", "another schema version", "Dropping the Electrum index", "[ERR] ELEC:"} {
		if strings.Contains(logged, bad) {
			i := strings.Index(logged, bad)
			t.Errorf("the log says %q: %s", bad, logged[max(0, i-400):min(len(logged), i+400)])
		}
	}
}

// rawPeer connects btcd's peer package to addr.
func rawPeer(t *testing.T, addr string, serve *sync.Map) *peer.Peer {
	t.Helper()
	verack := make(chan struct{})
	p, err := peer.NewOutboundPeer(&peer.Config{
		ChainParams:      &chaincfg.RegressionNetParams,
		Services:         wire.SFNodeNetwork | wire.SFNodeWitness,
		UserAgentName:    "rawpeer",
		UserAgentVersion: "1.0",
		AllowSelfConns:   true,
		Listeners: peer.MessageListeners{
			OnVerAck: func(*peer.Peer, *wire.MsgVerAck) { close(verack) },
			OnGetData: func(p *peer.Peer, msg *wire.MsgGetData) {
				for _, iv := range msg.InvList {
					if b, ok := serve.Load(iv.Hash); ok {
						p.QueueMessageWithEncoding(b.(*btcutil.Block).MsgBlock(), nil, wire.WitnessEncoding)
					}
				}
			},
		},
	}, addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p.AssociateConnection(conn)
	t.Cleanup(p.Disconnect)
	select {
	case <-verack:
	case <-time.After(testWait):
		t.Fatal("no handshake")
	}
	return p
}

// breakBlock makes a retimed block break a consensus rule its header does
// not show: its coinbase pays one satoshi more than it may.
func breakBlock(b *btcutil.Block) *btcutil.Block {
	mb := b.MsgBlock().Copy()
	mb.Transactions[0].TxOut[0].Value++
	mb.Header.MerkleRoot = blockchain.CalcMerkleRoot(btcutil.NewBlock(mb).Transactions(), false)
	target := blockchain.CompactToBig(mb.Header.Bits)
	for mb.Header.Nonce = 0; ; mb.Header.Nonce++ {
		h := mb.Header.BlockHash()
		if blockchain.HashToBig(&h).Cmp(target) <= 0 {
			break
		}
	}
	return btcutil.NewBlock(mb)
}

// TestInvalidBlockFromPeer: a peer sends our node a valid block and then
// an invalid one on it (at the tip, and as the block that would make a
// competing branch heavier); the index stays on the chain btcd keeps and
// equals it, and the node goes on following btcd.
func TestInvalidBlockFromPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), p2pWait)
	defer cancel()
	src, err := testchain.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.MineMature(); err != nil {
		t.Fatal(err)
	}
	spec := testchain.DefaultSpec()
	spec.Txs = 30
	spec.MaxOutputs = 5
	f := &p2pFollow{t: t, ctx: ctx, rng: rand.New(rand.NewSource(56)), src: src, spec: spec}
	f.a = StartBtcdProcess(t, BtcdProcessConfig{DataDir: t.TempDir()})
	var pre []*btcutil.Block
	_, h := src.Tip()
	for i := int32(1); i <= h; i++ {
		b, err := src.Chain.BlockByHeight(i)
		if err != nil {
			t.Fatal(err)
		}
		pre = append(pre, b)
	}
	f.submit(pre)
	f.mine(60)
	f.args = []string{"--connect=" + f.a.P2PAddr, "--electrumundoblocks=2", "--electrumcatchupbatch=24"}
	f.ours = StartNode(t, NodeConfig{Binary: true, Esplora: true, Args: f.args})
	t.Cleanup(func() {
		if t.Failed() {
			l, _ := f.ours.Log()
			if len(l) > 5000 {
				l = l[len(l)-5000:]
			}
			t.Logf("our log:\n%s", l)
		}
	})
	m := f.check("synced")
	f.subscribe(m)

	serve := &sync.Map{}
	p := rawPeer(t, f.ours.P2PAddr, serve)
	send := func(b *btcutil.Block) {
		serve.Store(*b.Hash(), b)
		inv := wire.NewMsgInv()
		_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, b.Hash()))
		done := make(chan struct{})
		p.QueueMessage(inv, done)
		<-done
	}
	// At the tip: valid V, then invalid I on V.
	v, err := src.Mine(f.rng, spec)
	if err != nil {
		t.Fatal(err)
	}
	i0, err := src.Mine(f.rng, spec)
	if err != nil {
		t.Fatal(err)
	}
	rv := f.retime(v)
	bad := breakBlock(f.retime(i0))
	send(rv)
	WaitFor(t, ctx, "our node to connect V", func() bool {
		h, _, err := f.ours.RPC.GetBestBlock()
		return err == nil && *h == *rv.Hash()
	})
	send(bad)
	ping := make(chan struct{})
	p.QueueMessage(wire.NewMsgPing(1), ping)
	<-ping
	if err := src.InvalidateBlock(*i0.Hash()); err != nil {
		t.Fatal(err)
	}
	// btcd gets V as well (so that the tips agree), then more blocks.
	if err := f.a.RPC.SubmitBlock(rv, nil); err != nil && !strings.Contains(err.Error(), "already have") {
		t.Fatal(err)
	}
	m = f.check("valid then invalid at the tip")
	_ = m

	// A competing branch: valid B1 off the tip's parent, then invalid B2
	// on it, which would make the branch heavier.
	bs, err := src.Reorg(f.rng, 1, spec)
	if err != nil {
		t.Fatal(err)
	}
	b1 := f.retime(bs[0])
	b2 := breakBlock(f.retime(bs[1]))
	send(b1)
	send(b2)
	ping2 := make(chan struct{})
	p.QueueMessage(wire.NewMsgPing(2), ping2)
	<-ping2
	if err := f.a.RPC.SubmitBlock(b1, nil); err != nil && !strings.Contains(err.Error(), "already have") {
		t.Fatal(err)
	}
	if err := src.InvalidateBlock(*bs[1].Hash()); err != nil {
		t.Fatal(err)
	}
	f.mine(2)
	f.check("valid then invalid on a branch")
}

// drain takes every queued status notification, keeping the last of each
// script.
func (f *p2pFollow) drain() {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		n, err := f.sub.Notification(done, "blockchain.scripthash.subscribe", nil)
		if err != nil {
			return
		}
		sh, st, ok := decodeStatus(n)
		if !ok {
			f.t.Fatalf("bad notification %+v", n)
		}
		k, err := indexers.ParseScriptHash(sh)
		if err != nil {
			f.t.Fatal(err)
		}
		if prev, ok := f.last[k]; ok && prev == str(st) {
			f.t.Errorf("script %s: a notification repeats the status the session had, %s", sh, prev)
		}
		f.last[k] = str(st)
	}
}

// checkMempool waits for our pool to equal btcd's, then checks that the
// unconfirmed entries of the subscribed scripts are exactly the pool's
// transactions touching them.
func (f *p2pFollow) checkMempool(step string, ec *ElectrumClient) {
	t := f.t
	t.Helper()
	var pool []*chainhash.Hash
	WaitFor(t, f.ctx, step+": our mempool to equal btcd's", func() bool {
		if f.noPoolWait {
			var err error
			pool, err = f.ours.RPC.GetRawMempool()
			return err == nil
		}
		a, err1 := f.a.RPC.GetRawMempool()
		o, err2 := f.ours.RPC.GetRawMempool()
		if err1 != nil || err2 != nil || len(a) != len(o) {
			return false
		}
		set := map[chainhash.Hash]bool{}
		for _, h := range a {
			set[*h] = true
		}
		for _, h := range o {
			if !set[*h] {
				return false
			}
		}
		pool = o
		return true
	})
	t.Logf("%s: %d transactions in the pool, %d scripts subscribed", step, len(pool), len(f.subs))
	want := map[indexers.ScriptHash]map[string]bool{}
	txs := map[chainhash.Hash]*wire.MsgTx{}
	get := func(h *chainhash.Hash) *wire.MsgTx {
		if tx, ok := txs[*h]; ok {
			return tx
		}
		raw, err := ec.GetTransaction(f.ctx, h.String())
		if err != nil {
			t.Fatalf("%s: transaction.get %v: %v", step, h, err)
		}
		b, _ := hex.DecodeString(raw)
		var tx wire.MsgTx
		if err := tx.Deserialize(bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		txs[*h] = &tx
		return &tx
	}
	add := func(script []byte, txid string) {
		sh := indexers.ScriptHashFromScript(script)
		if want[sh] == nil {
			want[sh] = map[string]bool{}
		}
		want[sh][txid] = true
	}
	inPool := map[chainhash.Hash]bool{}
	for _, h := range pool {
		inPool[*h] = true
	}
	for _, h := range pool {
		tx := get(h)
		for _, out := range tx.TxOut {
			add(out.PkScript, h.String())
		}
		for _, in := range tx.TxIn {
			prev := get(&in.PreviousOutPoint.Hash)
			add(prev.TxOut[in.PreviousOutPoint.Index].PkScript, h.String())
		}
	}
	for _, sh := range f.subs {
		hist, err := ec.GetHistory(f.ctx, sh.String())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		confirmed := map[string]bool{}
		for _, e := range hist {
			if e.Height <= 0 {
				h, _ := chainhash.NewHashFromStr(e.TxHash)
				wantH := int32(0)
				if tx, ok := txs[*h]; ok {
					for _, in := range tx.TxIn {
						if inPool[in.PreviousOutPoint.Hash] {
							wantH = -1
						}
					}
				}
				if tx, ok := txs[*h]; ok {
					fee := int64(0)
					for _, in := range tx.TxIn {
						fee += get(&in.PreviousOutPoint.Hash).TxOut[in.PreviousOutPoint.Index].Value
					}
					for _, out := range tx.TxOut {
						fee -= out.Value
					}
					if e.Fee == nil || *e.Fee != fee {
						t.Errorf("%s: script %s: %s fee %v, its inputs and outputs give %d", step, sh, e.TxHash, e.Fee, fee)
					}
				}
				if e.Height != wantH {
					t.Errorf("%s: script %s: %s at height %d, its inputs make it %d", step, sh, e.TxHash, e.Height, wantH)
				}
				got[e.TxHash] = true
			} else {
				confirmed[e.TxHash] = true
			}
		}
		for txid := range got {
			if confirmed[txid] {
				t.Errorf("%s: script %s: %s both confirmed and unconfirmed", step, sh, txid)
			}
		}
		if len(got) != len(want[sh]) {
			t.Errorf("%s: script %s: unconfirmed %v, pool gives %v", step, sh, got, want[sh])
			continue
		}
		for txid := range want[sh] {
			if !got[txid] {
				t.Errorf("%s: script %s: unconfirmed %v, pool gives %v", step, sh, got, want[sh])
				break
			}
		}
	}
}

// TestTwoPeersFlipFlop: our node follows two btcd peers whose competing
// branches overtake each other, by a few blocks and then deeper than the
// undo window.
func TestTwoPeersFlipFlop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), p2pWait)
	defer cancel()
	src, err := testchain.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.MineMature(); err != nil {
		t.Fatal(err)
	}
	spec := testchain.DefaultSpec()
	spec.Txs = 30
	spec.MaxOutputs = 5
	f := &p2pFollow{t: t, ctx: ctx, rng: rand.New(rand.NewSource(57)), src: src, spec: spec}
	f.a = StartBtcdProcess(t, BtcdProcessConfig{DataDir: t.TempDir()})
	b := StartBtcdProcess(t, BtcdProcessConfig{DataDir: t.TempDir()})
	var pre []*btcutil.Block
	_, h := src.Tip()
	for i := int32(1); i <= h; i++ {
		blk, err := src.Chain.BlockByHeight(i)
		if err != nil {
			t.Fatal(err)
		}
		pre = append(pre, blk)
	}
	f.submit(pre)
	f.mine(100)
	toB := func(bs []*btcutil.Block) {
		for _, blk := range bs {
			rb := f.retime(blk)
			if err := b.RPC.SubmitBlock(rb, nil); err != nil && !strings.Contains(err.Error(), "already have") {
				t.Fatalf("submitblock to B: %v", err)
			}
		}
	}
	_, h = src.Tip()
	var all []*btcutil.Block
	for i := int32(1); i <= h; i++ {
		blk, _ := src.Chain.BlockByHeight(i)
		all = append(all, blk)
	}
	toB(all)
	f.args = []string{"--connect=" + f.a.P2PAddr, "--connect=" + b.P2PAddr, "--electrumundoblocks=2"}
	f.ours = StartNode(t, NodeConfig{Binary: true, Esplora: true, Args: f.args})
	m := f.check("synced")
	f.subscribe(m)

	// X: 3 blocks on A.
	var x []*btcutil.Block
	for i := 0; i < 3; i++ {
		blk, err := src.Mine(f.rng, spec)
		if err != nil {
			t.Fatal(err)
		}
		x = append(x, blk)
	}
	f.submit(x)
	f.check("X on A")
	// Y: 4 blocks off the fork, on B.
	y, err := src.Reorg(f.rng, 3, spec)
	if err != nil {
		t.Fatal(err)
	}
	toB(y)
	WaitFor(t, ctx, "A to take Y", func() bool {
		hh, _, err := f.a.RPC.GetBestBlock()
		return err == nil && *hh == f.hashes[*y[len(y)-1].Hash()]
	})
	f.check("Y on B")
	// X grows to 6 on A.
	parent := *x[len(x)-1].Hash()
	var x2 []*btcutil.Block
	for i := 0; i < 3; i++ {
		blk, err := src.MineOn(parent, f.rng, spec)
		if err != nil {
			t.Fatal(err)
		}
		x2 = append(x2, blk)
		parent = *blk.Hash()
	}
	f.submit(x2)
	f.check("X longer again")
	// Y grows to 16 on B: 6 blocks undone, deeper than the undo window.
	parent = *y[len(y)-1].Hash()
	var y2 []*btcutil.Block
	for i := 0; i < 12; i++ {
		blk, err := src.MineOn(parent, f.rng, spec)
		if err != nil {
			t.Fatal(err)
		}
		y2 = append(y2, blk)
		parent = *blk.Hash()
	}
	toB(y2)
	WaitFor(t, ctx, "A to take Y", func() bool {
		hh, _, err := f.a.RPC.GetBestBlock()
		return err == nil && *hh == f.hashes[*y2[len(y2)-1].Hash()]
	})
	f.check("Y much longer")
}
