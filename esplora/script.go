package esplora

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/address/v2/base58"
	"github.com/btcsuite/btcd/address/v2/bech32"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// opNames are the opcode names of Esplora's assembly (rust-bitcoin's), for
// the opcodes whose name is not computed from their value in opName.
var opNames = map[byte]string{
	txscript.OP_PUSHDATA1: "OP_PUSHDATA1", txscript.OP_PUSHDATA2: "OP_PUSHDATA2",
	txscript.OP_PUSHDATA4: "OP_PUSHDATA4", txscript.OP_1NEGATE: "OP_PUSHNUM_NEG1",
	txscript.OP_RESERVED: "OP_RESERVED", txscript.OP_NOP: "OP_NOP", txscript.OP_VER: "OP_VER",
	txscript.OP_IF: "OP_IF", txscript.OP_NOTIF: "OP_NOTIF", txscript.OP_VERIF: "OP_VERIF",
	txscript.OP_VERNOTIF: "OP_VERNOTIF", txscript.OP_ELSE: "OP_ELSE", txscript.OP_ENDIF: "OP_ENDIF",
	txscript.OP_VERIFY: "OP_VERIFY", txscript.OP_RETURN: "OP_RETURN",
	txscript.OP_TOALTSTACK: "OP_TOALTSTACK", txscript.OP_FROMALTSTACK: "OP_FROMALTSTACK",
	txscript.OP_2DROP: "OP_2DROP", txscript.OP_2DUP: "OP_2DUP", txscript.OP_3DUP: "OP_3DUP",
	txscript.OP_2OVER: "OP_2OVER", txscript.OP_2ROT: "OP_2ROT", txscript.OP_2SWAP: "OP_2SWAP",
	txscript.OP_IFDUP: "OP_IFDUP", txscript.OP_DEPTH: "OP_DEPTH", txscript.OP_DROP: "OP_DROP",
	txscript.OP_DUP: "OP_DUP", txscript.OP_NIP: "OP_NIP", txscript.OP_OVER: "OP_OVER",
	txscript.OP_PICK: "OP_PICK", txscript.OP_ROLL: "OP_ROLL", txscript.OP_ROT: "OP_ROT",
	txscript.OP_SWAP: "OP_SWAP", txscript.OP_TUCK: "OP_TUCK", txscript.OP_CAT: "OP_CAT",
	txscript.OP_SUBSTR: "OP_SUBSTR", txscript.OP_LEFT: "OP_LEFT", txscript.OP_RIGHT: "OP_RIGHT",
	txscript.OP_SIZE: "OP_SIZE", txscript.OP_INVERT: "OP_INVERT", txscript.OP_AND: "OP_AND",
	txscript.OP_OR: "OP_OR", txscript.OP_XOR: "OP_XOR", txscript.OP_EQUAL: "OP_EQUAL",
	txscript.OP_EQUALVERIFY: "OP_EQUALVERIFY", txscript.OP_RESERVED1: "OP_RESERVED1",
	txscript.OP_RESERVED2: "OP_RESERVED2", txscript.OP_1ADD: "OP_1ADD", txscript.OP_1SUB: "OP_1SUB",
	txscript.OP_2MUL: "OP_2MUL", txscript.OP_2DIV: "OP_2DIV", txscript.OP_NEGATE: "OP_NEGATE",
	txscript.OP_ABS: "OP_ABS", txscript.OP_NOT: "OP_NOT", txscript.OP_0NOTEQUAL: "OP_0NOTEQUAL",
	txscript.OP_ADD: "OP_ADD", txscript.OP_SUB: "OP_SUB", txscript.OP_MUL: "OP_MUL",
	txscript.OP_DIV: "OP_DIV", txscript.OP_MOD: "OP_MOD", txscript.OP_LSHIFT: "OP_LSHIFT",
	txscript.OP_RSHIFT: "OP_RSHIFT", txscript.OP_BOOLAND: "OP_BOOLAND", txscript.OP_BOOLOR: "OP_BOOLOR",
	txscript.OP_NUMEQUAL: "OP_NUMEQUAL", txscript.OP_NUMEQUALVERIFY: "OP_NUMEQUALVERIFY",
	txscript.OP_NUMNOTEQUAL: "OP_NUMNOTEQUAL", txscript.OP_LESSTHAN: "OP_LESSTHAN",
	txscript.OP_GREATERTHAN: "OP_GREATERTHAN", txscript.OP_LESSTHANOREQUAL: "OP_LESSTHANOREQUAL",
	txscript.OP_GREATERTHANOREQUAL: "OP_GREATERTHANOREQUAL", txscript.OP_MIN: "OP_MIN",
	txscript.OP_MAX: "OP_MAX", txscript.OP_WITHIN: "OP_WITHIN", txscript.OP_RIPEMD160: "OP_RIPEMD160",
	txscript.OP_SHA1: "OP_SHA1", txscript.OP_SHA256: "OP_SHA256", txscript.OP_HASH160: "OP_HASH160",
	txscript.OP_HASH256: "OP_HASH256", txscript.OP_CODESEPARATOR: "OP_CODESEPARATOR",
	txscript.OP_CHECKSIG: "OP_CHECKSIG", txscript.OP_CHECKSIGVERIFY: "OP_CHECKSIGVERIFY",
	txscript.OP_CHECKMULTISIG: "OP_CHECKMULTISIG", txscript.OP_CHECKMULTISIGVERIFY: "OP_CHECKMULTISIGVERIFY",
	txscript.OP_NOP1: "OP_NOP1", txscript.OP_CHECKLOCKTIMEVERIFY: "OP_CLTV",
	txscript.OP_CHECKSEQUENCEVERIFY: "OP_CSV", txscript.OP_CHECKSIGADD: "OP_CHECKSIGADD",
	txscript.OP_INVALIDOPCODE: "OP_INVALIDOPCODE",
}

