package chaingen

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

const (
	// blockVersion signals the CSV, segwit and taproot deployments (BIP 9
	// bits 0-2), which simnet activates only by signalling.
	blockVersion = 0x20000007
	// blockSpacing is the time between generated blocks: above simnet's
	// target spacing, so difficulty retargets always land on the
	// proof-of-work limit.
	blockSpacing = 20 * time.Minute
)

// firstBlockTime is the timestamp of block 0 in the generated time line
// (block h is stamped firstBlockTime + h*blockSpacing): after the genesis
// blocks of simnet and regtest, and far enough in the past that long chains
// stay behind the wall clock.
var firstBlockTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// builtBlock is a block ready to be processed and written.
type builtBlock struct {
	block *btcutil.Block
	raw   []byte
	// progress describes the generation once this block is processed.
	progress Progress
}

// builder turns block plans into blocks, in parallel over workers.
type builder struct {
	m       *model
	workers int
	// txids holds every transaction's hash by transaction number.
	txids []chainhash.Hash
	prev  chainhash.Hash
}

// parallel runs fn over 0..n-1 split in contiguous ranges over the workers;
// fn gets the worker number.
func (bd *builder) parallel(n int, fn func(w, lo, hi int)) {
	const minPerWorker = 32
	w := min(bd.workers, (n+minPerWorker-1)/minPerWorker)
	if w <= 1 {
		if n > 0 {
			fn(0, 0, n)
		}
		return
	}
	var wg sync.WaitGroup
	for i := 0; i < w; i++ {
		lo, hi := n*i/w, n*(i+1)/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i, lo, hi)
		}()
	}
	wg.Wait()
}

