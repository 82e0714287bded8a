package testchain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// HistoryItem is one transaction of a script's confirmed history.
type HistoryItem struct {
	TxHash chainhash.Hash
	Height int32
}

// Utxo is one confirmed unspent output of a script.
type Utxo struct {
	TxHash chainhash.Hash
	Vout   uint32
	Height int32
	Value  int64
}

// TxPos is where a transaction sits in the main chain.
type TxPos struct {
	Height int32
	Pos    uint32
}

// Model is what an Electrum index must answer for the main chain of a
// harness, computed by plain bookkeeping over every block from genesis to
// the tip. It is built by BuildModel and never changes afterwards.
type Model struct {
	// Tip and Height identify the main chain tip the model was built at.
	Tip    chainhash.Hash
	Height int32
	// History is, per script hash, one entry per transaction that pays to
	// or spends from the script, ordered by height then position in block.
	History map[indexers.ScriptHash][]HistoryItem
	// Unspent is, per script hash, its unspent outputs ordered by height,
	// position in block and output index. Scripts without unspent outputs
	// have no entry.
	Unspent map[indexers.ScriptHash][]Utxo
	// Balance is, per script hash with history, the sum of its unspent
	// outputs.
	Balance map[indexers.ScriptHash]int64
	// Txs locates every main-chain transaction, the genesis coinbase
	// included.
	Txs map[chainhash.Hash]TxPos
	// Blocks holds the txids of every main-chain block by height.
	Blocks [][]chainhash.Hash
}

// Indexed reports whether an output paying to pkScript belongs in an
// Electrum index: every output except the provably unspendable ones, whose
// script starts with OP_RETURN, exceeds the maximum script size or does not
// even parse (a push running past its end).
func Indexed(pkScript []byte) bool {
	if len(pkScript) > 0 && pkScript[0] == txscript.OP_RETURN {
		return false
	}
	if len(pkScript) > txscript.MaxScriptSize {
		return false
	}
	tok := txscript.MakeScriptTokenizer(0, pkScript)
	for tok.Next() {
	}
	return tok.Err() == nil
}

// modelOutput is one output the model tracks.
type modelOutput struct {
	sh      indexers.ScriptHash
	value   int64
	height  int32
	pos     uint32
	spent   bool
	indexed bool
}

// BuildModel walks the main chain of h from genesis to its tip and computes
// the model. The genesis coinbase is not indexed (it cannot be spent).
func BuildModel(h *Harness) (*Model, error) {
	best := h.Chain.BestSnapshot()
	blocks := make([]*btcutil.Block, 0, best.Height+1)
	for height := int32(0); height <= best.Height; height++ {
		block, err := h.Chain.BlockByHeight(height)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, block)
	}
	if *blocks[len(blocks)-1].Hash() != best.Hash {
		return nil, errors.New("model: the chain moved while it was read")
	}
	return buildModel(blocks)
}

// BuildModelAt computes the model of the chain ending at tip, any block the
// database holds (on the main chain or not), by walking back to genesis.
func BuildModelAt(h *Harness, tip chainhash.Hash) (*Model, error) {
	var blocks []*btcutil.Block
	err := h.DB.View(func(dbTx database.Tx) error {
		for hash := tip; ; {
			raw, err := dbTx.FetchBlock(&hash)
			if err != nil {
				return err
			}
			block, err := btcutil.NewBlockFromBytes(raw)
			if err != nil {
				return err
			}
			blocks = append(blocks, block)
			if hash == *h.Params.GenesisHash {
				return nil
			}
			hash = block.MsgBlock().Header.PrevBlock
		}
	})
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(blocks)-1; i < j; i, j = i+1, j-1 {
		blocks[i], blocks[j] = blocks[j], blocks[i]
	}
	return buildModel(blocks)
}

// ModelOfBlocks computes the model of a chain given as its blocks from
// genesis to the tip (read from a node over RPC, for example).
func ModelOfBlocks(blocks []*btcutil.Block) (*Model, error) {
	if len(blocks) == 0 {
		return nil, errors.New("model: no blocks")
	}
	return buildModel(blocks)
}

