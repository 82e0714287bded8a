package main

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/freeport"
)

// runMkchain makes a small chain in the layout the benchmarks read: it
// starts the node on an empty datadir, mines blocks of a coinbase each with
// generatetoaddress, reads them back with getblock and writes blocks.dat and
// chain.json beside the datadir.
func runMkchain(args []string) error {
	var (
		out, node, netName string
		blocks             int
	)
	fs := flag.NewFlagSet("mkchain", flag.ExitOnError)
	fs.StringVar(&out, "out", "", "chain directory to create (required; must not exist)")
	fs.StringVar(&node, "node", "bin/btcd-electrum", "the node binary")
	fs.IntVar(&blocks, "blocks", 300, "blocks to mine")
	fs.StringVar(&netName, "net", "simnet", "network: simnet or regtest")
	fs.Parse(args)
	if out == "" || blocks < 1 {
		return errors.New("-out is required and -blocks must be positive")
	}
	var params *chaincfg.Params
	switch netName {
	case "simnet":
		params = &chaincfg.SimNetParams
	case "regtest":
		params = &chaincfg.RegressionNetParams
	default:
		return fmt.Errorf("network %q: simnet or regtest", netName)
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("%s exists", out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	// A throwaway key hash: nothing ever spends these coinbases.
	pkh := make([]byte, 20)
	pkh[19] = 1
	addr, err := address.NewAddressPubKeyHash(pkh, params)
	if err != nil {
		return err
	}
	port, err := freeport.Port()
	if err != nil {
		return err
	}
	args = []string{"--" + netName, "--datadir=" + out, "--logdir=" + filepath.Join(out, "logs"),
		"--nolisten", "--nodnsseed", "--connect=127.0.0.1:1",
		fmt.Sprintf("--rpclisten=127.0.0.1:%d", port), "--rpcuser=" + rpcUser, "--rpcpass=" + rpcPass, "--notls"}
	p, err := startProc(node, args, filepath.Join(out, "mkchain-node.log"), nil)
	if err != nil {
		return err
	}
	summary, mkErr := mineAndExport(newRPCClient(port), p, out, netName, addr.EncodeAddress(), blocks)
	if _, err := p.Stop(2 * time.Minute); err != nil && mkErr == nil {
		mkErr = err
	}
	if mkErr != nil {
		return mkErr
	}
	os.RemoveAll(filepath.Join(out, "logs"))
	fmt.Fprintf(os.Stderr, "wrote %s: %s/%s/blocks_ffldb, blocks.dat, chain.json\n", out, out, netName)
	return writeJSON(filepath.Join(out, "chain.json"), summary)
}

func mineAndExport(rc *rpcClient, p *proc, out, netName, addr string, blocks int) (map[string]any, error) {
	if _, err := waitRPC(rc, p, 2*time.Minute); err != nil {
		return nil, err
	}
	for left := blocks; left > 0; {
		n := min(left, 100)
		if _, err := rc.call("generatetoaddress", n, addr); err != nil {
			return nil, fmt.Errorf("generatetoaddress: %w", err)
		}
		left -= n
	}
	f, err := os.Create(filepath.Join(out, "blocks.dat"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	var (
		txs  int64
		hash string
	)
	for h := 1; h <= blocks; h++ {
		res, err := rc.call("getblockhash", h)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(res, &hash); err != nil {
			return nil, err
		}
		res, err = rc.call("getblock", hash, 0)
		if err != nil {
			return nil, err
		}
		var hx string
		if err := json.Unmarshal(res, &hx); err != nil {
			return nil, err
		}
		raw, err := hex.DecodeString(hx)
		if err != nil {
			return nil, err
		}
		n, err := blockTxCount(raw)
		if err != nil {
			return nil, err
		}
		txs += int64(n)
		var l [4]byte
		binary.LittleEndian.PutUint32(l[:], uint32(len(raw)))
		w.Write(l[:])
		w.Write(raw)
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return map[string]any{
		"network": netName, "transactions": txs, "blocks": blocks, "tip_height": blocks, "tip_hash": hash,
		"checkpoint": fmt.Sprintf("%d:%s", blocks, hash),
	}, f.Close()
}
