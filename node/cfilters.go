package node

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// BIP 157 serving: btcd's committed filter index (CfIndex, maintained in the
// chain's block-connect transaction) answers getcfilters, getcfheaders and
// getcfcheckpt. As btcd, requests are ignored while the node is not in sync,
// for filter types other than the basic one, and for ranges the chain does
// not hold; a filter or header missing from the index ends the answer.

// cfServing reports whether the node serves compact filters and is in sync.
func (sp *serverPeer) cfServing(filterType wire.FilterType) bool {
	n := sp.node
	if n.index.cfIndex == nil {
		// --nocfilters: the service bit is not advertised either.
		srvrLog.Debugf("Peer %s asked for compact filters, which are disabled -- disconnecting", sp)
		sp.Disconnect()
		return false
	}
	if filterType != wire.GCSFilterRegular {
		srvrLog.Debugf("Peer %s asked for unknown filter type %v", sp, filterType)
		return false
	}
	return n.syncManager.IsCurrent()
}

// OnGetCFilters answers with one cfilter message per block of the range.
func (sp *serverPeer) OnGetCFilters(_ *peer.Peer, msg *wire.MsgGetCFilters) {
	if !sp.cfServing(msg.FilterType) {
		return
	}
	n := sp.node
	hashes, err := n.chain.HeightToHashRange(int32(msg.StartHeight), &msg.StopHash, wire.MaxGetCFiltersReqRange)
	if err != nil {
		srvrLog.Debugf("Invalid getcfilters request from %s: %v", sp, err)
		return
	}
	filters, err := n.index.cfIndex.FiltersByBlockHashes(hashPtrs(hashes), msg.FilterType)
	if err != nil {
		srvrLog.Errorf("Fetch compact filters: %v", err)
		return
	}
	// Up to 1000 filters per request: as getdata, wait every few for them
	// to be written, so a peer repeating requests cannot queue the chain's
	// filters in memory.
	pending := make([]chan struct{}, 0, getDataBatch)
	for i, f := range filters {
		if len(f) == 0 {
			srvrLog.Warnf("No compact filter for block %v", hashes[i])
			return
		}
		done := make(chan struct{}, 1)
		sp.QueueMessage(wire.NewMsgCFilter(msg.FilterType, &hashes[i], f), done)
		pending = append(pending, done)
		if len(pending) < getDataBatch && i < len(filters)-1 {
			continue
		}
		for _, c := range pending {
			select {
			case <-c:
			case <-sp.quit:
				return
			case <-n.quit:
				return
			}
		}
		pending = pending[:0]
	}
}

// OnGetCFHeaders answers with the filter hashes of the range and the filter
// header of the block before it.
func (sp *serverPeer) OnGetCFHeaders(_ *peer.Peer, msg *wire.MsgGetCFHeaders) {
	if !sp.cfServing(msg.FilterType) {
		return
	}
	n := sp.node
	start := int32(msg.StartHeight)
	maxResults := wire.MaxCFHeadersPerMsg
	if msg.StartHeight > 0 {
		// The block before the range gives PrevFilterHeader.
		start--
		maxResults++
	}
	hashes, err := n.chain.HeightToHashRange(start, &msg.StopHash, maxResults)
	if err != nil {
		srvrLog.Debugf("Invalid getcfheaders request from %s: %v", sp, err)
		return
	}
	if len(hashes) == 0 || (msg.StartHeight > 0 && len(hashes) == 1) {
		return
	}
	filterHashes, err := n.index.cfIndex.FilterHashesByBlockHashes(hashPtrs(hashes), msg.FilterType)
	if err != nil {
		srvrLog.Errorf("Fetch compact filter hashes: %v", err)
		return
	}
	out := wire.NewMsgCFHeaders()
	out.FilterType = msg.FilterType
	out.StopHash = msg.StopHash
	if msg.StartHeight > 0 {
		prev, err := n.index.cfIndex.FilterHeaderByBlockHash(&hashes[0], msg.FilterType)
		if err != nil || len(prev) == 0 {
			srvrLog.Warnf("No compact filter header for block %v: %v", hashes[0], err)
			return
		}
		if err := out.PrevFilterHeader.SetBytes(prev); err != nil {
			srvrLog.Warnf("Compact filter header of %v: %v", hashes[0], err)
			return
		}
		hashes, filterHashes = hashes[1:], filterHashes[1:]
	}
	for i, b := range filterHashes {
		h, err := chainhash.NewHash(b)
		if err != nil {
			srvrLog.Warnf("No compact filter hash for block %v", hashes[i])
			return
		}
		if err := out.AddCFHash(h); err != nil {
			return
		}
	}
	sp.QueueMessage(out, nil)
}

// OnGetCFCheckpt answers with the filter headers at every 1000th block up to
// the stop hash.
func (sp *serverPeer) OnGetCFCheckpt(_ *peer.Peer, msg *wire.MsgGetCFCheckpt) {
	if !sp.cfServing(msg.FilterType) {
		return
	}
	n := sp.node
	hashes, err := n.chain.IntervalBlockHashes(&msg.StopHash, wire.CFCheckptInterval)
	if err != nil {
		srvrLog.Debugf("Invalid getcfcheckpt request from %s: %v", sp, err)
		return
	}
	headers, err := n.index.cfIndex.FilterHeadersByBlockHashes(hashPtrs(hashes), msg.FilterType)
	if err != nil {
		srvrLog.Errorf("Fetch compact filter headers: %v", err)
		return
	}
	out := wire.NewMsgCFCheckpt(msg.FilterType, &msg.StopHash, len(hashes))
	for i, b := range headers {
		h, err := chainhash.NewHash(b)
		if err != nil {
			srvrLog.Warnf("No compact filter header for block %v", hashes[i])
			return
		}
		if err := out.AddCFHeader(h); err != nil {
			return
		}
	}
	sp.QueueMessage(out, nil)
}

// hashPtrs returns pointers to the elements of hashes.
func hashPtrs(hashes []chainhash.Hash) []*chainhash.Hash {
	out := make([]*chainhash.Hash, len(hashes))
	for i := range hashes {
		out[i] = &hashes[i]
	}
	return out
}
