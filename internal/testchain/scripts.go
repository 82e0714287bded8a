package testchain

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// ScriptKind says how an output script is spent by the harness, or that it
// is never spent.
type ScriptKind int

const (
	// KindP2SH is OP_HASH160 <hash160(redeem)> OP_EQUAL with redeem script
	// `<n> OP_DROP OP_TRUE`; spent by pushing the redeem script.
	KindP2SH ScriptKind = iota
	// KindP2WSH is OP_0 <sha256(ws)> with witness script `<n> OP_DROP
	// OP_TRUE`; spent by a witness holding the witness script.
	KindP2WSH
	// KindP2SHP2WSH is a P2WSH program nested in P2SH.
	KindP2SHP2WSH
	// KindBareDrop is the bare script `<n> OP_DROP OP_TRUE`, spent with an
	// empty signature script (non-standard).
	KindBareDrop
	// KindBareTrue is the one-byte script OP_TRUE (non-standard).
	KindBareTrue
	// KindBareEqual is `<n> OP_EQUAL`, spent by pushing n (non-standard).
	KindBareEqual
	// KindUnspendable marks scripts the harness never spends: P2PKH and
	// P2WPKH without keys, a taproot output without key, and non-standard
	// scripts no input can satisfy.
	KindUnspendable
	// KindOpReturn is a provably unspendable OP_RETURN data carrier.
	KindOpReturn
)

// Spendable reports whether the harness can spend outputs of this kind.
func (k ScriptKind) Spendable() bool {
	return k <= KindBareEqual
}

// Script is one output script and the data needed to spend it.
type Script struct {
	// PkScript is the output script.
	PkScript []byte
	// Kind says how it is spent.
	Kind ScriptKind
	// SigScript is the signature script of an input spending it.
	SigScript []byte
	// Witness is the witness of an input spending it.
	Witness wire.TxWitness
}

// ScriptPool is a fixed set of output scripts the generator pays to. A small
// pool makes histories collide across many transactions.
type ScriptPool struct {
	// Spendable are the scripts the wallet can spend.
	Spendable []Script
	// Unspendable are scripts paid to but never spent.
	Unspendable []Script
}

// mustScript panics on a script builder error; the scripts built here are
// small constants, so an error is a programming mistake.
func mustScript(b *txscript.ScriptBuilder) []byte {
	s, err := b.Script()
	if err != nil {
		panic(err)
	}
	return s
}

// dropTrue returns `<n> OP_DROP OP_TRUE`, a distinct anyone-can-spend script
// for every n.
func dropTrue(n int64) []byte {
	return mustScript(txscript.NewScriptBuilder().AddInt64(n).
		AddOp(txscript.OP_DROP).AddOp(txscript.OP_TRUE))
}

// pushOnly returns a script pushing data.
func pushOnly(data []byte) []byte {
	return mustScript(txscript.NewScriptBuilder().AddData(data))
}

// NewSpendableScript returns the spendable script of kind k (one of the
// spendable kinds) parameterised by n; distinct n give distinct scripts
// except for KindBareTrue, of which there is only one.
func NewSpendableScript(k ScriptKind, n int64) Script {
	switch k {
	case KindP2SH:
		redeem := dropTrue(n)
		pk := mustScript(txscript.NewScriptBuilder().AddOp(txscript.OP_HASH160).
			AddData(address.Hash160(redeem)).AddOp(txscript.OP_EQUAL))
		return Script{PkScript: pk, Kind: k, SigScript: pushOnly(redeem)}
	case KindP2WSH:
		ws := dropTrue(n)
		h := sha256.Sum256(ws)
		pk := mustScript(txscript.NewScriptBuilder().AddOp(txscript.OP_0).AddData(h[:]))
		return Script{PkScript: pk, Kind: k, Witness: wire.TxWitness{ws}}
	case KindP2SHP2WSH:
		ws := dropTrue(n)
		h := sha256.Sum256(ws)
		program := mustScript(txscript.NewScriptBuilder().AddOp(txscript.OP_0).AddData(h[:]))
		pk := mustScript(txscript.NewScriptBuilder().AddOp(txscript.OP_HASH160).
			AddData(address.Hash160(program)).AddOp(txscript.OP_EQUAL))
		return Script{PkScript: pk, Kind: k, SigScript: pushOnly(program), Witness: wire.TxWitness{ws}}
	case KindBareDrop:
		return Script{PkScript: dropTrue(n), Kind: k}
	case KindBareTrue:
		return Script{PkScript: []byte{txscript.OP_TRUE}, Kind: k}
	case KindBareEqual:
		pk := mustScript(txscript.NewScriptBuilder().AddInt64(n).AddOp(txscript.OP_EQUAL))
		sig := mustScript(txscript.NewScriptBuilder().AddInt64(n))
		return Script{PkScript: pk, Kind: k, SigScript: sig}
	}
	panic("testchain: not a spendable script kind")
}

// newUnspendableScript returns the i-th script the harness pays to but never
// spends.
func newUnspendableScript(i int) Script {
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(i))
	h := sha256.Sum256(seed[:])
	var pk []byte
	switch i % 5 {
	case 0: // P2PKH without a key
		pk = mustScript(txscript.NewScriptBuilder().AddOp(txscript.OP_DUP).
			AddOp(txscript.OP_HASH160).AddData(h[:20]).
			AddOp(txscript.OP_EQUALVERIFY).AddOp(txscript.OP_CHECKSIG))
	case 1: // P2WPKH without a key
		pk = mustScript(txscript.NewScriptBuilder().AddOp(txscript.OP_0).AddData(h[:20]))
	case 2: // taproot output without a key
		pk = mustScript(txscript.NewScriptBuilder().AddOp(txscript.OP_1).AddData(h[:]))
	case 3: // non-standard: fails whatever the input
		pk = mustScript(txscript.NewScriptBuilder().AddData(h[:4]).
			AddOp(txscript.OP_DROP).AddOp(txscript.OP_FALSE))
	default: // malformed: a push running past the end of the script
		pk = append([]byte{txscript.OP_PUSHDATA1, 0x20}, h[:3]...)
	}
	return Script{PkScript: pk, Kind: KindUnspendable}
}

// opReturnScript returns an OP_RETURN output script carrying data.
func opReturnScript(data []byte) []byte {
	return mustScript(txscript.NewScriptBuilder().AddOp(txscript.OP_RETURN).AddData(data))
}

// NewScriptPool returns a pool with spendable scripts of every spendable kind
// (round-robin, parameter n = position+1) and unspendable ones.
func NewScriptPool(spendable, unspendable int) *ScriptPool {
	kinds := []ScriptKind{KindP2SH, KindP2WSH, KindP2SHP2WSH, KindBareDrop, KindBareEqual, KindP2WSH, KindP2SH}
	p := &ScriptPool{}
	for i := 0; i < spendable; i++ {
		k := kinds[i%len(kinds)]
		if i == 3 {
			k = KindBareTrue
		}
		p.Spendable = append(p.Spendable, NewSpendableScript(k, int64(i+1)))
	}
	for i := 0; i < unspendable; i++ {
		p.Unspendable = append(p.Unspendable, newUnspendableScript(i))
	}
	return p
}

// DefaultScriptPool is the small pool used by property tests: few scripts, so
// most script hashes have many transactions.
func DefaultScriptPool() *ScriptPool {
	return NewScriptPool(12, 5)
}
