package indexers

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/syndtr/goleveldb/leveldb"
)

// ElectrumIndexName is the human-readable name of the index.
const ElectrumIndexName = "electrum index"

// touchedKeep is how many recent blocks' touched scripts are kept for the
// notification path.
const touchedKeep = 32

// ElectrumIndex is btcd's indexers.Indexer for the Electrum protocol. Create
// it with NewElectrumIndex and hand it to NewManager (or to btcd's
// indexers.NewManager); read it through the methods in read.go.
type ElectrumIndex struct {
	db     database.DB
	params *chaincfg.Params

	// mu guards tip and touched.
	mu sync.Mutex
	// tip is the block the index's rows end at, as seen by the last
	// ConnectBlock or DisconnectBlock; it gives the next txnum without a
	// database read. It is checked against every block's parent and
	// reloaded from the transaction when it does not match.
	tip memTip
	// touched is a ring of the scripts touched by recent blocks.
	touched [touchedKeep]touchedBlock
	next    int

	// statuses caches SHA-256 midstates of long confirmed histories.
	statuses *statusCache
	// reads caches long histories, unspent lists and balances.
	reads *readCache

	// progress describes the running or last catch-up, committed
	// records its recent commits for the rate, and catchUpMiB is its
	// memory budget (SetCatchUpMemory); all three are guarded by mu.
	progress   CatchUpProgress
	committed  commitWindow
	catchUpMiB int

	// quietBlocks turns the per-block log line off during catch-up.
	quietBlocks bool
	// observe, when set, receives every block pass (observe.go).
	observe func(BlockPass)

	// batchBytes is the catch-up's merged batch size; zero means the
	// default (tests make it small to cross many batch boundaries).
	batchBytes int

	// afterCommit, when set (tests), runs after each catch-up commit and
	// before Progress shows it.
	afterCommit func()

	// trail is the state of trailing the chain during initial block
	// download (trail.go); nil when the index never trails.
	trail *trailer

	// logEvery is the interval of the catch-up's progress line; zero means
	// DefaultProgressInterval.
	logEvery time.Duration

	// chunks caches "Ext" chunks for reads (chunkcache.go); nil: off.
	chunks *chunkCache

	// latest is the in-memory tip for LatestTip, set with idx.tip.
	latest atomic.Pointer[Tip]

	// balances carries cached balances across blocks (balancelog.go).
	balances *balanceLog

	// scanSplit is how many unspent rows of a script one cursor reads
	// before the rest is read by several (scan.go).
	scanSplit int

	// held is the held balances (held.go), guarded by mu; heldQ queues
	// offers for the background writer, which runs while heldRunning
	// (guarded by heldMu); heavy counts the scripts a catch-up funds.
	held        map[hashX]heldEntry
	heldQ       chan heldOffer
	heldMu      sync.Mutex
	heldRunning bool
	heldWG      sync.WaitGroup // the writer and surveys running
	heavy       *heavyCount
	heldMin     int64

	// base holds the rows of the blocks up to baseTop (base.go); nil when
	// the index has none. Both are set before the index is read or
	// written and do not change while it is.
	base    *leveldb.DB
	baseTop int32
	// basePath is the base's directory (SetBasePath); building is the
	// base while the catch-up at start builds the index into it.
	basePath string
	building *leveldb.DB
	// buildFrom is the base's tip when a build resumes.
	buildFrom memTip
	buildTip  memTip
	// baseDirty: the base holds rows above its height and is never
	// extended (markBaseDirty).
	baseDirty bool
	// baseAhead is the base's own tip when it is above baseTop: an
	// extension whose naming a crash took (trail.go, trailExtend).
	baseAhead memTip
	// named is held by every reader of rows (readView) and taken whole by
	// an extension from the naming of a batch until its deletes are
	// applied (trail.go, trailExtend), so that no reader sees a height
	// without its deletes.
	named sync.RWMutex
	// ffldbRows: ffldb holds, or may hold, rows of the index's tables
	// (puts, or tombstones over the base's rows), as after any block the
	// hooks or a catch-up through ffldb indexed or unindexed. The base is
	// then never extended: a delete an extension applies to the base
	// would not reach a copy of the row in ffldb, nor a row it puts show
	// through a tombstone.
	ffldbRows atomic.Bool
	// beforeName, when set, is called by an extension between committing
	// a batch into the base and naming it (tests).
	beforeName func()
}

