// Package indexers holds the Electrum index for btcd.
package indexers

import (
	_ "github.com/btcsuite/btcd/blockchain/indexers"
	_ "github.com/btcsuite/btcd/database/ffldb"
	_ "github.com/btcsuite/btcd/btcutil/v2"
	_ "github.com/btcsuite/btcd/wire/v2"
	_ "github.com/btcsuite/btcd/chaincfg/v2"
	_ "github.com/btcsuite/btcd/chainhash/v2"
	_ "github.com/btcsuite/btcd/txscript/v2"
	_ "github.com/gorilla/websocket"
	_ "github.com/jessevdk/go-flags"
	_ "github.com/btcsuite/btclog"
	_ "github.com/btcsuite/btcd/integration/rpctest"
	_ "github.com/btcsuite/btcd/netsync"
	_ "github.com/btcsuite/btcd/mining/cpuminer"
	_ "github.com/btcsuite/btcd/rpcclient"
	_ "github.com/btcsuite/btcd/btcjson"
)
