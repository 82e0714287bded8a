package indexers

import "time"

// BlockPass describes one block the writer indexed: how long each phase
// took and what it wrote. The node turns it into metrics (Options.OnBlock).
type BlockPass struct {
	Height int32
	Txs    int
	// Plan is phase 1 (reading the block and its spent outputs, hashing
	// scripts, building rows, in parallel); Write is phase 2 (funding
	// rows, then spending rows, into the writer's batch).
	Plan, Write time.Duration
	// Rows and Bytes are the change in the index's rows and their key
	// and value bytes.
	Rows, Bytes int64
	// Writes and WriteBytes are the puts and deletes the pass made and
	// their bytes (keys and values put, keys deleted).
	Writes, WriteBytes int64
}
