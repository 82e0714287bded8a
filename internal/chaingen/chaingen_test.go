package chaingen

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// testShape is DefaultShape scaled down so a small chain reaches full blocks
// and has heavy scripts.
func testShape() Shape {
	s := DefaultShape()
	s.TxsPerBlock = 1000
	s.RampBlocks = 3
	s.RampPool = 3000
	s.PopularScripts = 200
	s.SampleScripts = 2000
	return s
}

// testTxs is the size of the test chain; smaller with -short.
func testTxs() int {
	if testing.Short() {
		return 8000
	}
	return 20000
}

func generate(t *testing.T, workers int) (string, *Summary) {
	t.Helper()
	dir := t.TempDir()
	s, err := Generate(Options{Dir: dir, Seed: 7, Txs: testTxs(), Shape: testShape(), Workers: workers, UtxoCacheMiB: 64})
	if err != nil {
		t.Fatal(err)
	}
	return dir, s
}

// openChain opens the chain in dir's database with the given checkpoints.
func openChain(t *testing.T, dbPath string, create bool, checkpoints []chaincfg.Checkpoint) *blockchain.BlockChain {
	t.Helper()
	params, err := Params("simnet")
	if err != nil {
		t.Fatal(err)
	}
	var db database.DB
	if create {
		db, err = database.Create("ffldb", dbPath, params.Net)
	} else {
		db, err = database.Open("ffldb", dbPath, params.Net)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	chain, err := blockchain.New(&blockchain.Config{
		DB: db, ChainParams: params, TimeSource: blockchain.NewMedianTime(),
		Checkpoints: checkpoints, UtxoCacheMaxSize: 64 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	return chain
}

func TestGenerate(t *testing.T) {
	dir, sum := generate(t, 2)
	t.Logf("%d blocks (%d warm-up), %d txs, %d scripts, same-block share %.3f, top %+v",
		sum.Blocks, sum.WarmupBlocks, sum.Transactions, sum.DistinctScripts, sum.SameBlockShare, sum.TopScripts[:3])
	if sum.NonCoinbaseTxs != testTxs() {
		t.Fatalf("%d transactions, want %d", sum.NonCoinbaseTxs, testTxs())
	}
	tip, err := chainhash.NewHashFromStr(sum.TipHash)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("deterministic", func(t *testing.T) {
		// One worker instead of two: parallelism must not change anything.
		dir2, sum2 := generate(t, 1)
		if sum2.TipHash != sum.TipHash {
			t.Fatalf("tips differ: %s, %s", sum.TipHash, sum2.TipHash)
		}
		for _, name := range []string{BlocksFile, ScriptsFile} {
			a, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir2, name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Fatalf("%s differs between runs", name)
			}
		}
	})

	t.Run("reopen", func(t *testing.T) {
		chain := openChain(t, DBPath(dir, "simnet"), false, nil)
		snap := chain.BestSnapshot()
		if snap.Hash != *tip || snap.Height != sum.TipHeight || int(snap.TotalTxns) != sum.Transactions+1 {
			t.Fatalf("reopened at %v height %d with %d txs, want %v %d %d",
				snap.Hash, snap.Height, snap.TotalTxns, tip, sum.TipHeight, sum.Transactions+1)
		}
		// btcd wrote the spend journal of every block although it did not
		// validate scripts.
		block, err := chain.BlockByHash(tip)
		if err != nil {
			t.Fatal(err)
		}
		stxos, err := chain.FetchSpendJournal(block)
		if err != nil {
			t.Fatal(err)
		}
		inputs := 0
		for _, tx := range block.Transactions()[1:] {
			inputs += len(tx.MsgTx().TxIn)
		}
		if inputs == 0 || len(stxos) != inputs {
			t.Fatalf("spend journal of the tip has %d entries for %d inputs", len(stxos), inputs)
		}
	})

	t.Run("replay", func(t *testing.T) {
		// A fresh btcd with a checkpoint at the tip accepts the blocks
		// with every check but scripts.
		cp := []chaincfg.Checkpoint{{Height: sum.TipHeight, Hash: tip}}
		chain := openChain(t, filepath.Join(t.TempDir(), dbName), true, cp)
		err := ReadBlocks(filepath.Join(dir, BlocksFile), func(b *btcutil.Block) error {
			_, orphan, err := chain.ProcessBlock(b, blockchain.BFNone)
			if err == nil && orphan {
				err = errors.New("orphan")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if snap := chain.BestSnapshot(); snap.Hash != *tip {
			t.Fatalf("replay ends at %v height %d, want %v", snap.Hash, snap.Height, tip)
		}
	})

	t.Run("unsigned", func(t *testing.T) {
		// Without the checkpoint btcd runs the scripts and rejects the
		// first block with spends: the checkpoint is required.
		chain := openChain(t, filepath.Join(t.TempDir(), dbName), true, nil)
		var rejected error
		err := ReadBlocks(filepath.Join(dir, BlocksFile), func(b *btcutil.Block) error {
			if _, _, err := chain.ProcessBlock(b, blockchain.BFNone); err != nil {
				rejected = err
				return err
			}
			return nil
		})
		var rerr blockchain.RuleError
		if !errors.As(err, &rerr) || rerr.ErrorCode != blockchain.ErrScriptValidation {
			t.Fatalf("replay without checkpoint: %v", rejected)
		}
		if h := chain.BestSnapshot().Height; h != int32(sum.WarmupBlocks) {
			t.Fatalf("rejected after height %d, want the first block after %d warm-up blocks", h, sum.WarmupBlocks)
		}
	})

	t.Run("shape", func(t *testing.T) {
		checkShape(t, dir, sum)
	})
}

// checkShape recomputes script statistics from blocks.dat and checks them
// against chain.json, scripts.txt and the shape's targets.
func checkShape(t *testing.T, dir string, sum *Summary) {
	type stat struct{ history, unspent int }
	scripts := make(map[string]*stat)
	utxos := make(map[wire.OutPoint]string)
	var txs, inputs, sameBlock int
	var kinds [NumKinds]int
	err := ReadBlocks(filepath.Join(dir, BlocksFile), func(b *btcutil.Block) error {
		inBlock := make(map[chainhash.Hash]bool)
		for i, tx := range b.Transactions() {
			touched := make(map[string]bool)
			for _, in := range tx.MsgTx().TxIn {
				if i == 0 {
					break
				}
				sh, ok := utxos[in.PreviousOutPoint]
				if !ok {
					t.Fatalf("block %d spends unknown %v", b.Height(), in.PreviousOutPoint)
				}
				delete(utxos, in.PreviousOutPoint)
				scripts[sh].unspent--
				touched[sh] = true
				inputs++
				if inBlock[in.PreviousOutPoint.Hash] {
					sameBlock++
				}
			}
			for vout, out := range tx.MsgTx().TxOut {
				if i > 0 {
					kinds[kindOf(out.PkScript)]++
				}
				if len(out.PkScript) > 0 && out.PkScript[0] == 0x6a { // OP_RETURN
					continue
				}
				sh := ElectrumScriptHash(out.PkScript)
				if scripts[sh] == nil {
					scripts[sh] = &stat{}
				}
				scripts[sh].unspent++
				touched[sh] = true
				utxos[wire.OutPoint{Hash: *tx.Hash(), Index: uint32(vout)}] = sh
			}
			for sh := range touched {
				scripts[sh].history++
			}
			inBlock[*tx.Hash()] = true
			if i > 0 {
				txs++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// chain.json agrees with the blocks.
	if len(scripts) != sum.DistinctScripts || inputs != sum.Inputs || sameBlock != sum.SameBlockInputs || len(utxos) != sum.UnspentOutputs {
		t.Fatalf("blocks have %d scripts, %d inputs (%d same-block), %d unspent; chain.json says %d, %d (%d), %d",
			len(scripts), inputs, sameBlock, len(utxos), sum.DistinctScripts, sum.Inputs, sum.SameBlockInputs, sum.UnspentOutputs)
	}
	for _, top := range sum.TopScripts {
		st := scripts[top.ScriptHash]
		if st == nil || st.history != int(top.History) || st.unspent != int(top.Unspent) {
			t.Fatalf("top script %s: blocks say %+v, chain.json %+v", top.ScriptHash, st, top)
		}
	}

	// scripts.txt: the longest histories first, then a sample, every line
	// a script of the chain with its statistics.
	f, err := os.Open(filepath.Join(dir, ScriptsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	prev := math.MaxInt
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		fields := strings.Fields(sc.Text())
		h, _ := strconv.Atoi(fields[1])
		u, _ := strconv.Atoi(fields[2])
		st := scripts[fields[0]]
		if len(fields) != 4 || st == nil || st.history != h || st.unspent != u {
			t.Fatalf("scripts.txt line %q: blocks say %+v", sc.Text(), st)
		}
		if lines < testShape().TopScripts {
			if h > prev {
				t.Fatalf("scripts.txt top lines not by history: %d after %d", h, prev)
			}
			prev = h
		}
		lines++
	}
	if lines != testShape().SampleScripts {
		t.Fatalf("scripts.txt has %d scripts, want %d", lines, testShape().SampleScripts)
	}

	// The shape.
	outputs := 0
	for _, n := range kinds {
		outputs += n
	}
	share := func(n int) float64 { return float64(n) / float64(outputs) }
	perTx := float64(len(scripts)) / float64(txs)
	sameShare := float64(sameBlock) / float64(inputs)
	t.Logf("%.2f scripts/tx, %.2f inputs/tx, %.2f outputs/tx, same-block %.3f", perTx,
		float64(inputs)/float64(txs), float64(outputs)/float64(txs), sameShare)
	if perTx < 1 {
		t.Errorf("%.2f distinct scripts per transaction, want at least 1", perTx)
	}
	if sameShare < 0.07 || sameShare > 0.13 {
		t.Errorf("same-block spend share %.3f, want about 0.10", sameShare)
	}
	want := map[string]float64{"p2wpkh": 0.50, "p2pkh": 0.15, "p2sh": 0.12, "p2tr": 0.15, "p2wsh": 0.05}
	got := map[string]float64{"p2wpkh": share(kinds[P2WPKH]), "p2pkh": share(kinds[P2PKH]),
		"p2sh": share(kinds[P2SHP2WPKH] + kinds[P2SHMultisig]), "p2tr": share(kinds[P2TR]), "p2wsh": share(kinds[P2WSH])}
	for k, w := range want {
		if math.Abs(got[k]-w) > 0.05 {
			t.Errorf("output share of %s: %.3f, want %.2f", k, got[k], w)
		}
	}
	if s := share(kinds[OpReturn]); s < 0.005 || s > 0.025 {
		t.Errorf("OP_RETURN share %.3f, want 1-2%%", s)
	}
	if s := share(kinds[BareMultisig]); s < 0.002 || s > 0.02 {
		t.Errorf("bare multisig share %.3f, want about 1%%", s)
	}
	// Heavy scripts: the longest history is a sizeable part of the chain,
	// and some heavy script holds most of its outputs unspent.
	top := sum.TopScripts
	if float64(top[0].History) < 0.04*float64(txs) {
		t.Errorf("longest history %d in %d transactions", top[0].History, txs)
	}
	hoard := false
	for _, s := range top[:5] {
		hoard = hoard || (s.Unspent > s.History/2 && float64(s.Unspent) > 0.02*float64(txs))
	}
	if !hoard {
		t.Errorf("no heavy script holds a large unspent set: %+v", top[:5])
	}
}

// kindOf classifies an output script.
func kindOf(pk []byte) Kind {
	switch {
	case len(pk) == 22 && pk[0] == 0x00:
		return P2WPKH
	case len(pk) == 25 && pk[0] == 0x76:
		return P2PKH
	case len(pk) == 23 && pk[0] == 0xa9:
		return P2SHP2WPKH // P2SH of either sort
	case len(pk) == 34 && pk[0] == 0x51:
		return P2TR
	case len(pk) == 34 && pk[0] == 0x00:
		return P2WSH
	case len(pk) > 0 && pk[0] == 0x6a:
		return OpReturn
	case len(pk) == 71 && pk[len(pk)-1] == 0xae:
		return BareMultisig
	}
	return NumKinds - 1
}

func TestScripts(t *testing.T) {
	// Each kind's output script and spending data match: the hashes in
	// the output scripts are those of the keys and scripts the inputs
	// reveal, and the sizes agree with the weight estimates.
	var seed [32]byte
	for k := Kind(0); k < OpReturn; k++ {
		key := keyOf(&seed, uint32(k)+5)
		pk := appendPkScript(nil, k, &key)
		if len(pk) != pkScriptLen[k] {
			t.Errorf("%v: output script of %d bytes, want %d", k, len(pk), pkScriptLen[k])
		}
		var a arena
		ss, wit := spendData(&a, k, &key, make([][]byte, 0, 4))
		in := wire.TxIn{SignatureScript: ss, Witness: wit}
		tx := wire.NewMsgTx(2)
		tx.AddTxIn(&in)
		tx.AddTxOut(&wire.TxOut{PkScript: pk})
		base := tx.SerializeSizeStripped() - (4 + 1 + 1 + 4 + 9 + len(pk))
		witness := tx.SerializeSize() - tx.SerializeSizeStripped()
		if tx.HasWitness() {
			witness -= 2
		} else {
			witness = 1
		}
		if base != 40+spendSize[k].sigScript || witness != spendSize[k].witness {
			t.Errorf("%v: input of %d+%d bytes, estimated %d+%d", k, base, witness, 40+spendSize[k].sigScript, spendSize[k].witness)
		}
		if err := checkCommitment(k, pk, ss, wit); err != nil {
			t.Errorf("%v: %v", k, err)
		}
	}
}

// checkCommitment checks that output script pk of kind k is of btcd's
// matching standard class and commits to the keys and scripts an input with
// signature script ss and witness wit reveals.
func checkCommitment(k Kind, pk, ss []byte, wit [][]byte) error {
	class := map[Kind]txscript.ScriptClass{
		P2WPKH: txscript.WitnessV0PubKeyHashTy, P2PKH: txscript.PubKeyHashTy,
		P2SHP2WPKH: txscript.ScriptHashTy, P2SHMultisig: txscript.ScriptHashTy,
		P2TR: txscript.WitnessV1TaprootTy, P2WSH: txscript.WitnessV0ScriptHashTy,
		BareMultisig: txscript.MultiSigTy,
	}[k]
	if got := txscript.GetScriptClass(pk); got != class {
		return fmt.Errorf("output script class %v, want %v", got, class)
	}
	pushes, err := txscript.PushedData(ss)
	if err != nil {
		return err
	}
	var committed, revealed []byte
	switch k {
	case P2WPKH:
		committed, revealed = pk[2:], address.Hash160(wit[1])
	case P2PKH:
		committed, revealed = pk[3:23], address.Hash160(pushes[1])
	case P2SHP2WPKH:
		if !bytes.Equal(pushes[0][2:], address.Hash160(wit[1])) {
			return errors.New("redeem script does not commit to the witness key")
		}
		committed, revealed = pk[2:22], address.Hash160(pushes[0])
	case P2SHMultisig:
		if len(pushes) != 4 || len(pushes[1]) != 72 || txscript.GetScriptClass(pushes[3]) != txscript.MultiSigTy {
			return errors.New("not a 2-of-3 multisig spend")
		}
		committed, revealed = pk[2:22], address.Hash160(pushes[3])
	case P2TR:
		if len(wit) != 1 || len(wit[0]) != 64 {
			return errors.New("not a key-path spend")
		}
		return nil
	case P2WSH:
		h := sha256.Sum256(wit[3])
		if txscript.GetScriptClass(wit[3]) != txscript.MultiSigTy {
			return errors.New("witness script is not multisig")
		}
		committed, revealed = pk[2:], h[:]
	case BareMultisig:
		if len(pushes) != 2 || len(pushes[1]) != 72 {
			return errors.New("not a 1-of-2 multisig spend")
		}
		return nil
	}
	if !bytes.Equal(committed, revealed) {
		return fmt.Errorf("output commits to %x, input reveals %x", committed, revealed)
	}
	return nil
}
