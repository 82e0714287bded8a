package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// chainInfo is what the benchmarks need from a chain directory.
type chainInfo struct {
	Dir        string `json:"dir"`
	Network    string `json:"network"`
	Txs        int64  `json:"txs"`
	Blocks     int64  `json:"blocks"`
	TipHeight  int32  `json:"tip_height"`
	TipHash    string `json:"tip_hash"`
	Checkpoint string `json:"checkpoint"`
}

// NetFlag is the node flag selecting the chain's network.
func (c *chainInfo) NetFlag() string { return "--" + c.Network }

// NetDir is the network's directory name inside a datadir.
func (c *chainInfo) NetDir() string { return c.Network }

// DBPath is the chain's block database.
func (c *chainInfo) DBPath() string { return filepath.Join(c.Dir, c.NetDir(), "blocks_ffldb") }

// BlocksFile is the chain's blocks.dat.
func (c *chainInfo) BlocksFile() string { return filepath.Join(c.Dir, "blocks.dat") }

// loadChain reads <dir>/chain.json and checks the database is there.
func loadChain(dir string) (*chainInfo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(abs, "chain.json"))
	if err != nil {
		return nil, err
	}
	ci, err := parseChainJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(abs, "chain.json"), err)
	}
	ci.Dir = abs
	if _, err := os.Stat(ci.DBPath()); err != nil {
		return nil, fmt.Errorf("chain database: %w", err)
	}
	return ci, nil
}

// parseChainJSON reads the fields the benchmarks need from chain.json,
// accepting a few spellings of each: the network (default simnet), the
// transaction count, the block count, the tip and the checkpoint
// ("<height>:<hash>" of the tip). The tip and the checkpoint are derived from
// each other when only one is given.
func parseChainJSON(raw []byte) (*chainInfo, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	ci := &chainInfo{Network: "simnet"}
	if s, ok := firstString(m, "network", "net"); ok && s != "" {
		ci.Network = strings.ToLower(s)
	}
	switch ci.Network {
	case "simnet", "regtest":
	default:
		return nil, fmt.Errorf("network %q: the benchmarks run on simnet or regtest chains", ci.Network)
	}
	if n, ok := firstInt(m, "transactions", "txs", "tx_count", "tx", "total_txs"); ok {
		ci.Txs = n
	}
	if n, ok := firstInt(m, "blocks", "block_count"); ok {
		ci.Blocks = n
	}
	height, hasHeight := firstInt(m, "tip_height", "height")
	hash, _ := firstString(m, "tip_hash", "hash")
	if tip, ok := m["tip"].(map[string]any); ok {
		if h, ok := firstInt(tip, "height"); ok {
			height, hasHeight = h, true
		}
		if s, ok := firstString(tip, "hash"); ok {
			hash = s
		}
	}
	cp, _ := firstString(m, "checkpoint")
	if cp != "" {
		hs, hh, ok := strings.Cut(cp, ":")
		h, err := strconv.ParseInt(hs, 10, 32)
		if !ok || err != nil || len(hh) != 64 {
			return nil, fmt.Errorf("checkpoint %q is not <height>:<hash>", cp)
		}
		if !hasHeight {
			height, hasHeight = h, true
		}
		if hash == "" {
			hash = hh
		}
	} else if hasHeight && len(hash) == 64 {
		cp = fmt.Sprintf("%d:%s", height, hash)
	}
	if !hasHeight {
		return nil, errors.New("no tip height (tip_height or checkpoint)")
	}
	if cp == "" {
		return nil, errors.New("no checkpoint (checkpoint, or tip_height and tip_hash)")
	}
	if ci.Txs <= 0 {
		return nil, errors.New("no transaction count (transactions)")
	}
	ci.TipHeight, ci.TipHash, ci.Checkpoint = int32(height), hash, cp
	if ci.Blocks == 0 {
		ci.Blocks = height
	}
	return ci, nil
}

func firstString(m map[string]any, keys ...string) (string, bool) {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s, true
		}
	}
	return "", false
}

func firstInt(m map[string]any, keys ...string) (int64, bool) {
	for _, k := range keys {
		switch v := m[k].(type) {
		case float64:
			return int64(v), true
		case string:
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// blockReader reads blocks.dat: each block as a 4-byte little-endian length
// and the serialized block.
type blockReader struct {
	f *os.File
	r *bufio.Reader
}

func openBlocks(path string) (*blockReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &blockReader{f: f, r: bufio.NewReaderSize(f, 4<<20)}, nil
}

// next returns the next serialized block, or io.EOF after the last.
func (b *blockReader) next() ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(b.r, n[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, errors.New("blocks.dat: truncated length")
		}
		return nil, err
	}
	raw := make([]byte, binary.LittleEndian.Uint32(n[:]))
	if _, err := io.ReadFull(b.r, raw); err != nil {
		return nil, fmt.Errorf("blocks.dat: truncated block: %w", err)
	}
	return raw, nil
}

func (b *blockReader) Close() error { return b.f.Close() }

// blockTxCount reads the transaction count of a serialized block: the
// compact size after the 80-byte header.
func blockTxCount(raw []byte) (int, error) {
	if len(raw) < 81 {
		return 0, errors.New("block shorter than a header")
	}
	p := raw[80:]
	switch p[0] {
	case 0xfd:
		if len(p) < 3 {
			return 0, errors.New("short transaction count")
		}
		return int(binary.LittleEndian.Uint16(p[1:])), nil
	case 0xfe:
		if len(p) < 5 {
			return 0, errors.New("short transaction count")
		}
		return int(binary.LittleEndian.Uint32(p[1:])), nil
	case 0xff:
		return 0, errors.New("transaction count too large")
	default:
		return int(p[0]), nil
	}
}

// isGenesisHeader reports whether a serialized block has no parent.
func isGenesisHeader(raw []byte) bool {
	if len(raw) < 36 {
		return false
	}
	for _, b := range raw[4:36] {
		if b != 0 {
			return false
		}
	}
	return true
}
