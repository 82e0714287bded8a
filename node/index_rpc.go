package node

import (
	"bytes"
	"math"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

var _ rpcext.IndexBackend = rpcBackend{}

// CFilter returns a block's BIP 158 filter from btcd's committed filter
// index.
func (b rpcBackend) CFilter(hash *chainhash.Hash, filterType wire.FilterType) ([]byte, error) {
	if b.index.cfIndex == nil {
		return nil, rpcext.ErrIndexDisabled
	}
	return b.index.cfIndex.FilterByBlockHash(hash, filterType)
}

// CFilterHeader returns a block's BIP 157 filter header.
func (b rpcBackend) CFilterHeader(hash *chainhash.Hash, filterType wire.FilterType) ([]byte, error) {
	if b.index.cfIndex == nil {
		return nil, rpcext.ErrIndexDisabled
	}
	return b.index.cfIndex.FilterHeaderByBlockHash(hash, filterType)
}

// AddressTxs selects an address's transactions from btcd's address index
// and its unconfirmed part exactly as btcd's searchrawtransactions: with
// reverse the mempool ones come first, otherwise last, and skip counts
// across both.
func (b rpcBackend) AddressTxs(addr address.Address, skip, count int, reverse bool) ([]rpcext.AddressTx, error) {
	idx := b.index.addrIndex
	if idx == nil {
		return nil, rpcext.ErrIndexDisabled
	}
	// Counts are uint64, in which skip+count cannot wrap (both come from
	// non-negative ints); btcd's address index takes uint32s, clamped.
	mempoolPart := func(skip, count uint64) ([]rpcext.AddressTx, uint64) {
		txs := idx.UnconfirmedTxnsForAddress(addr)
		avail := uint64(len(txs))
		if skip > avail {
			return nil, avail
		}
		end := min(skip+count, avail)
		out := make([]rpcext.AddressTx, 0, end-skip)
		for _, tx := range txs[skip:end] {
			out = append(out, rpcext.AddressTx{Tx: tx.MsgTx()})
		}
		return out, skip
	}
	clamp := func(v uint64) uint32 { return uint32(min(v, math.MaxUint32)) }
	var (
		out     []rpcext.AddressTx
		skipped uint64
	)
	if reverse {
		txs, n := mempoolPart(uint64(skip), uint64(count))
		out, skipped = append(out, txs...), skipped+n
	}
	if len(out) < count {
		err := b.db.View(func(dbTx database.Tx) error {
			regions, n, err := idx.TxRegionsForAddress(dbTx, addr, clamp(uint64(skip)-skipped),
				clamp(uint64(count-len(out))), reverse)
			if err != nil {
				return err
			}
			raws, err := dbTx.FetchBlockRegions(regions)
			if err != nil {
				return err
			}
			for i, raw := range raws {
				var tx wire.MsgTx
				if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
					return err
				}
				out = append(out, rpcext.AddressTx{Tx: &tx, BlockHash: regions[i].Hash})
			}
			skipped += uint64(n)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if !reverse && len(out) < count {
		txs, _ := mempoolPart(uint64(skip)-skipped, uint64(count-len(out)))
		out = append(out, txs...)
	}
	return out, nil
}
