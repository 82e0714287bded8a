package indexers_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestVerifyNamesExtraRowAtHighHeight: a row of a height-keyed table
// ("Exb", "Ext", "Exl") whose key's height has its top bit set (one
// flipped bit of the key) is an extra row, and Verify names it, as every
// difference is named by table, kind, key and height: the operator's log
// and the verifyelectrumindex result then say where the index is wrong.
func TestVerifyNamesExtraRowAtHighHeight(t *testing.T) {
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, propIndex(t, &idx))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	verifyIndexOK(t, h, idx, "before")
	tip, err := idx.Tip()
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []byte{'b', 't', 'l'} {
		t.Run(string(tag), func(t *testing.T) {
			// The tip block's row of the table, its height's top bit
			// flipped.
			key := []byte{'E', 'x', tag, 0, 0, 0, 0}
			if tag != 'b' {
				key = append(key, 0, 0)
			}
			binary.BigEndian.PutUint32(key[3:], uint32(tip.Height))
			val, err := idx.Store().Get(key, nil)
			if err != nil {
				t.Fatalf("row %x: %v", key, err)
			}
			extra := bytes.Clone(key)
			extra[3] |= 0x80
			if err := idx.Store().Put(extra, val, nil); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := idx.Store().Delete(extra, nil); err != nil {
					t.Fatal(err)
				}
				verifyIndexOK(t, h, idx, "undone")
			}()
			res, err := indexers.Verify(context.Background(), h.DB, h.Chain, indexers.VerifyOptions{Index: idx})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() {
				t.Fatalf("extra row %x verified clean", extra)
			}
			for _, d := range res.Differences {
				if bytes.Equal(d.Key, extra) {
					if d.Kind != "extra" {
						t.Fatalf("extra row reported as %v", d)
					}
					return
				}
			}
			t.Fatalf("extra row %x not named: verification failed with %d differences %v and %d mismatched partitions",
				extra, len(res.Differences), res.Differences, res.MismatchedParts)
		})
	}
}
