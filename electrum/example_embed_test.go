package electrum_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/txscript/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// A program built on btcd's packages gains the Electrum index and server:
// the index goes into btcd's chain through indexers.NewManager, the server
// reads the chain, the index, a mempool overlay and btcd's pool through
// electrum.IndexBackend, and the chain's notifications tell the server what
// changed. docs/EMBEDDING.md lists the same steps for a btcd fork.
func Example_embedInBtcd() {
	params := &chaincfg.RegressionNetParams
	dir, _ := os.MkdirTemp("", "embed")
	defer os.RemoveAll(dir)
	db, err := database.Create("ffldb", filepath.Join(dir, "blocks_ffldb"), params.Net)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close() // last: after the server and the chain's flush

	// The Electrum index in a store of its own beside the block database,
	// following the chain (btcd's own indexes go after it in NewManager).
	// Its commits are turned into the server's (never blocking) Notify
	// calls once the server exists.
	var srv *electrum.Server
	var chain *blockchain.BlockChain
	idx, err := indexers.NewElectrumIndex(db, indexers.Options{
		Dir: filepath.Join(dir, "electrum_index"),
		OnCommit: func(c indexers.Commit) {
			if srv == nil {
				return
			}
			if c.All {
				srv.NotifyAllScriptHashes()
			} else {
				srv.NotifyScriptHashes(c.Touched)
			}
			if header, err := chain.HeaderByHash(&c.Tip.Hash); err == nil {
				srv.NotifyTip(header, c.Tip.Height)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	manager := indexers.NewManager(db, idx)
	chain, err = blockchain.New(&blockchain.Config{DB: db, ChainParams: params,
		TimeSource: blockchain.NewMedianTime(), IndexManager: manager})
	if err != nil {
		log.Fatal(err)
	}
	defer chain.FlushUtxoCache(blockchain.FlushRequired)
	defer manager.Close() // before the chain's flush and the database
	pool := mempool.New(&mempool.Config{
		Policy:      mempool.Policy{MaxTxVersion: 2, MinRelayTxFee: mempool.DefaultMinRelayTxFee},
		ChainParams: params, FetchUtxoView: chain.FetchUtxoView,
		BestHeight:     func() int32 { return chain.BestSnapshot().Height },
		MedianTimePast: func() time.Time { return chain.BestSnapshot().MedianTime },
		CalcSequenceLock: func(tx *btcutil.Tx, view *blockchain.UtxoViewpoint) (*blockchain.SequenceLock, error) {
			return chain.CalcSequenceLock(tx, view, true)
		},
		IsDeploymentActive: chain.IsDeploymentActive,
	})

	// The server.
	srv = electrum.New(electrum.Config{TCPListen: []string{"127.0.0.1:0"}}, &electrum.IndexBackend{
		Params: params, Chain: chain, Index: idx, Mempool: indexers.NewMempool(idx.PrevOut),
		Pool: pool, Relay: &electrum.PoolRelay{Pool: pool}})
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(context.Background()) // first: before the chain and the database

	// Three blocks paying one address, as a peer or a miner would bring them.
	payTo, _ := address.NewAddressPubKeyHash(make([]byte, 20), params)
	prev := btcutil.NewBlock(params.GenesisBlock)
	prev.SetHeight(0)
	for i := 0; i < 3; i++ {
		block, err := rpctest.CreateBlock(prev, nil, 4, prev.MsgBlock().Header.Timestamp.Add(time.Second), payTo, nil, params)
		if err != nil {
			log.Fatal(err)
		}
		if _, _, err := chain.ProcessBlock(block, blockchain.BFNone); err != nil {
			log.Fatal(err)
		}
		prev = block
	}
	// The index follows the chain in a goroutine of its own.
	if err := manager.Sync(); err != nil {
		log.Fatal(err)
	}

	// A wallet asks the server for the address's balance.
	conn, err := net.Dial("tcp", srv.Addrs()[electrum.TCP][0].String())
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	script, _ := txscript.PayToAddrScript(payTo)
	fmt.Fprintf(conn, `{"id":1,"method":"server.version","params":["example","1.4"]}`+"\n"+
		`{"id":2,"method":"blockchain.scripthash.get_balance","params":["%s"]}`+"\n",
		indexers.ScriptHashFromScript(script))
	r := bufio.NewScanner(conn)
	r.Scan() // the server.version answer
	r.Scan()
	fmt.Println(r.Text())
	// Output:
	// {"jsonrpc":"2.0","result":{"confirmed":15000000000,"unconfirmed":0},"id":2}
}
