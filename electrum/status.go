package electrum

import (
	"encoding/hex"
	"sort"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// statusHex formats a status for the wire: lowercase hex, not reversed, or
// nil (JSON null) for an empty history.
func statusHex(sum []byte) *string {
	if sum == nil {
		return nil
	}
	s := hex.EncodeToString(sum)
	return &s
}

// sortMempool puts mempool entries in the canonical 1.6 order: height 0
// before -1, then by txid display hex.
func sortMempool(es []MempoolEntry) {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Height != es[j].Height {
			return es[i].Height > es[j].Height
		}
		return indexers.DisplayLess(&es[i].TxHash, &es[j].TxHash)
	})
}
