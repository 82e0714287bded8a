package rpcext

import (
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// rescanProgressEvery is how often a running rescan reports progress.
const rescanProgressEvery = 10 * time.Second

func init() {
	wsMethods["rescan"] = handleRescan
}

// rescanKeys are what a rescan looks for: payments to the addresses and
// spends of the outpoints (which grow with the outputs paying the
// addresses).
type rescanKeys struct {
	addrs   map[string]struct{}
	unspent map[wire.OutPoint]struct{}
}

// handleRescan answers btcd's legacy rescan: from beginblock to endblock
// (or the tip) it sends recvtx for every transaction paying one of the
// addresses and redeemingtx for every one spending one of the outpoints or
// from one of the addresses, rescanprogress every ten seconds and
// rescanfinished at the end, then answers null. A reorganization under the
// scan ends it with an error, as btcd.
func handleRescan(c *wsClient, cmd interface{}) (interface{}, error) {
	rc := cmd.(*btcjson.RescanCmd)
	s := c.s
	keys := rescanKeys{addrs: map[string]struct{}{}, unspent: map[wire.OutPoint]struct{}{}}
	for _, op := range rc.OutPoints {
		h, err := chainhash.NewHashFromStr(op.Hash)
		if err != nil {
			return nil, decodeHexError(op.Hash)
		}
		keys.unspent[wire.OutPoint{Hash: *h, Index: op.Index}] = struct{}{}
	}
	for _, a := range rc.Addresses {
		// As btcd: one that does not decode is skipped.
		if addr, err := address.DecodeAddress(a, s.cfg.Params); err == nil {
			keys.addrs[addr.EncodeAddress()] = struct{}{}
		}
	}
	// Through the tip the keys stay as subscriptions: a rescan they would
	// take past the limit is refused before it scans.
	if rc.EndBlock == nil {
		addrs, ops := keys.lists()
		c.mu.Lock()
		over := newKeys(c.watch.received, addrs)+newKeys(c.watch.spent, ops) > c.subscriptionRoom()
		c.mu.Unlock()
		if over {
			return nil, c.errSubscriptionLimit()
		}
	}
	begin, err := chainhash.NewHashFromStr(rc.BeginBlock)
	if err != nil {
		return nil, decodeHexError(rc.BeginBlock)
	}
	from, err := s.cfg.Chain.BlockHeightByHash(begin)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCBlockNotFound, "Error getting block: "+err.Error())
	}
	to := int32(1<<31 - 1)
	if rc.EndBlock != nil {
		end, err := chainhash.NewHashFromStr(*rc.EndBlock)
		if err != nil {
			return nil, decodeHexError(*rc.EndBlock)
		}
		if to, err = s.cfg.Chain.BlockHeightByHash(end); err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCBlockNotFound, "Error getting block: "+err.Error())
		}
		to-- // as btcd: up to the end block, not including it
	}

	var last *btcutil.Block
	if len(keys.addrs) == 0 && len(keys.unspent) == 0 {
		best := s.cfg.Chain.BestSnapshot()
		if last, err = s.cfg.Chain.BlockByHash(&best.Hash); err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCBlockNotFound, "Error getting block: "+err.Error())
		}
	} else {
		progress := time.NewTicker(rescanProgressEvery)
		defer progress.Stop()
		for h := from; h <= to; h++ {
			select {
			case <-c.quit:
				return nil, nil
			case <-s.quit:
				return nil, nil
			default:
			}
			if h > s.cfg.Chain.BestSnapshot().Height {
				if rc.EndBlock != nil || last == nil {
					break
				}
				// Through the tip: as btcd, the client is told of
				// the addresses' and outputs' later transactions
				// too, from the block after the last one scanned.
				if s.ntfn.watchAfter(*last.Hash(), func() { c.watchKeys(&keys) }) {
					break
				}
				if _, err := s.cfg.Chain.BlockHeightByHash(last.Hash()); err != nil {
					return nil, btcjson.NewRPCError(btcjson.ErrRPCMisc,
						"the chain reorganized during the rescan: block "+last.Hash().String()+" left the main chain")
				}
				// Blocks connected meanwhile are scanned first.
				time.Sleep(time.Millisecond)
				h--
				continue
			}
			hash, err := s.cfg.Chain.BlockHashByHeight(h)
			if err != nil {
				return nil, btcjson.NewRPCError(btcjson.ErrRPCBlockNotFound, "Error getting block: "+err.Error())
			}
			block, err := s.cfg.Chain.BlockByHash(hash)
			if err != nil {
				return nil, btcjson.NewRPCError(btcjson.ErrRPCBlockNotFound, "Error getting block: "+err.Error())
			}
			if last != nil && block.MsgBlock().Header.PrevBlock != *last.Hash() {
				return nil, btcjson.NewRPCError(btcjson.ErrRPCMisc,
					"the chain reorganized during the rescan: block "+hash.String()+" does not extend the last one scanned")
			}
			block.SetHeight(h)
			if !c.rescanBlock(&keys, block) {
				return nil, nil
			}
			last = block
			select {
			case <-progress.C:
				if !c.queueNtfn(btcjson.NewRescanProgressNtfn(hash.String(), h,
					block.MsgBlock().Header.Timestamp.Unix())) {
					return nil, nil
				}
			default:
			}
		}
		if last == nil {
			return nil, nil
		}
	}
	height := last.Height()
	if height == btcutil.BlockHeightUnknown {
		height = s.blockWithHeight(last)
	}
	c.queueNtfn(btcjson.NewRescanFinishedNtfn(last.Hash().String(), height,
		last.MsgBlock().Header.Timestamp.Unix()))
	return nil, nil
}