// readView runs fn in a read-only ffldb transaction, as db.View, for a
// reader of the index's rows (idx.view).
func (idx *ElectrumIndex) readView(fn func(dbTx database.Tx) error) error {
	idx.named.RLock()
	defer idx.named.RUnlock()
	return idx.db.View(fn)
}

// view returns the metadata bucket of dbTx as the index reads and writes
// its rows: over the base when there is one. done releases what the view's
// cursors hold; the view and its cursors must not be used after it.
func (idx *ElectrumIndex) view(dbTx database.Tx) (meta database.Bucket, done func()) {
	m := dbTx.Metadata()
	if idx.base == nil {
		return m, func() {}
	}
	b := mergedBucket{meta: m, base: idx.base, top: new(baseHeight), its: new(baseIters), rows: &idx.ffldbRows}
	return b, b.release
}

// DefaultProgressInterval is the default interval of the catch-up's progress
// log line ("Electrum index: height H/T, N tx/s, ETA ...").
const DefaultProgressInterval = progressEvery

// SetProgressInterval sets the interval of the catch-up's progress log line
// (DefaultProgressInterval when d is not positive). Call it before the
// catch-up starts.
func (idx *ElectrumIndex) SetProgressInterval(d time.Duration) {
	idx.logEvery = d
}

// progressInterval is the interval of the catch-up's progress log line.
func (idx *ElectrumIndex) progressInterval() time.Duration {
	if idx.logEvery <= 0 {
		return progressEvery
	}
	return idx.logEvery
}

// memTip is the index tip with its cumulative transaction count and the
// index's size at that tip.
type memTip struct {
	valid   bool
	hash    chainhash.Hash
	height  int32
	txCount uint64
	stats   sizeStats
}

// touchedBlock is one entry of the touched ring: a block's per-transaction
// script lists, deduplicated only when asked for.
type touchedBlock struct {
	hash    chainhash.Hash
	scripts [][]ScriptHash
}

// NewElectrumIndex returns the Electrum index over db for the given network.
func NewElectrumIndex(db database.DB, params *chaincfg.Params) *ElectrumIndex {
	return &ElectrumIndex{db: db, params: params, statuses: newStatusCache(statusCacheEntries),
		reads: newReadCache(DefaultReadCacheBytes), chunks: newChunkCache(DefaultChunkCacheBytes),
		balances:  newBalanceLog(),
		scanSplit: scanSplitAfter,
		held:      make(map[hashX]heldEntry), heldQ: make(chan heldOffer, heldQueue),
		heavy: newHeavyCount(), heldMin: heldMin}
}

// SetChunkCacheBytes bounds the cache of transaction chunks
// (DefaultChunkCacheBytes unless set; 0 turns it off). Call it before the
// index serves reads.
func (idx *ElectrumIndex) SetChunkCacheBytes(n int) {
	idx.chunks = newChunkCache(n)
}

// SetCatchUpBatch sets the size of the catch-up's merged batches as ffldb
// counts them (0: the default). Small batches make a small chain cross many
// batch boundaries and commits, which tests of crashes and interrupts need;
// they make a catch-up slower.
func (idx *ElectrumIndex) SetCatchUpBatch(bytes int) { idx.batchBytes = bytes }

// SetReadCacheBytes bounds the cache of long histories, unspent lists and
// balances (DefaultReadCacheBytes unless set; 0 turns it off). Call it
// before the index serves reads.
func (idx *ElectrumIndex) SetReadCacheBytes(n int) {
	idx.reads = newReadCache(n)
}

// Key returns the index's key in btcd's index tips bucket.
func (idx *ElectrumIndex) Key() []byte { return electrumIndexKey }

// Name returns the human-readable name of the index.
func (idx *ElectrumIndex) Name() string { return ElectrumIndexName }

