package electrum

import (
	"bytes"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// fakeBackend is a small in-memory chain and mempool that answers every
// Backend question by scanning its blocks: a naive model used for protocol
// tests that need precise control (limits, races, bad input). The
// end-to-end tests use the real index and btcd's mempool instead.
type fakeBackend struct {
	mu      sync.RWMutex
	params  *chaincfg.Params
	blocks  []*wire.MsgBlock
	mempool []*wire.MsgTx
	fees    map[chainhash.Hash]int64
	hist    [][2]float64
	// rejectAll makes Broadcast fail with this message when set.
	rejectAll string
	// slow delays every index read (request-timeout tests).
	slow time.Duration
	// hold, when set, keeps every index read waiting until it is closed.
	hold chan struct{}
	// extraHistory gives script hashes that many additional confirmed
	// entries (at height 1) on top of their real history, to exercise
	// history limits without building thousands of transactions.
	extraHistory map[indexers.ScriptHash]int
	// extraUnspent gives script hashes that many additional confirmed
	// unspent outputs (of made-up transactions).
	extraUnspent map[indexers.ScriptHash]int
}

// newFakeBackend returns a chain holding only the regtest genesis block.
func newFakeBackend() *fakeBackend {
	p := chaincfg.RegressionNetParams
	return &fakeBackend{
		params: &p,
		blocks: []*wire.MsgBlock{p.GenesisBlock},
		fees:   make(map[chainhash.Hash]int64),

		extraHistory: make(map[indexers.ScriptHash]int),
		extraUnspent: make(map[indexers.ScriptHash]int),
	}
}

// mine appends a block with a coinbase paying coinbaseScript and txs, drops
// those txs from the mempool and returns the script hashes it touched.
func (f *fakeBackend) mine(coinbaseScript []byte, txs ...*wire.MsgTx) (wire.BlockHeader, int32, []indexers.ScriptHash) {
	f.mu.Lock()
	defer f.mu.Unlock()
	height := int32(len(f.blocks))
	cb := wire.NewMsgTx(1)
	cb.AddTxIn(&wire.TxIn{
		PreviousOutPoint: wire.OutPoint{Index: wire.MaxPrevOutIndex},
		SignatureScript:  []byte{byte(height), byte(height >> 8), 0x51},
		Sequence:         wire.MaxTxInSequenceNum,
	})
	cb.AddTxOut(wire.NewTxOut(50_0000_0000, coinbaseScript))
	all := append([]*wire.MsgTx{cb}, txs...)
	ids := make([]chainhash.Hash, len(all))
	for i, tx := range all {
		ids[i] = tx.TxHash()
	}
	prev := f.blocks[len(f.blocks)-1].BlockHash()
	blk := &wire.MsgBlock{Header: wire.BlockHeader{
		Version:    4,
		PrevBlock:  prev,
		MerkleRoot: merkleRoot(ids),
		Timestamp:  time.Unix(1_700_000_000+int64(height)*600, 0),
		Bits:       f.params.PowLimitBits,
		Nonce:      uint32(height),
	}, Transactions: all}
	touched := map[indexers.ScriptHash]struct{}{}
	for _, tx := range all {
		for _, sh := range f.txScriptsLocked(tx) {
			touched[sh] = struct{}{}
		}
	}
	f.blocks = append(f.blocks, blk)
	in := map[chainhash.Hash]bool{}
	for _, id := range ids {
		in[id] = true
	}
	var keep []*wire.MsgTx
	for _, tx := range f.mempool {
		if !in[tx.TxHash()] {
			keep = append(keep, tx)
		}
	}
	f.mempool = keep
	out := make([]indexers.ScriptHash, 0, len(touched))
	for sh := range touched {
		out = append(out, sh)
	}
	return blk.Header, height, out
}

// disconnect drops the tip block (a reorg step) and returns the touched
// script hashes; its non-coinbase transactions go back to the mempool.
func (f *fakeBackend) disconnect() []indexers.ScriptHash {
	f.mu.Lock()
	defer f.mu.Unlock()
	blk := f.blocks[len(f.blocks)-1]
	touched := map[indexers.ScriptHash]struct{}{}
	for _, tx := range blk.Transactions {
		for _, sh := range f.txScriptsLocked(tx) {
			touched[sh] = struct{}{}
		}
	}
	f.blocks = f.blocks[:len(f.blocks)-1]
	f.mempool = append(append([]*wire.MsgTx(nil), blk.Transactions[1:]...), f.mempool...)
	out := make([]indexers.ScriptHash, 0, len(touched))
	for sh := range touched {
		out = append(out, sh)
	}
	return out
}

// tip returns the tip header and height.
func (f *fakeBackend) tip() (wire.BlockHeader, int32) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.blocks[len(f.blocks)-1].Header, int32(len(f.blocks) - 1)
}