// watchKeys has the client told of later transactions paying the
// rescan's addresses or spending its outputs, and, as btcd, of mempool
// transactions already spending them; a client they would take past its
// subscription limit is disconnected, as it would miss them.
func (c *wsClient) watchKeys(keys *rescanKeys) {
	addrs, ops := keys.lists()
	if !c.subscribe(addrs, ops) {
		c.closeOverSubscribed()
		return
	}
	c.tellPoolSpends(ops)
}

// lists returns the keys' addresses and outpoints.
func (k *rescanKeys) lists() ([]string, []wire.OutPoint) {
	addrs := make([]string, 0, len(k.addrs))
	for a := range k.addrs {
		addrs = append(addrs, a)
	}
	ops := make([]wire.OutPoint, 0, len(k.unspent))
	for op := range k.unspent {
		ops = append(ops, op)
	}
	return addrs, ops
}

// queueNtfn marshals and queues a notification; false when the client is
// gone.
func (c *wsClient) queueNtfn(ntfn interface{}) bool {
	b, err := btcjson.MarshalCmd(btcjson.RpcVersion1, nil, ntfn)
	if err != nil {
		log.Errorf("Marshal notification: %v", err)
		return true
	}
	return c.queue(b)
}

// rescanBlock sends a block's matches, as btcd's rescan: redeemingtx for a
// transaction spending a watched outpoint or from a watched address (the
// address of an input computed from its script), recvtx for one paying a
// watched address, whose outputs then are watched. False when the client
// is gone.
func (c *wsClient) rescanBlock(keys *rescanKeys, block *btcutil.Block) bool {
	params := c.s.cfg.Params
	for _, tx := range block.Transactions() {
		details := &btcjson.BlockDetails{Height: block.Height(), Hash: block.Hash().String(),
			Index: tx.Index(), Time: block.MsgBlock().Header.Timestamp.Unix()}
		hexOf := func() string {
			h, _ := txHex(tx.MsgTx())
			return h
		}
		spent := false
		for _, in := range tx.MsgTx().TxIn {
			match := false
			if _, ok := keys.unspent[in.PreviousOutPoint]; ok {
				delete(keys.unspent, in.PreviousOutPoint)
				match = true
			}
			if pk, err := txscript.ComputePkScript(in.SignatureScript, in.Witness); err == nil {
				if a, err := pk.Address(params); err == nil {
					if _, ok := keys.addrs[a.EncodeAddress()]; ok {
						match = true
					}
				}
			}
			if match && !spent {
				spent = true
				if !c.queueNtfn(btcjson.NewRedeemingTxNtfn(hexOf(), details)) {
					return false
				}
			}
		}
		received := false
		for i, out := range tx.MsgTx().TxOut {
			_, addrs, _, _ := txscript.ExtractPkScriptAddrs(out.PkScript, params)
			for _, a := range addrs {
				if _, ok := keys.addrs[a.EncodeAddress()]; !ok {
					continue
				}
				keys.unspent[wire.OutPoint{Hash: *tx.Hash(), Index: uint32(i)}] = struct{}{}
				if !received {
					received = true
					if !c.queueNtfn(btcjson.NewRecvTxNtfn(hexOf(), details)) {
						return false
					}
				}
			}
		}
	}
	return true
}
