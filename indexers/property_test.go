package indexers_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// propUndoBlocks is the undo window of the property tests' indexes. Every
// block btcd connects while the writer runs keeps an undo record until it
// is both that deep and minutes old (blocks on disk at the writer's start
// get none); a restart of the index drops the records of blocks that deep. So after a restart, reorganizations up to
// propMaxDepth deep undo their newest blocks from undo records and the
// older ones from the blocks in btcd's files.
const propUndoBlocks = 2

// propIndex returns an index factory of an Electrum index with its store in
// a temporary directory of t and an undo window of propUndoBlocks blocks,
// that records the index it builds in *idx. Unspent lists of more than two
// rows are read by split scans.
func propIndex(t testing.TB, idx **indexers.ElectrumIndex) testchain.IndexFactory {
	return propIndexWith(t.TempDir(), indexers.Options{UndoBlocks: propUndoBlocks}, idx)
}

// propIndexWith is propIndex with its store in dir and options opts; the
// factory reopens the same store each time it runs.
func propIndexWith(dir string, opts indexers.Options, idx **indexers.ElectrumIndex) testchain.IndexFactory {
	inner := testchain.ElectrumIndex(dir, opts, idx, nil)
	return func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		m := inner(db, params)
		(*idx).SetScanSplit(2)
		return m
	}
}

// commitLog collects what Options.OnCommit reports.
type commitLog struct {
	mu      sync.Mutex
	commits []indexers.Commit
}

// add is the OnCommit callback.
func (l *commitLog) add(c indexers.Commit) {
	l.mu.Lock()
	l.commits = append(l.commits, c)
	l.mu.Unlock()
}

// take returns the commits since the previous take.
func (l *commitLog) take() []indexers.Commit {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.commits
	l.commits = nil
	return c
}

// propChecker compares an index with the reference model after every step
// of a random chain.
type propChecker struct {
	t   *testing.T
	h   *testchain.Harness
	idx *indexers.ElectrumIndex
	// commits, when set, is the index's OnCommit log: each check compares
	// the commits since the previous one with the step.
	commits *commitLog
	// undoBlocks is the index's undo window.
	undoBlocks int
	// restarted is set when the index was opened again since the
	// previous check.
	restarted bool
	prev      *testchain.Model
	// seen holds every script hash and txid some main chain ever had, so
	// that what left the main chain is checked to be gone from the index.
	seenScripts map[indexers.ScriptHash]bool
	seenTxs     map[chainhash.Hash]bool
	checks      int
}

func newPropChecker(t *testing.T, h *testchain.Harness, idx *indexers.ElectrumIndex, commits *commitLog, undoBlocks int) *propChecker {
	return &propChecker{t: t, h: h, idx: idx, commits: commits, undoBlocks: undoBlocks,
		seenScripts: make(map[indexers.ScriptHash]bool), seenTxs: make(map[chainhash.Hash]bool)}
}

// statusOf is the Electrum status of a history plus extra (mempool) entries,
// computed from the protocol's rule.
func statusOf(hist []testchain.HistoryItem, extra ...testchain.HistoryItem) []byte {
	all := append(append([]testchain.HistoryItem(nil), hist...), extra...)
	if len(all) == 0 {
		return nil
	}
	var s []byte
	for _, e := range all {
		s = append(s, e.TxHash.String()+":"+strconv.Itoa(int(e.Height))+":"...)
	}
	sum := sha256.Sum256(s)
	return sum[:]
}