// NeedsInputs tells btcd's index manager to pass the spent outputs of every
// block, also during its own catch-up.
func (idx *ElectrumIndex) NeedsInputs() bool { return true }

// Create writes the schema version of a new index.
func (idx *ElectrumIndex) Create(dbTx database.Tx) error {
	v := make([]byte, 4)
	binary.BigEndian.PutUint32(v, schemaVersion)
	return dbTx.Metadata().Put(versionKey, v)
}

// Init loads the index tip and its transaction count.
func (idx *ElectrumIndex) Init() error {
	return idx.readView(func(dbTx database.Tx) error {
		meta, done := idx.view(dbTx)
		defer done()
		t, err := loadTip(dbTx, meta)
		if err != nil {
			return err
		}
		idx.mu.Lock()
		idx.setTip(t)
		idx.loadHeld(meta, Tip{Hash: t.hash, Height: t.height})
		idx.mu.Unlock()
		return nil
	})
}

// loadTip reads the index tip and its cumulative transaction count; meta
// is the index's view of dbTx.
func loadTip(dbTx database.Tx, meta database.Bucket) (memTip, error) {
	var t memTip
	tips := dbTx.Metadata().Bucket(indexTipsBucketName)
	if tips == nil {
		return t, nil
	}
	v := tips.Get(electrumIndexKey)
	if v == nil {
		return t, nil
	}
	hash, height, ok := decodeTipVal(v)
	if !ok {
		return t, fmt.Errorf("electrum index: malformed tip entry")
	}
	t = memTip{valid: true, hash: hash, height: height, stats: decodeStats(meta.Get(statsKey))}
	if height < 0 {
		return t, nil
	}
	count, bhash, ok := decodeBlkVal(meta.Get(blkKey(height)))
	if !ok || bhash != hash {
		return t, fmt.Errorf("electrum index: no block row for tip %v at height %d", hash, height)
	}
	t.txCount = count
	return t, nil
}

