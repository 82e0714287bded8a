package chaingen

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/txscript/v2"
)

// Kind is the type of an output script.
type Kind uint8

const (
	// P2WPKH is OP_0 <hash160(pubkey)>, spent by a witness [sig, pubkey].
	P2WPKH Kind = iota
	// P2PKH is OP_DUP OP_HASH160 <hash160(pubkey)> OP_EQUALVERIFY
	// OP_CHECKSIG, spent by the signature script <sig> <pubkey>.
	P2PKH
	// P2SHP2WPKH is P2SH wrapping a P2WPKH program (the common P2SH on
	// mainnet): signature script <OP_0 <hash160(pubkey)>>, witness
	// [sig, pubkey].
	P2SHP2WPKH
	// P2SHMultisig is P2SH wrapping a 2-of-3 bare multisig redeem script,
	// spent by OP_0 <sig> <sig> <redeem>.
	P2SHMultisig
	// P2TR is OP_1 <32-byte output key>, key-path spent by a witness
	// holding a 64-byte signature.
	P2TR
	// P2WSH is OP_0 <sha256(2-of-3 multisig)>, spent by a witness
	// [<>, sig, sig, witness script].
	P2WSH
	// BareMultisig is a bare 1-of-2 OP_CHECKMULTISIG output, spent by
	// OP_0 <sig>.
	BareMultisig
	// OpReturn is an OP_RETURN data carrier: unspendable, never reused.
	OpReturn
	// NumKinds is the number of kinds.
	NumKinds
)

var kindNames = [NumKinds]string{"p2wpkh", "p2pkh", "p2sh-p2wpkh", "p2sh-multisig", "p2tr", "p2wsh", "bare-multisig", "op-return"}

// String returns the kind's name as chain.json spells it.
func (k Kind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return "unknown"
}

// pkScriptLen is the length of the output script of each kind (OP_RETURN
// scripts vary).
var pkScriptLen = [NumKinds]int{22, 25, 23, 23, 34, 34, 71, 0}

// spendSize is the serialized size of the spending data of an input of each
// kind: signature script bytes (with its length prefix) and witness bytes
// (with the item count), used to estimate block weight.
var spendSize = [NumKinds]struct{ sigScript, witness int }{
	P2WPKH:       {1, 1 + 1 + 72 + 1 + 33},
	P2PKH:        {1 + 1 + 72 + 1 + 33, 1},
	P2SHP2WPKH:   {1 + 23, 1 + 1 + 72 + 1 + 33},
	P2SHMultisig: {3 + 1 + 2*73 + 2 + multisig2of3Len, 1},
	P2TR:         {1, 1 + 1 + 64},
	P2WSH:        {1, 1 + 1 + 2*73 + 1 + multisig2of3Len},
	BareMultisig: {1 + 1 + 73, 1},
}

// sigOpCost is the signature operation cost (BIP 141 units) of spending an
// input of each kind, and legacySigOps the legacy count of each kind's output
// script; together they bound a block's sig op cost.
var (
	sigOpCost    = [NumKinds]int{P2WPKH: 1, P2SHP2WPKH: 1, P2SHMultisig: 3 * 4, P2WSH: 3}
	legacySigOps = [NumKinds]int{P2PKH: 1, BareMultisig: 20}
)

const multisig2of3Len = 1 + 3*34 + 2

// dummySig is a DER-shaped 72-byte ECDSA signature with SIGHASH_ALL, and
// dummySchnorr a 64-byte Schnorr signature: well-formed, never valid. The
// chain is accepted without script validation (see doc.go).
var dummySig, dummySchnorr = func() ([]byte, []byte) {
	r := sha256.Sum256([]byte("chaingen dummy r"))
	s := sha256.Sum256([]byte("chaingen dummy s"))
	r[0] |= 0x80 // a 33-byte r: leading zero pad
	s[0] = s[0]&0x7f | 0x01
	sig := []byte{0x30, 0x45, 0x02, 0x21, 0x00}
	sig = append(sig, r[:]...)
	sig = append(sig, 0x02, 0x20)
	sig = append(sig, s[:]...)
	sig = append(sig, byte(txscript.SigHashAll))
	return sig, append(append([]byte(nil), r[:]...), s[:]...)
}()

// keyOf returns the 32 bytes of key material of script id under seedKey:
// every script's public keys and hashes derive from it, so spending data can
// be recomputed from the id alone.
func keyOf(seedKey *[32]byte, id uint32) [32]byte {
	var buf [36]byte
	copy(buf[:], seedKey[:])
	binary.LittleEndian.PutUint32(buf[32:], id)
	return sha256.Sum256(buf[:])
}

// pubKey writes the i-th 33-byte compressed-format public key of key to dst.
// It is not a point on the curve; nothing checks that without validating
// signatures.
func pubKey(dst []byte, key *[32]byte, i byte) {
	dst[0] = 0x02 | key[0]&1
	copy(dst[1:33], key[:])
	dst[32] ^= i
}

// appendMultisig appends `m <pk0>..<pk(n-1)> n OP_CHECKMULTISIG` to dst.
func appendMultisig(dst []byte, key *[32]byte, m, n byte) []byte {
	dst = append(dst, txscript.OP_1-1+m)
	var pk [33]byte
	for i := byte(0); i < n; i++ {
		pubKey(pk[:], key, i)
		dst = append(dst, txscript.OP_DATA_33)
		dst = append(dst, pk[:]...)
	}
	return append(dst, txscript.OP_1-1+n, txscript.OP_CHECKMULTISIG)
}

