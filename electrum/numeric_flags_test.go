package electrum

import (
	"encoding/json"
	"testing"
)

// TestNumericBooleanFlags: the optional flags verbose
// (blockchain.transaction.get) and merkle
// (blockchain.transaction.id_from_pos) given as the numbers 1 and 0 are
// taken as true and false by both reference servers:
//
//   - ElectrumX (spesmilo/electrumx src/electrumx/server/session.py):
//     phandle_transaction_get checks `if verbose not in (True, False)` and
//     passes verbose on to bitcoind's getrawtransaction; in Python
//     `1 in (True, False)` is True, and bitcoind takes 1 as verbose.
//     phandle_transaction_id_from_pos checks `if merkle not in (True,
//     False)` and then `if merkle:`, so 1 gives the merkle form.
//   - Fulcrum (cculianu/Fulcrum src/Servers.cpp):
//     parseBoolSemiLooselyButNotTooLoosely accepts Bool, Int, UInt,
//     LongLong, ULongLong and Double variants, used for both flags.
//
// This server refuses them with error 1 "1 should be a boolean value", so
// a client written against ElectrumX or Fulcrum that sends [txid, 1] gets
// an error instead of the transaction.
func TestNumericBooleanFlags(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	txid := fx.tx1.TxHash().String()

	// verbose = 1: the verbose object, as [txid, true] gives.
	res, rerr := c.call("blockchain.transaction.get", txid, 1)
	if rerr != nil {
		t.Errorf("transaction.get [txid, 1]: error %d %q; ElectrumX and Fulcrum answer the verbose transaction", rerr.Code, rerr.Message)
	} else {
		var v map[string]any
		if json.Unmarshal(res, &v) != nil || v["txid"] != txid {
			t.Errorf("transaction.get [txid, 1] = %.100s, want the verbose object", res)
		}
	}

	// verbose = 0: the raw hex, as [txid, false] gives.
	res, rerr = c.call("blockchain.transaction.get", txid, 0)
	if rerr != nil {
		t.Errorf("transaction.get [txid, 0]: error %d %q; ElectrumX and Fulcrum answer the raw transaction", rerr.Code, rerr.Message)
	} else if string(res) != `"`+txHex(fx.tx1)+`"` {
		t.Errorf("transaction.get [txid, 0] = %.100s, want the raw hex", res)
	}

	// merkle = 1: {"tx_hash","merkle"}, as [height, pos, true] gives.
	res, rerr = c.call("blockchain.transaction.id_from_pos", 4, 1, 1)
	if rerr != nil {
		t.Errorf("id_from_pos [4, 1, 1]: error %d %q; ElectrumX and Fulcrum answer the merkle form", rerr.Code, rerr.Message)
	} else {
		var m map[string]any
		if json.Unmarshal(res, &m) != nil || m["tx_hash"] != txid || m["merkle"] == nil {
			t.Errorf("id_from_pos [4, 1, 1] = %s, want {tx_hash, merkle}", res)
		}
	}
}