// schemaVersionOf returns the schema version stored in the database, or 0.
func schemaVersionOf(dbTx database.Tx) uint32 {
	v := dbTx.Metadata().Get(versionKey)
	if len(v) != 4 {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

// ConnectBlock indexes a block connected to the main chain. It runs inside
// btcd's block-connect transaction and performs no database reads: phase 1
// plans every row in parallel from the block and its spent outputs, phase 2
// writes the funding rows, then the spending rows. It never returns an
// error; a failure that would leave the chain half-updated stops the process
// (see mustWrite).
func (idx *ElectrumIndex) ConnectBlock(dbTx database.Tx, block *btcutil.Block,
	stxos []blockchain.SpentTxOut) error {

	start := time.Now()
	genesis := block.Height() == 0
	plan := planBlock(block, stxos, genesis)
	planned := time.Now()
	prev := &block.MsgBlock().Header.PrevBlock

	idx.mu.Lock()
	defer idx.mu.Unlock()
	meta, done := idx.view(dbTx)
	defer done()
	base, stats := idx.tip.txCount, idx.tip.stats
	if !idx.tip.valid || idx.tip.hash != *prev || idx.tip.height != plan.height-1 {
		base, stats = mustTipAt(meta, plan.height-1, prev)
	}
	stats = stats.add(applyConnect(meta, plan, base))
	mustWrite(meta.Put(statsKey, encodeStats(stats)))
	mustWrite(meta.Put(tipKey, tipVal(&plan.hash, plan.height)))
	idx.applyHeld(meta, plan, 1, &plan.hash, plan.height)
	idx.balances.logBlock(plan)
	n := uint64(len(plan.txs))
	idx.setTip(memTip{valid: true, hash: plan.hash, height: plan.height, txCount: base + n, stats: stats})
	idx.remember(plan)
	idx.observed(plan, start, planned)

	if !idx.quietBlocks {
		log.Infof("Indexed block %d (%d tx) in %v", plan.height, n,
			time.Since(start).Round(100*time.Microsecond))
	}
	return nil
}

// DisconnectBlock removes a block disconnected from the main chain: the exact
// inverse of ConnectBlock, computed from the block and its spent outputs, for
// a reorg of any depth.
func (idx *ElectrumIndex) DisconnectBlock(dbTx database.Tx, block *btcutil.Block,
	stxos []blockchain.SpentTxOut) error {

	plan := planBlock(block, stxos, block.Height() == 0)

	idx.mu.Lock()
	defer idx.mu.Unlock()
	n := uint64(len(plan.txs))
	var (
		end   uint64
		stats sizeStats
	)
	meta, done := idx.view(dbTx)
	defer done()
	if idx.tip.valid && idx.tip.hash == plan.hash && idx.tip.height == plan.height {
		end, stats = idx.tip.txCount, idx.tip.stats
	} else {
		end, stats = mustTipAt(meta, plan.height, &plan.hash)
	}
	base := end - n
	fillSpendPositions(meta, plan)
	stats = stats.add(applyDisconnect(meta, plan))
	mustWrite(meta.Put(statsKey, encodeStats(stats)))
	mustWrite(meta.Put(tipKey, tipVal(&block.MsgBlock().Header.PrevBlock, plan.height-1)))
	idx.applyHeld(meta, plan, -1, &block.MsgBlock().Header.PrevBlock, plan.height-1)
	mustWrite(bumpReorgEpoch(meta))
	idx.setTip(memTip{valid: true, hash: block.MsgBlock().Header.PrevBlock,
		height: plan.height - 1, txCount: base, stats: stats})
	idx.remember(plan)
	log.Infof("Unindexed block %d (%d tx)", plan.height, n)
	return nil
}

// Size returns the number of rows of the index at its tip and their key and
// value bytes (the logical size; the database adds its own overhead).
func (idx *ElectrumIndex) Size() (rows, bytes int64, err error) {
	err = idx.db.View(func(dbTx database.Tx) error {
		s := decodeStats(dbTx.Metadata().Get(statsKey))
		rows, bytes = s.Rows, s.Bytes
		return nil
	})
	return rows, bytes, err
}

// mustTipAt reads the cumulative transaction count at height, which must be
// the index's tip block hash, and the index's size. It is the slow path for
// when the in-memory tip does not match (a transaction of an earlier call
// was rolled back); a missing or different row means the index does not
// match the chain, which cannot be repaired inside the chain's transaction.
// An empty index (height -1) needs no read.
func mustTipAt(meta database.Bucket, height int32, hash *chainhash.Hash) (uint64, sizeStats) {
	if height < 0 {
		return 0, sizeStats{}
	}
	count, bhash, ok := decodeBlkVal(meta.Get(blkKey(height)))
	if !ok || bhash != *hash {
		panic(fmt.Sprintf("electrum index: index has no block %v at height %d", hash, height))
	}
	return count, decodeStats(meta.Get(statsKey))
}

// remember records the scripts a block touched for Touched. Called with mu
// held.
func (idx *ElectrumIndex) remember(p *blockPlan) {
	scripts := make([][]ScriptHash, len(p.txs))
	for i := range p.txs {
		scripts[i] = p.txs[i].scripts
	}
	idx.touched[idx.next] = touchedBlock{hash: p.hash, scripts: scripts}
	idx.next = (idx.next + 1) % touchedKeep
}

// Touched returns the scripts whose confirmed history changed when the block
// with the given hash was connected or disconnected, for the notification
// path. It knows the last 32 blocks; for others it returns nil.
func (idx *ElectrumIndex) Touched(blockHash chainhash.Hash) []ScriptHash {
	idx.mu.Lock()
	var lists [][]ScriptHash
	for i := range idx.touched {
		if idx.touched[i].scripts != nil && idx.touched[i].hash == blockHash {
			lists = idx.touched[i].scripts
		}
	}
	idx.mu.Unlock()
	seen := make(map[ScriptHash]struct{})
	var out []ScriptHash
	for _, l := range lists {
		for _, sh := range l {
			if _, ok := seen[sh]; !ok {
				seen[sh] = struct{}{}
				out = append(out, sh)
			}
		}
	}
	return out
}
