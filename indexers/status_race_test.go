package indexers_test

import (
	"bytes"
	"math/rand"
	"strconv"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// hookedManager is the node's Manager with a hook run inside btcd's
// disconnect transaction, after the Manager's own hook: btcd has
// disconnected the block in its transaction, the index's store still holds
// it (its writer undoes the block only once btcd's tip moved). The hook is
// dropped once it returns true.
type hookedManager struct {
	*indexers.Manager
	mu   sync.Mutex
	hook func(block *btcutil.Block) bool
}

func (m *hookedManager) DisconnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	if err := m.Manager.DisconnectBlock(dbTx, block, stxos); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hook != nil && m.hook(block) {
		m.hook = nil
	}
	return nil
}

// TestPropertyStatusReadDuringDisconnect reads a long history's status
// while btcd disconnects the tip block (the index still holds the block, so
// the read caches a midstate at it), then connects longer blocks on the new
// branch: every later status must be the model's, whatever the reader
// cached.
func TestPropertyStatusReadDuringDisconnect(t *testing.T) {
	for _, seed := range []int64{31, 32, 33} {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			var (
				idx *indexers.ElectrumIndex
				mgr *hookedManager
			)
			h, err := testchain.CreateWith(t.TempDir(), testchain.Options{
				Index: func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
					var err error
					if idx, err = indexers.NewElectrumIndex(db, indexers.Options{Dir: t.TempDir()}); err != nil {
						t.Fatal(err)
					}
					mgr = &hookedManager{Manager: indexers.NewManager(db, idx)}
					return mgr
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if err := h.MineMature(); err != nil {
				t.Fatal(err)
			}
			spec := testchain.DefaultSpec()
			spec.Txs = 30
			for i := 0; i < 12; i++ {
				if _, err := h.Mine(rng, spec); err != nil {
					t.Fatal(err)
				}
			}
			m, err := testchain.BuildModel(h)
			if err != nil {
				t.Fatal(err)
			}
			// The longest history with an entry in the tip block.
			var sh indexers.ScriptHash
			for _, s := range m.ScriptHashes() {
				hist := m.History[s]
				if hist[len(hist)-1].Height == m.Height && len(hist) > len(m.History[sh]) {
					sh = s
				}
			}
			if len(m.History[sh]) < 100 {
				t.Fatalf("longest history touched by the tip has %d entries; too short to be cached", len(m.History[sh]))
			}

			var (
				during   []byte
				duringAt indexers.Tip
			)
			mgr.mu.Lock()
			mgr.hook = func(block *btcutil.Block) bool {
				if *block.Hash() != m.Tip {
					return false
				}
				st, tip, err := idx.Status(sh, 0)
				if err != nil {
					t.Error(err)
					return true
				}
				during, duringAt = st.Sum(), tip
				return true
			}
			mgr.mu.Unlock()
			if err := h.InvalidateBlock(m.Tip); err != nil {
				t.Fatal(err)
			}
			if during == nil {
				t.Fatal("the hook never saw the disconnect")
			}
			if duringAt.Hash != m.Tip || !bytes.Equal(during, m.Status(sh)) {
				t.Fatalf("status read inside the disconnect is %x at %v, want the old tip's %s at %v",
					during, duringAt.Hash, m.StatusHex(sh), m.Tip)
			}
			if tip, _ := idx.LatestTip(); tip.Height != m.Height-1 {
				t.Fatalf("after the disconnect the index is at %d, want %d", tip.Height, m.Height-1)
			}
			spec.Txs = 60
			for i := 0; i < 3; i++ {
				if _, err := h.Mine(rng, spec); err != nil {
					t.Fatal(err)
				}
				now, err := testchain.BuildModel(h)
				if err != nil {
					t.Fatal(err)
				}
				st, tip, err := idx.Status(sh, 0)
				if err != nil {
					t.Fatal(err)
				}
				if tip.Hash != now.Tip || !bytes.Equal(st.Sum(), now.Status(sh)) {
					t.Fatalf("block %d after the disconnect: status %x (%d entries), model %s (%d entries)",
						i+1, st.Sum(), st.Len(), now.StatusHex(sh), len(now.History[sh]))
				}
			}
		})
	}
}

// TestStatusConcurrentReadersLongHistories reads statuses of long histories
// from other goroutines while the chain reorganizes; every status must be the
// model's status of the tip it was read at.
func TestStatusConcurrentReadersLongHistories(t *testing.T) {
	rng := rand.New(rand.NewSource(41))
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, testchain.ElectrumIndex(t.TempDir(), indexers.Options{}, &idx, nil))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	warm := testchain.DefaultSpec()
	warm.Txs = 40
	for i := 0; i < 8; i++ {
		if _, err := h.Mine(rng, warm); err != nil {
			t.Fatal(err)
		}
	}
	var scripts []indexers.ScriptHash
	for _, s := range h.Pool.Spendable {
		scripts = append(scripts, indexers.ScriptHashFromScript(s.PkScript))
	}
	type read struct {
		sh     indexers.ScriptHash
		tip    indexers.Tip
		status []byte
	}
	stop := make(chan struct{})
	done := make(chan []read, 2)
	for r := 0; r < 2; r++ {
		go func(r int) {
			var out []read
			for i := r; ; i++ {
				select {
				case <-stop:
					done <- out
					return
				default:
				}
				sh := scripts[i%len(scripts)]
				st, tip, err := idx.Status(sh, 0)
				if err != nil {
					t.Error(err)
					done <- out
					return
				}
				if len(out) < 20000 {
					out = append(out, read{sh, tip, st.Sum()})
				}
			}
		}(r)
	}
	spec := testchain.DefaultSpec()
	spec.Txs = 20
	for step := 0; step < 30; step++ {
		var err error
		if step%2 == 0 {
			_, err = h.Mine(rng, spec)
		} else {
			_, err = h.Reorg(rng, 1+rng.Intn(4), spec)
		}
		if err != nil {
			close(stop)
			t.Fatal(err)
		}
	}
	close(stop)
	reads := append(<-done, <-done...)
	models := make(map[chainhash.Hash]*testchain.Model)
	bad := 0
	for _, rd := range reads {
		m := models[rd.tip.Hash]
		if m == nil {
			var err error
			if m, err = testchain.BuildModelAt(h, rd.tip.Hash); err != nil {
				t.Fatal(err)
			}
			models[rd.tip.Hash] = m
		}
		if !bytes.Equal(rd.status, m.Status(rd.sh)) {
			if bad == 0 {
				t.Errorf("status of %v at tip %d %v is %x, the model of that block says %s",
					rd.sh, rd.tip.Height, rd.tip.Hash, rd.status, m.StatusHex(rd.sh))
			}
			bad++
		}
	}
	t.Logf("%d of %d concurrent status reads wrong", bad, len(reads))
}
