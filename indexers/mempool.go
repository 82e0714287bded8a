package indexers

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// MempoolEntry is one unconfirmed transaction touching a script.
type MempoolEntry struct {
	TxHash chainhash.Hash
	// Height is 0 when every input is confirmed and -1 when some input
	// spends another unconfirmed transaction.
	Height int32
	// Fee is the transaction's fee in satoshis.
	Fee int64
}

// PrevOutFetcher returns the script and value of a confirmed output.
type PrevOutFetcher func(op wire.OutPoint) (pkScript []byte, value int64, err error)

// Mempool is a per-script view of btcd's transaction pool: for every script,
// the unconfirmed transactions that pay it or spend from it. btcd's pool
// has no removal hook, so the node feeds it with Add when it accepts
// transactions and reconciles it with Sync after every block.
type Mempool struct {
	prevOut PrevOutFetcher

	mu       sync.RWMutex
	txs      map[chainhash.Hash]*poolTx
	byScript map[ScriptHash]map[chainhash.Hash]struct{}
	spentBy  map[wire.OutPoint]chainhash.Hash
	hist     [][2]float64
	histOK   bool
}

// poolTx is one transaction of the view.
type poolTx struct {
	txid    chainhash.Hash
	fee     int64
	vsize   int64
	unconf  bool // some input spends an output of a pool transaction
	outs    []poolOut
	ins     []poolIn
	spends  []wire.OutPoint // every input, known spent output or not
	scripts []ScriptHash
	// unknown are inputs whose spent output could not be resolved when
	// the transaction came: during a reorganization the view may catch a
	// transaction put back into the pool after its parent's block left
	// the index but before the parent itself came back to the pool. Sync
	// resolves them again.
	unknown []wire.OutPoint
}

// poolOut is an output of a pool transaction.
type poolOut struct {
	script ScriptHash
	vout   uint32
	value  int64
}

// poolIn is an input of a pool transaction whose spent output is known.
type poolIn struct {
	script ScriptHash
	prev   wire.OutPoint
	value  int64
}

// NewMempool returns an empty view; prevOut resolves the outputs that pool
// transactions spend from the chain (ElectrumIndex.PrevOut does).
func NewMempool(prevOut PrevOutFetcher) *Mempool {
	return &Mempool{
		prevOut:  prevOut,
		txs:      make(map[chainhash.Hash]*poolTx),
		byScript: make(map[ScriptHash]map[chainhash.Hash]struct{}),
		spentBy:  make(map[wire.OutPoint]chainhash.Hash),
	}
}

// Add adds newly accepted pool transactions and returns the scripts whose
// unconfirmed part changed.
func (m *Mempool) Add(descs ...*mempool.TxDesc) []ScriptHash {
	m.mu.Lock()
	defer m.mu.Unlock()
	touched := make(map[ScriptHash]struct{})
	m.addLocked(descs, touched)
	return slices.Collect(maps.Keys(touched))
}

// Sync makes the view equal to the pool's content (TxPool.TxDescs) and
// returns the scripts whose unconfirmed part changed: mined, replaced or
// evicted transactions go, new ones come, and those whose parents were
// mined or came back change between height 0 and -1.
func (m *Mempool) Sync(descs []*mempool.TxDesc) []ScriptHash { return m.SyncKeeping(descs, nil) }

// SyncKeeping is Sync that keeps the transactions keep accepts although
// the pool no longer holds them (mined in a block the index has not
// committed yet).
func (m *Mempool) SyncKeeping(descs []*mempool.TxDesc, keep func(chainhash.Hash) bool) []ScriptHash {
	m.mu.Lock()
	defer m.mu.Unlock()
	touched := make(map[ScriptHash]struct{})
	present := make(map[chainhash.Hash]struct{}, len(descs))
	for _, d := range descs {
		present[*d.Tx.Hash()] = struct{}{}
	}
	for txid, ptx := range m.txs {
		if _, ok := present[txid]; !ok && (keep == nil || !keep(txid)) {
			m.removeLocked(ptx, touched)
		}
	}
	m.addLocked(descs, touched)
	m.resolveUnknownLocked(touched)
	// Whether a transaction has an unconfirmed input changes both ways: a
	// parent that is mined leaves the pool, and a parent whose block is
	// disconnected comes back to it.
	for _, ptx := range m.txs {
		unconf := false
		for _, op := range ptx.spends {
			if _, ok := m.txs[op.Hash]; ok {
				unconf = true
				break
			}
		}
		if unconf != ptx.unconf {
			ptx.unconf = unconf
			for _, sh := range ptx.scripts {
				touched[sh] = struct{}{}
			}
		}
	}
	return slices.Collect(maps.Keys(touched))
}

