package indexers

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
)

// Verification of the stored index against the chain (docs/ARCHITECTURE.md,
// "Verification"): each table's rows, recomputed from the blocks with the
// block path's row builder and read from one snapshot, are reduced per
// partition to a count and a sum of keyed hashes, seeded each run; a
// partition that differs is compared row by row in a second pass.

// verifyParts is the number of partitions of a table.
const verifyParts = 256

// DefaultVerifyMaxDiffs is how many differences a verification reports
// unless told otherwise.
const DefaultVerifyMaxDiffs = 20

// maxDrillParts bounds the partitions compared row by row: a corruption
// spread over many of them is reported from the first few.
const maxDrillParts = 8

// Verification phases, as VerifyProgress.Phase reports them.
const (
	VerifyPhaseBlocks      = "blocks"      // recomputing the expected rows from the chain
	VerifyPhaseRows        = "rows"        // reading the stored rows
	VerifyPhaseDifferences = "differences" // comparing mismatched partitions row by row
	VerifyPhaseDone        = "done"
)

// VerifyProgress is how far a verification has come.
type VerifyProgress struct {
	Phase string
	// Height is the last block whose rows were recomputed (phases blocks
	// and differences); TipHeight the index tip being verified.
	Height, TipHeight int32
	// Rows is the number of stored rows read so far.
	Rows int64
}

// VerifyOptions tune a verification; the zero value is usable.
type VerifyOptions struct {
	// MaxDiffs bounds the differences reported (DefaultVerifyMaxDiffs when
	// not positive).
	MaxDiffs int
	// Progress, when set, is called as the verification advances (after
	// every block, every 65,536 rows and at every phase change), on the
	// verifying goroutine.
	Progress func(VerifyProgress)
	// Index is the index whose store is verified.
	Index *ElectrumIndex
}

// Difference is one row on which the stored index and the chain disagree.
type Difference struct {
	// Table names the table: "tx", "place", "txid", "history", "unspent",
	// "block", or "meta" for the index's tip, schema version and size
	// entries.
	Table string
	// Kind is "missing" (the chain says the row should be there),
	// "extra" (stored but not expected), "value" (stored with another
	// value) or "malformed" (a key or value of the wrong shape).
	Kind string
	// Key is the stored or expected key; Stored and Expected the values
	// (nil where there is none). An unspent row's expected value holds
	// the amount only: its position is checked apart.
	Key, Stored, Expected []byte
	// HashX is the hex of the row's short script hash (the first 11
	// bytes of the script hash in internal byte order: the last 22 hex
	// digits of the Electrum form, byte-reversed), empty for tables not
	// keyed by one.
	HashX string
	// Height is the height the row belongs to (the block of the
	// transaction or output; the block itself), -1 when none.
	Height int32
	// Detail says more where the fields above do not.
	Detail string
}

// String formats the difference for a log line.
func (d Difference) String() string {
	s := fmt.Sprintf("table %s: %s row at height %d", d.Table, d.Kind, d.Height)
	if d.HashX != "" {
		s += " script hash " + d.HashX
	}
	s += " key " + hex.EncodeToString(d.Key)
	val := func(b []byte) string {
		if len(b) == 0 {
			return "(empty)"
		}
		return hex.EncodeToString(b)
	}
	if d.Stored != nil {
		s += " stored " + val(d.Stored)
	}
	if d.Expected != nil {
		s += " expected " + val(d.Expected)
	}
	if d.Detail != "" {
		s += " (" + d.Detail + ")"
	}
	return s
}

// VerifyResult is the outcome of a verification.
type VerifyResult struct {
	// Tip is the index tip that was verified.
	Tip Tip
	// Blocks and Txs are the blocks and transactions recomputed; Rows the
	// stored rows compared, ExpectedRows the rows the chain gives.
	Blocks       int32
	Txs          uint64
	Rows         int64
	ExpectedRows int64
	// Differences holds the first differences found (at most MaxDiffs);
	// MismatchedParts counts the partitions whose fingerprints differ.
	Differences     []Difference
	MismatchedParts int
	Duration        time.Duration
}

