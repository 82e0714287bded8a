package electrum

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sort"
	"strconv"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// statusLine appends the status string entry "txid:height:" for one
// transaction to dst.
func statusLine(dst []byte, txid chainhash.Hash, height int32) []byte {
	var r [64]byte
	h := txid
	for i := 0; i < 16; i++ {
		h[i], h[31-i] = h[31-i], h[i]
	}
	hex.Encode(r[:], h[:])
	dst = append(dst, r[:]...)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, int64(height), 10)
	return append(dst, ':')
}

// statusDigest is a StatusHasher over a plain SHA-256 state. The server
// uses it in tests and anywhere a backend hands over entries instead of a
// hasher.
type statusDigest struct {
	h   hash.Hash
	n   int
	buf []byte
}

// newStatusDigest returns an empty status hasher.
func newStatusDigest() *statusDigest {
	return &statusDigest{h: sha256.New()}
}

// Add appends "txid:height:" to the status string.
func (d *statusDigest) Add(txid chainhash.Hash, height int32) {
	d.buf = statusLine(d.buf[:0], txid, height)
	d.h.Write(d.buf)
	d.n++
}

// Len returns the number of entries added.
func (d *statusDigest) Len() int { return d.n }

// Sum returns the status, nil for an empty history.
func (d *statusDigest) Sum() []byte {
	if d.n == 0 {
		return nil
	}
	return d.h.Sum(nil)
}

// statusHex formats a status for the wire: lowercase hex, not reversed, or
// nil (JSON null) for an empty history.
func statusHex(sum []byte) *string {
	if sum == nil {
		return nil
	}
	s := hex.EncodeToString(sum)
	return &s
}

// displayLess orders transaction hashes by their display (byte-reversed)
// hex string.
func displayLess(a, b *chainhash.Hash) bool {
	for i := 31; i >= 0; i-- {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// sortMempool puts mempool entries in the canonical 1.6 order: height 0
// before -1, then by txid display hex.
func sortMempool(es []MempoolEntry) {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Height != es[j].Height {
			return es[i].Height > es[j].Height
		}
		return displayLess(&es[i].TxHash, &es[j].TxHash)
	})
}