// build builds the block of plan b on the previous block built.
func (bd *builder) build(b *blockPlan) (*builtBlock, error) {
	m := bd.m
	for uint32(len(bd.txids)) < m.nextTx {
		bd.txids = append(bd.txids, chainhash.Hash{})
	}

	// Output scripts of the scripts first paid to in this block.
	newIDs := int(b.newHi - b.newLo)
	offs := make([]int, newIDs+1)
	for i := 0; i < newIDs; i++ {
		offs[i+1] = offs[i] + pkScriptLen[m.kind[b.newLo+uint32(i)]]
	}
	pkBuf := make([]byte, offs[newIDs])
	bd.parallel(newIDs, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			id := b.newLo + uint32(i)
			key := keyOf(&m.seedKey, id)
			m.pk[id] = appendPkScript(pkBuf[offs[i]:offs[i]:offs[i+1]], m.kind[id], &key)
		}
	})

	// Transactions, by depth.
	n := len(b.txs)
	msgs := make([]wire.MsgTx, n)
	inSlab := make([]wire.TxIn, len(b.ins))
	inPtr := make([]*wire.TxIn, len(b.ins))
	outSlab := make([]wire.TxOut, len(b.outs))
	outPtr := make([]*wire.TxOut, len(b.outs))
	witSlab := make([][]byte, 4*len(b.ins))
	raws := make([][]byte, n)
	wtxids := make([]chainhash.Hash, n+1)
	arenas := make([]arena, bd.workers)
	order := make([]int, 0, n)
	starts := make([]int, b.depths+1)
	for _, tp := range b.txs {
		starts[tp.depth+1]++
	}
	for d := 1; d <= int(b.depths); d++ {
		starts[d] += starts[d-1]
	}
	order = order[:n]
	pos := append([]int(nil), starts...)
	for i, tp := range b.txs {
		order[pos[tp.depth]] = i
		pos[tp.depth]++
	}
	for d := 0; d < int(b.depths); d++ {
		level := order[starts[d]:starts[d+1]]
		bd.parallel(len(level), func(w, lo, hi int) {
			a := &arenas[w]
			for _, i := range level[lo:hi] {
				tp := &b.txs[i]
				msg := &msgs[i]
				msg.Version = 2
				msg.TxIn = inPtr[tp.in0:tp.in1:tp.in1]
				for j := tp.in0; j < tp.in1; j++ {
					c := &b.ins[j]
					in := &inSlab[j]
					inPtr[j] = in
					in.PreviousOutPoint = wire.OutPoint{Hash: bd.txids[c.txNum], Index: c.vout}
					in.Sequence = wire.MaxTxInSequenceNum
					key := keyOf(&m.seedKey, c.script)
					ss, wit := spendData(a, m.kind[c.script], &key, witSlab[4*j:4*j:4*j+4])
					in.SignatureScript = ss
					if len(wit) > 0 {
						in.Witness = wit
					}
				}
				txNum := b.txNum0 + 1 + uint32(i)
				msg.TxOut = outPtr[tp.out0:tp.out1:tp.out1]
				for j := tp.out0; j < tp.out1; j++ {
					o := &b.outs[j]
					out := &outSlab[j]
					outPtr[j] = out
					out.Value = o.value
					if o.script == opReturnID {
						out.PkScript = opReturnScript(a, &m.seedKey, txNum, j-tp.out0)
					} else {
						out.PkScript = m.pk[o.script]
					}
				}
				raw := a.alloc(msg.SerializeSize())
				if err := msg.Serialize(&sliceWriter{raw[:0]}); err != nil {
					panic(err) // writing to memory cannot fail
				}
				raws[i] = raw
				bd.txids[txNum] = txHash(msg, raw)
				wtxids[i+1] = chainhash.DoubleHashH(raw)
			}
		})
	}

	// The coinbase, with a witness commitment when any transaction has a
	// witness.
	witness := false
	for i := range msgs {
		if msgs[i].HasWitness() {
			witness = true
			break
		}
	}
	cb := coinbase(b, m, witness, wtxids)
	cbRaw := make([]byte, 0, cb.SerializeSize())
	buf := bytes.NewBuffer(cbRaw)
	if err := cb.Serialize(buf); err != nil {
		return nil, err
	}
	cbRaw = buf.Bytes()
	bd.txids[b.txNum0] = txHash(cb, cbRaw)

	txids := bd.txids[b.txNum0 : b.txNum0+1+uint32(n)]
	header := wire.BlockHeader{
		Version:    blockVersion,
		PrevBlock:  bd.prev,
		MerkleRoot: merkleRoot(append([]chainhash.Hash(nil), txids...)),
		Timestamp:  firstBlockTime.Add(time.Duration(b.height) * blockSpacing),
		Bits:       m.params.PowLimitBits,
	}
	target := blockchain.CompactToBig(header.Bits)
	for {
		h := header.BlockHash()
		if blockchain.HashToBig(&h).Cmp(target) <= 0 {
			break
		}
		header.Nonce++
		if header.Nonce == 0 {
			return nil, fmt.Errorf("chaingen: no nonce solves block %d", b.height)
		}
	}

	// Serialize the block from the transactions' bytes.
	size := wire.MaxBlockHeaderPayload + wire.VarIntSerializeSize(uint64(n+1)) + len(cbRaw)
	for _, r := range raws {
		size += len(r)
	}
	out := bytes.NewBuffer(make([]byte, 0, size))
	if err := header.Serialize(out); err != nil {
		return nil, err
	}
	if err := wire.WriteVarInt(out, 0, uint64(n+1)); err != nil {
		return nil, err
	}
	out.Write(cbRaw)
	for _, r := range raws {
		out.Write(r)
	}
	msgBlock := &wire.MsgBlock{Header: header, Transactions: make([]*wire.MsgTx, 0, n+1)}
	msgBlock.Transactions = append(msgBlock.Transactions, cb)
	for i := range msgs {
		msgBlock.Transactions = append(msgBlock.Transactions, &msgs[i])
	}
	blk := btcutil.NewBlockFromBlockAndBytes(msgBlock, out.Bytes())
	blk.SetHeight(b.height)
	bd.prev = *blk.Hash()
	return &builtBlock{block: blk, raw: out.Bytes()}, nil
}