// OK reports whether the stored index equals the one the chain gives.
func (r *VerifyResult) OK() bool { return len(r.Differences) == 0 && r.MismatchedParts == 0 }

// tableNames name the tables of rows in a Difference, and keyLens are the
// lengths of their keys.
var (
	tableNames = [256]string{tagTx: "tx", tagLoc: "place", tagTxid: "txid", tagHist: "history",
		tagUtxo: "unspent", tagBlk: "block"}
	keyLens = [256]int{tagTx: txKeyLen, tagLoc: txKeyLen, tagTxid: txidKeyLen, tagHist: histKeyLen,
		tagUtxo: utxoKeyLen, tagBlk: blkKeyLen}
)

// tableName names a table tag for a Difference.
func tableName(tag byte) string {
	if n := tableNames[tag]; n != "" {
		return n
	}
	return "meta"
}

// verifyTags are the tables of rows, in key order.
var verifyTags = []byte{tagBlk, tagHist, tagTxid, tagLoc, tagTx, tagUtxo}

// fingerprint is a partition reduced to its row count and hash sum.
type fingerprint struct {
	n   int64
	sum uint64
}

// verifier holds one verification's state.
type verifier struct {
	ctx   context.Context
	dbTx  database.Tx
	meta  kvReader
	chain *blockchain.BlockChain
	seed  maphash.Seed
	opts  VerifyOptions
	prog  VerifyProgress

	tip    Tip
	hashes []chainhash.Hash // main-chain block hashes by height, up to tip
	span   int32            // heights per partition of the height-keyed tables

	expected, stored map[byte]*[verifyParts]fingerprint
	res              *VerifyResult
}

// Verify compares the Electrum index in its store, read from one snapshot,
// with the index the chain in db gives at the index's tip (chain, open on
// db, gives the spend journals). The error is for a verification that could
// not run (or was cancelled through ctx); a mismatch is in the result.
func Verify(ctx context.Context, db database.DB, chain *blockchain.BlockChain, opts VerifyOptions) (*VerifyResult, error) {
	if opts.MaxDiffs <= 0 {
		opts.MaxDiffs = DefaultVerifyMaxDiffs
	}
	start := time.Now()
	v := &verifier{ctx: ctx, chain: chain, seed: maphash.MakeSeed(), opts: opts,
		expected: make(map[byte]*[verifyParts]fingerprint),
		stored:   make(map[byte]*[verifyParts]fingerprint),
		res:      &VerifyResult{}}
	for _, tag := range verifyTags {
		v.expected[tag] = new([verifyParts]fingerprint)
		v.stored[tag] = new([verifyParts]fingerprint)
	}
	if opts.Index == nil {
		return nil, errors.New("verify: no index")
	}
	snap, err := newSnapView(opts.Index.store)
	if err != nil {
		return nil, err
	}
	defer snap.release()
	v.meta = snap
	err = db.View(func(dbTx database.Tx) error {
		v.dbTx = dbTx
		if err := v.run(); err != nil {
			return err
		}
		return snap.Err() // rows not read are no differences
	})
	v.res.Duration = time.Since(start)
	if err != nil {
		return nil, err
	}
	v.phase(VerifyPhaseDone)
	return v.res, nil
}

