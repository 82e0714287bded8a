package node

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// setupVerification prepares the Electrum index's verification job for the
// verifyelectrumindex RPC and, with --electrumverify, verifies the index
// before the node starts. A verification that finds a difference fails New:
// an index that disagrees with the chain would serve wrong balances, so the
// node refuses to serve it (the log names every difference found).
func (n *Node) setupVerification() error {
	idx := n.index.electrum
	if idx == nil {
		return nil
	}
	var ctx context.Context
	ctx, n.verifyCancel = context.WithCancel(context.Background())
	n.verifyJob = newVerifyJob(ctx, n.db, n.chain, n.index.electrum)
	if !n.cfg.ElectrumVerify {
		return nil
	}
	// Start-up verification stops on the start-up interrupt too.
	vctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if n.cfg.Interrupt != nil {
		go func() {
			select {
			case <-n.cfg.Interrupt:
				cancel()
			case <-vctx.Done():
			}
		}()
	}
	log.Infof("Verifying the Electrum index against the chain (--electrumverify)")
	res, err := indexers.Verify(vctx, n.db, n.chain, indexers.VerifyOptions{Index: n.index.electrum})
	indexers.LogVerifyResult(res, err)
	if err != nil {
		return fmt.Errorf("electrum index verification: %w", err)
	}
	if !res.OK() {
		return fmt.Errorf("electrum index verification found differences with the chain at height %d "+
			"(%d partitions differ; the log lists the first differences): the node does not serve an index "+
			"that disagrees with the chain", res.Tip.Height, res.MismatchedParts)
	}
	return nil
}

// stopVerification ends a running verification and waits for it: its view
// of the database must end before the database closes.
func (n *Node) stopVerification() {
	if n.verifyJob == nil {
		return
	}
	n.verifyCancel()
	n.verifyJob.Wait()
}

// VerifyIndex starts a verification of the Electrum index (when start is
// true and none is running) and reports the running or last one.
func (b rpcBackend) VerifyIndex(start bool) (*rpcext.VerifyIndexInfo, error) {
	j := b.verifyJob
	if j == nil {
		return nil, errors.New("the Electrum index is not enabled (--electrumindex)")
	}
	var st verifyStatus
	if start {
		st = j.Start()
	} else {
		st = j.Status()
	}
	return verifyIndexInfo(st), nil
}

// verifyIndexInfo converts a verification job's state for the RPC.
func verifyIndexInfo(st verifyStatus) *rpcext.VerifyIndexInfo {
	info := &rpcext.VerifyIndexInfo{
		Running: st.Running, Phase: st.Progress.Phase, Height: st.Progress.Height,
		TipHeight: st.Progress.TipHeight, Rows: st.Progress.Rows,
	}
	if !st.Started.IsZero() {
		info.Started = st.Started.Unix()
	}
	if st.Err != nil {
		info.Error = st.Err.Error()
	}
	if r := st.Result; r != nil {
		res := &rpcext.VerifyIndexResult{
			OK: r.OK(), Height: r.Tip.Height, Hash: r.Tip.Hash.String(), Blocks: r.Blocks, Txs: r.Txs,
			Rows: r.Rows, ExpectedRows: r.ExpectedRows, MismatchedPartitions: r.MismatchedParts,
			Seconds: r.Duration.Seconds(), Differences: []rpcext.VerifyIndexDifference{},
		}
		for _, d := range r.Differences {
			res.Differences = append(res.Differences, rpcext.VerifyIndexDifference{
				Table: d.Table, Kind: d.Kind, Key: hex.EncodeToString(d.Key),
				Stored: hexOrEmpty(d.Stored), Expected: hexOrEmpty(d.Expected),
				HashX: d.HashX, Height: d.Height, Detail: d.Detail,
			})
		}
		info.Result = res
	}
	return info
}

// hexOrEmpty is the hex of b, empty for nil.
func hexOrEmpty(b []byte) string {
	if b == nil {
		return ""
	}
	return hex.EncodeToString(b)
}

// verifyJob runs verifications of a live node's index one at a time, in the
// background, and keeps the progress of the running one and the result of
// the last one for the operator's RPC.
type verifyJob struct {
	db    database.DB
	chain *blockchain.BlockChain
	idx   *indexers.ElectrumIndex
	ctx   context.Context

	mu       sync.Mutex
	running  bool
	started  time.Time
	progress indexers.VerifyProgress
	result   *indexers.VerifyResult
	err      error
	done     chan struct{}
}

// verifyStatus is a verifyJob's state.
type verifyStatus struct {
	// Running is true while a verification runs; Progress is its
	// progress.
	Running  bool
	Started  time.Time
	Progress indexers.VerifyProgress
	// Result and Err are the outcome of the last finished verification
	// (both nil before the first one ends).
	Result *indexers.VerifyResult
	Err    error
}

// newVerifyJob returns a job verifying the index idx in db against chain
// (idx as indexers.VerifyOptions.Index); ctx ends a running verification (the
// node's shutdown).
func newVerifyJob(ctx context.Context, db database.DB, chain *blockchain.BlockChain, idx *indexers.ElectrumIndex) *verifyJob {
	return &verifyJob{db: db, chain: chain, idx: idx, ctx: ctx}
}

// Start starts a verification unless one is running, and returns the
// job's state.
func (j *verifyJob) Start() verifyStatus {
	j.mu.Lock()
	if !j.running {
		j.running, j.started = true, time.Now()
		j.progress = indexers.VerifyProgress{}
		j.done = make(chan struct{})
		go j.run(j.done)
	}
	j.mu.Unlock()
	return j.Status()
}

// run is the verification's goroutine.
func (j *verifyJob) run(done chan struct{}) {
	res, err := indexers.Verify(j.ctx, j.db, j.chain, indexers.VerifyOptions{Index: j.idx, Progress: func(p indexers.VerifyProgress) {
		j.mu.Lock()
		j.progress = p
		j.mu.Unlock()
	}})
	indexers.LogVerifyResult(res, err)
	j.mu.Lock()
	j.running, j.result, j.err = false, res, err
	j.mu.Unlock()
	close(done)
}

// Wait waits for the running verification, if any, to end.
func (j *verifyJob) Wait() {
	j.mu.Lock()
	done := j.done
	j.mu.Unlock()
	if done != nil {
		<-done
	}
}

// Status returns the job's state.
func (j *verifyJob) Status() verifyStatus {
	j.mu.Lock()
	defer j.mu.Unlock()
	return verifyStatus{Running: j.running, Started: j.started, Progress: j.progress, Result: j.result, Err: j.err}
}
