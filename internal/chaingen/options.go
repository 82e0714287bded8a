package chaingen

import (
	"errors"
	"fmt"
)

// Probabilities in a Shape are in parts per million, so the generator draws
// them with integer arithmetic only and stays byte-for-byte reproducible.
const ppm = 1_000_000

// Shape holds the parameters of the chain's shape; DefaultShape documents the
// values that make it look like mainnet (see doc.go).
type Shape struct {
	// TxsPerBlock is the number of non-coinbase transactions of a full
	// block.
	TxsPerBlock int
	// RampBlocks is the number of blocks over which the block size grows
	// linearly from TxsPerBlock/RampBlocks to TxsPerBlock after the warm-up.
	RampBlocks int
	// RampFanOutPPM is the fan-out probability while fewer than RampPool
	// coins are spendable (at the start), so the first coinbases are split
	// into enough coins for full blocks.
	RampFanOutPPM uint32
	RampPool      int
	// WarmupMatureCoinbases is the number of coinbases that must be mature
	// before the first transaction block: the warm-up mines coinbase-only
	// blocks until then (and until segwit and taproot are active).
	WarmupMatureCoinbases int

	// InputsPPM[i] is the probability that an ordinary transaction (or a
	// fan-out) has i+1 inputs.
	InputsPPM []uint32
	// SingleOutputPPM is the probability that an ordinary transaction has
	// no change output.
	SingleOutputPPM uint32
	// FanOutPPM is the probability that a transaction is a fan-out (a
	// batched payout) of FanOutMin..FanOutMax payments plus change.
	FanOutPPM            uint32
	FanOutMin, FanOutMax int
	// ConsolidationPPM is the probability that a transaction sweeps
	// ConsolidationMin..ConsolidationMax outputs of one deposit script into
	// a hot wallet.
	ConsolidationPPM                   uint32
	ConsolidationMin, ConsolidationMax int
	// OpReturnPPM is the probability that a transaction carries an
	// OP_RETURN output.
	OpReturnPPM uint32

	// NewScriptPPM is the probability that a payment goes to a script never
	// seen before.
	NewScriptPPM uint32
	// PopularPPM is the probability that a payment goes to one of the
	// PopularScripts service scripts, picked with Zipf weights 1/rank. The
	// remaining payments reuse the script of a uniformly random earlier
	// output (preferential attachment: scripts with many outputs get more).
	PopularPPM     uint32
	PopularScripts int
	// NewChangePPM is the probability that change goes to a new script;
	// otherwise it goes back to the script of the first input.
	NewChangePPM uint32
	// DepositColdPPM is the probability that an output paid to a deposit
	// script (odd popularity rank) is kept out of the spendable pool, left
	// for consolidations; deposit scripts so hold large unspent sets.
	DepositColdPPM uint32

	// SameBlockPPM is the probability that an input spends an output
	// created earlier in the same block (when there is one).
	SameBlockPPM uint32
	// RecentPPM is the probability that another input spends one of the
	// RecentWindow most recently created spendable outputs; the rest spend
	// a uniformly random unspent output.
	RecentPPM    uint32
	RecentWindow int

	// KindPPM is the relative weight of each script kind for new scripts
	// (OpReturn is ignored: it follows OpReturnPPM).
	KindPPM [NumKinds]uint32

	// TopScripts and SampleScripts are the sizes of scripts.txt: the
	// scripts with the longest histories, then a uniform sample up to
	// SampleScripts lines in all.
	TopScripts, SampleScripts int
}

// DefaultShape is the mainnet-like shape described in doc.go.
func DefaultShape() Shape {
	return Shape{
		TxsPerBlock:           3000,
		RampBlocks:            30,
		RampFanOutPPM:         200_000,
		RampPool:              20_000,
		WarmupMatureCoinbases: 100,

		InputsPPM:        []uint32{560_000, 290_000, 150_000},
		SingleOutputPPM:  300_000,
		FanOutPPM:        15_000,
		FanOutMin:        20,
		FanOutMax:        80,
		ConsolidationPPM: 500,
		ConsolidationMin: 50,
		ConsolidationMax: 150,
		OpReturnPPM:      35_000,

		NewScriptPPM:   350_000,
		PopularPPM:     500_000,
		PopularScripts: 1000,
		NewChangePPM:   800_000,
		DepositColdPPM: 950_000,

		SameBlockPPM: 100_000,
		RecentPPM:    400_000,
		RecentWindow: 8000,

		KindPPM: [NumKinds]uint32{
			P2WPKH:       500_000,
			P2PKH:        150_000,
			P2SHP2WPKH:   84_000,
			P2SHMultisig: 36_000,
			P2TR:         150_000,
			P2WSH:        50_000,
			BareMultisig: 15_000,
		},

		TopScripts:    100,
		SampleScripts: 10_000,
	}
}

// validate reports a shape the generator cannot work with.
func (s *Shape) validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(s.TxsPerBlock > 0 && s.TxsPerBlock <= 20_000, "TxsPerBlock %d not in 1..20000", s.TxsPerBlock)
	check(s.RampBlocks >= 0, "RampBlocks %d < 0", s.RampBlocks)
	check(len(s.InputsPPM) > 0, "InputsPPM empty")
	check(s.FanOutMin >= 1 && s.FanOutMax >= s.FanOutMin && s.FanOutMax <= 200, "fan-out range %d..%d", s.FanOutMin, s.FanOutMax)
	check(s.ConsolidationMin >= 1 && s.ConsolidationMax >= s.ConsolidationMin && s.ConsolidationMax <= 400,
		"consolidation range %d..%d", s.ConsolidationMin, s.ConsolidationMax)
	check(s.PopularScripts >= 2, "PopularScripts %d < 2", s.PopularScripts)
	check(uint64(s.NewScriptPPM)+uint64(s.PopularPPM) <= ppm, "NewScriptPPM+PopularPPM > 1e6")
	check(uint64(s.FanOutPPM)+uint64(s.ConsolidationPPM) <= ppm && uint64(s.RampFanOutPPM)+uint64(s.ConsolidationPPM) <= ppm,
		"fan-out + consolidation probability > 1e6")
	check(s.RecentWindow >= 1, "RecentWindow %d < 1", s.RecentWindow)
	var kinds uint64
	for k, w := range s.KindPPM {
		if Kind(k) != OpReturn {
			kinds += uint64(w)
		}
	}
	check(kinds > 0, "KindPPM has no weight")
	check(s.TopScripts >= 0 && s.SampleScripts >= s.TopScripts, "TopScripts %d, SampleScripts %d", s.TopScripts, s.SampleScripts)
	return errors.Join(errs...)
}