// undoHeights returns the heights of the undo records in the index's store.
func undoHeights(t testing.TB, idx *indexers.ElectrumIndex) []int32 {
	t.Helper()
	it := idx.Store().NewIterator(util.BytesPrefix([]byte("Exd")), nil)
	defer it.Release()
	var hs []int32
	for it.Next() {
		k := it.Key()
		if len(k) != 7 {
			t.Fatalf("undo record key %x of %d bytes", k, len(k))
		}
		hs = append(hs, int32(binary.BigEndian.Uint32(k[3:])))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return hs
}

// check builds the model of the current main chain and compares every read
// of the index with it. connected, when set, is the block the step connected
// on top of the previous check's tip.
func (c *propChecker) check(step string, connected *chainhash.Hash) {
	t := c.t
	t.Helper()
	c.checks++
	m, err := testchain.BuildModel(c.h)
	if err != nil {
		t.Fatalf("%s: model: %v", step, err)
	}
	fail := func(format string, args ...interface{}) {
		t.Helper()
		t.Fatalf("%s (tip %d %v): %s", step, m.Height, m.Tip, fmt.Sprintf(format, args...))
	}
	tip, err := c.idx.Tip()
	if err != nil {
		fail("Tip: %v", err)
	}
	if tip.Hash != m.Tip || tip.Height != m.Height {
		fail("index tip %d %v", tip.Height, tip.Hash)
	}
	if latest, ok := c.idx.LatestTip(); !ok || latest != tip {
		fail("LatestTip %d %v (%v), store tip %d", latest.Height, latest.Hash, ok, tip.Height)
	}

	for sh := range m.History {
		c.seenScripts[sh] = true
	}
	scripts := make([]indexers.ScriptHash, 0, len(c.seenScripts))
	for sh := range c.seenScripts {
		scripts = append(scripts, sh)
	}
	sort.Slice(scripts, func(i, j int) bool { return bytes.Compare(scripts[i][:], scripts[j][:]) < 0 })
	for _, sh := range scripts {
		c.checkScript(m, sh, fail)
	}
	// A script no chain ever paid, and the genesis coinbase's script, which
	// is not indexed.
	c.checkScript(m, indexers.ScriptHashFromScript([]byte("never paid")), fail)
	genesisScript := c.h.Params.GenesisBlock.Transactions[0].TxOut[0].PkScript
	c.checkScript(m, indexers.ScriptHashFromScript(genesisScript), fail)
	c.checkStatuses(m, scripts, fail)

	for txid := range m.Txs {
		c.seenTxs[txid] = true
	}
	// Blocks below both tips and the deepest reorganization cannot have
	// changed since the previous check; every tenth check covers them all.
	from := int32(0)
	if c.prev != nil && c.checks%10 != 0 {
		from = max(min(c.prev.Height, m.Height)-propMaxDepth-1, 0)
	}
	c.checkTxs(m, from, fail)
	// Every fifth check the stored rows are verified against the chain,
	// key by key.
	if c.checks%5 == 0 {
		verifyIndexOK(t, c.h, c.idx, step)
	}
	c.checkUndo(m, connected != nil, c.restarted, fail)
	c.restarted = false
	if c.commits != nil {
		c.checkCommits(m, connected, fail)
	}
	c.prev = m
}

// checkUndo checks the undo records: none above the tip, one for a block
// just connected at the tip, and after a restart none for the blocks more
// than the undo window below the tip.
func (c *propChecker) checkUndo(m *testchain.Model, connected, restarted bool, fail func(string, ...interface{})) {
	hs := undoHeights(c.t, c.idx)
	for _, h := range hs {
		if h > m.Height {
			fail("undo record of height %d above the tip (records at %v)", h, hs)
		}
		if restarted && h <= m.Height-int32(c.undoBlocks) {
			fail("undo record of height %d, more than %d blocks below the tip, kept across a restart (records at %v)",
				h, c.undoBlocks, hs)
		}
	}
	if connected && (len(hs) == 0 || hs[len(hs)-1] != m.Height) {
		fail("the block connected at the tip has no undo record (records at %v)", hs)
	}
}

// checkCommits compares what OnCommit reported since the previous check
// with the step: a block connected on the tip is one commit that names the
// scripts whose history changed and the block's transactions; a step that
// disconnected blocks reports a commit of every script; the last commit is
// the index tip.
func (c *propChecker) checkCommits(m *testchain.Model, connected *chainhash.Hash, fail func(string, ...interface{})) {
	commits := c.commits.take()
	if c.prev == nil {
		return
	}
	if c.prev.Tip == m.Tip {
		if len(commits) != 0 {
			fail("%d commits reported while the tip stayed", len(commits))
		}
		return
	}
	if len(commits) == 0 {
		fail("the tip moved from %d %v without a commit reported", c.prev.Height, c.prev.Tip)
	}
	if last := commits[len(commits)-1].Tip; last.Hash != m.Tip || last.Height != m.Height {
		fail("last commit reported tip %d %v", last.Height, last.Hash)
	}
	if connected != nil {
		if len(commits) != 1 {
			fail("a block connected on the tip made %d commits", len(commits))
		}
		cm := commits[0]
		if cm.All {
			fail("a block connected on the tip reported every script changed")
		}
		want := make(map[indexers.ScriptHash]bool)
		for sh, hist := range m.History {
			if len(hist) != len(c.prev.History[sh]) {
				want[sh] = true
			}
		}
		got := make(map[indexers.ScriptHash]bool)
		for _, sh := range cm.Touched {
			got[sh] = true
		}
		if len(got) != len(cm.Touched) || len(got) != len(want) {
			fail("commit of %v names %d scripts (%d distinct), %d histories changed",
				connected, len(cm.Touched), len(got), len(want))
		}
		for sh := range want {
			if !got[sh] {
				fail("commit of %v misses %v", connected, sh)
			}
		}
		if txids := m.Blocks[m.Height]; len(cm.Confirmed) != len(txids) {
			fail("commit of %v confirms %d transactions, the block has %d", connected, len(cm.Confirmed), len(txids))
		} else {
			for _, txid := range txids {
				if _, ok := cm.Confirmed[txid]; !ok {
					fail("commit of %v does not confirm %v", connected, txid)
				}
			}
		}
		return
	}
	if !c.h.Chain.MainChainHasBlock(&c.prev.Tip) {
		all := false
		for _, cm := range commits {
			all = all || cm.All
		}
		if !all {
			fail("the step disconnected block %d %v and no commit reported every script changed",
				c.prev.Height, c.prev.Tip)
		}
	}
}

// checkScript compares the reads of one script hash with the model.
func (c *propChecker) checkScript(m *testchain.Model, sh indexers.ScriptHash, fail func(string, ...interface{})) {
	wantHist := m.History[sh]
	hist, tip, err := c.idx.History(sh, 0)
	if err != nil {
		fail("History(%v): %v", sh, err)
	}
	if tip.Hash != m.Tip {
		fail("History(%v) read at %v", sh, tip.Hash)
	}
	if len(hist) != len(wantHist) {
		fail("History(%v) has %d entries, model %d", sh, len(hist), len(wantHist))
	}
	for i, e := range hist {
		if e.TxHash != wantHist[i].TxHash || e.Height != wantHist[i].Height {
			fail("History(%v)[%d] = %v@%d, model %v@%d", sh, i, e.TxHash, e.Height,
				wantHist[i].TxHash, wantHist[i].Height)
		}
	}
	if n := len(wantHist); n > 0 {
		if got, _, err := c.idx.History(sh, n); err != nil || len(got) != n {
			fail("History(%v, limit %d) = %d entries, %v", sh, n, len(got), err)
		}
		if _, _, err := c.idx.History(sh, n-1+boolInt(n == 1)); n > 1 && !errors.Is(err, indexers.ErrHistoryTooLarge) {
			fail("History(%v, limit %d) of %d entries: %v, want ErrHistoryTooLarge", sh, n-1, n, err)
		}
	}

	// The transactions of the history, whole and from its middle: each
	// entry the model's, each transaction's bytes hashing to its txid. The
	// callback runs inside a database transaction of btcd's, so it reports
	// a mismatch as its error rather than ending the test there.
	for _, from := range []int{0, len(wantHist) / 2} {
		n := from
		tip, err := c.idx.HistoryTxs(sh, from, func(i int, e indexers.HistoryEntry, raw []byte) error {
			var tx wire.MsgTx
			switch {
			case i != n || i >= len(wantHist):
				return fmt.Errorf("handed entry %d, want %d of %d", i, n, len(wantHist))
			case e.TxHash != wantHist[i].TxHash || e.Height != wantHist[i].Height:
				return fmt.Errorf("entry %d is %v@%d, model %v@%d", i, e.TxHash, e.Height,
					wantHist[i].TxHash, wantHist[i].Height)
			case tx.Deserialize(bytes.NewReader(raw)) != nil || tx.TxHash() != e.TxHash:
				return fmt.Errorf("entry %d: %d bytes that are not transaction %v", i, len(raw), e.TxHash)
			}
			n++
			return nil
		})
		if err != nil || tip.Hash != m.Tip || n != len(wantHist) {
			fail("HistoryTxs(%v, %d) read %d of %d entries at %v: %v", sh, from, n, len(wantHist), tip.Hash, err)
		}
	}

	// Pages of 3 entries, from the newest back to the oldest, each before
	// the first entry of the page after it.
	var before *chainhash.Hash
	for end := len(wantHist); ; {
		page, tip, err := c.idx.HistoryPage(sh, before, 3, 0)
		want := wantHist[max(end-3, 0):end]
		if err != nil || tip.Hash != m.Tip || len(page) != len(want) {
			fail("HistoryPage(%v) before entry %d: %d entries at %v, %v; want %d", sh, end, len(page), tip.Hash, err, len(want))
		}
		for i, e := range page {
			if e.TxHash != want[i].TxHash || e.Height != want[i].Height {
				fail("HistoryPage(%v) before entry %d: [%d] = %v@%d, model %v@%d", sh, end, i, e.TxHash, e.Height,
					want[i].TxHash, want[i].Height)
			}
		}
		if len(page) == 0 {
			break
		}
		end -= len(page)
		before = &page[0].TxHash
	}
	if page, _, err := c.idx.HistoryPage(sh, &chainhash.Hash{7}, 3, 0); err != nil || len(page) != 0 {
		fail("HistoryPage(%v) before a transaction not in it: %d entries, %v", sh, len(page), err)
	}

	wantUnspent := m.Unspent[sh]
	us, _, err := c.idx.Unspent(sh, 0)
	if err != nil {
		fail("Unspent(%v): %v", sh, err)
	}
	if len(us) != len(wantUnspent) {
		fail("Unspent(%v) has %d outputs, model %d", sh, len(us), len(wantUnspent))
	}
	for i, u := range us {
		w := wantUnspent[i]
		if u.TxHash != w.TxHash || u.Vout != w.Vout || u.Height != w.Height || u.Value != w.Value {
			fail("Unspent(%v)[%d] = %+v, model %+v", sh, i, u, w)
		}
	}
	if n := len(wantUnspent); n > 1 {
		if _, _, err := c.idx.Unspent(sh, n-1); !errors.Is(err, indexers.ErrHistoryTooLarge) {
			fail("Unspent(%v, limit %d) of %d outputs: %v, want ErrHistoryTooLarge", sh, n-1, n, err)
		}
	}

	n, bal, _, err := c.idx.UnspentTotals(sh)
	if err != nil {
		fail("UnspentTotals(%v): %v", sh, err)
	}
	if n != len(wantUnspent) || bal != m.Balance[sh] {
		fail("UnspentTotals(%v) = %d outputs of %d, model %d of %d", sh, n, bal, len(wantUnspent), m.Balance[sh])
	}
	for _, w := range wantUnspent {
		op := wire.OutPoint{Hash: w.TxHash, Index: w.Vout}
		if ok, _, err := c.idx.IsUnspent(sh, w.Height, op); err != nil || !ok {
			fail("IsUnspent(%v, %d, %v) = %v, %v; the model has it unspent", sh, w.Height, op, ok, err)
		}
		op.Index += 1 << 20 // no such output
		if ok, _, err := c.idx.IsUnspent(sh, w.Height, op); err != nil || ok {
			fail("IsUnspent(%v, %d, %v) = %v, %v of an output that does not exist", sh, w.Height, op, ok, err)
		}
	}

	// Twice: the second read may resume from the cached midstate, and gets
	// mempool entries appended to the confirmed part.
	if !bytes.Equal(m.Status(sh), statusOf(wantHist)) {
		fail("model status of %v disagrees with the protocol rule", sh)
	}
	extra := []testchain.HistoryItem{{TxHash: chainhash.Hash{1, 2, 3}, Height: 0}, {TxHash: chainhash.Hash{4}, Height: -1}}
	for round := 0; round < 2; round++ {
		st, _, err := c.idx.Status(sh, 0)
		if err != nil {
			fail("Status(%v): %v", sh, err)
		}
		if st.Len() != len(wantHist) {
			fail("Status(%v) has %d entries, model %d", sh, st.Len(), len(wantHist))
		}
		want := m.Status(sh)
		if round == 1 {
			for _, e := range extra {
				st.Add(e.TxHash, e.Height)
			}
			want = statusOf(wantHist, extra...)
		}
		if !bytes.Equal(st.Sum(), want) {
			fail("Status(%v) round %d = %x, want %x (model %s)", sh, round, st.Sum(), want, m.StatusHex(sh))
		}
	}
	if n := len(wantHist); n > 1 {
		if _, _, err := c.idx.Status(sh, n-1); !errors.Is(err, indexers.ErrHistoryTooLarge) {
			fail("Status(%v, limit %d) of %d entries: %v, want ErrHistoryTooLarge", sh, n-1, n, err)
		}
	}
}

// checkStatuses reads the statuses of all scripts in one Statuses call,
// with a limit that some histories exceed.
func (c *propChecker) checkStatuses(m *testchain.Model, scripts []indexers.ScriptHash, fail func(string, ...interface{})) {
	const limit = 3
	sts, errs, tip, err := c.idx.Statuses(scripts, limit)
	if err != nil {
		fail("Statuses: %v", err)
	}
	if tip.Hash != m.Tip {
		fail("Statuses read at %v", tip.Hash)
	}
	for i, sh := range scripts {
		if len(m.History[sh]) > limit {
			if !errors.Is(errs[i], indexers.ErrHistoryTooLarge) {
				fail("Statuses: %v of %d entries over limit %d: %v", sh, len(m.History[sh]), limit, errs[i])
			}
			continue
		}
		if errs[i] != nil {
			fail("Statuses: %v: %v", sh, errs[i])
		}
		if !bytes.Equal(sts[i].Sum(), m.Status(sh)) {
			fail("Statuses: %v = %x, model %s", sh, sts[i].Sum(), m.StatusHex(sh))
		}
	}
}

// boolInt is 1 for true.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkTxs compares the transaction reads with the chain: the txids, counts,
// positions and raw bytes of every block from height from up, and every
// transaction that left the main chain is not found.
func (c *propChecker) checkTxs(m *testchain.Model, from int32, fail func(string, ...interface{})) {
	for height := from; height <= m.Height; height++ {
		want := m.Blocks[height]
		hash, err := c.h.Chain.BlockHashByHeight(height)
		if err != nil {
			fail("chain: %v", err)
		}
		got, err := c.idx.BlockTxIDs(height)
		if err != nil {
			fail("BlockTxIDs(%d): %v", height, err)
		}
		if len(got) != len(want) {
			fail("BlockTxIDs(%d) has %d txids, chain %d", height, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				fail("BlockTxIDs(%d)[%d] = %v, chain %v", height, i, got[i], want[i])
			}
		}
		indexed, n, err := c.idx.Block(height)
		if err != nil || int(n) != len(want) {
			fail("Block(%d) = %d transactions, %v; chain %d", height, n, err, len(want))
		}
		block, err := c.h.Chain.BlockByHeight(height)
		if err != nil {
			fail("chain: %v", err)
		}
		if indexed != *block.Hash() {
			fail("Block(%d) = %v, chain %v", height, indexed, block.Hash())
		}
		for pos, txid := range want {
			var ser bytes.Buffer
			if err := block.MsgBlock().Transactions[pos].Serialize(&ser); err != nil {
				fail("serialize: %v", err)
			}
			raw, loc, err := c.idx.RawTx(txid)
			if err != nil || !bytes.Equal(raw, ser.Bytes()) || loc.Height != height || loc.Pos != uint32(pos) {
				fail("RawTx(%v) = %d bytes at %+v, %v; chain %d bytes at %d:%d", txid, len(raw), loc, err,
					ser.Len(), height, pos)
			}
			at, err := c.idx.TxIDAt(height, uint32(pos))
			if err != nil || at != txid {
				fail("TxIDAt(%d, %d) = %v, %v; chain %v", height, pos, at, err, txid)
			}
			loc, err = c.idx.TxLocation(txid)
			if err != nil || loc.Height != height || loc.Pos != uint32(pos) || loc.BlockHash != *hash {
				fail("TxLocation(%v) = %+v, %v; chain %d:%d %v", txid, loc, err, height, pos, hash)
			}
		}
		if _, err := c.idx.TxIDAt(height, uint32(len(want))); !errors.Is(err, indexers.ErrNotFound) {
			fail("TxIDAt(%d, %d) past the block: %v, want ErrNotFound", height, len(want), err)
		}
	}
	if _, err := c.idx.BlockTxIDs(m.Height + 1); !errors.Is(err, indexers.ErrNotFound) {
		fail("BlockTxIDs above the tip: %v, want ErrNotFound", err)
	}
	if _, _, err := c.idx.Block(m.Height + 1); !errors.Is(err, indexers.ErrNotFound) {
		fail("Block above the tip: %v, want ErrNotFound", err)
	}
	if _, err := c.idx.TxIDAt(m.Height+1, 0); !errors.Is(err, indexers.ErrNotFound) {
		fail("TxIDAt above the tip: %v, want ErrNotFound", err)
	}
	for txid := range c.seenTxs {
		if _, ok := m.Txs[txid]; ok {
			continue
		}
		if loc, err := c.idx.TxLocation(txid); !errors.Is(err, indexers.ErrNotFound) {
			fail("TxLocation(%v) of a transaction off the main chain = %+v, %v", txid, loc, err)
		}
		if _, _, err := c.idx.RawTx(txid); !errors.Is(err, indexers.ErrNotFound) {
			fail("RawTx(%v) of a transaction off the main chain: %v", txid, err)
		}
	}
}

// propSpec draws a block spec: sometimes empty, sometimes large, sometimes
// with transactions of dozens of outputs to one script, with all the
// generator's features at varying rates.
func propSpec(rng *rand.Rand) testchain.BlockSpec {
	s := testchain.DefaultSpec()
	switch r := rng.Intn(10); {
	case r == 0:
		s.Txs = 0
	case r < 3:
		s.Txs = 20 + rng.Intn(20)
	default:
		s.Txs = 1 + rng.Intn(10)
	}
	if rng.Intn(8) == 0 {
		// Transactions with dozens of outputs, mostly to one script.
		s.MaxOutputs = 30
		s.SameScript = 0.9
		s.SameBlockSpend = rng.Float64() * 0.6
		return s
	}
	s.SameBlockSpend = rng.Float64() * 0.6
	s.SameScript = rng.Float64() * 0.4
	s.SelfPay = rng.Float64() * 0.3
	s.OpReturn = rng.Float64() * 0.15
	s.Unspendable = rng.Float64() * 0.15
	return s
}

// propMaxDepth is the deepest reorganization or invalidation of a step.
const propMaxDepth = 10

// propStep is one random step of a property test's chain: mine a block,
// reorganize (re-mining the replaced transactions or not), invalidate
// blocks, reconsider an invalidated one, or restart the index (restart). It
// returns the step's name, the block it connected on the tip (mine steps),
// and the heights of the blocks it took off the main chain.
func propStep(t *testing.T, h *testchain.Harness, rng *rand.Rand, invalidated *[]chainhash.Hash,
	restart func()) (string, *chainhash.Hash, []int32) {
	t.Helper()
	_, height := h.Tip()
	// The blocks a step may take off the main chain.
	before := make(map[int32]chainhash.Hash)
	for ht := max(height-2*propMaxDepth, 0); ht <= height; ht++ {
		hash, err := h.Chain.BlockHashByHeight(ht)
		if err != nil {
			t.Fatal(err)
		}
		before[ht] = *hash
	}
	gone := func() []int32 {
		var hs []int32
		for ht, hash := range before {
			if !h.Chain.MainChainHasBlock(&hash) {
				hs = append(hs, ht)
			}
		}
		sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
		return hs
	}
	switch r := rng.Intn(100); {
	case r < 25:
		depth := 1 + rng.Intn(propMaxDepth)
		reorg := h.Reorg
		name := fmt.Sprintf("reorg depth %d", depth)
		if rng.Intn(2) == 0 {
			reorg = h.ReorgReplay
			name = fmt.Sprintf("reorg depth %d re-mining the replaced transactions", depth)
		}
		if _, err := reorg(rng, depth, propSpec(rng)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return name, nil, gone()
	case r < 35 && height > 120:
		depth := 1 + rng.Intn(propMaxDepth)
		hash, err := h.Chain.BlockHashByHeight(height - int32(depth) + 1)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("invalidate depth %d", depth)
		if err := h.InvalidateBlock(*hash); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		*invalidated = append(*invalidated, *hash)
		return name, nil, gone()
	case r < 45:
		restart()
		return "restart", nil, nil
	case r >= 90 && len(*invalidated) > 0:
		i := rng.Intn(len(*invalidated))
		hash := (*invalidated)[i]
		*invalidated = append((*invalidated)[:i], (*invalidated)[i+1:]...)
		if err := h.ReconsiderBlock(hash); err != nil {
			t.Fatalf("reconsider: %v", err)
		}
		return "reconsider", nil, gone()
	default:
		b, err := h.Mine(rng, propSpec(rng))
		if err != nil {
			t.Fatalf("mine: %v", err)
		}
		return "mine", b.Hash(), nil
	}
}

// runProperty drives one random chain with the index live from genesis and
// an undo window of propUndoBlocks blocks: after every step every read of
// the index equals the model's, and at the end its rows equal, byte for
// byte, those of an index built from scratch on the final chain.
func runProperty(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	var idx *indexers.ElectrumIndex
	commits := &commitLog{}
	factory := propIndexWith(t.TempDir(), indexers.Options{UndoBlocks: propUndoBlocks, OnCommit: commits.add}, &idx)
	h := testchain.New(t, factory)
	c := newPropChecker(t, h, idx, commits, propUndoBlocks)
	restart := func() {
		if err := h.Reopen(factory); err != nil {
			t.Fatalf("restart: %v", err)
		}
		c.idx, c.restarted = idx, true
	}
	c.check("genesis", nil)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	c.check("mature", nil)
	// Blocks full of transactions first, so histories are long enough for
	// the index's status midstate cache before reorganizations start.
	warm := testchain.DefaultSpec()
	warm.Txs = 40
	for i := 0; i < 8; i++ {
		b, err := h.Mine(rng, warm)
		if err != nil {
			t.Fatal(err)
		}
		c.check(fmt.Sprintf("seed %d warm-up %d", seed, i), b.Hash())
	}

	var invalidated []chainhash.Hash
	// Blocks undone from their undo record and from the block itself.
	fromRecord, fromBlock := 0, 0
	for step := 0; step < steps; step++ {
		records := make(map[int32]bool)
		for _, ht := range undoHeights(t, c.idx) {
			records[ht] = true
		}
		name, connected, gone := propStep(t, h, rng, &invalidated, restart)
		for _, ht := range gone {
			if records[ht] {
				fromRecord++
			} else {
				fromBlock++
			}
		}
		if err := h.CheckWallet(); err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
		c.check(fmt.Sprintf("seed %d step %d (%s)", seed, step, name), connected)
	}
	_, height := h.Tip()
	longest := 0
	for _, hist := range c.prev.History {
		longest = max(longest, len(hist))
	}
	t.Logf("seed %d: %d steps, %d blocks undone from undo records, %d from the blocks, height %d, "+
		"%d scripts, %d txs seen, longest history %d",
		seed, steps, fromRecord, fromBlock, height, len(c.seenScripts), len(c.seenTxs), longest)
	if fromRecord == 0 || fromBlock == 0 {
		t.Fatalf("seed %d: %d blocks undone from undo records, %d from the blocks: both ways must run",
			seed, fromRecord, fromBlock)
	}
	verifyIndexOK(t, h, c.idx, "end")
	eqCompare(t, "live index and one built from scratch", eqFreshData(t, h), eqIndexData(t, c.idx))
}

// TestPropertyIndexMatchesModel drives random chains with reorgs through
// competing branches and through InvalidateBlock/ReconsiderBlock, and
// restarts of the index, and after every step compares every read of the
// live index with the reference model. The undo window is two blocks:
// blocks connected since the last restart, and the two newest before it,
// are undone from their undo records, older ones from the blocks.
func TestPropertyIndexMatchesModel(t *testing.T) {
	steps := 32
	if raceDetector {
		steps = 16
	}
	for _, seed := range []int64{1, 2, 3} {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			runProperty(t, seed, steps)
		})
	}
}

