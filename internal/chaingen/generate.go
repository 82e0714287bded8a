package chaingen

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb" // registers the ffldb driver

	"github.com/btcd-electrum/btcd-electrum/internal/netparams"
)

// File names inside the output directory.
const (
	BlocksFile  = "blocks.dat"
	ScriptsFile = "scripts.txt"
	SummaryFile = "chain.json"
	// dbName is btcd's database directory inside a network's data
	// directory (blocks_<dbtype>).
	dbName = "blocks_ffldb"
)

// Options configure a generation.
type Options struct {
	// Dir is the output directory. The database goes to
	// Dir/<network>/blocks_ffldb, where btcd --datadir=Dir looks for it;
	// it must not exist yet.
	Dir string
	// Net is "simnet" (the default) or "regtest".
	Net string
	// Seed selects the chain: the same seed and options give the same
	// blocks, byte for byte.
	Seed uint64
	// Txs is the number of non-coinbase transactions to generate.
	Txs int
	// Shape is the chain's shape; DefaultShape when zero.
	Shape Shape
	// Workers is the number of goroutines building a block's
	// transactions; GOMAXPROCS when zero. It does not change the output.
	Workers int
	// UtxoCacheMiB is btcd's UTXO cache size while generating (default
	// 1024): large enough that lookups never hit the database, which keeps
	// block processing fast.
	UtxoCacheMiB int
	// Progress, when set, is called after every processed block.
	Progress func(Progress)
}

// Progress reports a generation in progress.
type Progress struct {
	Height  int32
	Blocks  int
	Txs     int // non-coinbase transactions so far
	Scripts int // scripts created so far
	Unspent int // coins the generator may spend
	Elapsed time.Duration
}

// Params returns a private copy of the parameters of network name (simnet or
// regtest): btcd points the deployment clocks of the parameters at the chain
// it opens with them, so chains must not share them.
func Params(name string) (*chaincfg.Params, error) {
	switch name {
	case "", "simnet":
		return netparams.Own(&chaincfg.SimNetParams), nil
	case "regtest":
		return netparams.Own(&chaincfg.RegressionNetParams), nil
	}
	return nil, fmt.Errorf("chaingen: unknown network %q (want simnet or regtest)", name)
}

// DBPath returns the database directory of network net under dir, as btcd
// --datadir=dir names it.
func DBPath(dir, net string) string {
	if net == "" {
		net = "simnet"
	}
	return filepath.Join(dir, net, dbName)
}

