package indexers_test

import (
	"bytes"
	"crypto/sha256"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/chaingen"
)

// heavyModel is a script's history and unspent outputs computed by walking
// a generated chain's blocks.
type heavyModel struct {
	hist    []indexers.HistoryEntry
	unspent []heavyCoin
}

// heavyCoin is an unspent output with its transaction's position.
type heavyCoin struct {
	u   indexers.Unspent
	pos int
}

// TestHeavyScriptsMatchChain builds the index of a mainnet-shaped chain
// whose busiest scripts hold thousands of history entries and unspent
// outputs, and requires their histories, unspent lists (in chain order:
// height, position in block, output index), balances and statuses to be
// those computed from the blocks, read fresh and again (the statuses then
// resume from their cached midstates).
func TestHeavyScriptsMatchChain(t *testing.T) {
	txs := 80000
	if testing.Short() || raceDetector {
		txs = 15000
	}
	shape := chaingen.DefaultShape()
	shape.TxsPerBlock, shape.RampBlocks, shape.RampPool = 1000, 3, 3000
	shape.PopularScripts, shape.SampleScripts = 20, 500
	dir := t.TempDir()
	sum, err := chaingen.Generate(chaingen.Options{Dir: dir, Seed: 3, Txs: txs, Shape: shape, Workers: 2, UtxoCacheMiB: 64})
	if err != nil {
		t.Fatal(err)
	}

	// The model.
	type prevOut struct {
		sh    indexers.ScriptHash
		value int64
	}
	outs := make(map[wire.OutPoint]prevOut)
	model := make(map[indexers.ScriptHash]*heavyModel)
	get := func(sh indexers.ScriptHash) *heavyModel {
		m := model[sh]
		if m == nil {
			m = &heavyModel{}
			model[sh] = m
		}
		return m
	}
	spent := make(map[wire.OutPoint]bool)
	coins := make(map[wire.OutPoint]heavyCoin)
	err = chaingen.ReadBlocks(filepath.Join(dir, "blocks.dat"), func(b *btcutil.Block) error {
		for pos, tx := range b.Transactions() {
			touched := make(map[indexers.ScriptHash]bool)
			if pos > 0 {
				for _, in := range tx.MsgTx().TxIn {
					p := outs[in.PreviousOutPoint]
					touched[p.sh] = true
					spent[in.PreviousOutPoint] = true
				}
			}
			for vout, out := range tx.MsgTx().TxOut {
				if txscript.IsUnspendable(out.PkScript) {
					continue
				}
				sh := indexers.ScriptHashFromScript(out.PkScript)
				op := wire.OutPoint{Hash: *tx.Hash(), Index: uint32(vout)}
				outs[op] = prevOut{sh: sh, value: out.Value}
				coins[op] = heavyCoin{u: indexers.Unspent{TxHash: *tx.Hash(), Vout: uint32(vout),
					Height: b.Height(), Value: out.Value}, pos: pos}
				touched[sh] = true
			}
			for sh := range touched {
				get(sh).hist = append(get(sh).hist, indexers.HistoryEntry{TxHash: *tx.Hash(), Height: b.Height()})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for op, c := range coins {
		if !spent[op] {
			m := get(outs[op].sh)
			m.unspent = append(m.unspent, c)
		}
	}
	for _, m := range model {
		sort.Slice(m.unspent, func(i, j int) bool {
			a, b := m.unspent[i], m.unspent[j]
			if a.u.Height != b.u.Height {
				return a.u.Height < b.u.Height
			}
			if a.pos != b.pos {
				return a.pos < b.pos
			}
			return a.u.Vout < b.u.Vout
		})
	}

	// The index, built by the catch-up on opening the chain.
	params, err := chaingen.Params(sum.Network)
	if err != nil {
		t.Fatal(err)
	}
	db, err := database.Open("ffldb", chaingen.DBPath(dir, sum.Network), params.Net)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, idx := heavyChain(t, db, params, indexers.Options{}, nil)
	defer idx.Close()

	var heavy []indexers.ScriptHash
	for sh := range model {
		heavy = append(heavy, sh)
	}
	sort.Slice(heavy, func(i, j int) bool {
		a, b := model[heavy[i]], model[heavy[j]]
		if len(a.hist)+len(a.unspent) != len(b.hist)+len(b.unspent) {
			return len(a.hist)+len(a.unspent) > len(b.hist)+len(b.unspent)
		}
		return bytes.Compare(heavy[i][:], heavy[j][:]) < 0
	})
	heavy = heavy[:6]
	most := 0
	for _, sh := range heavy {
		most = max(most, len(model[sh].unspent))
	}
	if len(model[heavy[0]].hist) < txs/10 || most < txs/20 {
		t.Fatalf("the chain has no heavy script: longest history %d, most unspent %d", len(model[heavy[0]].hist), most)
	}
	for _, sh := range heavy {
		m := model[sh]
		var status []byte
		for _, e := range m.hist {
			status = append(status, e.TxHash.String()+":"+strconv.Itoa(int(e.Height))+":"...)
		}
		wantStatus := sha256.Sum256(status)
		var wantBalance int64
		for _, c := range m.unspent {
			wantBalance += c.u.Value
		}
		for pass := 0; pass < 2; pass++ {
			hist, _, err := idx.History(sh, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != len(m.hist) {
				t.Fatalf("pass %d: %v: history of %d entries, want %d", pass, sh, len(hist), len(m.hist))
			}
			for i := range hist {
				if hist[i] != m.hist[i] {
					t.Fatalf("pass %d: %v: history entry %d is %v, want %v", pass, sh, i, hist[i], m.hist[i])
				}
			}
			us, _, err := idx.Unspent(sh, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(us) != len(m.unspent) {
				t.Fatalf("pass %d: %v: %d unspent outputs, want %d", pass, sh, len(us), len(m.unspent))
			}
			for i := range us {
				if us[i] != m.unspent[i].u {
					t.Fatalf("pass %d: %v: unspent output %d is %+v, want %+v (chain order)", pass, sh, i, us[i], m.unspent[i].u)
				}
			}
			_, bal, _, err := idx.UnspentTotals(sh)
			if err != nil || bal != wantBalance {
				t.Fatalf("pass %d: %v: balance %d (%v), want %d", pass, sh, bal, err, wantBalance)
			}
			st, _, err := idx.Status(sh, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Sum(); !bytes.Equal(got, wantStatus[:]) {
				t.Fatalf("pass %d: %v: status %x, want %x", pass, sh, got, wantStatus)
			}
			if _, _, err := idx.History(sh, len(m.hist)-1); err != indexers.ErrHistoryTooLarge {
				t.Fatalf("pass %d: %v: history one over the limit: %v", pass, sh, err)
			}
			if len(m.unspent) > 0 {
				if _, _, err := idx.Unspent(sh, len(m.unspent)-1); err != indexers.ErrHistoryTooLarge {
					t.Fatalf("pass %d: %v: unspent list one over the limit: %v", pass, sh, err)
				}
			}
		}
		t.Logf("%v: %d history entries, %d unspent outputs", sh, len(m.hist), len(m.unspent))
	}
}

// heavyChain opens the chain of db with an Electrum index of its own, in a
// temporary directory of t, built by the index manager's Init; the caller
// closes the index before db.
func heavyChain(t *testing.T, db database.DB, params *chaincfg.Params, opts indexers.Options,
	checkpoints []chaincfg.Checkpoint) (*blockchain.BlockChain, *indexers.ElectrumIndex) {
	t.Helper()
	opts.Dir = t.TempDir()
	idx, err := indexers.NewElectrumIndex(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := blockchain.New(&blockchain.Config{DB: db, ChainParams: params,
		TimeSource: blockchain.NewMedianTime(), IndexManager: indexers.NewManager(db, idx),
		Checkpoints: checkpoints, UtxoCacheMaxSize: 64 << 20})
	if err != nil {
		idx.Close()
		t.Fatal(err)
	}
	return chain, idx
}

// TestEquivalenceOnGeneratedChain builds the index of a mainnet-shaped
// generated chain three ways and requires byte-identical rows and tip: the
// catch-up of the finished chain (in many small batches), the tip path
// (every block replayed into a fresh chain and indexed by the writer before
// the next one), and a writer that lags that replay (stalled on the first
// block until the replay is done, then catching up in batches). The
// catch-up, of blocks on disk at its start, writes no undo record; the tip
// path and the lagging writer, whose blocks btcd connected while they ran,
// hold the same records, the record of every block but genesis.
func TestEquivalenceOnGeneratedChain(t *testing.T) {
	txs := 30000
	if testing.Short() || raceDetector {
		txs = 6000
	}
	shape := chaingen.DefaultShape()
	shape.TxsPerBlock, shape.RampBlocks, shape.RampPool = 1000, 3, 3000
	shape.PopularScripts, shape.SampleScripts = 20, 500
	dir := t.TempDir()
	sum, err := chaingen.Generate(chaingen.Options{Dir: dir, Seed: 5, Txs: txs, Shape: shape, Workers: 2, UtxoCacheMiB: 64})
	if err != nil {
		t.Fatal(err)
	}
	params, err := chaingen.Params(sum.Network)
	if err != nil {
		t.Fatal(err)
	}
	tipHash, err := chainhash.NewHashFromStr(sum.TipHash)
	if err != nil {
		t.Fatal(err)
	}
	checkpoints := []chaincfg.Checkpoint{{Height: sum.TipHeight, Hash: tipHash}}

	// Catch-up.
	db, err := database.Open("ffldb", chaingen.DBPath(dir, sum.Network), params.Net)
	if err != nil {
		t.Fatal(err)
	}
	_, cu := heavyChain(t, db, params, indexers.Options{BatchBytes: 256 << 10}, nil)
	want := eqIndexData(t, cu)
	eqNoUndo(t, "catch-up", cu)
	p := cu.Progress()
	cu.Close()
	db.Close()
	if p.Batches < 5 {
		t.Fatalf("the catch-up committed %d batches, want several", p.Batches)
	}

	replay := func(lagging bool) (map[string][]byte, map[string][]byte) {
		db, err := database.Create("ffldb", filepath.Join(t.TempDir(), "db"), params.Net)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var (
			stall   sync.Once
			armed   = make(chan struct{})
			release = make(chan struct{})
			stalled = make(chan struct{})
		)
		opts := indexers.Options{}
		if lagging {
			opts = indexers.Options{BatchBytes: 256 << 10, OnCommit: func(indexers.Commit) {
				select {
				case <-armed:
					stall.Do(func() {
						close(stalled)
						<-release
					})
				default:
				}
			}}
		}
		chain, idx := heavyChain(t, db, params, opts, checkpoints)
		defer idx.Close()
		defer func() {
			select {
			case <-release:
			default:
				close(release)
			}
		}()
		close(armed)
		blocks := 0
		err = chaingen.ReadBlocks(filepath.Join(dir, "blocks.dat"), func(b *btcutil.Block) error {
			if _, _, err := chain.ProcessBlock(btcutil.NewBlock(b.MsgBlock()), blockchain.BFNone); err != nil {
				return err
			}
			blocks++
			if lagging {
				if blocks == 1 {
					// The writer commits the first block and stalls.
					<-stalled
				}
				return nil
			}
			return idx.Sync()
		})
		if err != nil {
			t.Fatal(err)
		}
		if lagging {
			if tip, _ := idx.Tip(); tip.Height != 1 {
				t.Fatalf("the stalled writer is at height %d", tip.Height)
			}
			close(release)
		}
		if err := idx.Sync(); err != nil {
			t.Fatal(err)
		}
		if p := idx.Progress(); lagging && (p.Batches < 2 || p.From != 2 || p.Target != sum.TipHeight) {
			t.Fatalf("the lagging writer's catch-up: %+v", p)
		}
		undo := eqUndoData(t, idx)
		what := map[bool]string{false: "tip path", true: "lagging writer"}[lagging]
		checkUndoRule(t, what, chain, mainChainUndo(t, what, chain, undo),
			map[chainhash.Hash]bool{*params.GenesisHash: true}, noneKept)
		return eqIndexData(t, idx), undo
	}
	got, tipUndo := replay(false)
	eqCompare(t, "tip path", want, got)
	got, lagUndo := replay(true)
	eqCompare(t, "lagging writer", want, got)
	eqCompare(t, "lagging writer, undo records", tipUndo, lagUndo)
	t.Logf("%d transactions, %d index rows equal three ways", sum.Transactions, len(want))
}