// lagManager hides the index manager's Sync and Close from the harness:
// blocks are connected, reorganized and invalidated without waiting for the
// writer, which then lags the chain and races with its reorganizations.
type lagManager struct{ blockchain.IndexManager }

// TestPropertyLaggingWriterMatchesModel is the model check for a writer
// that lags the chain: the chain connects blocks, reorganizes and
// invalidates them without waiting for the index, whose writer catches up
// in passes of several blocks and small batches, meets reorganizations
// while it catches up, and reads blocks the chain no longer has in its main
// chain; every fourth step the test waits for the index (Sync) and every
// read must equal the model's. Restarts close the index while its writer
// may be in the middle of a catch-up.
func TestPropertyLaggingWriterMatchesModel(t *testing.T) {
	steps := 48
	if raceDetector {
		steps = 24
	}
	for _, seed := range []int64{4, 5} {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			var idx *indexers.ElectrumIndex
			inner := propIndexWith(t.TempDir(), indexers.Options{UndoBlocks: propUndoBlocks, BatchBytes: 4 << 10}, &idx)
			factory := func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
				return lagManager{inner(db, params)}
			}
			h := testchain.New(t, factory)
			t.Cleanup(func() { idx.Close() })
			c := newPropChecker(t, h, idx, nil, propUndoBlocks)
			// A restart closes the index (the harness does not see it)
			// without waiting for it: its writer stops after its batch.
			restart := func() {
				if err := idx.Close(); err != nil {
					t.Fatalf("restart: %v", err)
				}
				if err := h.Reopen(factory); err != nil {
					t.Fatalf("restart: %v", err)
				}
				c.idx = idx
			}
			if err := h.MineMature(); err != nil {
				t.Fatal(err)
			}
			warm := testchain.DefaultSpec()
			warm.Txs = 40
			for i := 0; i < 4; i++ {
				if _, err := h.Mine(rng, warm); err != nil {
					t.Fatal(err)
				}
			}
			if err := idx.Sync(); err != nil {
				t.Fatal(err)
			}
			c.check("warm-up", nil)
			var invalidated []chainhash.Hash
			for step := 0; step < steps; step++ {
				name, _, _ := propStep(t, h, rng, &invalidated, restart)
				if err := h.CheckWallet(); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
				if step%4 != 3 {
					continue
				}
				if err := idx.Sync(); err != nil {
					t.Fatalf("seed %d step %d: sync: %v", seed, step, err)
				}
				c.check(fmt.Sprintf("seed %d step %d (%s)", seed, step, name), nil)
			}
			if err := idx.Sync(); err != nil {
				t.Fatal(err)
			}
			verifyIndexOK(t, h, c.idx, "end")
			eqCompare(t, "lagging index and one built from scratch", eqFreshData(t, h), eqIndexData(t, c.idx))
		})
	}
}