// run is Verify inside its view.
func (v *verifier) run() error {
	if ok, err := v.readTip(); err != nil || !ok {
		return err
	}
	if err := v.checkMeta(); err != nil {
		return err
	}
	v.phase(VerifyPhaseBlocks)
	exp, err := v.chainPassInto(0, v.tip.Height, &fpWriter{v: v, amounts: make(map[[utxoKeyLen]byte][]byte)})
	if err != nil {
		return err
	}
	v.res.ExpectedRows = exp.Rows
	stats := decodeStats(v.meta.Get(statsKey))
	if stats != exp {
		v.diff(Difference{Table: "meta", Kind: "value", Key: statsKey, Stored: bytes.Clone(v.meta.Get(statsKey)),
			Expected: encodeStats(exp), Height: v.tip.Height, Detail: "index size (rows, bytes)"})
	}

	v.phase(VerifyPhaseRows)
	if err := v.rowPass(); err != nil {
		return err
	}

	// Partitions whose fingerprints differ, compared row by row.
	type part struct {
		tag byte
		i   int
	}
	var bad []part
	for _, tag := range verifyTags {
		e, s := v.expected[tag], v.stored[tag]
		for i := range e {
			if e[i] != s[i] {
				bad = append(bad, part{tag, i})
			}
		}
	}
	v.res.MismatchedParts = len(bad)
	if len(bad) == 0 || v.full() {
		return nil
	}
	if len(bad) > maxDrillParts {
		bad = bad[:maxDrillParts]
	}
	v.phase(VerifyPhaseDifferences)
	want := make(map[byte]map[int]bool)
	lo, hi := v.tip.Height, int32(0)
	for _, p := range bad {
		if want[p.tag] == nil {
			want[p.tag] = make(map[int]bool)
		}
		want[p.tag][p.i] = true
		if p.tag == tagTx || p.tag == tagLoc || p.tag == tagBlk {
			lo = min(lo, int32(p.i)*v.span)
			hi = max(hi, min(int32(p.i+1)*v.span-1, v.tip.Height))
		} else {
			lo, hi = 0, v.tip.Height
		}
	}
	col := &collector{v: v, want: want, rows: make(map[string][]byte)}
	if _, err := v.chainPassInto(lo, hi, col); err != nil {
		return err
	}
	for _, p := range bad {
		if err := v.drill(p.tag, p.i, col.rows); err != nil {
			return err
		}
		if v.full() {
			break
		}
	}
	return nil
}

// readTip reads the index tip and the main chain's block hashes up to it,
// walking the stored headers back from the tip. It returns false when the
// index is empty or its tip entry is unusable (then reported).
func (v *verifier) readTip() (bool, error) {
	val := v.meta.Get(tipKey)
	hash, height, ok := decodeTipVal(val)
	if !ok {
		v.diff(Difference{Table: "meta", Kind: "malformed", Key: tipKey, Stored: val, Height: -1,
			Detail: "index tip entry"})
		return false, nil
	}
	v.tip = Tip{Hash: hash, Height: height}
	v.res.Tip = v.tip
	v.prog.TipHeight = height
	if height < 0 {
		// An empty index holds its schema version and nothing else.
		if err := v.checkMeta(); err != nil {
			return false, err
		}
		c := v.meta.Cursor()
		for ok := c.Seek(rowPrefix); ok && bytes.HasPrefix(c.Key(), rowPrefix); ok = c.Next() {
			if k := c.Key(); !bookkeepingKey(k) {
				v.diff(Difference{Table: tableName(k[2]), Kind: "extra", Key: bytes.Clone(k), Height: -1,
					Detail: "row of an empty index"})
				v.res.Rows++
			}
		}
		return false, nil
	}
	v.hashes = make([]chainhash.Hash, height+1)
	h := hash
	for i := height; i >= 0; i-- {
		v.hashes[i] = h
		hdr, err := v.dbTx.FetchBlockHeader(&h)
		if err != nil {
			return false, fmt.Errorf("verify: header of block %v at height %d: %w", h, i, err)
		}
		copy(h[:], hdr[4:36])
		if i%4096 == 0 {
			if err := v.ctx.Err(); err != nil {
				return false, err
			}
		}
	}
	if h != (chainhash.Hash{}) {
		return false, fmt.Errorf("verify: block at height 0 below tip %v has a parent", hash)
	}
	v.span = max(1, (height+verifyParts)/verifyParts)
	return true, nil
}

// bookkeepingKey reports the index's rows that are not recomputed from the
// chain: the schema version, the size and the tip (checked apart) and the
// undo records.
func bookkeepingKey(k []byte) bool {
	return bytes.Equal(k, versionKey) || bytes.Equal(k, statsKey) || bytes.Equal(k, tipKey) ||
		(len(k) == blkKeyLen && k[2] == tagUndo)
}

