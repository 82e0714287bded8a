package indexers

import (
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
)

// The balance log carries cached balances across blocks. A balance in the
// read cache stays valid only while no block touches its script, and the
// scripts worth caching (an exchange's deposit address, a pool's payout
// address) are touched by nearly every block: without the log, the first
// get_balance after each block reads tens of thousands of unspent rows
// again. The block path already holds every output a block creates and
// every output it spends, with their amounts, so for the few scripts whose
// balances are cached (the watched scripts) it records each block's net
// change in memory, without a read. A later read adds the changes of the
// blocks between its cached balance and its own view's tip, found by hash
// from the view's own block rows: a block that is not in the view's chain is
// never applied, and a balance moves forward only over blocks logged while
// its script was watched.

const (
	// balanceLogBlocks is how many recent blocks keep their changes.
	balanceLogBlocks = 64
	// maxWatched bounds the watched scripts; the set starts again empty
	// when it is full.
	maxWatched = 4096
	// maxBalanceSteps is the most blocks a read moves a balance forward.
	maxBalanceSteps = 16
)

// balanceLog is the watched scripts and the recent blocks' changes.
type balanceLog struct {
	mu sync.Mutex
	// seq numbers the logged blocks.
	seq uint64
	// watch maps a watched script to the seq of the last block logged
	// before it was watched: blocks logged after it hold its changes.
	watch  map[hashX]uint64
	blocks map[chainhash.Hash]*loggedBlock
	order  []chainhash.Hash
}

// loggedBlock is one block's net change of each watched script it touched.
type loggedBlock struct {
	seq    uint64
	deltas map[hashX]int64
}

func newBalanceLog() *balanceLog {
	return &balanceLog{watch: make(map[hashX]uint64), blocks: make(map[chainhash.Hash]*loggedBlock)}
}

// watchScript makes the log record hx's changes from the next block on.
func (l *balanceLog) watchScript(hx hashX) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.watch[hx]; ok {
		return
	}
	if len(l.watch) >= maxWatched {
		clear(l.watch)
	}
	l.watch[hx] = l.seq
}

// logBlock records a connected block's changes of the watched scripts. It
// runs inside the block-connect transaction: memory only, no reads. A block
// whose transaction then fails is never in a view's chain, so its entry is
// never applied.
func (l *balanceLog) logBlock(p *blockPlan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.watch) == 0 {
		return
	}
	l.seq++
	lb := &loggedBlock{seq: l.seq, deltas: make(map[hashX]int64)}
	for i := range p.txs {
		tp := &p.txs[i]
		for j := range tp.funds {
			if hx := tp.funds[j].script.hashX(); l.watched(hx) {
				lb.deltas[hx] += tp.funds[j].value
			}
		}
		for j := range tp.spends {
			if hx := tp.spends[j].script.hashX(); l.watched(hx) {
				lb.deltas[hx] -= tp.spends[j].value
			}
		}
	}
	if _, ok := l.blocks[p.hash]; !ok {
		l.order = append(l.order, p.hash)
	}
	l.blocks[p.hash] = lb
	for len(l.order) > balanceLogBlocks {
		delete(l.blocks, l.order[0])
		l.order = l.order[1:]
	}
}

func (l *balanceLog) watched(hx hashX) bool {
	_, ok := l.watch[hx]
	return ok
}

// advance moves the balance of hx cached at tip from forward to the view's
// tip to, reading the view's block rows for the hashes of the blocks in
// between; false when a block between is not in the log for hx, or from is
// no longer in the view's chain.
func (l *balanceLog) advance(meta database.Bucket, hx hashX, from, to Tip, balance int64) (int64, bool) {
	steps := to.Height - from.Height
	if steps <= 0 || steps > maxBalanceSteps || !inChain(meta, from) {
		return 0, false
	}
	hashes := make([]chainhash.Hash, 0, steps)
	for h := from.Height + 1; h <= to.Height; h++ {
		_, hash, ok := decodeBlkVal(meta.Get(blkKey(h)))
		if !ok {
			return 0, false
		}
		hashes = append(hashes, hash)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	since, ok := l.watch[hx]
	if !ok {
		return 0, false
	}
	for _, hash := range hashes {
		lb := l.blocks[hash]
		if lb == nil || lb.seq <= since {
			return 0, false
		}
		balance += lb.deltas[hx]
	}
	return balance, true
}