// Generate generates a chain per opts and writes the database, blocks.dat,
// scripts.txt and chain.json to opts.Dir.
func Generate(opts Options) (*Summary, error) {
	start := time.Now()
	if opts.Net == "" {
		opts.Net = "simnet"
	}
	if opts.Shape.TxsPerBlock == 0 {
		opts.Shape = DefaultShape()
	}
	if err := opts.Shape.validate(); err != nil {
		return nil, fmt.Errorf("chaingen: shape: %w", err)
	}
	if opts.Txs < 0 {
		return nil, fmt.Errorf("chaingen: negative transaction count %d", opts.Txs)
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.UtxoCacheMiB <= 0 {
		opts.UtxoCacheMiB = 1024
	}
	params, err := Params(opts.Net)
	if err != nil {
		return nil, err
	}
	dbPath := DBPath(opts.Dir, opts.Net)
	if _, err := os.Stat(dbPath); err == nil {
		return nil, fmt.Errorf("chaingen: %s exists", dbPath)
	}
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o755); err != nil {
		return nil, err
	}
	db, err := database.Create("ffldb", dbPath, params.Net)
	if err != nil {
		return nil, fmt.Errorf("chaingen: create database: %w", err)
	}
	chain, err := blockchain.New(&blockchain.Config{
		DB:               db,
		ChainParams:      params,
		TimeSource:       blockchain.NewMedianTime(),
		UtxoCacheMaxSize: uint64(opts.UtxoCacheMiB) << 20,
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("chaingen: start chain: %w", err)
	}
	bf, err := os.Create(filepath.Join(opts.Dir, BlocksFile))
	if err != nil {
		db.Close()
		return nil, err
	}
	g := &generation{
		opts:   opts,
		chain:  chain,
		m:      newModel(opts.Shape, params, opts.Seed),
		blocks: bufio.NewWriterSize(bf, 4<<20),
		start:  start,
	}
	g.bd = &builder{m: g.m, workers: opts.Workers, prev: *params.GenesisHash}
	g.bd.txids = append(g.bd.txids, chainhash.Hash{}) // the genesis coinbase, never spent
	g.m.nextTx = 1

	runErr := g.run()
	var errs []error
	errs = append(errs, runErr)
	if runErr == nil {
		errs = append(errs, chain.FlushUtxoCache(blockchain.FlushRequired))
	}
	errs = append(errs, db.Close(), g.blocks.Flush(), bf.Close())
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return g.finish()
}

// generation is one run of Generate.
type generation struct {
	opts   Options
	chain  *blockchain.BlockChain
	m      *model
	bd     *builder
	blocks *bufio.Writer
	start  time.Time
	tip    *blockchain.BestState
}

// run mines the warm-up blocks one by one (their number depends on btcd's
// view of the deployments), then the transaction blocks, building the next
// block while btcd processes the previous one.
func (g *generation) run() error {
	s := &g.opts.Shape
	maturity := int32(g.m.params.CoinbaseMaturity)
	for height := int32(1); ; height++ {
		if err := g.process(g.make(height, 0)); err != nil {
			return err
		}
		segwit, err := g.chain.IsDeploymentActive(chaincfg.DeploymentSegwit)
		if err != nil {
			return err
		}
		taproot, err := g.chain.IsDeploymentActive(chaincfg.DeploymentTaproot)
		if err != nil {
			return err
		}
		if segwit && taproot && height+1-maturity >= int32(s.WarmupMatureCoinbases) {
			break
		}
	}

	type result struct {
		b   *builtBlock
		err error
	}
	ch := make(chan result, 2)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		defer close(ch)
		height := g.chain.BestSnapshot().Height
		for i := 0; g.m.stats.Txs < g.opts.Txs; i++ {
			height++
			txs := s.TxsPerBlock
			if i < s.RampBlocks {
				txs = max(1, s.TxsPerBlock*(i+1)/s.RampBlocks)
			}
			txs = min(txs, g.opts.Txs-g.m.stats.Txs)
			b, err := g.make(height, txs)
			select {
			case ch <- result{b, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for r := range ch {
		if r.err != nil {
			return r.err
		}
		if err := g.process(r.b, nil); err != nil {
			return err
		}
	}
	g.tip = g.chain.BestSnapshot()
	return nil
}

// make plans and builds the block at height.
func (g *generation) make(height int32, txs int) (*builtBlock, error) {
	b, err := g.bd.build(g.m.planBlock(height, txs))
	if err != nil {
		return nil, err
	}
	b.progress = Progress{
		Height:  height,
		Blocks:  g.m.stats.Blocks,
		Txs:     g.m.stats.Txs,
		Scripts: len(g.m.kind),
		Unspent: len(g.m.pool),
	}
	return b, nil
}

// process appends a block to blocks.dat and has btcd accept it without
// script validation.
func (g *generation) process(b *builtBlock, err error) error {
	if err != nil {
		return err
	}
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(b.raw)))
	g.blocks.Write(n[:])
	if _, err := g.blocks.Write(b.raw); err != nil {
		return err
	}
	isMain, isOrphan, err := g.chain.ProcessBlock(b.block, blockchain.BFFastAdd|blockchain.BFNoPoWCheck)
	if err != nil {
		return fmt.Errorf("chaingen: btcd rejects block %d: %w", b.block.Height(), err)
	}
	if !isMain || isOrphan {
		return fmt.Errorf("chaingen: block %d did not extend the main chain", b.block.Height())
	}
	if g.opts.Progress != nil {
		p := b.progress
		p.Elapsed = time.Since(g.start)
		g.opts.Progress(p)
	}
	return nil
}