// prevOutLocked finds the output op spends, in the chain or the mempool.
func (f *fakeBackend) prevOutLocked(op wire.OutPoint) (*wire.TxOut, bool, bool) {
	for _, b := range f.blocks[1:] {
		for _, tx := range b.Transactions {
			if tx.TxHash() == op.Hash && int(op.Index) < len(tx.TxOut) {
				return tx.TxOut[op.Index], true, false
			}
		}
	}
	for _, tx := range f.mempool {
		if tx.TxHash() == op.Hash && int(op.Index) < len(tx.TxOut) {
			return tx.TxOut[op.Index], true, true
		}
	}
	return nil, false, false
}

// txScriptsLocked lists the script hashes a transaction touches.
func (f *fakeBackend) txScriptsLocked(tx *wire.MsgTx) []indexers.ScriptHash {
	var out []indexers.ScriptHash
	for _, o := range tx.TxOut {
		out = append(out, indexers.ScriptHashFromScript(o.PkScript))
	}
	if !isCoinbase(tx) {
		for _, in := range tx.TxIn {
			if po, ok, _ := f.prevOutLocked(in.PreviousOutPoint); ok {
				out = append(out, indexers.ScriptHashFromScript(po.PkScript))
			}
		}
	}
	return out
}

// touches reports whether tx touches sh.
func (f *fakeBackend) touchesLocked(tx *wire.MsgTx, sh indexers.ScriptHash) bool {
	for _, s := range f.txScriptsLocked(tx) {
		if s == sh {
			return true
		}
	}
	return false
}

// isCoinbase reports whether tx is a coinbase.
func isCoinbase(tx *wire.MsgTx) bool {
	return len(tx.TxIn) == 1 && tx.TxIn[0].PreviousOutPoint.Index == wire.MaxPrevOutIndex && tx.TxIn[0].PreviousOutPoint.Hash == (chainhash.Hash{})
}

func (f *fakeBackend) tipLocked() indexers.Tip {
	return indexers.Tip{Hash: f.blocks[len(f.blocks)-1].BlockHash(), Height: int32(len(f.blocks) - 1)}
}

// ChainParams implements Backend by scanning the fake chain.
func (f *fakeBackend) ChainParams() *chaincfg.Params { return f.params }

// ChainTip implements Backend by scanning the fake chain.
func (f *fakeBackend) ChainTip() (indexers.Tip, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.tipLocked(), nil
}

// BlockHeader implements Backend by scanning the fake chain.
func (f *fakeBackend) BlockHeader(height int32) (wire.BlockHeader, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if height < 0 || int(height) >= len(f.blocks) {
		return wire.BlockHeader{}, indexers.ErrNotFound
	}
	return f.blocks[height].Header, nil
}

// BlockHash implements Backend by scanning the fake chain.
func (f *fakeBackend) BlockHash(height int32) (chainhash.Hash, error) {
	h, err := f.BlockHeader(height)
	if err != nil {
		return chainhash.Hash{}, err
	}
	return h.BlockHash(), nil
}