// checkMeta checks the schema version entry.
func (v *verifier) checkMeta() error {
	want := make([]byte, 4)
	binary.BigEndian.PutUint32(want, schemaVersion)
	if got := v.meta.Get(versionKey); !bytes.Equal(got, want) {
		v.diff(Difference{Table: "meta", Kind: "value", Key: versionKey, Stored: bytes.Clone(got),
			Expected: want, Height: -1, Detail: "schema version"})
	}
	return nil
}

// part returns the partition of a row of a table, and the height the row
// belongs to. The key's length has been checked.
func (v *verifier) part(k []byte) (int, int32) {
	switch k[2] {
	case tagHist:
		return int(k[pfx]), histHeight(k)
	case tagTxid:
		return int(k[pfx]), posHeight(getTxPos(k[pfx+txidPrefix:]))
	case tagUtxo:
		return int(k[pfx]), int32(binary.BigEndian.Uint32(k[pfx+hashXLen:]))
	case tagTx, tagLoc:
		h := posHeight(getTxPos(k[pfx:]))
		return int(min(uint32(h)/uint32(v.span), verifyParts-1)), h // key order: a top-bit height is last
	default: // tagBlk
		h := int32(binary.BigEndian.Uint32(k[pfx:]))
		return int(min(uint32(h)/uint32(v.span), verifyParts-1)), h
	}
}

// keyLen is the key length of a table's rows, -1 for no table of rows.
func keyLen(tag byte) int {
	if n := keyLens[tag]; n > 0 {
		return n
	}
	return -1
}

// rowHash is the keyed hash of a row: its key and the part of its value the
// fingerprint covers (an unspent row's amount, every other value whole).
func (v *verifier) rowHash(k, val []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(v.seed)
	h.Write(k)
	h.WriteByte(0)
	h.Write(val)
	return h.Sum64()
}

// fpWriter is the rowWriter of the first chain pass: every row the block
// path would put or delete goes into its partition's fingerprint.
type fpWriter struct {
	v *verifier
	// amounts are the amounts of the unspent rows the current block
	// deletes, by key: a delete carries no value.
	amounts map[[utxoKeyLen]byte][]byte
}

func (w *fpWriter) copiesRows() {}

func (w *fpWriter) Put(k, val []byte) error {
	if k[2] == tagUtxo {
		val = val[:8]
	}
	i, _ := w.v.part(k)
	fp := &w.v.expected[k[2]][i]
	fp.n++
	fp.sum += w.v.rowHash(k, val)
	return nil
}

func (w *fpWriter) Delete(k []byte) error {
	i, _ := w.v.part(k)
	fp := &w.v.expected[k[2]][i]
	fp.n--
	fp.sum -= w.v.rowHash(k, w.amounts[[utxoKeyLen]byte(k)])
	return nil
}

// planWriter receives a block's rows during a chain pass.
type planWriter interface {
	rowWriter
	// block is called with each block's plan before its rows.
	block(p *blockPlan)
}

func (w *fpWriter) block(p *blockPlan) {
	clear(w.amounts)
	for i := range p.txs {
		for j := range p.txs[i].spends {
			sp := &p.txs[i].spends[j]
			var k [utxoKeyLen]byte
			sp.key(k[:])
			a := make([]byte, 8)
			binary.BigEndian.PutUint64(a, uint64(sp.value))
			w.amounts[k] = a
		}
	}
}

// chainPassInto runs the block path's row builder over blocks lo..hi into w
// and returns the index's size as the block path counts it (for lo 0).
// Block rows count the chain's transactions from its start: the blocks
// below lo are counted (read for it) but not planned.
func (v *verifier) chainPassInto(lo, hi int32, w planWriter) (sizeStats, error) {
	var (
		base  uint64
		stats sizeStats
	)
	for h := int32(0); h <= hi; h++ {
		if err := v.ctx.Err(); err != nil {
			return stats, err
		}
		raw, err := v.dbTx.FetchBlock(&v.hashes[h])
		if err != nil {
			return stats, fmt.Errorf("verify: block %v at height %d: %w", v.hashes[h], h, err)
		}
		block, err := btcutil.NewBlockFromBytes(raw)
		if err != nil {
			return stats, fmt.Errorf("verify: block %v at height %d: %w", v.hashes[h], h, err)
		}
		block.SetHeight(h)
		if h < lo {
			base += uint64(len(block.MsgBlock().Transactions))
			continue
		}
		stxos, err := v.spentOutputs(block)
		if err != nil {
			return stats, err
		}
		p := planBlockRaw(block, raw, stxos, h == 0, planPool.Get().(*planBufs))
		w.block(p)
		stats = stats.add(applyConnect(w, p, base))
		base += uint64(len(p.txs))
		planPool.Put(p.bufs)
		v.res.Blocks = h + 1
		v.res.Txs = base
		v.prog.Height = h
		v.report()
	}
	return stats, nil
}

