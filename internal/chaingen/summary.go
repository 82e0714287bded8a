package chaingen

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Summary describes a generated chain; it is written to chain.json.
type Summary struct {
	Network string `json:"network"`
	Seed    uint64 `json:"seed"`
	// Transactions counts all transactions after genesis, coinbases
	// included; NonCoinbaseTxs the others.
	Transactions   int `json:"transactions"`
	NonCoinbaseTxs int `json:"non_coinbase_transactions"`
	// Blocks counts blocks after genesis; the first WarmupBlocks hold only
	// a coinbase.
	Blocks       int    `json:"blocks"`
	WarmupBlocks int    `json:"warmup_blocks"`
	TipHeight    int32  `json:"tip_height"`
	TipHash      string `json:"tip_hash"`
	// Checkpoint is "<height>:<hash>" of the tip. A btcd replaying the
	// blocks must be given it (--addcheckpoint, or Config.Checkpoints):
	// the spending data is unsigned, and btcd skips script validation only
	// for blocks at or below its latest checkpoint.
	Checkpoint string `json:"checkpoint"`

	// DistinctScripts counts output scripts paid at least once (OP_RETURN
	// outputs not included).
	DistinctScripts int `json:"distinct_scripts"`
	// Inputs counts inputs of non-coinbase transactions; SameBlockInputs
	// those spending an output of the same block.
	Inputs          int     `json:"inputs"`
	SameBlockInputs int     `json:"same_block_inputs"`
	SameBlockShare  float64 `json:"same_block_share"`
	// Outputs counts outputs of non-coinbase transactions, OutputsByKind
	// by script kind.
	Outputs        int            `json:"outputs"`
	OutputsByKind  map[string]int `json:"outputs_by_kind"`
	UnspentOutputs int            `json:"unspent_outputs"`
	FanOuts        int            `json:"fan_outs"`
	Consolidations int            `json:"consolidations"`
	// ScriptsWithHistoryOver counts scripts whose history is longer than
	// each key.
	ScriptsWithHistoryOver map[string]int `json:"scripts_with_history_over"`
	// TopScripts are the scripts with the longest histories.
	TopScripts []ScriptStat `json:"top_scripts"`

	BlocksFileBytes   int64   `json:"blocks_file_bytes"`
	GenerationSeconds float64 `json:"generation_seconds"`
	Shape             Shape   `json:"shape"`
}

// ScriptStat describes one script.
type ScriptStat struct {
	// ScriptHash is the Electrum script hash: hex of sha256(output
	// script), byte-reversed.
	ScriptHash string `json:"scripthash"`
	Kind       string `json:"kind"`
	History    uint32 `json:"history"`
	Unspent    uint32 `json:"unspent"`
}

// summaryTop is the number of top scripts in chain.json.
const summaryTop = 20

// ElectrumScriptHash returns the Electrum protocol's script hash of
// pkScript.
func ElectrumScriptHash(pkScript []byte) string {
	h := sha256.Sum256(pkScript)
	slices.Reverse(h[:])
	return hex.EncodeToString(h[:])
}

func (m *model) scriptStat(id uint32) ScriptStat {
	return ScriptStat{ScriptHash: ElectrumScriptHash(m.pk[id]), Kind: m.kind[id].String(),
		History: m.hist[id], Unspent: m.unspent[id]}
}

// finish writes scripts.txt and chain.json after a successful run.
func (g *generation) finish() (*Summary, error) {
	m := g.m
	st := &m.stats
	s := &Summary{
		Network:                g.opts.Net,
		Seed:                   g.opts.Seed,
		Transactions:           st.Txs + st.Coinbases,
		NonCoinbaseTxs:         st.Txs,
		Blocks:                 st.Blocks,
		WarmupBlocks:           st.WarmupBlocks,
		TipHeight:              g.tip.Height,
		TipHash:                g.tip.Hash.String(),
		Checkpoint:             fmt.Sprintf("%d:%s", g.tip.Height, g.tip.Hash),
		Inputs:                 st.Inputs,
		SameBlockInputs:        st.SameBlockInputs,
		OutputsByKind:          make(map[string]int),
		FanOuts:                st.FanOuts,
		Consolidations:         st.Consolidations,
		Shape:                  g.opts.Shape,
		ScriptsWithHistoryOver: map[string]int{},
	}
	if st.Inputs > 0 {
		s.SameBlockShare = float64(st.SameBlockInputs) / float64(st.Inputs)
	}
	for k, n := range st.Outputs {
		s.Outputs += n
		s.OutputsByKind[Kind(k).String()] = n
	}
	thresholds := []uint32{10, 100, 1000, 10000, 50000}
	var ids []uint32
	for id, h := range m.hist {
		if h == 0 {
			continue
		}
		ids = append(ids, uint32(id))
		s.UnspentOutputs += int(m.unspent[id])
		for _, t := range thresholds {
			if h > t {
				s.ScriptsWithHistoryOver[fmt.Sprint(t)]++
			}
		}
	}
	s.DistinctScripts = len(ids)
	byHistory := slices.Clone(ids)
	slices.SortFunc(byHistory, func(a, b uint32) int {
		if m.hist[a] != m.hist[b] {
			return int(m.hist[b]) - int(m.hist[a])
		}
		return int(a) - int(b)
	})
	for _, id := range byHistory[:min(summaryTop, len(byHistory))] {
		s.TopScripts = append(s.TopScripts, m.scriptStat(id))
	}
	if err := g.writeScripts(byHistory); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(g.opts.Dir, BlocksFile)); err == nil {
		s.BlocksFileBytes = fi.Size()
	}
	s.GenerationSeconds = time.Since(g.start).Seconds()
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(g.opts.Dir, SummaryFile), append(out, '\n'), 0o644); err != nil {
		return nil, err
	}
	return s, nil
}

// writeScripts writes scripts.txt: the TopScripts scripts of byHistory (all
// scripts, longest history first), then a uniform sample of the others.
func (g *generation) writeScripts(byHistory []uint32) error {
	m, sh := g.m, &g.opts.Shape
	top := byHistory[:min(sh.TopScripts, len(byHistory))]
	rest := byHistory[len(top):]
	want := min(sh.SampleScripts-len(top), len(rest))
	var sample []uint32
	if want == len(rest) {
		sample = slices.Clone(rest)
		slices.Sort(sample)
	} else {
		rng := rand.New(rand.NewPCG(g.opts.Seed, 0x73616d706c65)) // "sample"
		seen := make(map[int]bool, want)
		for len(sample) < want {
			i := rng.IntN(len(rest))
			if !seen[i] {
				seen[i] = true
				sample = append(sample, rest[i])
			}
		}
	}
	f, err := os.Create(filepath.Join(g.opts.Dir, ScriptsFile))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# Electrum script hashes of %s seed %d (hex of sha256(output script), byte-reversed).\n", g.opts.Net, g.opts.Seed)
	fmt.Fprintf(w, "# Fields: scripthash history_length unspent_outputs kind.\n")
	fmt.Fprintf(w, "# The first %d lines are the scripts with the longest histories; the other %d a uniform random sample.\n", len(top), len(sample))
	for _, list := range [][]uint32{top, sample} {
		for _, id := range list {
			st := m.scriptStat(id)
			fmt.Fprintf(w, "%s %d %d %s\n", st.ScriptHash, st.History, st.Unspent, st.Kind)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
