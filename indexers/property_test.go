package indexers_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// propIndex returns an index factory that records the Electrum index it
// builds in *idx. Its read cache keeps every answer, so that every check
// also checks answers served from the cache across blocks and reorgs,
// unspent lists of more than two rows are read by split scans, and the
// balances of scripts with two or more unspent outputs are held as rows.
func propIndex(idx **indexers.ElectrumIndex) testchain.IndexFactory {
	return propIndexTrailing(idx, false)
}

// propIndexTrailing is propIndex for an index that trails the chain (the
// harness's blocks are old enough for it) with a worker that starts a run
// at every block, so that its runs overlap the chain's reorganizations.
func propIndexTrailing(idx **indexers.ElectrumIndex, trailing bool) testchain.IndexFactory {
	return func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		*idx = indexers.NewElectrumIndex(db, params)
		(*idx).SetReadCacheMinRows(1)
		(*idx).SetScanSplit(2)
		(*idx).SetHeldMin(2)
		if trailing {
			(*idx).SetTrailing(indexers.DefaultTrailAge, nil)
			(*idx).SetTrailingTuning(1, time.Millisecond)
		}
		return indexers.NewManager(db, *idx)
	}
}

// propChecker compares an index with the reference model after every step
// of a random chain.
type propChecker struct {
	t *testing.T
	// trailing: the index trails the chain; each check first waits for it
	// to catch up, and Touched (which knows only blocks indexed by the
	// hooks) is not checked.
	trailing bool
	h        *testchain.Harness
	idx      *indexers.ElectrumIndex
	prev     *testchain.Model
	// seen holds every script hash and txid some main chain ever had, so
	// that what left the main chain is checked to be gone from the index.
	seenScripts map[indexers.ScriptHash]bool
	seenTxs     map[chainhash.Hash]bool
	checks      int
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

// check builds the model of the current main chain and compares every read
// of the index with it. touched, when set, is the block just connected on
// top of the previous check's tip.
func (c *propChecker) check(step string, touched *chainhash.Hash) {
	t := c.t
	t.Helper()
	c.checks++
	if c.trailing {
		if err := c.idx.WaitCaughtUp(time.Minute); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		touched = nil
	}
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

	for txid := range m.Txs {
		c.seenTxs[txid] = true
	}
	// Blocks below both tips and the deepest reorganization cannot have
	// changed since the previous check; every tenth check covers them all.
	from := int32(0)
	if c.prev != nil && c.checks%10 != 0 && !c.trailing {
		from = max(min(c.prev.Height, m.Height)-propMaxDepth-1, 0)
	}
	c.checkTxs(m, from, fail)
	// Every fifth check (and every one of a trailing index) the stored
	// rows are verified against the chain, key by key.
	if c.checks%5 == 0 || c.trailing {
		verifyIndexOK(t, c.h, c.idx, step)
	}

	if touched != nil && c.prev != nil {
		want := make(map[indexers.ScriptHash]bool)
		for sh, hist := range m.History {
			if len(hist) != len(c.prev.History[sh]) {
				want[sh] = true
			}
		}
		got := make(map[indexers.ScriptHash]bool)
		for _, sh := range c.idx.Touched(*touched) {
			got[sh] = true
		}
		if len(got) != len(want) {
			fail("Touched(%v) names %d scripts, %d histories changed", touched, len(got), len(want))
		}
		for sh := range want {
			if !got[sh] {
				fail("Touched(%v) misses %v", touched, sh)
			}
		}
	}
	c.prev = m
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

	bal, _, err := c.idx.Balance(sh)
	if err != nil {
		fail("Balance(%v): %v", sh, err)
	}
	if bal != m.Balance[sh] {
		fail("Balance(%v) = %d, model %d", sh, bal, m.Balance[sh])
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
		n, err := c.idx.TxCount(height)
		if err != nil || int(n) != len(want) {
			fail("TxCount(%d) = %d, %v; chain %d", height, n, err, len(want))
		}
		block, err := c.h.Chain.BlockByHeight(height)
		if err != nil {
			fail("chain: %v", err)
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
	if _, err := c.idx.TxCount(m.Height + 1); !errors.Is(err, indexers.ErrNotFound) {
		fail("TxCount above the tip: %v, want ErrNotFound", err)
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

// runProperty drives one random chain with the index live from genesis.
func runProperty(t *testing.T, seed int64, steps int) {
	runPropertyWith(t, seed, steps, false, false)
}

// runPropertyWith is runProperty for a trailing index or not, and for an
// index whose rows up to the end of the warm-up are moved into a base.
func runPropertyWith(t *testing.T, seed int64, steps int, trailing, base bool) {
	rng := rand.New(rand.NewSource(seed))
	var idx *indexers.ElectrumIndex
	factory := propIndexTrailing(&idx, trailing)
	if trailing && base {
		// The index is built into its base at start, and the worker
		// extends the base (trailExtend).
		baseDir := filepath.Join(t.TempDir(), "base")
		inner := factory
		factory = func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
			m := inner(db, params)
			idx.SetBasePath(baseDir)
			return m
		}
	}
	h := testchain.New(t, factory)
	t.Cleanup(idx.StopTrailing)
	t.Cleanup(idx.CloseBase)
	c := &propChecker{t: t, h: h, idx: idx, trailing: trailing,
		seenScripts: make(map[indexers.ScriptHash]bool), seenTxs: make(map[chainhash.Hash]bool)}
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
	if base && !trailing {
		if err := idx.MoveToBase(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(idx.CloseBase)
		c.check(fmt.Sprintf("seed %d rows moved to the base", seed), nil)
		verifyIndexOK(t, h, idx, "base")
	}

	var invalidated []chainhash.Hash
	reorgs, invalidations := 0, 0
	for step := 0; step < steps; step++ {
		_, height := h.Tip()
		name := ""
		var connected *chainhash.Hash
		switch r := rng.Intn(100); {
		case r < 55:
			b, err := h.Mine(rng, propSpec(rng))
			if err != nil {
				t.Fatalf("seed %d step %d: mine: %v", seed, step, err)
			}
			name, connected = "mine", b.Hash()
		case r < 80:
			depth := 1 + rng.Intn(propMaxDepth)
			reorg := h.Reorg
			name = fmt.Sprintf("reorg depth %d", depth)
			if rng.Intn(2) == 0 {
				reorg = h.ReorgReplay
				name = fmt.Sprintf("reorg depth %d re-mining the replaced transactions", depth)
			}
			if _, err := reorg(rng, depth, propSpec(rng)); err != nil {
				t.Fatalf("seed %d step %d: %s: %v", seed, step, name, err)
			}
			reorgs++
		case r < 90 && height > 120:
			depth := 1 + rng.Intn(propMaxDepth)
			hash, err := h.Chain.BlockHashByHeight(height - int32(depth) + 1)
			if err != nil {
				t.Fatal(err)
			}
			name = fmt.Sprintf("invalidate depth %d", depth)
			if err := h.InvalidateBlock(*hash); err != nil {
				t.Fatalf("seed %d step %d: %s: %v", seed, step, name, err)
			}
			invalidated = append(invalidated, *hash)
			invalidations++
		case r >= 90 && len(invalidated) > 0:
			i := rng.Intn(len(invalidated))
			hash := invalidated[i]
			invalidated = append(invalidated[:i], invalidated[i+1:]...)
			name = "reconsider"
			if err := h.ReconsiderBlock(hash); err != nil {
				t.Fatalf("seed %d step %d: %s: %v", seed, step, name, err)
			}
		default:
			b, err := h.Mine(rng, propSpec(rng))
			if err != nil {
				t.Fatalf("seed %d step %d: mine: %v", seed, step, err)
			}
			name, connected = "mine", b.Hash()
		}
		if err := h.CheckWallet(); err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
		if trailing && step%4 != 3 {
			// Three steps in four go unchecked, so that the worker's
			// runs overlap the next steps' reorganizations.
			continue
		}
		c.check(fmt.Sprintf("seed %d step %d (%s)", seed, step, name), connected)
	}
	_, height := h.Tip()
	longest := 0
	for _, hist := range c.prev.History {
		longest = max(longest, len(hist))
	}
	t.Logf("seed %d: %d steps, %d reorgs, %d invalidations, height %d, %d scripts, %d txs seen, longest history %d, %d balances held",
		seed, steps, reorgs, invalidations, height, len(c.seenScripts), len(c.seenTxs), longest, idx.HeldScripts())
	if !trailing {
		// Every read compared held balances with the model; the rows
		// themselves verify against the stored unspent rows.
		if idx.HeldScripts() == 0 {
			t.Fatal("no balance was held")
		}
		verifyIndexOK(t, h, idx, "end")
	}
	if trailing {
		skipped, runs, moved := idx.TrailingCounts()
		t.Logf("seed %d: %d blocks left to the trailing worker, %d runs, %d stopped by reorganizations",
			seed, skipped, runs, moved)
		if skipped == 0 || runs == 0 {
			t.Fatal("the index never trailed the chain")
		}
		if base && idx.BaseHeight() <= 0 {
			t.Fatalf("the worker never extended the base (height %d)", idx.BaseHeight())
		}
		if base {
			t.Logf("seed %d: base height %d", seed, idx.BaseHeight())
		}
	}
}

// TestPropertyIndexMatchesModel drives random chains with reorgs through
// competing branches and through InvalidateBlock/ReconsiderBlock, and after
// every step compares every read of the live index with the reference model.
func TestPropertyIndexMatchesModel(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			runProperty(t, seed, 32)
		})
	}
}

// TestPropertyBaseIndexMatchesModel is the model check for an index whose
// rows up to a height are in a base of its own (base.go): the steps that
// follow spend the base's outputs, and reorganize and invalidate blocks
// below and above the base's height, through tombstones in ffldb; every
// read equals the model's, and the merged rows verify against the chain.
func TestPropertyBaseIndexMatchesModel(t *testing.T) {
	for _, seed := range []int64{4, 5} {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			runPropertyWith(t, seed, 32, false, true)
		})
	}
}

