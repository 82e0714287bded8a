package electrum

import (
	"encoding/json"
	"strconv"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// Hand-written encoders for the answers that grow with a script's size.
// A history or unspent list of 80,000 entries encoded through reflection
// costs tens of milliseconds and a slice of intermediate structs; appending
// the bytes directly costs a fraction of that and allocates once. The
// shapes are those of historyItem and unspentItem, which tests decode the
// answers into.

// hexDigits are the lower-case hex digits.
const hexDigits = "0123456789abcdef"

// appendTxHash appends the hash as a JSON string in the byte-reversed hex
// form the protocol uses for txids.
func appendTxHash(b []byte, h *chainhash.Hash) []byte {
	b = append(b, '"')
	for i := chainhash.HashSize - 1; i >= 0; i-- {
		b = append(b, hexDigits[h[i]>>4], hexDigits[h[i]&0x0f])
	}
	return append(b, '"')
}

// historyEntryLen is the size of an encoded confirmed history entry with a
// seven-digit height, used to size buffers.
const historyEntryLen = len(`{"tx_hash":"","height":1234567},`) + 2*chainhash.HashSize

// appendHistoryItem appends one get_history / get_mempool entry; fee < 0
// leaves the fee out (confirmed entries).
func appendHistoryItem(b []byte, txid *chainhash.Hash, height int32, fee int64) []byte {
	b = append(b, `{"tx_hash":`...)
	b = appendTxHash(b, txid)
	b = append(b, `,"height":`...)
	b = strconv.AppendInt(b, int64(height), 10)
	if fee >= 0 {
		b = append(b, `,"fee":`...)
		b = strconv.AppendInt(b, fee, 10)
	}
	return append(b, '}')
}

// unspentEntryLen is the size of an encoded unspent output with a
// seven-digit height, a four-digit output index and a ten-digit value.
const unspentEntryLen = len(`{"tx_hash":"","tx_pos":1234,"height":1234567,"value":1234567890},`) + 2*chainhash.HashSize

// appendUnspentItem appends one listunspent entry.
func appendUnspentItem(b []byte, txid *chainhash.Hash, vout uint32, height int32, value int64) []byte {
	b = append(b, `{"tx_hash":`...)
	b = appendTxHash(b, txid)
	b = append(b, `,"tx_pos":`...)
	b = strconv.AppendUint(b, uint64(vout), 10)
	b = append(b, `,"height":`...)
	b = strconv.AppendInt(b, int64(height), 10)
	b = append(b, `,"value":`...)
	b = strconv.AppendInt(b, value, 10)
	return append(b, '}')
}

// jsonList builds a JSON array of n items appended by item, sized for
// entries of about per bytes each.
func jsonList(n, per int, item func(b []byte, i int) []byte) json.RawMessage {
	b := make([]byte, 0, 2+n*per)
	b = append(b, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = item(b, i)
	}
	return append(b, ']')
}
