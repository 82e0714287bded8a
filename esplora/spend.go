package esplora

import (
	"errors"
	"sort"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// spendValue is Esplora's spending status of an output.
type spendValue struct {
	Spent  bool      `json:"spent"`
	TxID   string    `json:"txid,omitempty"`
	Vin    *uint32   `json:"vin,omitempty"`
	Status *txStatus `json:"status,omitempty"`
}

func spentBy(txid chainhash.Hash, vin int, st txStatus) spendValue {
	v := uint32(vin)
	return spendValue{Spent: true, TxID: txid.String(), Vin: &v, Status: &st}
}

// spenders finds who spends the given outputs of a transaction. The index
// has no spender table, so the spender is derived from the output's
// script: a mempool spender from the mempool view; a confirmed one, when the
// output is not among the script's unspent outputs, from the script's
// history after the funding block (the spender must be there), reading its
// transactions in chain order until every wanted output is found. Outputs
// still unspent need no history, so --esploramaxhistory bounds only the
// spent ones.
func (s *Server) spenders(q *request, c *cachedTx, vouts []uint32) ([]spendValue, error) {
	txid := c.tx.TxHash()
	out := make([]spendValue, len(vouts))
	groups := make(map[indexers.ScriptHash][]int)
	for i, vout := range vouts {
		if int(vout) >= len(c.tx.TxOut) || !isSpendable(c.tx.TxOut[vout].PkScript) {
			continue
		}
		op := wire.OutPoint{Hash: txid, Index: vout}
		if stxid, ok := s.index.MempoolSpender(op); ok {
			// The spender the other mempool answers show: btcd's pool's,
			// or one mined a block the index has not committed yet.
			if sc, err := s.readTx(stxid); err == nil && sc != nil {
				for vin, in := range sc.tx.TxIn {
					if in.PreviousOutPoint == op {
						out[i] = spentBy(stxid, vin, txStatus{})
					}
				}
			}
			continue
		}
		if c.confirmed {
			sh := indexers.ScriptHashFromScript(c.tx.TxOut[vout].PkScript)
			groups[sh] = append(groups[sh], i)
		}
	}
	for sh, idxs := range groups {
		if err := s.confirmedSpenders(q, c, sh, vouts, idxs, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// confirmedSpenders fills out[i] for the outputs vouts[i], i in idxs, all
// paying the script sh.
func (s *Server) confirmedSpenders(q *request, c *cachedTx, sh indexers.ScriptHash, vouts []uint32, idxs []int, out []spendValue) error {
	txid := c.tx.TxHash()
	for attempt := 0; attempt < tipRetries; attempt++ {
		// Each output is looked up on its own: a script may have
		// millions of unspent outputs.
		wanted := make(map[wire.OutPoint]int)
		var tip indexers.Tip
		moved := false
		for n, i := range idxs {
			op := wire.OutPoint{Hash: txid, Index: vouts[i]}
			unspent, at, err := s.index.IsUnspent(sh, c.loc.Height, op)
			if err != nil {
				return err
			}
			if moved = n > 0 && at != tip; moved {
				break
			}
			tip = at
			if !unspent {
				wanted[op] = i
			}
		}
		if moved {
			continue
		}
		if len(wanted) == 0 {
			return nil
		}
		hist, at, err := s.history(q, sh)
		if err != nil {
			return err
		}
		if at != tip {
			continue
		}
		start := sort.Search(len(hist), func(j int) bool { return hist[j].Height >= c.loc.Height })
		for _, e := range hist[start:] {
			if len(wanted) == 0 {
				break
			}
			if err := q.ctx.Err(); err != nil {
				return err
			}
			if e.TxHash == txid {
				continue
			}
			sc, err := s.readTx(e.TxHash)
			if err != nil {
				return err
			}
			if sc == nil || !sc.confirmed {
				continue
			}
			for vin, in := range sc.tx.TxIn {
				if i, ok := wanted[in.PreviousOutPoint]; ok {
					st, err := s.status(sc)
					if err != nil {
						return err
					}
					out[i] = spentBy(e.TxHash, vin, st)
					delete(wanted, in.PreviousOutPoint)
				}
			}
		}
		return nil
	}
	return errors.New("the chain kept moving while the spenders were read")
}

// GET /tx/:txid/outspend/:vout: unspent for an unknown transaction or
// output, as electrs answers.
func (s *Server) outspend(q *request, txidStr, voutStr string) (*reply, error) {
	txid, err := parseTxid(txidStr)
	if err != nil {
		return nil, err
	}
	vout, err := parseUint(voutStr, 32)
	if err != nil {
		return nil, errInvalidNumber
	}
	sp, err := atOneTip(s, q, func() ([]spendValue, error) {
		c, err := s.lookupTx(q, txid)
		if err != nil || c == nil {
			return []spendValue{{}}, err
		}
		return s.spenders(q, c, []uint32{uint32(vout)})
	})
	if err != nil {
		return nil, err
	}
	ttl := ttlShort
	if sp[0].Status != nil && sp[0].Status.BlockHeight != nil {
		ttl = ttlByDepth(*sp[0].Status.BlockHeight, s.tipHeightNow(), true)
	}
	return jsonReply(sp[0], ttl)
}

// GET /tx/:txid/outspends
func (s *Server) outspends(q *request, txidStr string) (*reply, error) {
	sp, err := atOneTip(s, q, func() ([]spendValue, error) {
		c, err := s.requestedTx(q, txidStr)
		if err != nil {
			return nil, err
		}
		vouts := make([]uint32, len(c.tx.TxOut))
		for i := range vouts {
			vouts[i] = uint32(i)
		}
		return s.spenders(q, c, vouts)
	})
	if err != nil {
		return nil, err
	}
	return jsonReply(sp, ttlShort)
}