// coinbase returns the coinbase of block plan b; wtxids holds the witness
// hashes of the block's transactions from index 1.
func coinbase(b *blockPlan, m *model, witness bool, wtxids []chainhash.Hash) *wire.MsgTx {
	sigScript, err := txscript.NewScriptBuilder().AddInt64(int64(b.height)).
		AddData([]byte("/chaingen/")).Script()
	if err != nil {
		panic(err)
	}
	cb := wire.NewMsgTx(2)
	cb.AddTxIn(&wire.TxIn{
		PreviousOutPoint: *wire.NewOutPoint(&chainhash.Hash{}, wire.MaxPrevOutIndex),
		SignatureScript:  sigScript,
		Sequence:         wire.MaxTxInSequenceNum,
	})
	value := blockchain.CalcBlockSubsidy(b.height, m.params) + b.fees
	cb.AddTxOut(&wire.TxOut{Value: value, PkScript: m.pk[b.cbScript]})
	if witness {
		// BIP 141: the coinbase commits to the witness merkle root (the
		// coinbase's own witness hash counts as zero) and a reserved
		// value carried in its witness.
		var reserved [blockchain.CoinbaseWitnessDataLen]byte
		root := merkleRoot(wtxids)
		commitment := chainhash.DoubleHashB(append(root[:], reserved[:]...))
		pk := append(append([]byte(nil), blockchain.WitnessMagicBytes...), commitment...)
		cb.AddTxOut(&wire.TxOut{PkScript: pk})
		cb.TxIn[0].Witness = wire.TxWitness{reserved[:]}
	}
	return cb
}

// merkleRoot returns the merkle root of hashes, overwriting them.
func merkleRoot(hashes []chainhash.Hash) chainhash.Hash {
	for len(hashes) > 1 {
		if len(hashes)%2 == 1 {
			hashes = append(hashes, hashes[len(hashes)-1])
		}
		for i := 0; i < len(hashes); i += 2 {
			hashes[i/2] = blockchain.HashMerkleBranches(&hashes[i], &hashes[i+1])
		}
		hashes = hashes[:len(hashes)/2]
	}
	return hashes[0]
}

// txHash returns the hash of msg (without witness) from its serialization
// raw (with witness).
func txHash(msg *wire.MsgTx, raw []byte) chainhash.Hash {
	if !msg.HasWitness() {
		return chainhash.DoubleHashH(raw)
	}
	// raw is version, marker and flag, inputs and outputs, witnesses,
	// lock time; the hash leaves out marker, flag and witnesses.
	body := msg.SerializeSizeStripped() - 8
	return chainhash.DoubleHashRaw(func(w io.Writer) error {
		w.Write(raw[:4])
		w.Write(raw[6 : 6+body])
		_, err := w.Write(raw[len(raw)-4:])
		return err
	})
}

// opReturnScript returns the OP_RETURN script of output vout of transaction
// txNum: 20 to 40 bytes of data made up from the outpoint, so no two are
// alike.
func opReturnScript(a *arena, seedKey *[32]byte, txNum, vout uint32) []byte {
	var pre [41]byte
	copy(pre[:32], seedKey[:])
	pre[32] = 'R'
	binary.LittleEndian.PutUint32(pre[33:], txNum)
	binary.LittleEndian.PutUint32(pre[37:], vout)
	h := sha256.Sum256(pre[:])
	n := 20 + int((txNum+vout)%21)
	s := a.alloc(2 + n)
	s[0], s[1] = txscript.OP_RETURN, byte(n)
	copy(s[2:], h[:])
	binary.LittleEndian.PutUint64(s[2+n-8:], uint64(txNum)<<8|uint64(vout&0xff))
	return s
}

// sliceWriter writes into the spare capacity of a byte slice.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	if len(w.b)+len(p) > cap(w.b) {
		return 0, io.ErrShortBuffer
	}
	w.b = append(w.b, p...)
	return len(p), nil
}