// addLocked adds the descs not yet in the view, parents before children.
func (m *Mempool) addLocked(descs []*mempool.TxDesc, touched map[ScriptHash]struct{}) {
	pending := make(map[chainhash.Hash]*mempool.TxDesc)
	for _, d := range descs {
		if _, ok := m.txs[*d.Tx.Hash()]; !ok {
			pending[*d.Tx.Hash()] = d
		}
	}
	var add func(d *mempool.TxDesc)
	add = func(d *mempool.TxDesc) {
		txid := *d.Tx.Hash()
		if _, ok := pending[txid]; !ok {
			return
		}
		delete(pending, txid)
		for _, in := range d.Tx.MsgTx().TxIn {
			if parent, ok := pending[in.PreviousOutPoint.Hash]; ok {
				add(parent)
			}
		}
		m.insertLocked(d, touched)
	}
	for _, d := range descs {
		add(d)
	}
}

// insertLocked adds one transaction whose unconfirmed parents are already in
// the view.
func (m *Mempool) insertLocked(d *mempool.TxDesc, touched map[ScriptHash]struct{}) {
	msg := d.Tx.MsgTx()
	ptx := &poolTx{txid: *d.Tx.Hash(), fee: d.Fee, vsize: mempool.GetTxVirtualSize(d.Tx)}
	add := func(sh ScriptHash) {
		if !slices.Contains(ptx.scripts, sh) {
			ptx.scripts = append(ptx.scripts, sh)
		}
	}
	for vout, out := range msg.TxOut {
		if txscript.IsUnspendable(out.PkScript) {
			continue
		}
		sh := ScriptHashFromScript(out.PkScript)
		ptx.outs = append(ptx.outs, poolOut{script: sh, vout: uint32(vout), value: out.Value})
		add(sh)
	}
	for _, in := range msg.TxIn {
		prev := in.PreviousOutPoint
		if !m.resolveLocked(ptx, prev, add) {
			ptx.unknown = append(ptx.unknown, prev)
		}
		m.spentBy[prev] = ptx.txid
		ptx.spends = append(ptx.spends, prev)
	}
	m.txs[ptx.txid] = ptx
	// btcd announces accepted transactions outside its pool's lock: a
	// child that came first spends this one's outputs as unknown.
	for vout := range msg.TxOut {
		if c := m.txs[m.spentBy[wire.OutPoint{Hash: ptx.txid, Index: uint32(vout)}]]; c != nil && len(c.unknown) > 0 {
			m.resolveTxLocked(c, touched)
			c.unconf = true
			for _, sh := range c.scripts {
				touched[sh] = struct{}{}
			}
		}
	}
	m.indexLocked(ptx, ptx.scripts, touched)
	m.histOK = false
}

// resolveLocked finds the output prev that ptx spends, in the view or through
// prevOut, records the input and adds its script with add; it reports
// whether the output was found.
func (m *Mempool) resolveLocked(ptx *poolTx, prev wire.OutPoint, add func(ScriptHash)) bool {
	if parent, ok := m.txs[prev.Hash]; ok {
		ptx.unconf = true
		for _, o := range parent.outs {
			if o.vout == prev.Index {
				ptx.ins = append(ptx.ins, poolIn{script: o.script, prev: prev, value: o.value})
				add(o.script)
			}
		}
		return true
	}
	if m.prevOut == nil {
		return true
	}
	script, value, err := m.prevOut(prev)
	if err != nil {
		log.Debugf("Mempool transaction %v spends unknown output %v: %v", ptx.txid, prev, err)
		return false
	}
	sh := ScriptHashFromScript(script)
	ptx.ins = append(ptx.ins, poolIn{script: sh, prev: prev, value: value})
	add(sh)
	return true
}