// opName returns the name Esplora shows for an opcode.
func opName(op byte) string {
	switch {
	case op == txscript.OP_0:
		return "OP_0"
	case op <= txscript.OP_DATA_75:
		return "OP_PUSHBYTES_" + strconv.Itoa(int(op))
	case op >= txscript.OP_1 && op <= txscript.OP_16:
		return "OP_PUSHNUM_" + strconv.Itoa(int(op-txscript.OP_1+1))
	case op >= txscript.OP_NOP4 && op <= txscript.OP_NOP10:
		return "OP_NOP" + strconv.Itoa(int(op-txscript.OP_NOP1+1))
	}
	if n, ok := opNames[op]; ok {
		return n
	}
	return "OP_RETURN_" + strconv.Itoa(int(op))
}

// scriptAsm renders a script as Esplora's scriptpubkey_asm and scriptsig_asm
// do: opcode names separated by spaces, pushed data in hex after its push
// opcode, and "<unexpected end>" or "<push past end>" where the script
// stops parsing (the rest is not shown).
func scriptAsm(script []byte) string {
	var b strings.Builder
	for i := 0; i < len(script); {
		op := script[i]
		i++
		n := 0
		switch {
		case op <= txscript.OP_DATA_75:
			n = int(op)
		case op == txscript.OP_PUSHDATA1 || op == txscript.OP_PUSHDATA2 || op == txscript.OP_PUSHDATA4:
			size := map[byte]int{txscript.OP_PUSHDATA1: 1, txscript.OP_PUSHDATA2: 2, txscript.OP_PUSHDATA4: 4}[op]
			if len(script)-i < size {
				b.WriteString("<unexpected end>")
				return b.String()
			}
			var l [8]byte
			copy(l[:], script[i:i+size])
			v := binary.LittleEndian.Uint64(l[:])
			i += size
			if v > uint64(len(script)) {
				n = len(script) + 1 // past the end, whatever the exact length
			} else {
				n = int(v)
			}
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(opName(op))
		if n > 0 {
			b.WriteByte(' ')
			if n > len(script)-i {
				b.WriteString("<push past end>")
				return b.String()
			}
			b.WriteString(hex.EncodeToString(script[i : i+n]))
			i += n
		}
	}
	return b.String()
}

// Script shapes, tested byte by byte as Esplora tests them.
func isP2PK(s []byte) bool {
	return (len(s) == 67 && s[0] == txscript.OP_DATA_65 && s[66] == txscript.OP_CHECKSIG) ||
		(len(s) == 35 && s[0] == txscript.OP_DATA_33 && s[34] == txscript.OP_CHECKSIG)
}

func isP2PKH(s []byte) bool {
	return len(s) == 25 && s[0] == txscript.OP_DUP && s[1] == txscript.OP_HASH160 &&
		s[2] == txscript.OP_DATA_20 && s[23] == txscript.OP_EQUALVERIFY && s[24] == txscript.OP_CHECKSIG
}

func isP2SH(s []byte) bool {
	return len(s) == 23 && s[0] == txscript.OP_HASH160 && s[1] == txscript.OP_DATA_20 && s[22] == txscript.OP_EQUAL
}

func isP2WPKH(s []byte) bool {
	return len(s) == 22 && s[0] == txscript.OP_0 && s[1] == txscript.OP_DATA_20
}
func isP2WSH(s []byte) bool {
	return len(s) == 34 && s[0] == txscript.OP_0 && s[1] == txscript.OP_DATA_32
}
func isP2TR(s []byte) bool {
	return len(s) == 34 && s[0] == txscript.OP_1 && s[1] == txscript.OP_DATA_32
}

func isAnchor(s []byte) bool {
	return bytes.Equal(s, []byte{txscript.OP_1, txscript.OP_DATA_2, 0x4e, 0x73})
}

// isBareMultisig is the shape `OP_m ... OP_n OP_CHECKMULTISIG` with
// 1 <= m <= n <= 15; the keys are not checked.
func isBareMultisig(s []byte) bool {
	n := len(s)
	return n >= 37 && s[n-1] == txscript.OP_CHECKMULTISIG &&
		s[n-2] >= txscript.OP_1 && s[n-2] <= txscript.OP_15 &&
		s[0] >= txscript.OP_1 && s[0] <= s[n-2]
}

// isProvablyUnspendable reports a script whose first opcode fails any
// execution: OP_RETURN and the reserved, disabled and undefined opcodes.
func isProvablyUnspendable(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	switch op := s[0]; {
	case op == txscript.OP_RETURN, op == txscript.OP_RESERVED, op == txscript.OP_RESERVED1,
		op == txscript.OP_RESERVED2, op == txscript.OP_VER, op == txscript.OP_VERIF,
		op == txscript.OP_VERNOTIF, op >= txscript.OP_CHECKSIGADD:
		return true
	case op >= txscript.OP_CAT && op <= txscript.OP_RIGHT, op >= txscript.OP_INVERT && op <= txscript.OP_XOR,
		op == txscript.OP_2MUL, op == txscript.OP_2DIV, op >= txscript.OP_MUL && op <= txscript.OP_RSHIFT:
		return true
	}
	return false
}

// scriptType returns Esplora's scriptpubkey_type (the names mempool.space's
// electrs uses, a superset of Blockstream's).
func scriptType(s []byte) string {
	switch {
	case len(s) == 0:
		return "empty"
	case s[0] == txscript.OP_RETURN:
		return "op_return"
	case isP2PK(s):
		return "p2pk"
	case isP2PKH(s):
		return "p2pkh"
	case isP2SH(s):
		return "p2sh"
	case isP2WPKH(s):
		return "v0_p2wpkh"
	case isP2WSH(s):
		return "v0_p2wsh"
	case isP2TR(s):
		return "v1_p2tr"
	case isAnchor(s):
		return "anchor"
	case isProvablyUnspendable(s):
		return "provably_unspendable"
	case isBareMultisig(s):
		return "multisig"
	}
	return "unknown"
}

// witnessProgram returns the version and program of a segwit output script
// (a version opcode and one push of 2 to 40 bytes), ok false otherwise.
func witnessProgram(s []byte) (version byte, program []byte, ok bool) {
	if len(s) < 4 || len(s) > 42 || int(s[1]) != len(s)-2 || s[1] < txscript.OP_DATA_2 || s[1] > txscript.OP_DATA_40 {
		return 0, nil, false
	}
	switch {
	case s[0] == txscript.OP_0:
		return 0, s[2:], true
	case s[0] >= txscript.OP_1 && s[0] <= txscript.OP_16:
		return s[0] - txscript.OP_1 + 1, s[2:], true
	}
	return 0, nil, false
}

// scriptAddress returns the address of an output script on the network, or
// "" for scripts without one (P2PK, bare multisig, data, non-standard):
// base58 for P2PKH and P2SH, bech32 for version 0 programs of 20 or 32
// bytes, bech32m for programs of later versions.
func scriptAddress(s []byte, params *chaincfg.Params) string {
	switch {
	case isP2PKH(s):
		return base58.CheckEncode(s[3:23], params.PubKeyHashAddrID)
	case isP2SH(s):
		return base58.CheckEncode(s[2:22], params.ScriptHashAddrID)
	}
	version, program, ok := witnessProgram(s)
	if !ok || (version == 0 && len(program) != 20 && len(program) != 32) {
		return ""
	}
	conv, err := bech32.ConvertBits(program, 8, 5, true)
	if err != nil {
		return ""
	}
	data := append([]byte{version}, conv...)
	var addr string
	if version == 0 {
		addr, err = bech32.Encode(params.Bech32HRPSegwit, data)
	} else {
		addr, err = bech32.EncodeM(params.Bech32HRPSegwit, data)
	}
	if err != nil {
		return ""
	}
	return addr
}

// innerScripts returns the redeem script of a P2SH spend (the last push of
// the signature script) and the witness script of a P2WSH, P2SH-P2WSH or
// taproot script-path spend, as Esplora shows them in
// inner_redeemscript_asm and inner_witnessscript_asm.
func innerScripts(in *wire.TxIn, prevScript []byte) (redeem, witnessScript []byte, hasRedeem, hasWitness bool) {
	if isP2SH(prevScript) {
		redeem, hasRedeem = lastPush(in.SignatureScript)
	}
	w := in.Witness
	switch {
	case isP2TR(prevScript):
		if len(w) == 0 {
			return
		}
		// The script is second from last, third when the last item is
		// an annex (BIP 341).
		pos := 2
		if len(w) >= 2 && len(w[len(w)-1]) > 0 && w[len(w)-1][0] == txscript.TaprootAnnexTag {
			pos = 3
		}
		if len(w) >= pos {
			witnessScript, hasWitness = w[len(w)-pos], true
		}
	case isP2WSH(prevScript) || (hasRedeem && isP2WSH(redeem)):
		if len(w) > 0 {
			witnessScript, hasWitness = w[len(w)-1], true
		}
	}
	return
}

// lastPush returns the data of the script's last opcode when it is a data
// push (OP_0 pushes nothing); false when it is another opcode or the script
// does not parse.
func lastPush(script []byte) ([]byte, bool) {
	tok := txscript.MakeScriptTokenizer(0, script)
	var data []byte
	var isPush bool
	for tok.Next() {
		op := tok.Opcode()
		isPush = op <= txscript.OP_PUSHDATA4
		data = tok.Data()
	}
	if tok.Err() != nil || !isPush {
		return nil, false
	}
	if data == nil {
		data = []byte{}
	}
	return data, true
}

// isSpendable reports whether an output can ever be spent: Esplora never
// looks for the spender of a provably unspendable one.
func isSpendable(pkScript []byte) bool { return !isProvablyUnspendable(pkScript) }
