package indexers_test

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"strconv"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// propHookDB runs a hook inside read-write transactions, after the chain and
// the index have done their work and before the transaction commits: the
// moment a concurrent reader can open a read transaction that still sees the
// old state. The hook is dropped once it returns true.
type propHookDB struct {
	database.DB
	mu   sync.Mutex
	hook func(tx database.Tx) bool
}

// Update runs fn, then the pending hook, inside one transaction.
func (d *propHookDB) Update(fn func(database.Tx) error) error {
	return d.DB.Update(func(tx database.Tx) error {
		err := fn(tx)
		d.mu.Lock()
		defer d.mu.Unlock()
		if err == nil && d.hook != nil && d.hook(tx) {
			d.hook = nil
		}
		return err
	})
}

// TestPropertyStatusReadDuringDisconnect reads a long history's status
// while a block disconnect is being committed (the reader's snapshot still
// holds the block), then connects longer blocks on the new branch: every
// later status must be the model's, whatever the reader cached.
func TestPropertyStatusReadDuringDisconnect(t *testing.T) {
	for _, seed := range []int64{31, 32, 33} {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			var idx *indexers.ElectrumIndex
			hooked := &propHookDB{}
			h, err := testchain.CreateWith(t.TempDir(), testchain.Options{
				Index: propIndex(&idx),
				WrapDB: func(db database.DB) database.DB {
					hooked.DB = db
					return hooked
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

			// The hook fires in the transaction that moves the index tip
			// to the parent of the tip: the disconnect.
			tipBlock, err := h.Chain.BlockByHash(&m.Tip)
			if err != nil {
				t.Fatal(err)
			}
			parentTip := append(tipBlock.MsgBlock().Header.PrevBlock[:], 0, 0, 0, 0)
			binary.LittleEndian.PutUint32(parentTip[32:], uint32(m.Height-1))
			var during []byte
			hooked.mu.Lock()
			hooked.hook = func(tx database.Tx) bool {
				tips := tx.Metadata().Bucket(eqTipsBucket)
				if tips == nil || !bytes.Equal(tips.Get(eqTipKey), parentTip) {
					return false
				}
				st, _, err := idx.Status(sh, 0)
				if err != nil {
					t.Error(err)
					return true
				}
				during = st.Sum()
				return true
			}
			hooked.mu.Unlock()
			if err := h.InvalidateBlock(m.Tip); err != nil {
				t.Fatal(err)
			}
			if during == nil {
				t.Fatal("the hook never saw the disconnect")
			}
			if !bytes.Equal(during, m.Status(sh)) {
				t.Fatalf("status read inside the disconnect is %x, want the old tip's %s", during, m.StatusHex(sh))
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
	h := testchain.New(t, propIndex(&idx))
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