func (f *fakeBackend) delay() {
	f.mu.RLock()
	slow, hold := f.slow, f.hold
	f.mu.RUnlock()
	if slow > 0 {
		time.Sleep(slow)
	}
	if hold != nil {
		<-hold
	}
}

// setExtraHistory gives sh n extra confirmed history entries (extraHistory),
// under the lock the readers take: a server goroutine may still be reading
// for an earlier request.
func (f *fakeBackend) setExtraHistory(sh indexers.ScriptHash, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.extraHistory[sh] = n
}

// History implements Backend by scanning the fake chain.
func (f *fakeBackend) History(sh indexers.ScriptHash, limit int) ([]indexers.HistoryEntry, indexers.Tip, error) {
	f.delay()
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []indexers.HistoryEntry
	for h, b := range f.blocks {
		if h == 0 {
			continue
		}
		for _, tx := range b.Transactions {
			if f.touchesLocked(tx, sh) {
				out = append(out, indexers.HistoryEntry{TxHash: tx.TxHash(), Height: int32(h)})
			}
		}
	}
	for i := 0; i < f.extraHistory[sh]; i++ {
		var id chainhash.Hash
		id[0], id[1], id[2] = byte(i), byte(i>>8), 0xee
		out = append(out, indexers.HistoryEntry{TxHash: id, Height: 1})
	}
	if limit > 0 && len(out) > limit {
		return nil, f.tipLocked(), indexers.ErrHistoryTooLarge
	}
	return out, f.tipLocked(), nil
}

// setExtraUnspent gives sh n extra confirmed unspent outputs.
func (f *fakeBackend) setExtraUnspent(sh indexers.ScriptHash, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.extraUnspent[sh] = n
}

// spentInChainLocked reports whether a confirmed transaction spends op.
func (f *fakeBackend) spentInChainLocked(op wire.OutPoint) bool {
	for _, b := range f.blocks[1:] {
		for _, tx := range b.Transactions {
			for _, in := range tx.TxIn {
				if in.PreviousOutPoint == op {
					return true
				}
			}
		}
	}
	return false
}

// Unspent implements Backend by scanning the fake chain.
func (f *fakeBackend) Unspent(sh indexers.ScriptHash, limit int) ([]indexers.Unspent, indexers.Tip, error) {
	f.delay()
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []indexers.Unspent
	for h, b := range f.blocks {
		if h == 0 {
			continue
		}
		for _, tx := range b.Transactions {
			for i, o := range tx.TxOut {
				op := wire.OutPoint{Hash: tx.TxHash(), Index: uint32(i)}
				if indexers.ScriptHashFromScript(o.PkScript) == sh && !f.spentInChainLocked(op) {
					out = append(out, indexers.Unspent{TxHash: op.Hash, Vout: op.Index, Height: int32(h), Value: o.Value})
				}
			}
		}
	}
	for i := 0; i < f.extraUnspent[sh]; i++ {
		var id chainhash.Hash
		id[0], id[1], id[2] = byte(i), byte(i>>8), 0xdd
		out = append(out, indexers.Unspent{TxHash: id, Height: 1, Value: 1000})
	}
	if limit > 0 && len(out) > limit {
		return nil, f.tipLocked(), indexers.ErrHistoryTooLarge
	}
	return out, f.tipLocked(), nil
}

// Balance implements Backend by scanning the fake chain.
func (f *fakeBackend) Balance(sh indexers.ScriptHash) (int, int64, indexers.Tip, error) {
	us, tip, err := f.Unspent(sh, 0)
	var sum int64
	for _, u := range us {
		sum += u.Value
	}
	return len(us), sum, tip, err
}

// Status implements Backend by scanning the fake chain.
func (f *fakeBackend) Status(sh indexers.ScriptHash, limit int) (StatusHasher, indexers.Tip, error) {
	hist, tip, err := f.History(sh, limit)
	if err != nil {
		return nil, tip, err
	}
	d := indexers.NewStatusHasher()
	for _, h := range hist {
		d.Add(h.TxHash, h.Height)
	}
	return d, tip, nil
}