// appendPkScript appends the output script of kind k (not OpReturn) with key
// material key to dst.
func appendPkScript(dst []byte, k Kind, key *[32]byte) []byte {
	var pk [33]byte
	switch k {
	case P2WPKH:
		pubKey(pk[:], key, 0)
		dst = append(dst, txscript.OP_0, txscript.OP_DATA_20)
		return append(dst, address.Hash160(pk[:])...)
	case P2PKH:
		pubKey(pk[:], key, 0)
		dst = append(dst, txscript.OP_DUP, txscript.OP_HASH160, txscript.OP_DATA_20)
		dst = append(dst, address.Hash160(pk[:])...)
		return append(dst, txscript.OP_EQUALVERIFY, txscript.OP_CHECKSIG)
	case P2SHP2WPKH, P2SHMultisig:
		var buf [multisig2of3Len]byte
		redeem := appendRedeem(buf[:0], k, key)
		dst = append(dst, txscript.OP_HASH160, txscript.OP_DATA_20)
		dst = append(dst, address.Hash160(redeem)...)
		return append(dst, txscript.OP_EQUAL)
	case P2TR:
		dst = append(dst, txscript.OP_1, txscript.OP_DATA_32)
		return append(dst, key[:]...)
	case P2WSH:
		var buf [multisig2of3Len]byte
		h := sha256.Sum256(appendMultisig(buf[:0], key, 2, 3))
		dst = append(dst, txscript.OP_0, txscript.OP_DATA_32)
		return append(dst, h[:]...)
	case BareMultisig:
		return appendMultisig(dst, key, 1, 2)
	}
	panic("chaingen: no output script for kind " + k.String())
}

// appendRedeem appends the P2SH redeem script of kind k to dst.
func appendRedeem(dst []byte, k Kind, key *[32]byte) []byte {
	if k == P2SHMultisig {
		return appendMultisig(dst, key, 2, 3)
	}
	var pk [33]byte
	pubKey(pk[:], key, 0)
	dst = append(dst, txscript.OP_0, txscript.OP_DATA_20)
	return append(dst, address.Hash160(pk[:])...)
}

// appendPush appends a canonical push of data (at most 255 bytes) to dst.
func appendPush(dst, data []byte) []byte {
	if len(data) < txscript.OP_PUSHDATA1 {
		dst = append(dst, byte(len(data)))
	} else {
		dst = append(dst, txscript.OP_PUSHDATA1, byte(len(data)))
	}
	return append(dst, data...)
}

// spendData returns the signature script and witness items of an input
// spending a script of kind k with key material key. Bytes it needs are taken
// from a; witness items are appended to wit (which has room for four).
func spendData(a *arena, k Kind, key *[32]byte, wit [][]byte) ([]byte, [][]byte) {
	switch k {
	case P2WPKH:
		pk := a.alloc(33)
		pubKey(pk, key, 0)
		return nil, append(wit, dummySig, pk)
	case P2PKH:
		ss := a.alloc(1 + 72 + 1 + 33)[:0]
		ss = appendPush(ss, dummySig)
		ss = append(ss, txscript.OP_DATA_33)
		pubKey(ss[len(ss):len(ss)+33], key, 0)
		return ss[:len(ss)+33], nil
	case P2SHP2WPKH:
		ss := a.alloc(1 + 22 + 33)
		ss[0] = txscript.OP_DATA_22
		appendRedeem(ss[1:1], P2SHP2WPKH, key)
		pk := ss[23:]
		pubKey(pk, key, 0)
		return ss[:23:23], append(wit, dummySig, pk)
	case P2SHMultisig:
		ss := a.alloc(spendSize[P2SHMultisig].sigScript)[:0]
		ss = append(ss, txscript.OP_0)
		ss = appendPush(ss, dummySig)
		ss = appendPush(ss, dummySig)
		ss = append(ss, txscript.OP_PUSHDATA1, multisig2of3Len)
		ss = appendMultisig(ss, key, 2, 3)
		return ss, nil
	case P2TR:
		return nil, append(wit, dummySchnorr)
	case P2WSH:
		ws := appendMultisig(a.alloc(multisig2of3Len)[:0], key, 2, 3)
		return nil, append(wit, []byte{}, dummySig, dummySig, ws)
	case BareMultisig:
		ss := a.alloc(1 + 73)[:0]
		ss = append(ss, txscript.OP_0)
		return appendPush(ss, dummySig), nil
	}
	panic("chaingen: cannot spend kind " + k.String())
}

// arena hands out byte slices carved from large chunks, so building a block
// does not allocate per input or output. Slices stay valid for as long as
// anything references them.
type arena struct {
	buf []byte
}

const arenaChunk = 256 << 10

func (a *arena) alloc(n int) []byte {
	if len(a.buf)+n > cap(a.buf) {
		a.buf = make([]byte, 0, max(arenaChunk, n))
	}
	s := a.buf[len(a.buf) : len(a.buf)+n : len(a.buf)+n]
	a.buf = a.buf[:len(a.buf)+n]
	return s
}
