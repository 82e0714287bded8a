package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// Reorg storms: a node follows a chain that reorganizes again and again,
// by competing branches of depth 1 to 20 submitted to it (with the replaced
// blocks' transactions replayed elsewhere, or double-spent) and by
// invalidateblock/reconsiderblock, which move transactions into the mempool
// and back. Many Electrum sessions are subscribed to the scripts those
// blocks touch. After every reorganization each session must have received
// exactly what the reference model says changed:
//
//   - no missed notification: every subscription's last status (its
//     subscribe answer or last notification) is the model's status, and
//     every session's last header is the model's tip;
//   - no spurious notification: none repeats the status the session
//     already had, and none is for a script whose history, mempool entries
//     or status did not change in the step.
//
// A reorganization is delivered block by block, so a script may pass
// through the status of an intermediate chain on its way (the test counts
// those notifications); it must end at the model's.
//
// The model of the confirmed chain is testchain's, built from the block
// factory's own chain; the mempool part is computed from btcd's transaction
// pool (getrawmempool, not the Electrum server's view of it). Histories, balances,
// unspent lists and headers of sampled sessions are compared with both.
//
// STORM_REORGS sets the number of reorganizations (50 by default, 1,000
// in make soak) and STORM_SESSIONS the number of sessions.

// stormSession is one subscribed Electrum session and what it was told.
type stormSession struct {
	ec      *ElectrumClient
	scripts []indexers.ScriptHash
	// status is the last status the session got for each script ("" for
	// null), tip the last header.
	status map[indexers.ScriptHash]string
	tip    HeaderTip
	// seen records the last status notifications, for failure reports.
	seen []string
}

// storm is the state of a reorg storm.
type storm struct {
	t        *testing.T
	ctx      context.Context
	rng      *rand.Rand
	src      *testchain.Harness
	node     *Node
	sessions []*stormSession
	spec     testchain.BlockSpec
	// prev is the model, pool and statuses after the previous step.
	prev       *testchain.Model
	prevPool   *poolModel
	prevStatus map[indexers.ScriptHash]string
	// submitted holds every block the node was given.
	submitted map[chainhash.Hash]bool
	// counts of what the storm did and saw.
	reorgs, transitional, notes, maxDepth int
	kinds                                 map[string]int
	// lastFork is the height of the last branch's fork point.
	lastFork int32
	// outScript is the script of every output of every block seen, and
	// stepBlocks the blocks the current step disconnects or connects.
	outScript  map[wire.OutPoint]indexers.ScriptHash
	stepBlocks []*btcutil.Block
	// before is the main chain's last blocks when the step began.
	before []*btcutil.Block
}

func TestReorgStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("drives many reorganizations")
	}
	reorgs := int(envInt(t, "STORM_REORGS", 50))
	defSessions := int64(100)
	if raceDetector {
		defSessions = 25
	}
	nSessions := int(envInt(t, "STORM_SESSIONS", defSessions))
	seed := envInt(t, "STORM_SEED", time.Now().UnixNano())
	t.Logf("STORM_REORGS=%d STORM_SESSIONS=%d STORM_SEED=%d", reorgs, nSessions, seed)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+time.Duration(reorgs)*2*time.Second)
	defer cancel()

	s := &storm{t: t, ctx: ctx, rng: rand.New(rand.NewSource(seed)), submitted: map[chainhash.Hash]bool{},
		kinds: map[string]int{}, outScript: map[wire.OutPoint]indexers.ScriptHash{}}
	s.spec = testchain.DefaultSpec()
	s.spec.Txs = 6
	s.spec.MaxOutputs = 3

	// The block factory, and the node's datadir holding its first blocks.
	var err error
	s.src, err = testchain.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.src.Close()
	if err := s.src.MineMature(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 25; i++ {
		if _, err := s.src.Mine(s.rng, s.spec); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	dst, err := testchain.Create(filepath.Join(dir, "data", "regtest"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, top := s.src.Tip()
	for h := int32(1); h <= top; h++ {
		b, err := s.src.Chain.BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := dst.Chain.ProcessBlock(b, blockchain.BFNone); err != nil {
			t.Fatal(err)
		}
		s.submitted[*b.Hash()] = true
		s.scriptsOf(b)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	// The node binary, as operators run it (and without the race
	// detector's slowdown); every session comes from 127.0.0.1.
	s.node = StartNode(t, NodeConfig{Binary: true, Dir: dir, Args: []string{
		"--electrummaxsessionsperip=-1", "--electrumcosthardlimit=-1"}})

	// Sessions subscribe to random scripts of the chain and to headers.
	m := s.model()
	universe := m.ScriptHashes()
	s.prev, s.prevPool = m, s.pool(m)
	s.prevStatus = s.expectedStatuses(universe, m, s.prevPool)
	for i := 0; i < nSessions; i++ {
		ss := &stormSession{ec: s.node.DialElectrum(t, ctx), status: map[indexers.ScriptHash]string{}}
		if ss.tip, err = ss.ec.SubscribeHeaders(ctx); err != nil {
			t.Fatal(err)
		}
		for _, j := range s.rng.Perm(len(universe))[:min(12, len(universe))] {
			sh := universe[j]
			st, err := ss.ec.SubscribeScriptHash(ctx, sh.String())
			if err != nil {
				t.Fatal(err)
			}
			ss.scripts = append(ss.scripts, sh)
			ss.status[sh] = str(st)
		}
		s.sessions = append(s.sessions, ss)
	}
	s.check("subscribed")

	for s.reorgs < reorgs {
		switch k := s.rng.Intn(10); {
		case k < 5:
			s.branch()
		case k < 8:
			s.invalidate()
		default:
			s.mine()
		}
	}
	var kinds []string
	for k, v := range s.kinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(kinds)
	t.Logf("%d reorganizations (deepest %d; %s), %d sessions, %d notifications, %d through intermediate statuses",
		s.reorgs, s.maxDepth, strings.Join(kinds, ", "), len(s.sessions), s.notes, s.transitional)
}

// submit gives the node every main-chain and side-chain block of the
// factory it does not have yet, parents first.
func (s *storm) submit(blocks []*btcutil.Block) {
	s.t.Helper()
	for _, b := range blocks {
		if s.submitted[*b.Hash()] {
			continue
		}
		if err := s.node.RPC.SubmitBlock(b, nil); err != nil {
			s.t.Fatalf("submitblock %v: %v", b.Hash(), err)
		}
		s.submitted[*b.Hash()] = true
		s.scriptsOf(b)
	}
}

// scriptsOf returns the scripts a block's transactions pay or spend from
// (recording its outputs' scripts for the blocks to come).
func (s *storm) scriptsOf(b *btcutil.Block) map[indexers.ScriptHash]bool {
	out := map[indexers.ScriptHash]bool{}
	for _, tx := range b.Transactions() {
		for _, in := range tx.MsgTx().TxIn {
			if sh, ok := s.outScript[in.PreviousOutPoint]; ok {
				out[sh] = true
			}
		}
		for i, o := range tx.MsgTx().TxOut {
			sh := indexers.ScriptHashFromScript(o.PkScript)
			s.outScript[wire.OutPoint{Hash: *tx.Hash(), Index: uint32(i)}] = sh
			out[sh] = true
		}
	}
	return out
}

// stepWindow is how far below the tip a step's fork point may be: a
// branch forks at most 20 blocks deep, and an invalidation may switch to a
// side branch forked up to 20 blocks below the invalidated block.
const stepWindow = 45

// begin records the main chain's last blocks before a step.
func (s *storm) begin() {
	_, top := s.src.Tip()
	s.before = s.mainBlocks(max(top-stepWindow, 0))
}

// stepped sets stepBlocks to the blocks the step disconnected or connected:
// the main chain's last blocks before and after it, above the last one they
// share.
func (s *storm) stepped() {
	if s.before == nil {
		s.stepBlocks = nil
		return
	}
	from := s.before[0].Height() - 1
	after := s.mainBlocks(from)
	i := 0
	for i < len(s.before) && i < len(after) && *s.before[i].Hash() == *after[i].Hash() {
		i++
	}
	if i == 0 && from > 0 {
		s.t.Fatalf("a step switched to a branch forked more than %d blocks deep", stepWindow)
	}
	s.stepBlocks = append(append([]*btcutil.Block(nil), s.before[i:]...), after[i:]...)
	s.before = nil
}

// mainBlocks returns the factory's main-chain blocks above height from.
func (s *storm) mainBlocks(from int32) []*btcutil.Block {
	_, top := s.src.Tip()
	var bs []*btcutil.Block
	for h := from + 1; h <= top; h++ {
		b, err := s.src.Chain.BlockByHeight(h)
		if err != nil {
			s.t.Fatal(err)
		}
		bs = append(bs, b)
	}
	return bs
}

// branch builds a competing branch of depth 1 to 20 (replaying the
// replaced transactions, or spending their coins otherwise) and submits it.
func (s *storm) branch() {
	_, height := s.src.Tip()
	depth := 1 + s.rng.Intn(20)
	depth = min(depth, int(height)-101)
	replay := s.rng.Intn(2) == 0
	s.begin()
	var (
		blocks []*btcutil.Block
		err    error
	)
	if replay {
		blocks, err = s.src.ReorgReplay(s.rng, depth, s.spec)
	} else {
		blocks, err = s.src.Reorg(s.rng, depth, s.spec)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	s.submit(blocks)
	s.lastFork = height - int32(depth)
	kind := "branch"
	if replay {
		kind = "branch replaying"
	}
	s.reorg(kind, depth)
}

// invalidate invalidates a block 1 to 20 deep on the node and the factory
// alike (its transactions go to the node's mempool), checks, then
// reconsiders it.
func (s *storm) invalidate() {
	_, height := s.src.Tip()
	// Only blocks above the last fork: btcd's ReconsiderBlock returns to
	// whichever of several forks below the reconsidered block it meets
	// last in a map, not to the one with the most work, so a node and
	// the factory could part ways.
	if height <= s.lastFork {
		s.mine()
		_, height = s.src.Tip()
	}
	depth := min(1+s.rng.Intn(20), int(height-s.lastFork))
	hash, err := s.src.Chain.BlockHashByHeight(height - int32(depth) + 1)
	if err != nil {
		s.t.Fatal(err)
	}
	param := []json.RawMessage{jsonString(hash.String())}
	s.begin()
	if _, err := s.node.RPC.RawRequest("invalidateblock", param); err != nil {
		s.t.Fatal(err)
	}
	if err := s.src.InvalidateBlock(*hash); err != nil {
		s.t.Fatal(err)
	}
	s.reorg("invalidateblock", depth)
	s.begin()
	if _, err := s.node.RPC.RawRequest("reconsiderblock", param); err != nil {
		s.t.Fatal(err)
	}
	if err := s.src.ReconsiderBlock(*hash); err != nil {
		s.t.Fatal(err)
	}
	s.reorg("reconsiderblock", depth)
}

// mine extends the chain by one block (not a reorganization).
func (s *storm) mine() {
	s.begin()
	b, err := s.src.Mine(s.rng, s.spec)
	if err != nil {
		s.t.Fatal(err)
	}
	s.submit([]*btcutil.Block{b})
	s.check("block")
}

// reorg counts a reorganization and checks it.
func (s *storm) reorg(kind string, depth int) {
	s.reorgs++
	s.kinds[kind]++
	s.maxDepth = max(s.maxDepth, depth)
	s.check(fmt.Sprintf("reorg %d (%s, depth %d)", s.reorgs, kind, depth))
}

// model is the model of the factory's main chain, which must be the node's.
func (s *storm) model() *testchain.Model {
	s.t.Helper()
	m, err := testchain.BuildModel(s.src)
	if err != nil {
		s.t.Fatal(err)
	}
	hash, height, err := s.node.RPC.GetBestBlock()
	if err != nil {
		s.t.Fatal(err)
	}
	if *hash != m.Tip || height != m.Height {
		for _, ct := range s.src.Chain.ChainTips() {
			s.t.Logf("factory tip %d %v %v", ct.Height, ct.BlockHash, ct.Status)
		}
		s.t.Fatalf("node tip %v@%d, factory tip %v@%d", hash, height, m.Tip, m.Height)
	}
	return m
}

// poolModel is what btcd's mempool holds, per script.
type poolModel struct {
	// entries are the mempool history entries (height 0, or -1 with an
	// unconfirmed input), unconfirmed the balance change.
	entries     map[indexers.ScriptHash][]HistoryItem
	unconfirmed map[indexers.ScriptHash]int64
	// outs are pool outputs no pool transaction spends; spent the
	// confirmed outputs pool transactions spend.
	outs  map[indexers.ScriptHash][]Unspent
	spent map[wire.OutPoint]bool
}

// pool computes the mempool model from btcd's pool over the chain model m.
func (s *storm) pool(m *testchain.Model) *poolModel {
	type out struct {
		sh    indexers.ScriptHash
		value int64
	}
	prevouts := map[wire.OutPoint]out{}
	for sh, us := range m.Unspent {
		for _, u := range us {
			prevouts[wire.OutPoint{Hash: u.TxHash, Index: u.Vout}] = out{sh, u.Value}
		}
	}
	descs := s.poolTxs()
	inPool := map[chainhash.Hash]bool{}
	for _, d := range descs {
		inPool[*d.Hash()] = true
		for i, o := range d.MsgTx().TxOut {
			if testchain.Indexed(o.PkScript) {
				prevouts[wire.OutPoint{Hash: *d.Hash(), Index: uint32(i)}] = out{indexers.ScriptHashFromScript(o.PkScript), o.Value}
			}
		}
	}
	p := &poolModel{entries: map[indexers.ScriptHash][]HistoryItem{}, unconfirmed: map[indexers.ScriptHash]int64{},
		outs: map[indexers.ScriptHash][]Unspent{}, spent: map[wire.OutPoint]bool{}}
	spentInPool := map[wire.OutPoint]bool{}
	for _, d := range descs {
		tx := d.MsgTx()
		height := int32(0)
		touched := map[indexers.ScriptHash]bool{}
		for _, in := range tx.TxIn {
			prev, ok := prevouts[in.PreviousOutPoint]
			if !ok {
				s.t.Fatalf("pool transaction %v spends %v, neither a confirmed unspent output nor a pool one",
					d.Hash(), in.PreviousOutPoint)
			}
			if inPool[in.PreviousOutPoint.Hash] {
				height = -1
			} else {
				p.spent[in.PreviousOutPoint] = true
			}
			spentInPool[in.PreviousOutPoint] = true
			touched[prev.sh] = true
			p.unconfirmed[prev.sh] -= prev.value
		}
		for _, o := range tx.TxOut {
			if testchain.Indexed(o.PkScript) {
				sh := indexers.ScriptHashFromScript(o.PkScript)
				touched[sh] = true
				p.unconfirmed[sh] += o.Value
			}
		}
		for sh := range touched {
			p.entries[sh] = append(p.entries[sh], HistoryItem{TxHash: d.Hash().String(), Height: height})
		}
	}
	for _, d := range descs {
		for i, o := range d.MsgTx().TxOut {
			op := wire.OutPoint{Hash: *d.Hash(), Index: uint32(i)}
			if testchain.Indexed(o.PkScript) && !spentInPool[op] {
				sh := indexers.ScriptHashFromScript(o.PkScript)
				// listunspent gives every mempool output height 0.
				p.outs[sh] = append(p.outs[sh], Unspent{TxHash: op.Hash.String(), TxPos: op.Index, Value: o.Value})
			}
		}
	}
	return p
}

// poolTxs returns the transactions of btcd's pool in the node
// (getrawmempool, getrawtransaction).
func (s *storm) poolTxs() []*btcutil.Tx {
	s.t.Helper()
	ids, err := s.node.RPC.GetRawMempool()
	if err != nil {
		s.t.Fatal(err)
	}
	txs := make([]*btcutil.Tx, 0, len(ids))
	for _, id := range ids {
		tx, err := s.node.RPC.GetRawTransaction(id)
		if err != nil {
			s.t.Fatalf("getrawtransaction %v: %v", id, err)
		}
		txs = append(txs, tx)
	}
	return txs
}

// touched is the set of scripts with mempool entries.
func (p *poolModel) touched() map[indexers.ScriptHash]bool {
	t := map[indexers.ScriptHash]bool{}
	for sh := range p.entries {
		t[sh] = true
	}
	return t
}

// history is a script's expected history: the model's confirmed entries
// and the pool's.
func history(m *testchain.Model, p *poolModel, sh indexers.ScriptHash) []HistoryItem {
	var h []HistoryItem
	for _, e := range m.History[sh] {
		h = append(h, HistoryItem{TxHash: e.TxHash.String(), Height: e.Height})
	}
	return append(h, p.entries[sh]...)
}

// expectedStatuses is the status of every script of shs.
func (s *storm) expectedStatuses(shs []indexers.ScriptHash, m *testchain.Model, p *poolModel) map[indexers.ScriptHash]string {
	out := make(map[indexers.ScriptHash]string, len(shs))
	for _, sh := range shs {
		out[sh] = str(Status(history(m, p, sh)))
	}
	return out
}

// drainNotes takes every notification the client has queued.
func drainNotes(c *ElectrumClient) []Notification {
	c.mu.Lock()
	defer c.mu.Unlock()
	notes := make([]Notification, len(c.notes))
	for i, n := range c.notes {
		notes[i] = n.Notification
	}
	c.notes = nil
	return notes
}

// check waits until every session has been told the model's statuses and
// tip, failing on a notification that changes nothing or concerns a
// script the step did not touch, then compares the answers of a few
// sessions with the model.
func (s *storm) check(step string) {
	t := s.t
	t.Helper()
	if testing.Verbose() {
		_, h := s.src.Tip()
		t.Logf("check %s at height %d", step, h)
	}
	s.stepped()
	m := s.model()
	p := s.pool(m)
	var all []indexers.ScriptHash
	seen := map[indexers.ScriptHash]bool{}
	for _, ss := range s.sessions {
		for _, sh := range ss.scripts {
			if !seen[sh] {
				seen[sh] = true
				all = append(all, sh)
			}
		}
	}
	want := s.expectedStatuses(all, m, p)
	// The scripts the step may notify: those whose confirmed history,
	// mempool entries or status changed.
	allowed := map[indexers.ScriptHash]bool{}
	for _, sh := range all {
		if want[sh] != s.prevStatus[sh] || !slices.Equal(m.History[sh], s.prev.History[sh]) ||
			!slices.Equal(p.entries[sh], s.prevPool.entries[sh]) {
			allowed[sh] = true
		}
	}
	// And those of the transactions of the blocks the step disconnected
	// or connected, which pass through the mempool on the way.
	for sh := range s.prevPool.touched() {
		allowed[sh] = true
	}
	for _, b := range s.stepBlocks {
		for sh := range s.scriptsOf(b) {
			allowed[sh] = true
		}
	}
	tipHex := headerHex(t, s.node.RPC, m.Height)

	deadline := time.Now().Add(time.Minute)
	for i, ss := range s.sessions {
		for {
			for _, n := range drainNotes(ss.ec) {
				s.notes++
				switch n.Method {
				case "blockchain.headers.subscribe":
					tip, ok := decodeTip(n)
					if !ok {
						t.Fatalf("%s: session %d: bad header notification %s", step, i, n.Params)
					}
					if tip == ss.tip {
						t.Fatalf("%s: session %d: header notification repeats tip %d", step, i, tip.Height)
					}
					ss.tip = tip
				case "blockchain.scripthash.subscribe":
					hexSH, st, ok := decodeStatus(n)
					if !ok {
						t.Fatalf("%s: session %d: bad status notification %s", step, i, n.Params)
					}
					sh, err := indexers.ParseScriptHash(hexSH)
					if err != nil {
						t.Fatal(err)
					}
					old, subscribed := ss.status[sh]
					switch {
					case !subscribed:
						t.Fatalf("%s: session %d: notification for %s, which it never subscribed to", step, i, hexSH)
					case str(st) == old:
						t.Fatalf("%s: session %d: spurious notification for %s repeats its status %s", step, i, hexSH, old)
					case !allowed[sh]:
						s.explainSpurious(ss, sh, str(st), m, p)
						t.Fatalf("%s: session %d: spurious notification for %s, which the step did not touch (status %s, was %s)",
							step, i, hexSH, str(st), old)
					}
					if str(st) != want[sh] {
						s.transitional++
					}
					if len(ss.seen) >= 400 {
						ss.seen = append(ss.seen[:0], ss.seen[200:]...)
					}
					ss.seen = append(ss.seen, fmt.Sprintf("%s: %s -> %.8s (model %.8s)", step, hexSH[:8], str(st), want[sh]))
					ss.status[sh] = str(st)
				}
			}
			done := ss.tip.Height == m.Height && ss.tip.Hex == tipHex
			for _, sh := range ss.scripts {
				done = done && ss.status[sh] == want[sh]
			}
			if done {
				break
			}
			if time.Now().After(deadline) || s.ctx.Err() != nil {
				var missed []string
				for _, sh := range ss.scripts {
					if ss.status[sh] != want[sh] {
						// What the server answers now tells a missed
						// notification from a wrong state.
						h, _ := ss.ec.GetHistory(s.ctx, sh.String())
						missed = append(missed, fmt.Sprintf("%s has %q, model %q; server history %v (status %s), model %v",
							sh, ss.status[sh], want[sh], h, str(Status(h)), history(m, p, sh)))
					}
				}
				t.Fatalf("%s: session %d missed notifications: tip %d (model %d); %s", step, i, ss.tip.Height,
					m.Height, strings.Join(missed, "; "))
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	// Answers of a few sessions.
	for _, i := range s.rng.Perm(len(s.sessions))[:min(2, len(s.sessions))] {
		ss := s.sessions[i]
		for j, sh := range ss.scripts {
			s.compareAnswers(step, ss.ec, m, p, sh, j < 3)
		}
		for _, h := range []int32{m.Height, m.Height - int32(s.rng.Intn(25))} {
			got, err := ss.ec.BlockHeader(s.ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if want := headerHex(t, s.node.RPC, h); got != want {
				t.Fatalf("%s: header %d is %s, chain %s", step, h, got, want)
			}
			hash, err := s.src.Chain.BlockHashByHeight(h)
			if err != nil {
				t.Fatal(err)
			}
			hdr, err := DecodeHeader(got)
			if err != nil || hdr.BlockHash() != *hash {
				t.Fatalf("%s: header %d hashes to another block than the model's %v", step, h, hash)
			}
		}
	}
	s.prev, s.prevPool, s.prevStatus = m, p, want
}

// explainSpurious logs what is known of a spurious status: the server's
// history, which prefix of the model's history or which transaction of the
// step's blocks added to it it is the status of, the session's earlier
// notifications for the script and any that follow within a second.
func (s *storm) explainSpurious(ss *stormSession, sh indexers.ScriptHash, st string, m *testchain.Model, p *poolModel) {
	t := s.t
	h, _ := ss.ec.GetHistory(s.ctx, sh.String())
	full := history(m, p, sh)
	t.Logf("server history %v (status %s); model %v; before the step %v", h, str(Status(h)), full,
		history(s.prev, s.prevPool, sh))
	for k := 0; k <= len(full); k++ {
		if str(Status(full[:k])) == st {
			t.Logf("the notified status is that of the first %d of %d entries", k, len(full))
		}
	}
	for _, b := range s.stepBlocks {
		t.Logf("step block %d %v", b.Height(), b.Hash())
		for _, tx := range b.Transactions() {
			for _, hgt := range []int32{0, -1, b.Height()} {
				alt := append(append([]HistoryItem(nil), full...), HistoryItem{TxHash: tx.Hash().String(), Height: hgt})
				if str(Status(alt)) == st {
					t.Logf("the notified status has transaction %v of block %d at height %d too", tx.Hash(), b.Height(), hgt)
				}
			}
		}
	}
	for _, l := range ss.seen {
		if strings.Contains(l, sh.String()[:8]) {
			t.Logf("earlier: %s", l)
		}
	}
	time.Sleep(time.Second)
	for _, n := range drainNotes(ss.ec) {
		if hx, st2, ok := decodeStatus(n); ok && hx == sh.String() {
			t.Logf("then: %s", str(st2))
		}
	}
}

// compareAnswers compares one script's history, balance and unspent outputs
// (and, with proof, a merkle proof) with the model and the pool.
func (s *storm) compareAnswers(step string, ec *ElectrumClient, m *testchain.Model, p *poolModel, sh indexers.ScriptHash, proof bool) {
	t := s.t
	t.Helper()
	hist, err := ec.GetHistory(s.ctx, sh.String())
	if err != nil {
		t.Fatal(err)
	}
	got := make([]HistoryItem, 0, len(hist))
	for _, e := range hist {
		got = append(got, HistoryItem{TxHash: e.TxHash, Height: e.Height})
	}
	want := history(m, p, sh)
	sortMempool := func(h []HistoryItem) {
		sort.SliceStable(h, func(i, j int) bool {
			a, b := h[i], h[j]
			if (a.Height > 0) != (b.Height > 0) {
				return a.Height > 0
			}
			if a.Height > 0 {
				return false // chain order as given
			}
			if a.Height != b.Height {
				return a.Height > b.Height
			}
			return a.TxHash < b.TxHash
		})
	}
	sortMempool(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: script %s: history %v, model %v", step, sh, got, want)
	}
	// The proof of the script's latest confirmed transaction: it must prove
	// the root of the header at its height, from the model's position.
	if conf := m.History[sh]; proof && len(conf) > 0 {
		last := conf[len(conf)-1]
		checkMerkle(t, s.ctx, ec, s.node.RPC, last.TxHash.String(), last.Height)
		mk, err := ec.GetMerkle(s.ctx, last.TxHash.String(), last.Height)
		if err != nil {
			t.Fatal(err)
		}
		if pos := m.Txs[last.TxHash]; uint32(mk.Pos) != pos.Pos || pos.Height != last.Height {
			t.Fatalf("%s: get_merkle of %v gives position %d, model %d at %d", step, last.TxHash, mk.Pos, pos.Pos, pos.Height)
		}
	}
	bal, err := ec.GetBalance(s.ctx, sh.String())
	if err != nil {
		t.Fatal(err)
	}
	if bal.Confirmed != m.Balance[sh] || bal.Unconfirmed != p.unconfirmed[sh] {
		t.Fatalf("%s: script %s: balance %+v, model %d confirmed %d unconfirmed", step, sh, bal,
			m.Balance[sh], p.unconfirmed[sh])
	}
	us, err := ec.ListUnspent(s.ctx, sh.String())
	if err != nil {
		t.Fatal(err)
	}
	var wantU []Unspent
	for _, u := range m.Unspent[sh] {
		if !p.spent[wire.OutPoint{Hash: u.TxHash, Index: u.Vout}] {
			wantU = append(wantU, Unspent{TxHash: u.TxHash.String(), TxPos: u.Vout, Height: u.Height, Value: u.Value})
		}
	}
	memU := append([]Unspent(nil), p.outs[sh]...)
	sort.Slice(memU, func(i, j int) bool {
		if memU[i].TxHash != memU[j].TxHash {
			return memU[i].TxHash < memU[j].TxHash
		}
		return memU[i].TxPos < memU[j].TxPos
	})
	var gotC, gotM []Unspent
	for _, u := range us {
		if u.Height > 0 {
			gotC = append(gotC, u)
		} else {
			gotM = append(gotM, u)
		}
	}
	sort.Slice(gotM, func(i, j int) bool {
		if gotM[i].TxHash != gotM[j].TxHash {
			return gotM[i].TxHash < gotM[j].TxHash
		}
		return gotM[i].TxPos < gotM[j].TxPos
	})
	if !slices.Equal(gotC, wantU) || !slices.Equal(gotM, memU) {
		t.Fatalf("%s: script %s: unspent %v + %v, model %v + pool %v", step, sh, gotC, gotM, wantU, memU)
	}
}