// spentOutputs returns btcd's spent outputs of a block of the snapshot's
// main chain: from its spend journal, or, when the chain has disconnected
// the block since the snapshot was taken and deleted the journal, rebuilt
// from the transactions they come from.
func (v *verifier) spentOutputs(block *btcutil.Block) ([]blockchain.SpentTxOut, error) {
	if block.Height() == 0 {
		return nil, nil
	}
	// A journal read is the one btcd wrote for this block: the chain
	// deletes it when the block leaves the main chain, and writes it
	// again, identical, should it return.
	stxos, err := v.chain.FetchSpendJournal(block)
	if err == nil {
		return stxos, nil
	}
	stxos, err = spentOutputsFromIndex(v.dbTx, v.meta, block)
	if err != nil {
		return nil, fmt.Errorf("verify: block %v at height %d left the main chain during the "+
			"verification and its spent outputs cannot be rebuilt: %w", block.Hash(), block.Height(), err)
	}
	// Each rebuilt output must come from the transaction the input names.
	return stxos, v.checkRebuilt(block, stxos)
}

// checkRebuilt confirms that the spent outputs rebuilt from the index come
// from the transactions the block's inputs name.
func (v *verifier) checkRebuilt(block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	n, c := 0, v.meta.Cursor()
	for i, tx := range block.Transactions() {
		if i == 0 {
			continue
		}
		for _, in := range tx.MsgTx().TxIn {
			loc, r, err := txLocation(v.meta, c, &in.PreviousOutPoint.Hash, true)
			if err != nil {
				return err
			}
			raw, err := v.dbTx.FetchBlockRegion(&database.BlockRegion{Hash: &loc.BlockHash,
				Offset: r.offset, Len: r.size})
			if err != nil {
				return err
			}
			var buf []byte
			if got := txidOfBytes(raw, &buf); got != in.PreviousOutPoint.Hash {
				return fmt.Errorf("verify: spent transaction %v read back as %v", in.PreviousOutPoint.Hash, got)
			}
			if stxos[n].Height != loc.Height {
				return fmt.Errorf("verify: spent transaction %v at height %d, not %d",
					in.PreviousOutPoint.Hash, loc.Height, stxos[n].Height)
			}
			n++
		}
	}
	return nil
}

// txidOfBytes returns the txid of a serialized transaction.
func txidOfBytes(b []byte, buf *[]byte) chainhash.Hash {
	tx, err := btcutil.NewTxFromBytes(b)
	if err != nil {
		return chainhash.Hash{}
	}
	return txidOf(b, tx.MsgTx(), buf)
}

