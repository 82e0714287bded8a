package indexers

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// ScriptHash is the single SHA-256 of an output script, in internal byte
// order. The Electrum protocol shows it byte-reversed in hex (String).
type ScriptHash [32]byte

// ScriptHashFromScript returns the script hash of pkScript.
func ScriptHashFromScript(pkScript []byte) ScriptHash { return ScriptHash(sha256.Sum256(pkScript)) }

// String returns the Electrum form: the hash byte-reversed, in hex.
func (s ScriptHash) String() string { return chainhash.Hash(s).String() }

// ParseScriptHash parses the Electrum hex form of a script hash (64 hex
// characters, byte-reversed).
func ParseScriptHash(s string) (ScriptHash, error) {
	var h chainhash.Hash
	if err := chainhash.DecodeStrict(&h, s); err != nil {
		return ScriptHash{}, fmt.Errorf("invalid script hash %q", s)
	}
	return ScriptHash(h), nil
}

// Tip identifies the block an answer was read at.
type Tip struct {
	Hash   chainhash.Hash
	Height int32
}

// HistoryEntry is one confirmed transaction touching a script.
type HistoryEntry struct {
	TxHash chainhash.Hash
	Height int32
}

// Unspent is one confirmed unspent output paying to a script.
type Unspent struct {
	TxHash chainhash.Hash
	Vout   uint32
	Height int32
	Value  int64
}

// TxLocation is where a confirmed transaction sits in the main chain.
type TxLocation struct {
	Height    int32
	Pos       uint32
	BlockHash chainhash.Hash
}

var (
	// ErrHistoryTooLarge is returned when an answer would hold more entries
	// than the caller's limit; the caller turns it into a protocol error
	// rather than a partial answer.
	ErrHistoryTooLarge = errors.New("history too large")

	// ErrNotFound is returned for a height, position or transaction the
	// index does not hold.
	ErrNotFound = errors.New("not found")
)
