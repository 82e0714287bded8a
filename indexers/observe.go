package indexers

import "time"

// BlockPass describes one block indexed inside btcd's block-connect
// transaction: how long each phase took and what it wrote. The node turns
// it into metrics.
type BlockPass struct {
	Height int32
	Txs    int
	// Plan is phase 1 (hashing scripts, building rows, in parallel);
	// Write is phase 2 (funding rows, then spending rows, into the
	// transaction).
	Plan, Write time.Duration
	// Rows and Bytes are the change in the index's rows and their key
	// and value bytes.
	Rows, Bytes int64
	// Writes and WriteBytes are the puts and deletes the pass made and
	// their bytes (keys and values put, keys deleted).
	Writes, WriteBytes int64
}

// SetBlockObserver makes f receive every block pass. f runs inside the
// chain's transaction and must not block. Call it before the chain
// connects blocks.
func (idx *ElectrumIndex) SetBlockObserver(f func(BlockPass)) {
	idx.observe = f
}

// observed hands a connected block's pass to the observer, if any: the
// pass started at start and finished planning at planned.
func (idx *ElectrumIndex) observed(p *blockPlan, start, planned time.Time) {
	if idx.observe == nil {
		return
	}
	idx.observe(BlockPass{Height: p.height, Txs: len(p.txs), Plan: planned.Sub(start),
		Write: time.Since(planned), Rows: p.sizeDelta.Rows, Bytes: p.sizeDelta.Bytes,
		Writes: p.writes, WriteBytes: p.writeBytes})
}