// resolveUnknownLocked tries again the inputs of pool transactions whose
// spent outputs were unknown, and indexes the scripts found.
func (m *Mempool) resolveUnknownLocked(touched map[ScriptHash]struct{}) {
	for _, ptx := range m.txs {
		m.resolveTxLocked(ptx, touched)
	}
}

// resolveTxLocked tries again ptx's unknown spent outputs. It keeps unconf,
// which its callers set.
func (m *Mempool) resolveTxLocked(ptx *poolTx, touched map[ScriptHash]struct{}) {
	if len(ptx.unknown) == 0 {
		return
	}
	var added []ScriptHash
	add := func(sh ScriptHash) {
		// A script the transaction already paid changes too: its
		// balance now counts the spend.
		touched[sh] = struct{}{}
		if !slices.Contains(ptx.scripts, sh) {
			ptx.scripts = append(ptx.scripts, sh)
			added = append(added, sh)
		}
	}
	unconf, still := ptx.unconf, ptx.unknown[:0]
	for _, prev := range ptx.unknown {
		if !m.resolveLocked(ptx, prev, add) {
			still = append(still, prev)
		}
	}
	ptx.unknown, ptx.unconf = still, unconf
	m.indexLocked(ptx, added, touched)
}

// indexLocked lists ptx under the scripts shs, and marks them touched.
func (m *Mempool) indexLocked(ptx *poolTx, shs []ScriptHash, touched map[ScriptHash]struct{}) {
	for _, sh := range shs {
		set := m.byScript[sh]
		if set == nil {
			set = make(map[chainhash.Hash]struct{})
			m.byScript[sh] = set
		}
		set[ptx.txid] = struct{}{}
		touched[sh] = struct{}{}
	}
}

// removeLocked drops one transaction from the view.
func (m *Mempool) removeLocked(ptx *poolTx, touched map[ScriptHash]struct{}) {
	delete(m.txs, ptx.txid)
	for _, sh := range ptx.scripts {
		if set := m.byScript[sh]; set != nil {
			delete(set, ptx.txid)
			if len(set) == 0 {
				delete(m.byScript, sh)
			}
		}
		touched[sh] = struct{}{}
	}
	for _, op := range ptx.spends {
		if m.spentBy[op] == ptx.txid {
			delete(m.spentBy, op)
		}
	}
	m.histOK = false
}

// Entries returns the unconfirmed transactions touching sh in the canonical
// order of protocol 1.6: height 0 before -1, then by txid as displayed hex.
func (m *Mempool) Entries(sh ScriptHash) []MempoolEntry {
	m.mu.RLock()
	set := m.byScript[sh]
	out := make([]MempoolEntry, 0, len(set))
	for txid := range set {
		ptx := m.txs[txid]
		h := int32(0)
		if ptx.unconf {
			h = -1
		}
		out = append(out, MempoolEntry{TxHash: txid, Height: h, Fee: ptx.fee})
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Height != out[j].Height {
			return out[i].Height > out[j].Height
		}
		return DisplayLess(&out[i].TxHash, &out[j].TxHash)
	})
	return out
}