// rowPass reads every stored row of the index into the stored fingerprints,
// reporting rows of no table or of the wrong shape and unspent rows whose
// position does not hold their transaction.
func (v *verifier) rowPass() error {
	c := v.meta.Cursor()
	var chunkKey [txKeyLen]byte
	for ok := c.Seek(rowPrefix); ok; ok = c.Next() {
		k := c.Key()
		if !bytes.HasPrefix(k, rowPrefix) {
			break
		}
		if bookkeepingKey(k) {
			continue
		}
		v.res.Rows++
		v.prog.Rows = v.res.Rows
		if v.res.Rows%65536 == 0 {
			if err := v.ctx.Err(); err != nil {
				return err
			}
			v.report()
		}
		val := c.Value()
		if bad := malformed(k, val); bad != "" {
			d := Difference{Table: tableName(tableTag(k)), Kind: "malformed", Key: bytes.Clone(k), Stored: bytes.Clone(val), Height: -1}
			if len(k) == keyLen(tableTag(k)) { // it names its script and block
				_, h := v.part(k)
				d = v.rowDiff(k, "malformed", val, nil, h)
			}
			d.Detail = bad
			v.diff(d)
			continue
		}
		i, h := v.part(k)
		fpVal := val
		if k[2] == tagUtxo {
			fpVal = val[:8]
			r, _ := decodeUtxo(k, val)
			txKey(chunkKey[:], txPos(r.height, int(r.pos)))
			e, ok := decodeTxEntry(v.meta.Get(chunkKey[:]), txPos(r.height, int(r.pos)))
			if !ok || e.txid != r.txid {
				v.diff(Difference{Table: "unspent", Kind: "value", Key: bytes.Clone(k), Stored: bytes.Clone(val),
					HashX: hex.EncodeToString(k[pfx : pfx+hashXLen]), Height: h,
					Detail: fmt.Sprintf("position %d of block %d does not hold transaction %v", r.pos, r.height, r.txid)})
			}
		}
		fp := &v.stored[k[2]][i]
		fp.n++
		fp.sum += v.rowHash(k, fpVal)
	}
	v.report()
	return nil
}

// tableTag returns the table tag of an index key, 0 for a key too short.
func tableTag(k []byte) byte {
	if len(k) < pfx {
		return 0
	}
	return k[2]
}

// malformed says what is wrong with the shape of a stored row, or "".
func malformed(k, val []byte) string {
	tag := tableTag(k)
	n := keyLen(tag)
	if n < 0 {
		return "key of no table"
	}
	if len(k) != n {
		return fmt.Sprintf("key of %d bytes, not %d", len(k), n)
	}
	switch tag {
	case tagHist:
		if len(val) == 0 || len(val)%histPosLen != 0 {
			return fmt.Sprintf("value of %d bytes, not a positive number of %d-byte positions", len(val), histPosLen)
		}
		for i := histPosLen; i < len(val); i += histPosLen {
			if binary.BigEndian.Uint16(val[i:]) <= binary.BigEndian.Uint16(val[i-histPosLen:]) {
				return "positions not ascending"
			}
		}
	case tagTxid, tagUtxo, tagBlk:
		if len(val) != valLen(k) {
			return fmt.Sprintf("value of %d bytes, not %d", len(val), valLen(k))
		}
	case tagTx, tagLoc:
		n := txEntryLen
		if tag == tagLoc {
			n = locEntryLen
		}
		if len(val) == 0 || len(val)%n != 0 || len(val) > txChunk*n {
			return fmt.Sprintf("value of %d bytes", len(val))
		}
	}
	return ""
}

// collector is the planWriter of the drill-down's chain pass: it keeps the
// expected rows of the wanted partitions, as the index would hold them
// after the pass (unspent rows spent later are gone).
type collector struct {
	v    *verifier
	want map[byte]map[int]bool
	rows map[string][]byte
}

func (c *collector) block(*blockPlan) {}

func (c *collector) wants(k []byte) bool {
	i, _ := c.v.part(k)
	return c.want[k[2]][i]
}

func (c *collector) Put(k, val []byte) error {
	if c.wants(k) {
		if k[2] == tagUtxo {
			val = val[:8]
		}
		c.rows[string(k)] = bytes.Clone(val)
	}
	return nil
}

func (c *collector) Delete(k []byte) error {
	if c.wants(k) {
		delete(c.rows, string(k))
	}
	return nil
}

