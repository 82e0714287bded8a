package indexers

import (
	"encoding/binary"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// Schema of the Electrum index (docs/ARCHITECTURE.md has the table and the
// reasons). Every key is "Ex", a one-byte table tag, then big-endian
// integers, so key order is numeric order. txpos is height(4) pos(2), a
// transaction's block and index in it: keys in txpos order are in chain
// order (a transaction weighs at least 240 of a block's 4,000,000 weight
// units, so pos fits). A hashX is the first 11 bytes of a script hash.
//
//	"Exv"                                      schema version, uint32
//	"Ext" txpos(6)                       ->    32 x txid(32)
//	      a block's txids in chunks of txChunk keyed by the position of the
//	      chunk's first, fewer in the block's last chunk.
//	"Exl" txpos(6)                       ->    32 x (offset(4) size(4))
//	      the same chunks' places in btcd's stored block (a raw transaction
//	      is one read), apart so that long histories read txids only.
//	"Exi" txid[0:8] txpos(6)             ->    (empty)
//	      txid lookup: seek the prefix, confirm the txid with "Ext".
//	"Exh" hashX(11) height(4)            ->    pos(2) pos(2) ...
//	      per block per script it funds or spends: the positions of those
//	      transactions, ascending, each once; key then value order is chain order.
//	"Exu" hashX(11) height(4) txid(32) vout(4) -> value(8) pos(2)
//	      per unspent output; a spend is a blind delete of the key the input
//	      and btcd's spent output give. pos puts an unspent list in chain order.
//	"Exb" height(4)                      ->    txcount(8) blockhash(32)
//	      txcount: the main chain's transactions up to this block, included.
//	"Exd" height(4)                      ->    undo record (undo.go), for
//	      the last Options.UndoBlocks blocks.
//	"Exz"                                ->    hash(32) height(4, little-endian)
//	      the index tip: the block every other row ends at.
//	"Exs"                                ->    rows(8) bytes(8)
//	      rows and key+value bytes of "Ext", "Exl", "Exi", "Exh", "Exu", "Exb".
var (
	// rowPrefix starts every key of the index.
	rowPrefix = []byte("Ex")

	versionKey = []byte("Exv")

	// tipKey holds the index tip.
	tipKey = []byte("Exz")

	// statsKey holds the index's row count and size.
	statsKey = []byte("Exs")
)

// Table tags, the third byte of every key.
const (
	tagTx   = 't'
	tagLoc  = 'l'
	tagTxid = 'i'
	tagHist = 'h'
	tagUtxo = 'u'
	tagBlk  = 'b'
	tagUndo = 'd'
)

const (
	// schemaVersion is bumped on any change of the layout above; an index of
	// another version is rebuilt.
	schemaVersion = 6

	hashXLen   = 11
	txPosLen   = 6
	txidPrefix = 8

	// txChunk is the number of transactions of an "Ext" row. Chunks cut
	// the rows a block writes for its transactions from one per
	// transaction to one per txChunk, and a read of one transaction
	// copies at most txChunk entries.
	txChunk = 32
	// txEntryLen and locEntryLen are the sizes of a transaction's entries
	// in its "Ext" and "Exl" chunks.
	txEntryLen  = chainhash.HashSize
	locEntryLen = 4 + 4
	// maxBlockTxs is one more than the largest pos a txpos holds.
	maxBlockTxs = 1 << 16

	// pfx is the length of a key's prefix and table tag.
	pfx = 3

	txKeyLen   = pfx + txPosLen
	txidKeyLen = pfx + txidPrefix + txPosLen
	histKeyLen = pfx + hashXLen + 4
	// histPosLen is the size of a position in a history row's value.
	histPosLen = 2
	utxoKeyLen = pfx + hashXLen + 4 + chainhash.HashSize + 4
	utxoValLen = 8 + 2
	blkKeyLen  = pfx + 4
	blkValLen  = 8 + chainhash.HashSize
)

// hashX is the short script hash that keys history and unspent rows.
type hashX [hashXLen]byte

func (s ScriptHash) hashX() hashX {
	var h hashX
	copy(h[:], s[:hashXLen])
	return h
}

// tablePrefix returns the three-byte prefix of a table's keys.
func tablePrefix(tag byte) []byte { return []byte{rowPrefix[0], rowPrefix[1], tag} }

// txPos packs a transaction's position: height in the high bits, pos in
// the low 16. Packed positions order as the chain does.
func txPos(height int32, pos int) uint64 { return uint64(uint32(height))<<16 | uint64(pos) }

// posHeight and posIndex unpack a txPos.
func posHeight(n uint64) int32 { return int32(uint32(n >> 16)) }
func posIndex(n uint64) uint32 { return uint32(n & (maxBlockTxs - 1)) }

func putTxPos(b []byte, n uint64) {
	binary.BigEndian.PutUint32(b[0:4], uint32(n>>16))
	binary.BigEndian.PutUint16(b[4:6], uint16(n))
}

func getTxPos(b []byte) uint64 {
	return uint64(binary.BigEndian.Uint32(b[0:4]))<<16 | uint64(binary.BigEndian.Uint16(b[4:6]))
}

func putPrefix(dst []byte, tag byte) { dst[0], dst[1], dst[2] = rowPrefix[0], rowPrefix[1], tag }

// txKey is the key of the "Ext" chunk holding the transaction at n.
func txKey(dst []byte, n uint64) {
	putPrefix(dst, tagTx)
	putTxPos(dst[pfx:], n&^(txChunk-1))
}

// locKey is the key of the "Exl" chunk holding the transaction at n.
func locKey(dst []byte, n uint64) {
	txKey(dst, n)
	dst[2] = tagLoc
}

// txRow is a transaction's txid and height, from its "Ext" chunk, and its
// place in its block, from its "Exl" chunk when read.
type txRow struct {
	txid   chainhash.Hash
	height int32
	offset uint32
	size   uint32
}

// putLocEntry encodes a transaction's entry of an "Exl" chunk.
func putLocEntry(dst []byte, offset, size uint32) {
	binary.BigEndian.PutUint32(dst[:4], offset)
	binary.BigEndian.PutUint32(dst[4:8], size)
}

// decodeLocEntry sets r's place in its block from the entry of the
// transaction at n in its "Exl" chunk v.
func decodeLocEntry(v []byte, n uint64, r *txRow) bool {
	i := int(n&(txChunk-1)) * locEntryLen
	if len(v)%locEntryLen != 0 || i+locEntryLen > len(v) {
		return false
	}
	r.offset, r.size = binary.BigEndian.Uint32(v[i:]), binary.BigEndian.Uint32(v[i+4:])
	return true
}

// decodeTxEntry returns the entry of the transaction at n from its chunk v.
func decodeTxEntry(v []byte, n uint64) (txRow, bool) {
	var r txRow
	i := int(n&(txChunk-1)) * txEntryLen
	if len(v)%txEntryLen != 0 || i+txEntryLen > len(v) {
		return r, false
	}
	copy(r.txid[:], v[i:i+txEntryLen])
	r.height = posHeight(n)
	return r, true
}

func txidKey(dst []byte, txid *chainhash.Hash, n uint64) {
	putPrefix(dst, tagTxid)
	copy(dst[pfx:pfx+txidPrefix], txid[:txidPrefix])
	putTxPos(dst[pfx+txidPrefix:], n)
}

// histKey is the key of hx's history row of the block at height.
func histKey(dst []byte, hx *hashX, height int32) {
	putPrefix(dst, tagHist)
	copy(dst[pfx:pfx+hashXLen], hx[:])
	binary.BigEndian.PutUint32(dst[pfx+hashXLen:], uint32(height))
}

// histHeight returns the height of a history row's key.
func histHeight(k []byte) int32 { return int32(binary.BigEndian.Uint32(k[pfx+hashXLen:])) }

// histPositions calls fn with the txpos of each entry of the history row
// k, v, in order, until fn returns false. A value that is not a whole
// number of positions yields none: the row is not one the index writes.
func histPositions(k, v []byte, fn func(n uint64) bool) {
	if len(v)%histPosLen != 0 {
		return
	}
	h := histHeight(k)
	for i := 0; i < len(v); i += histPosLen {
		if !fn(txPos(h, int(binary.BigEndian.Uint16(v[i:])))) {
			return
		}
	}
}

// histPrefix returns the key prefix of all history rows of hx.
func histPrefix(hx *hashX) []byte {
	k := make([]byte, pfx+hashXLen)
	putPrefix(k, tagHist)
	copy(k[pfx:], hx[:])
	return k
}

func utxoKey(dst []byte, hx *hashX, height int32, txid *chainhash.Hash, vout uint32) {
	putPrefix(dst, tagUtxo)
	o := pfx
	copy(dst[o:o+hashXLen], hx[:])
	o += hashXLen
	binary.BigEndian.PutUint32(dst[o:o+4], uint32(height))
	copy(dst[o+4:o+36], txid[:])
	binary.BigEndian.PutUint32(dst[o+36:], vout)
}

// utxoPrefix returns the key prefix of all unspent rows of hx.
func utxoPrefix(hx *hashX) []byte {
	k := make([]byte, pfx+hashXLen)
	putPrefix(k, tagUtxo)
	copy(k[pfx:], hx[:])
	return k
}

// utxoRow is a decoded "Exu" row.
type utxoRow struct {
	height int32
	pos    uint16
	txid   chainhash.Hash
	vout   uint32
	value  int64
}

func decodeUtxo(k, v []byte) (utxoRow, bool) {
	var r utxoRow
	if len(k) != utxoKeyLen || len(v) != utxoValLen {
		return r, false
	}
	o := pfx + hashXLen
	r.height = int32(binary.BigEndian.Uint32(k[o : o+4]))
	copy(r.txid[:], k[o+4:o+36])
	r.vout = binary.BigEndian.Uint32(k[o+36:])
	r.value = int64(binary.BigEndian.Uint64(v))
	r.pos = binary.BigEndian.Uint16(v[8:])
	return r, true
}

// putUtxoVal encodes an unspent row's value: the amount and the index of
// the creating transaction in its block.
func putUtxoVal(dst []byte, value int64, pos uint32) {
	binary.BigEndian.PutUint64(dst, uint64(value))
	binary.BigEndian.PutUint16(dst[8:], uint16(pos))
}

func blkKey(height int32) []byte {
	k := make([]byte, blkKeyLen)
	putPrefix(k, tagBlk)
	binary.BigEndian.PutUint32(k[pfx:], uint32(height))
	return k
}

// undoKey is the key of the undo record of the block at height.
func undoKey(height int32) []byte {
	k := make([]byte, blkKeyLen)
	putPrefix(k, tagUndo)
	binary.BigEndian.PutUint32(k[pfx:], uint32(height))
	return k
}

func blkVal(txCount uint64, hash *chainhash.Hash) []byte {
	v := make([]byte, blkValLen)
	binary.BigEndian.PutUint64(v[:8], txCount)
	copy(v[8:], hash[:])
	return v
}

func decodeBlkVal(v []byte) (uint64, chainhash.Hash, bool) {
	var h chainhash.Hash
	if len(v) != blkValLen {
		return 0, h, false
	}
	copy(h[:], v[8:])
	return binary.BigEndian.Uint64(v[:8]), h, true
}

// tipVal encodes an index tip the way btcd's index manager stores it.
func tipVal(hash *chainhash.Hash, height int32) []byte {
	v := make([]byte, chainhash.HashSize+4)
	copy(v, hash[:])
	binary.LittleEndian.PutUint32(v[chainhash.HashSize:], uint32(height))
	return v
}

func decodeTipVal(v []byte) (chainhash.Hash, int32, bool) {
	var h chainhash.Hash
	if len(v) != chainhash.HashSize+4 {
		return h, 0, false
	}
	copy(h[:], v[:chainhash.HashSize])
	return h, int32(binary.LittleEndian.Uint32(v[chainhash.HashSize:])), true
}

// valLen returns the value length of a row of the table key belongs to
// ("Ext" and "Exl" chunks vary: their deletes give their lengths).
func valLen(key []byte) int {
	switch key[2] {
	case tagUtxo:
		return utxoValLen
	case tagBlk:
		return blkValLen
	}
	return 0
}

// sizeStats counts the index's rows and their key and value bytes.
type sizeStats struct {
	Rows, Bytes int64
}

func (s sizeStats) add(d sizeStats) sizeStats {
	return sizeStats{Rows: s.Rows + d.Rows, Bytes: s.Bytes + d.Bytes}
}

func encodeStats(s sizeStats) []byte {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v[:8], uint64(s.Rows))
	binary.BigEndian.PutUint64(v[8:], uint64(s.Bytes))
	return v
}

func decodeStats(v []byte) sizeStats {
	if len(v) != 16 {
		return sizeStats{}
	}
	return sizeStats{Rows: int64(binary.BigEndian.Uint64(v[:8])), Bytes: int64(binary.BigEndian.Uint64(v[8:]))}
}
