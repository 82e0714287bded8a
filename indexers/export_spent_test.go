package indexers

import (
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/database"
)

// SpentOutputsCursors rebuilds block's spent outputs from the index, as an
// undo without the block's record does, and returns how many it rebuilt
// and how many cursors the read's view handed out.
func (idx *ElectrumIndex) SpentOutputsCursors(db database.DB, block *btcutil.Block) (outputs, cursors int, err error) {
	_, err = idx.read(func(r *snapView, _ Tip) error {
		return db.View(func(dbTx database.Tx) error {
			stxos, err := spentOutputsFromIndex(dbTx, r, block)
			outputs, cursors = len(stxos), len(r.its)
			return err
		})
	})
	return outputs, cursors, err
}