// propRead is one answer a concurrent reader got, with the tip it was read
// at.
type propRead struct {
	kind    string
	sh      indexers.ScriptHash
	tip     indexers.Tip
	hist    []indexers.HistoryEntry
	unspent []indexers.Unspent
	balance int64
	status  []byte
}

// TestPropertyConcurrentReadsSeeOneBlock reads the index from other
// goroutines while blocks connect, reorganize and get invalidated: every
// answer must be exactly the model of the block it says it was read at,
// including the blocks the writer passes through while it undoes a branch
// one block at a time.
func TestPropertyConcurrentReadsSeeOneBlock(t *testing.T) {
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, propIndex(t, &idx))
	runConcurrentReads(t, h, idx, 40)
}

// runConcurrentReads reads histories, unspent lists, balances and statuses
// from two goroutines while the chain connects, reorganizes and invalidates
// blocks, and checks every read against the model at the tip it reports.
func runConcurrentReads(t *testing.T, h *testchain.Harness, idx *indexers.ElectrumIndex, steps int) {
	rng := rand.New(rand.NewSource(11))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	var scripts []indexers.ScriptHash
	for _, s := range append(append([]testchain.Script(nil), h.Pool.Spendable...), h.Pool.Unspendable...) {
		scripts = append(scripts, indexers.ScriptHashFromScript(s.PkScript))
	}

	const readers, maxReads = 2, 4000
	stop := make(chan struct{})
	results := make(chan []propRead, readers)
	errs := make(chan error, readers)
	for r := 0; r < readers; r++ {
		go func(r int) {
			var out []propRead
			defer func() { results <- out }()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				sh := scripts[(i*7+r)%len(scripts)]
				rd := propRead{sh: sh}
				var err error
				switch i % 4 {
				case 0:
					rd.kind = "history"
					rd.hist, rd.tip, err = idx.History(sh, 0)
				case 1:
					rd.kind = "unspent"
					rd.unspent, rd.tip, err = idx.Unspent(sh, 0)
				case 2:
					rd.kind = "balance"
					_, rd.balance, rd.tip, err = idx.UnspentTotals(sh)
				default:
					rd.kind = "status"
					var st *indexers.StatusHasher
					st, rd.tip, err = idx.Status(sh, 0)
					if err == nil {
						rd.status = st.Sum()
					}
				}
				if err != nil {
					errs <- fmt.Errorf("%s(%v): %w", rd.kind, sh, err)
					return
				}
				idx.LatestTip()
				// Every read at a tip the reader had not just seen is
				// kept, and of the others the first maxReads and then
				// one in 64.
				if len(out) < maxReads || i%64 == 0 || out[len(out)-1].tip != rd.tip {
					out = append(out, rd)
				}
			}
		}(r)
	}

	// Small blocks: histories stay below the length from which the index
	// caches status midstates, so this test is about snapshot consistency
	// of the reads alone.
	small := testchain.DefaultSpec()
	small.Txs = 4
	var invalidated []chainhash.Hash
	for step := 0; step < steps; step++ {
		var err error
		switch r := rng.Intn(10); {
		case r < 5:
			_, err = h.Mine(rng, small)
		case r < 8:
			_, err = h.Reorg(rng, 1+rng.Intn(6), small)
		case r < 9 || len(invalidated) == 0:
			_, height := h.Tip()
			hash, _ := h.Chain.BlockHashByHeight(height - int32(rng.Intn(4)))
			invalidated = append(invalidated, *hash)
			err = h.InvalidateBlock(*hash)
		default:
			err = h.ReconsiderBlock(invalidated[len(invalidated)-1])
			invalidated = invalidated[:len(invalidated)-1]
		}
		if err != nil {
			close(stop)
			t.Fatalf("step %d: %v", step, err)
		}
	}
	close(stop)
	var reads []propRead
	for r := 0; r < readers; r++ {
		reads = append(reads, <-results...)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}

	models := make(map[chainhash.Hash]*testchain.Model)
	for i, rd := range reads {
		m := models[rd.tip.Hash]
		if m == nil {
			var err error
			if m, err = testchain.BuildModelAt(h, rd.tip.Hash); err != nil {
				t.Fatalf("read %d at %v: %v", i, rd.tip.Hash, err)
			}
			models[rd.tip.Hash] = m
		}
		if m.Height != rd.tip.Height {
			t.Fatalf("read %d: tip %v reported at height %d, it is at %d", i, rd.tip.Hash, rd.tip.Height, m.Height)
		}
		ok := true
		switch rd.kind {
		case "history":
			want := m.History[rd.sh]
			ok = len(rd.hist) == len(want)
			for j := 0; ok && j < len(want); j++ {
				ok = rd.hist[j].TxHash == want[j].TxHash && rd.hist[j].Height == want[j].Height
			}
		case "unspent":
			want := m.Unspent[rd.sh]
			ok = len(rd.unspent) == len(want)
			for j := 0; ok && j < len(want); j++ {
				u, w := rd.unspent[j], want[j]
				ok = u.TxHash == w.TxHash && u.Vout == w.Vout && u.Height == w.Height && u.Value == w.Value
			}
		case "balance":
			ok = rd.balance == m.Balance[rd.sh]
		case "status":
			ok = bytes.Equal(rd.status, m.Status(rd.sh))
		}
		if !ok {
			t.Fatalf("read %d: %s of %v at tip %d %v differs from the model of that block",
				i, rd.kind, rd.sh, rd.tip.Height, rd.tip.Hash)
		}
	}
	longest := 0
	for _, m := range models {
		for _, hist := range m.History {
			longest = max(longest, len(hist))
		}
	}
	t.Logf("%d concurrent reads checked at %d distinct tips, longest history %d", len(reads), len(models), longest)
	if len(models) < 5 {
		t.Fatalf("readers saw only %d tips; the test did not overlap reads with block changes", len(models))
	}
}