// TestPropertyTrailingBaseIndexMatchesModel is the trailing model check for
// an index built into its base, which the worker extends while the chain
// connects, reorganizes and invalidates blocks (an extension a disconnect
// overtakes is given up, and the index trails through ffldb from then on).
func TestPropertyTrailingBaseIndexMatchesModel(t *testing.T) {
	for _, seed := range []int64{6, 7} {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			runPropertyWith(t, seed, 48, true, true)
		})
	}
}

// TestPropertyTrailingIndexMatchesModel is the model check for an index
// that trails the chain, as during initial block download: its worker
// catches up in batches, in its own transactions, while the chain connects
// blocks, reorganizes and invalidates them; after every step the index,
// once caught up, must answer exactly as the model.
func TestPropertyTrailingIndexMatchesModel(t *testing.T) {
	for _, seed := range []int64{4, 5} {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			runPropertyWith(t, seed, 48, true, false)
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
// answer must be exactly the model of the block it says it was read at.
func TestPropertyConcurrentReadsSeeOneBlock(t *testing.T) {
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, propIndex(&idx))
	runConcurrentReads(t, h, idx, 40, 0, func() {})
}

// TestPropertyConcurrentReadsSeeOneBlockTrailingBase is
// TestPropertyConcurrentReadsSeeOneBlock for an index built into its base
// that trails the chain, the worker extending the base in batches of about
// a block, which each step's wait for it names: every read must be the
// model's at the tip it reports, while batches are committed into the base,
// named and their deletes applied.
func TestPropertyConcurrentReadsSeeOneBlockTrailingBase(t *testing.T) {
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, baseTrailingFactory(&idx, filepath.Join(t.TempDir(), "base")))
	t.Cleanup(func() {
		idx.StopTrailing()
		idx.WaitHeldWriter()
		idx.CloseBase()
	})
	runConcurrentReads(t, h, idx, 16, 3*time.Millisecond, func() {
		if err := idx.WaitCaughtUp(time.Minute); err != nil {
			t.Error(err)
		}
	})
	if idx.BaseHeight() <= 0 {
		t.Fatalf("base at height %d: the worker never extended it", idx.BaseHeight())
	}
}

// runConcurrentReads reads histories, unspent lists, balances and statuses
// from two goroutines while the chain connects, reorganizes and invalidates
// blocks (steps of them, each followed by settle, as is the first maturing
// of coinbases), and checks every read against the model at the tip it
// reports. Each reader pauses for pace between reads.
func runConcurrentReads(t *testing.T, h *testchain.Harness, idx *indexers.ElectrumIndex, steps int,
	pace time.Duration, settle func()) {

	rng := rand.New(rand.NewSource(11))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	settle()
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
					rd.balance, rd.tip, err = idx.Balance(sh)
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
				if tip, err := idx.Tip(); err == nil {
					idx.Touched(tip.Hash)
				}
				if len(out) < maxReads {
					out = append(out, rd)
				}
				if pace > 0 {
					time.Sleep(pace)
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
		settle()
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
