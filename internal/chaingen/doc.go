// Package chaingen generates deterministic, mainnet-shaped chains for
// benchmarks of the Electrum index: index build speed and wallet query speed
// depend on the number of distinct scripts, on long histories and on large
// unspent sets, which a chain paying a small pool of scripts does not have.
//
// # Output
//
// Generate writes to a directory DIR:
//
//   - DIR/<net>/blocks_ffldb: a btcd database (net is simnet, the default, or
//     regtest), the layout btcd --datadir=DIR expects. Blocks are accepted by
//     btcd's own blockchain.New + ProcessBlock on a real ffldb database
//     without indexes, so chain state, UTXO set and spend journals are btcd's.
//   - DIR/blocks.dat: the blocks after genesis in order, each as a 4-byte
//     little-endian length followed by the serialized block (with witnesses).
//     ReadBlocks reads it.
//   - DIR/scripts.txt: Electrum script hashes (hex of sha256(output script),
//     byte-reversed) for load tools: "scripthash history unspent kind" per
//     line, '#' lines are comments; the Shape.TopScripts scripts with the
//     longest histories first, then a uniform random sample up to
//     Shape.SampleScripts lines.
//   - DIR/chain.json: the Summary (network, seed, counts, tip, checkpoint,
//     distinct scripts, the top scripts, generation time, the shape).
//
// The same seed and options give byte-identical blocks (the random source is
// a seeded PCG, all probabilities are integers, and parallel work only
// computes what the serial plan fixed); Options.Workers does not matter.
//
// # Unsigned spends and the checkpoint
//
// Real signatures would make generation far too slow. Inputs carry
// well-formed spending data whose hashes match the outputs they spend: a
// 72-byte DER-shaped dummy signature and a 33-byte compressed-format public
// key (not a curve point) whose HASH160 is the one in the P2WPKH/P2PKH
// script; a 64-byte dummy Schnorr signature for P2TR; the real redeem or
// witness script (P2WPKH program or 2-of-3 multisig) for P2SH and P2WSH with
// dummy signatures. The generator submits blocks with
// blockchain.BFFastAdd|BFNoPoWCheck: in btcd v0.26.2 BFFastAdd makes
// connectBestChain skip checkConnectBlock, the only caller of
// checkBlockScripts, while connectBlock still writes the spend journal.
// (Proof of work is solved anyway; on these networks it costs two hashes.)
//
// A node replaying the blocks validates them in full except scripts only if
// its latest checkpoint is at or above them (checkConnectBlock's runScripts):
// start btcd with --addcheckpoint=<chain.json checkpoint>, or set
// blockchain.Config.Checkpoints. Without it the first block with spends is
// rejected. Stock btcd --regtest deletes its regtest database on start; use
// simnet for stock btcd.
//
// # Shape (DefaultShape)
//
// Warm-up: coinbase-only blocks (signalling CSV, segwit and taproot) until
// segwit and taproot are active (height 300 on simnet, where they activate by
// BIP 9 signalling) and WarmupMatureCoinbases (100) coinbases are mature.
// Blocks are stamped 20 minutes apart from 2024-01-01, so simnet's difficulty
// stays at the proof-of-work limit.
//
// Block size ramps linearly over RampBlocks (30) blocks to TxsPerBlock (3,000)
// transactions; while fewer than RampPool (20,000) coins are spendable,
// fan-outs are RampFanOutPPM (20%) of transactions so the coinbases are split
// into enough coins. Blocks also stop below the weight and sig-op limits.
//
// Transactions (probabilities per million):
//   - ordinary: 1-3 inputs (56/29/15%), a payment and, except in 30%, change;
//     change goes to a new script in 80% of cases, else back to the first
//     input's script; outputs shuffled;
//   - fan-outs (FanOutPPM 1.5%): 1-3 inputs, 20-80 payments to distinct
//     scripts plus change to a hot wallet;
//   - consolidations (ConsolidationPPM 0.05%): 50-150 held outputs of one
//     deposit script swept into a hot wallet;
//   - 3.5% of transactions add an OP_RETURN output (about 1.4% of outputs),
//     each with distinct data;
//   - fees of 1-25 sat/vB (at most a quarter of the inputs).
//
// Payments go to a never-seen script with NewScriptPPM (35%), to one of
// PopularScripts (1,000) service scripts with PopularPPM (50%), picked with
// Zipf weights 1/rank, and otherwise to the script of a uniformly random
// earlier output (preferential attachment: the more outputs a script has, the
// likelier it is reused). Odd ranks are deposit scripts: DepositColdPPM (95%)
// of their outputs are held, not spent, until a consolidation, so they keep
// tens of thousands of unspent outputs; even ranks are hot wallets that
// receive coinbases, fan-out change and consolidations and whose outputs are
// spent like any other. With seed 1, a 1,000,000-transaction simnet chain
// has 1.26 million distinct scripts; its top three scripts have 90,466,
// 88,797 and 51,356 history entries, and the largest deposit script holds
// 72,809 unspent outputs. Below the 1,000 popular scripts the reuse tail is
// thin (about 1,150 other scripts have more than 10 history entries): more
// PopularScripts thickens it at the expense of the top.
//
// New scripts are drawn from KindPPM, close to today's mainnet output mix:
// P2WPKH 50%, P2PKH 15%, P2SH 12% (8.4% P2SH-P2WPKH, 3.6% 2-of-3 multisig),
// P2TR 15%, P2WSH 5%, bare 1-of-2 multisig 1.5%; popular scripts cycle
// through the common kinds.
//
// Inputs spend an output created earlier in the same block with SameBlockPPM
// (10% of inputs), otherwise one of the last RecentWindow (8,000) of the
// spendable pool with RecentPPM (40%), otherwise a uniformly random
// spendable output. New outputs join the pool at its end, and a spend moves
// the pool's last output into the spent one's place, so those last 8,000
// are mostly but not only the newest (in the default shape about a fifth
// are up to four blocks old rather than two). Coinbases become spendable
// after the coinbase maturity.
//
// # Speed and memory
//
// Blocks are planned serially (random choices and bookkeeping only: coins
// name transactions by number, not hash), then built in parallel over
// Options.Workers: output scripts of the block's new scripts, then
// transactions in waves of same-block dependency depth (serialization and
// hashing). The next block is built while btcd processes the previous one.
// Inputs, outputs and spending data come from per-block slabs and arenas. The
// generator keeps per script its kind, output script and statistics, and
// per spendable coin 24 bytes. Measured on 2 busy cores: 300,000 transactions
// in 7.4 s (peak RSS 1.1 GB), 1,000,000 in 35 s (peak RSS 1.7 GB; btcd's
// UTXO cache is allowed Options.UtxoCacheMiB, 1 GiB by default).
package chaingen