// buildModel computes the model of a chain given as its blocks from genesis.
func buildModel(blocks []*btcutil.Block) (*Model, error) {
	top := int32(len(blocks) - 1)
	m := &Model{
		Tip:     *blocks[top].Hash(),
		Height:  top,
		History: make(map[indexers.ScriptHash][]HistoryItem),
		Unspent: make(map[indexers.ScriptHash][]Utxo),
		Balance: make(map[indexers.ScriptHash]int64),
		Txs:     make(map[chainhash.Hash]TxPos),
		Blocks:  make([][]chainhash.Hash, top+1),
	}
	outputs := make(map[wire.OutPoint]*modelOutput)
	// created lists, per script hash, its outputs in chain order.
	created := make(map[indexers.ScriptHash][]wire.OutPoint)

	touch := func(sh indexers.ScriptHash, txid chainhash.Hash, height int32) {
		hist := m.History[sh]
		if n := len(hist); n > 0 && hist[n-1].TxHash == txid && hist[n-1].Height == height {
			return
		}
		m.History[sh] = append(hist, HistoryItem{TxHash: txid, Height: height})
	}

	for i, block := range blocks {
		height := int32(i)
		for pos, tx := range block.Transactions() {
			txid := *tx.Hash()
			m.Txs[txid] = TxPos{Height: height, Pos: uint32(pos)}
			m.Blocks[height] = append(m.Blocks[height], txid)
			if height == 0 {
				continue
			}
			msg := tx.MsgTx()
			// A transaction touching a script through outputs and inputs
			// gets one history entry: touch merges repeated touches.
			for vout, out := range msg.TxOut {
				op := wire.OutPoint{Hash: txid, Index: uint32(vout)}
				o := &modelOutput{
					sh: indexers.ScriptHash(sha256.Sum256(out.PkScript)), value: out.Value,
					height: height, pos: uint32(pos), indexed: Indexed(out.PkScript),
				}
				outputs[op] = o
				if o.indexed {
					touch(o.sh, txid, height)
					created[o.sh] = append(created[o.sh], op)
				}
			}
			if pos == 0 {
				continue
			}
			for _, in := range msg.TxIn {
				o, ok := outputs[in.PreviousOutPoint]
				if !ok {
					return nil, fmt.Errorf("model: height %d tx %v spends unknown output %v",
						height, txid, in.PreviousOutPoint)
				}
				if o.spent {
					return nil, fmt.Errorf("model: output %v spent twice", in.PreviousOutPoint)
				}
				o.spent = true
				if o.indexed {
					touch(o.sh, txid, height)
				}
			}
		}
	}
	// Unspent outputs per script, in the order they were created (chain
	// order, then output index), and their sum.
	for sh, ops := range created {
		var bal int64
		var us []Utxo
		for _, op := range ops {
			o := outputs[op]
			if o.spent {
				continue
			}
			us = append(us, Utxo{TxHash: op.Hash, Vout: op.Index, Height: o.height, Value: o.value})
			bal += o.value
		}
		sort.SliceStable(us, func(i, j int) bool {
			a, b := outputs[wire.OutPoint{Hash: us[i].TxHash, Index: us[i].Vout}],
				outputs[wire.OutPoint{Hash: us[j].TxHash, Index: us[j].Vout}]
			if a.height != b.height {
				return a.height < b.height
			}
			if a.pos != b.pos {
				return a.pos < b.pos
			}
			return us[i].Vout < us[j].Vout
		})
		if len(us) > 0 {
			m.Unspent[sh] = us
		}
		m.Balance[sh] = bal
	}
	for sh := range m.History {
		if _, ok := m.Balance[sh]; !ok {
			m.Balance[sh] = 0
		}
	}
	return m, nil
}

// ScriptHashes returns every script hash with history, in byte order.
func (m *Model) ScriptHashes() []indexers.ScriptHash {
	out := make([]indexers.ScriptHash, 0, len(m.History))
	for sh := range m.History {
		out = append(out, sh)
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i][:], out[j][:]) < 0 })
	return out
}

// Status returns the confirmed Electrum status of a script: the SHA-256 of
// the concatenated "txid:height:" of its history, or nil for a script
// without history.
func (m *Model) Status(sh indexers.ScriptHash) []byte {
	hist := m.History[sh]
	if len(hist) == 0 {
		return nil
	}
	var s []byte
	for _, e := range hist {
		s = append(s, e.TxHash.String()...)
		s = append(s, ':')
		s = strconv.AppendInt(s, int64(e.Height), 10)
		s = append(s, ':')
	}
	sum := sha256.Sum256(s)
	return sum[:]
}

// StatusHex is Status in hex, "" for a script without history (the
// protocol's null).
func (m *Model) StatusHex(sh indexers.ScriptHash) string {
	s := m.Status(sh)
	if s == nil {
		return ""
	}
	return hex.EncodeToString(s)
}