// DisplayLess orders hashes by their displayed (byte-reversed) hex form, the
// tie-break of the protocol's mempool order.
func DisplayLess(a, b *chainhash.Hash) bool {
	for i := chainhash.HashSize - 1; i >= 0; i-- {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// BalanceOf returns the unconfirmed change of sh's balance (outputs paying
// it minus outputs of it spent: it may be negative) and how many of its
// outputs, confirmed or not, are spent, by the unconfirmed transactions
// include accepts (all when include is nil; a caller that knows the pool
// moved on since the last Sync leaves out what already left it).
func (m *Mempool) BalanceOf(sh ScriptHash, include func(txid *chainhash.Hash) bool) (d int64, spends int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for txid := range m.byScript[sh] {
		if include != nil && !include(&txid) {
			continue
		}
		ptx := m.txs[txid]
		for _, o := range ptx.outs {
			if o.script == sh {
				d += o.value
			}
		}
		for _, in := range ptx.ins {
			if in.script == sh {
				d, spends = d-in.value, spends+1
			}
		}
	}
	return d, spends
}

// Unspent returns sh's unconfirmed outputs that no transaction include
// accepts (nil: any) spends, with height 0, ordered by txid and output index.
func (m *Mempool) Unspent(sh ScriptHash, include func(txid *chainhash.Hash) bool) []Unspent {
	m.mu.RLock()
	var out []Unspent
	for txid := range m.byScript[sh] {
		for _, o := range m.txs[txid].outs {
			if o.script != sh {
				continue
			}
			if by, spent := m.spentBy[wire.OutPoint{Hash: txid, Index: o.vout}]; spent && (include == nil || include(&by)) {
				continue
			}
			out = append(out, Unspent{TxHash: txid, Vout: o.vout, Height: 0, Value: o.value})
		}
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { // by txid as displayed, then output index
		if out[i].TxHash != out[j].TxHash {
			return DisplayLess(&out[i].TxHash, &out[j].TxHash)
		}
		return out[i].Vout < out[j].Vout
	})
	return out
}

// SpentBy returns the unconfirmed transaction that spends op, if one does.
func (m *Mempool) SpentBy(op wire.OutPoint) (chainhash.Hash, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	txid, ok := m.spentBy[op]
	return txid, ok
}

// Fee returns the fee of a transaction of the view.
func (m *Mempool) Fee(txid chainhash.Hash) (fee int64, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if ptx := m.txs[txid]; ptx != nil {
		fee, ok = ptx.fee, true
	}
	return fee, ok
}

// Len returns the number of transactions.
func (m *Mempool) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.txs)
}

// Histogram bin sizes, as ElectrumX computes them: the first bin holds about
// 30,000 vbytes and each next one 10% more.
const (
	histogramFirstBin = 30000
	histogramGrowth   = 1.1
)

// FeeHistogram returns [fee rate in sat/vB, vsize] pairs with fee rates
// strictly descending; each vsize is the total size of transactions paying
// at least that rate and less than the previous pair's rate.
func (m *Mempool) FeeHistogram() [][2]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.histOK {
		return m.hist
	}
	bySat := make(map[float64]int64)
	for _, ptx := range m.txs {
		if ptx.vsize <= 0 {
			continue
		}
		rate := math.Floor(10*float64(ptx.fee)/float64(ptx.vsize)) / 10
		bySat[rate] += ptx.vsize
	}
	rates := make([]float64, 0, len(bySat))
	for r := range bySat {
		rates = append(rates, r)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(rates)))
	var (
		hist    = [][2]float64{}
		binSize = float64(histogramFirstBin)
		cum     int64
		lastR   float64
	)
	for _, r := range rates {
		size := bySat[r]
		if cum > 0 && float64(size) > 2*binSize {
			// A single rate holding much more than a bin closes the
			// bin before it.
			hist = append(hist, [2]float64{lastR, float64(cum)})
			cum = 0
			binSize *= histogramGrowth
		}
		cum += size
		lastR = r
		if float64(cum) > binSize {
			hist = append(hist, [2]float64{r, float64(cum)})
			cum = 0
			binSize *= histogramGrowth
		}
	}
	if cum > 0 {
		hist = append(hist, [2]float64{lastR, float64(cum)})
	}
	m.hist, m.histOK = hist, true
	return hist
}

// PrevOut returns the script and value of a confirmed output, read through
// the index; it is the PrevOutFetcher of a node's Mempool.
func (idx *ElectrumIndex) PrevOut(op wire.OutPoint) ([]byte, int64, error) {
	raw, _, err := idx.RawTx(op.Hash)
	if err != nil {
		return nil, 0, err
	}
	var tx wire.MsgTx
	if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
		return nil, 0, err
	}
	if int(op.Index) >= len(tx.TxOut) {
		return nil, 0, fmt.Errorf("output %v does not exist", op)
	}
	out := tx.TxOut[op.Index]
	return out.PkScript, out.Value, nil
}
