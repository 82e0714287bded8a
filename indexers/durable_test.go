package indexers_test

import (
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// copyImage copies the files under src to dst as they are on disk now, as a
// crash leaves them. A file leveldb deletes meanwhile (a compaction ending)
// makes it copy again.
func copyImage(t *testing.T, src, dst string) {
	t.Helper()
	var err error
	for try := 0; try < 50; try++ {
		os.RemoveAll(dst)
		if err = copyImageOnce(src, dst); err == nil || !os.IsNotExist(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// copyImageOnce is one attempt of copyImage.
func copyImageOnce(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(out, 0o700)
		}
		if fi.Name() == "LOCK" {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		o, err := os.Create(out)
		if err != nil {
			return err
		}
		defer o.Close()
		_, err = io.Copy(o, in)
		return err
	})
}

// baseTrailingFactory is the factory of an index that is built into the
// base at baseDir and trails the chain, extending the base at every block.
func baseTrailingFactory(idx **indexers.ElectrumIndex, baseDir string) testchain.IndexFactory {
	inner := propIndexTrailing(idx, true)
	return func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		m := inner(db, params)
		(*idx).SetBasePath(baseDir)
		// A batch for every block or so, so that an extension commits
		// several, named together at its end.
		(*idx).SetCatchUpBatch(1)
		(*idx).SetExtensionNaming(time.Hour)
		return m
	}
}

// TestBaseExtensionAfterCrash extends the base beside a chain and, between
// the commit of a batch into the base and the naming of the run in ffldb,
// takes an image of the files without closing anything, as a crash leaves
// them:
// ffldb's write cache, which held the blocks the batch indexed, is lost,
// and the base holds their rows above the height ffldb names, with the
// deletes of the outputs they spent pending. The image's index verifies row
// for row against its chain. When the chain gets the same blocks again, the
// next extension takes those rows up; when it gets other blocks, they stay
// hidden and the base is never extended again. Either way the index then
// verifies again. When the chain gets only some of the blocks and then none,
// the rows are given up after a while and the index reaches the chain's tip
// through ffldb.
func TestBaseExtensionAfterCrash(t *testing.T) {
	for _, then := range []string{"same blocks", "other blocks", "some blocks, then none"} {
		same := then == "same blocks"
		t.Run(then, func(t *testing.T) {
			dir := t.TempDir()
			chainDir, baseDir := filepath.Join(dir, "chain"), filepath.Join(dir, "base")
			var idx *indexers.ElectrumIndex
			h, err := testchain.Create(chainDir, baseTrailingFactory(&idx, baseDir))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				idx.StopTrailing()
				h.Close()
				idx.CloseBase()
			}()
			if err := h.MineMature(); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(11))
			spec := testchain.DefaultSpec()
			spec.Txs = 30
			mine := func(n int) []*btcutil.Block {
				var blocks []*btcutil.Block
				for i := 0; i < n; i++ {
					b, err := h.Mine(rng, spec)
					if err != nil {
						t.Fatal(err)
					}
					blocks = append(blocks, b)
				}
				if err := idx.WaitCaughtUp(time.Minute); err != nil {
					t.Fatal(err)
				}
				return blocks
			}
			mine(5)
			_, named := h.Tip()
			if got := idx.BaseHeight(); got != named {
				t.Fatalf("base at height %d, chain at %d: the worker did not extend it", got, named)
			}
			// A clean close, so that ffldb holds what its write cache
			// held.
			idx.StopTrailing()
			idx.WaitHeldWriter()
			idx.CloseBase()
			if err := h.Reopen(baseTrailingFactory(&idx, baseDir)); err != nil {
				t.Fatal(err)
			}
			crashChain, crashBase := filepath.Join(dir, "crash-chain"), filepath.Join(dir, "crash-base")
			// The image is taken when the third batch is committed, so
			// that the chain can stop below the base's own tip (nothing
			// is named before the run ends, so ffldb writes out nothing
			// of its cache meanwhile).
			var commits atomic.Int32
			idx.SetBeforeName(func() {
				if commits.Add(1) == 3 {
					copyImage(t, chainDir, crashChain)
					copyImage(t, baseDir, crashBase)
				}
			})
			lost := mine(6)
			_, top := h.Tip()
			if got := idx.BaseHeight(); got != top {
				t.Fatalf("base at height %d, chain at %d: the worker did not extend it", got, top)
			}
			verifyIndexOK(t, h, idx, "extended")

			var cidx *indexers.ElectrumIndex
			c, err := testchain.Open(crashChain, baseTrailingFactory(&cidx, crashBase))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				cidx.StopTrailing()
				c.Close()
				cidx.CloseBase()
			}()
			if _, got := c.Tip(); got != named {
				t.Fatalf("crash image's chain at height %d, want %d (the write cache lost)", got, named)
			}
			if got := cidx.BaseHeight(); got != named {
				t.Fatalf("crash image's base read to height %d, want %d", got, named)
			}
			ahead := cidx.BaseAheadHeight()
			if ahead <= named+1 || ahead > top {
				t.Fatalf("crash image's base holds blocks to height %d, want some in (%d, %d]", ahead, named+1, top)
			}
			verifyIndexOK(t, c, cidx, "crash image")
			switch then {
			case "some blocks, then none":
				cidx.SetAheadPatience(300 * time.Millisecond)
				for _, b := range lost[:ahead-named-1] {
					if _, _, err := c.Chain.ProcessBlock(btcutil.NewBlock(b.MsgBlock()), blockchain.BFNoPoWCheck); err != nil {
						t.Fatal(err)
					}
				}
			case "same blocks":
				for _, b := range lost {
					if _, _, err := c.Chain.ProcessBlock(btcutil.NewBlock(b.MsgBlock()), blockchain.BFNoPoWCheck); err != nil {
						t.Fatal(err)
					}
				}
			default:
				crng := rand.New(rand.NewSource(12))
				for i := 0; i < len(lost)+2; i++ {
					if _, err := c.Mine(crng, spec); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := cidx.WaitCaughtUp(time.Minute); err != nil {
				t.Fatal(err)
			}
			_, ctop := c.Tip()
			switch {
			case same && (cidx.BaseHeight() != ctop || cidx.BaseDirty()):
				t.Fatalf("base at height %d (dirty %v) after the same blocks came again to %d",
					cidx.BaseHeight(), cidx.BaseDirty(), ctop)
			case !same && (cidx.BaseHeight() != named || !cidx.BaseDirty()):
				t.Fatalf("base at height %d (dirty %v) after %s, want %d and dirty",
					cidx.BaseHeight(), cidx.BaseDirty(), then, named)
			}
			if tip, err := cidx.Tip(); err != nil || tip.Height != ctop {
				t.Fatalf("index at %+v (%v), chain at %d", tip, err, ctop)
			}
			verifyIndexOK(t, c, cidx, "after the crash")
		})
	}
}