func (f *fakeBackend) Statuses(shs []indexers.ScriptHash, limit int) ([]StatusHasher, []error, indexers.Tip, error) {
	sts := make([]StatusHasher, len(shs))
	errs := make([]error, len(shs))
	var tip indexers.Tip
	for i, sh := range shs {
		sts[i], tip, errs[i] = f.Status(sh, limit)
	}
	return sts, errs, tip, nil
}

// TxLocation implements Backend by scanning the fake chain.
func (f *fakeBackend) TxLocation(txid chainhash.Hash) (indexers.TxLocation, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for h, b := range f.blocks {
		if h == 0 {
			continue
		}
		for i, tx := range b.Transactions {
			if tx.TxHash() == txid {
				return indexers.TxLocation{Height: int32(h), Pos: uint32(i), BlockHash: b.BlockHash()}, nil
			}
		}
	}
	return indexers.TxLocation{}, indexers.ErrNotFound
}

// BlockTxIDs implements Backend by scanning the fake chain.
func (f *fakeBackend) BlockTxIDs(height int32) ([]chainhash.Hash, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if height < 0 || int(height) >= len(f.blocks) {
		return nil, indexers.ErrNotFound
	}
	var ids []chainhash.Hash
	for _, tx := range f.blocks[height].Transactions {
		ids = append(ids, tx.TxHash())
	}
	return ids, nil
}

// RawTx implements Backend by scanning the fake chain.
func (f *fakeBackend) RawTx(txid chainhash.Hash) ([]byte, indexers.TxLocation, error) {
	loc, err := f.TxLocation(txid)
	if err != nil {
		return nil, loc, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	var buf bytes.Buffer
	f.blocks[loc.Height].Transactions[loc.Pos].Serialize(&buf)
	return buf.Bytes(), loc, nil
}

// MempoolEntries implements Backend by scanning the fake chain.
func (f *fakeBackend) MempoolEntries(sh indexers.ScriptHash) []MempoolEntry {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []MempoolEntry
	for _, tx := range f.mempool {
		if !f.touchesLocked(tx, sh) {
			continue
		}
		height := int32(0)
		for _, in := range tx.TxIn {
			if _, ok, inMem := f.prevOutLocked(in.PreviousOutPoint); ok && inMem {
				height = -1
			}
		}
		out = append(out, MempoolEntry{TxHash: tx.TxHash(), Height: height, Fee: f.fees[tx.TxHash()]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TxHash.String() > out[j].TxHash.String() })
	return out
}

// MempoolBalance implements Backend by scanning the fake chain.
func (f *fakeBackend) MempoolBalance(sh indexers.ScriptHash) int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var d int64
	for _, tx := range f.mempool {
		for _, o := range tx.TxOut {
			if indexers.ScriptHashFromScript(o.PkScript) == sh {
				d += o.Value
			}
		}
		for _, in := range tx.TxIn {
			if po, ok, _ := f.prevOutLocked(in.PreviousOutPoint); ok && indexers.ScriptHashFromScript(po.PkScript) == sh {
				d -= po.Value
			}
		}
	}
	return d
}

func (f *fakeBackend) mempoolSpendsLocked(op wire.OutPoint) bool {
	for _, tx := range f.mempool {
		for _, in := range tx.TxIn {
			if in.PreviousOutPoint == op {
				return true
			}
		}
	}
	return false
}

// MempoolUnspent implements Backend by scanning the fake chain.
func (f *fakeBackend) MempoolUnspent(sh indexers.ScriptHash) []indexers.Unspent {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []indexers.Unspent
	for _, tx := range f.mempool {
		for i, o := range tx.TxOut {
			op := wire.OutPoint{Hash: tx.TxHash(), Index: uint32(i)}
			if indexers.ScriptHashFromScript(o.PkScript) == sh && !f.mempoolSpendsLocked(op) {
				out = append(out, indexers.Unspent{TxHash: op.Hash, Vout: op.Index, Value: o.Value})
			}
		}
	}
	return out
}

// MempoolSpends implements Backend by scanning the fake mempool.
func (f *fakeBackend) MempoolSpends(sh indexers.ScriptHash) int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := 0
	for _, tx := range f.mempool {
		for _, in := range tx.TxIn {
			if po, ok, _ := f.prevOutLocked(in.PreviousOutPoint); ok && indexers.ScriptHashFromScript(po.PkScript) == sh {
				n++
			}
		}
	}
	return n
}