// drill compares one partition of a table row by row and reports its
// differences. expected holds the partition's expected rows (and those of
// other partitions, which it skips).
func (v *verifier) drill(tag byte, i int, expected map[string][]byte) error {
	var keys []string
	for k := range expected {
		if k[2] == tag {
			if p, _ := v.part([]byte(k)); p == i {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	// Stored rows of the partition, in key order.
	start := tablePrefix(tag)
	var within func(k []byte) bool
	switch tag {
	case tagTx, tagLoc, tagBlk:
		lo := int32(i) * v.span
		start = append(start, 0, 0, 0, 0)
		binary.BigEndian.PutUint32(start[pfx:], uint32(lo))
		within = func(k []byte) bool {
			if !bytes.HasPrefix(k, tablePrefix(tag)) {
				return false
			}
			if len(k) != keyLen(tag) {
				return true
			}
			p, _ := v.part(k)
			return p == i
		}
	default:
		start = append(start, byte(i))
		pre := bytes.Clone(start)
		within = func(k []byte) bool { return bytes.HasPrefix(k, pre) }
	}
	c := v.meta.Cursor()
	j := 0
	missing := func(k string) {
		_, h := v.part([]byte(k))
		v.diff(v.rowDiff([]byte(k), "missing", nil, expected[k], h))
	}
	for ok := c.Seek(start); ok && within(c.Key()); ok = c.Next() {
		k, val := c.Key(), c.Value()
		if malformed(k, val) != "" {
			// Reported by the row pass, with any row expected under it.
			for ; j < len(keys) && keys[j] <= string(k); j++ {
				if keys[j] < string(k) {
					missing(keys[j])
				}
			}
			continue
		}
		for j < len(keys) && keys[j] < string(k) {
			missing(keys[j])
			j++
		}
		_, h := v.part(k)
		fpVal := val
		if tag == tagUtxo {
			fpVal = val[:8]
		}
		if j < len(keys) && keys[j] == string(k) {
			if !bytes.Equal(expected[keys[j]], fpVal) {
				v.diff(v.rowDiff(k, "value", val, expected[keys[j]], h))
			}
			j++
			continue
		}
		v.diff(v.rowDiff(k, "extra", val, nil, h))
		if v.full() {
			return nil
		}
	}
	for ; j < len(keys) && !v.full(); j++ {
		missing(keys[j])
	}
	return nil
}

// rowDiff builds the Difference of a row.
func (v *verifier) rowDiff(k []byte, kind string, stored, expected []byte, h int32) Difference {
	d := Difference{Table: tableName(k[2]), Kind: kind, Key: bytes.Clone(k), Stored: bytes.Clone(stored),
		Expected: bytes.Clone(expected), Height: h}
	if k[2] == tagHist || k[2] == tagUtxo {
		d.HashX = hex.EncodeToString(k[pfx : pfx+hashXLen])
	}
	if k[2] == tagUtxo && expected != nil {
		d.Detail = "expected value is the amount; the position is checked apart"
	}
	return d
}

// diff records a difference, up to MaxDiffs.
func (v *verifier) diff(d Difference) {
	if len(v.res.Differences) < v.opts.MaxDiffs {
		v.res.Differences = append(v.res.Differences, d)
	}
}

// full reports whether MaxDiffs differences have been recorded.
func (v *verifier) full() bool { return len(v.res.Differences) >= v.opts.MaxDiffs }

// phase moves to a new phase and reports it.
func (v *verifier) phase(p string) {
	v.prog.Phase = p
	v.report()
}

func (v *verifier) report() {
	if v.opts.Progress != nil {
		v.opts.Progress(v.prog)
	}
}

// LogVerifyResult logs a verification's outcome, as the job does: one
// line, and one per difference.
func LogVerifyResult(res *VerifyResult, err error) {
	switch {
	case err != nil:
		log.Errorf("Electrum index verification did not complete: %v", err)
	case res.OK():
		log.Infof("Electrum index verified at height %d (%v): %d rows equal the %d the chain's %d "+
			"blocks and %d transactions give (%v)", res.Tip.Height, res.Tip.Hash, res.Rows,
			res.ExpectedRows, res.Blocks, res.Txs, res.Duration.Round(time.Millisecond))
	default:
		log.Errorf("Electrum index verification FAILED at height %d (%v): %d stored rows, %d expected, "+
			"%d of %d partitions differ", res.Tip.Height, res.Tip.Hash, res.Rows, res.ExpectedRows,
			res.MismatchedParts, verifyParts*len(verifyTags))
		for _, d := range res.Differences {
			log.Errorf("Electrum index difference: %v", d)
		}
	}
}