// MempoolIsSpent implements Backend by scanning the fake chain.
func (f *fakeBackend) MempoolIsSpent(op wire.OutPoint) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.mempoolSpendsLocked(op)
}

// MempoolTx implements Backend by scanning the fake chain.
func (f *fakeBackend) MempoolTx(txid chainhash.Hash) ([]byte, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, tx := range f.mempool {
		if tx.TxHash() == txid {
			var buf bytes.Buffer
			tx.Serialize(&buf)
			return buf.Bytes(), true
		}
	}
	return nil, false
}

// FeeHistogram implements Backend by scanning the fake chain.
func (f *fakeBackend) FeeHistogram() [][2]float64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.hist
}

// Broadcast accepts a transaction whose inputs all exist and are unspent,
// with fee = inputs - outputs.
func (f *fakeBackend) Broadcast(tx *wire.MsgTx) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rejectAll != "" {
		return errors.New(f.rejectAll)
	}
	var in int64
	for _, ti := range tx.TxIn {
		po, ok, _ := f.prevOutLocked(ti.PreviousOutPoint)
		if !ok {
			return errors.New("missing inputs")
		}
		if f.spentInChainLocked(ti.PreviousOutPoint) || f.mempoolSpendsLocked(ti.PreviousOutPoint) {
			return errors.New("already spent")
		}
		in += po.Value
	}
	var out int64
	for _, o := range tx.TxOut {
		out += o.Value
	}
	if out > in {
		return errors.New("outputs exceed inputs")
	}
	f.mempool = append(f.mempool, tx)
	f.fees[tx.TxHash()] = in - out
	return nil
}

// EstimateFee implements Backend by scanning the fake chain.
func (f *fakeBackend) EstimateFee(blocks int, mode string) (float64, error) {
	if blocks > 100 {
		return -1, nil
	}
	return 0.0002, nil
}

// RelayFee implements Backend by scanning the fake chain.
func (f *fakeBackend) RelayFee() float64 { return 0.00001 }

// MempoolInfo implements Backend by scanning the fake chain.
func (f *fakeBackend) MempoolInfo() MempoolInfo {
	return MempoolInfo{MempoolMinFee: 0.00001, MinRelayTxFee: 0.00001, IncrementalRelayFee: 0.00001}
}

// SendRawTransaction implements Backend: burns refused, the rest through
// Broadcast (the fake has no fees to bound).
func (f *fakeBackend) SendRawTransaction(tx *wire.MsgTx) error {
	if BurnsOver(tx, 0) {
		return ErrMaxBurn
	}
	return f.Broadcast(tx)
}

// SubmitPackage implements Backend: the members through Broadcast, one by
// one, with their size or error (the fake has no fees to report).
func (f *fakeBackend) SubmitPackage(txs []*wire.MsgTx, _ int64) PackageResult {
	res := PackageResult{Msg: "success", Results: map[string]PackageTxResult{}, Replaced: []string{}}
	for _, tx := range txs {
		r := PackageTxResult{TxID: tx.TxHash().String()}
		if err := f.Broadcast(tx); err != nil {
			r.Error, res.Msg = err.Error(), "transaction failed"
		} else {
			r.VSize = vsize(tx)
		}
		res.Results[tx.WitnessHash().String()] = r
	}
	return res
}
