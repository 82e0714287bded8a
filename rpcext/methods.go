package rpcext

import (
	"sort"
	"strings"

	"github.com/btcsuite/btcd/btcjson"
)

// handlerFunc answers one parsed command (a *btcjson.XxxCmd).
type handlerFunc func(s *Server, cmd interface{}) (interface{}, error)

// method is one request method the server answers.
type method struct {
	handler handlerFunc
	help    string
}

// waitingMethods are the methods that may wait (a long poll), in the form
// execute calls: they return when gone closes, as the client has left and
// holds a place among MaxClients for nothing.
var waitingMethods = map[string]func(s *Server, cmd interface{}, gone <-chan struct{}) (interface{}, error){
	"getblocktemplate": handleGetBlockTemplate,
}

// wsMethod answers a websocket-only command for the client that sent it.
type wsMethod func(c *wsClient, cmd interface{}) (interface{}, error)

// methods are the request methods answered over HTTP and websockets.
var methods map[string]method

// wsMethods are the websocket-only methods.
var wsMethods = map[string]wsMethod{
	"notifyblocks":     handleNotifyBlocks,
	"loadtxfilter":     handleLoadTxFilter,
	"authenticate":     handleAuthenticate,
	"stopnotifyblocks": handleStopNotifyBlocks,
}

// methodNames is the sorted list of methods, for help.
var methodNames []string

func init() {
	methods = map[string]method{
		"addnode":            {handleAddNode, "Adds, removes or tries once a peer connection."},
		"estimatefee":        {handleEstimateFee, "Estimates the fee rate in BTC/kB for confirmation within numblocks blocks."},
		"faucet":             {handleFaucet, "Pays amount BTC to address from the node's own coins, mining and maturing them first if needed; returns the txid (regtest only)."},
		"generate":           {handleGenerate, "Mines numblocks blocks to the configured mining addresses (regtest and simnet)."},
		"generatetoaddress":  {handleGenerateToAddress, "Mines numblocks blocks paying to address (regtest and simnet)."},
		"getbestblock":       {handleGetBestBlock, "Returns the hash and height of the main-chain tip."},
		"getbestblockhash":   {handleGetBestBlockHash, "Returns the hash of the main-chain tip."},
		"getblock":           {handleGetBlock, "Returns a block: hex (verbosity 0), JSON with txids (1) or with decoded transactions (2)."},
		"getblockcount":      {handleGetBlockCount, "Returns the height of the main-chain tip."},
		"getblockhash":       {handleGetBlockHash, "Returns the hash of the main-chain block at a height."},
		"getblockheader":     {handleGetBlockHeader, "Returns a block header as JSON (verbose, default) or hex."},
		"getchaintips":       {handleGetChainTips, "Returns every known chain tip."},
		"getconnectioncount": {handleGetConnectionCount, "Returns the number of connected peers."},
		"getelectruminfo":    {handleGetElectrumInfo, "Returns the Electrum index tip, catch-up progress, listeners, sessions, subscriptions and index size."},
		"getinfo":            {handleGetInfo, "Returns general node state."},
		"getmempoolinfo":     {handleGetMempoolInfo, "Returns the number and total size of mempool transactions."},
		"getpeerinfo":        {handleGetPeerInfo, "Returns data about each connected peer."},
		"getrawmempool":      {handleGetRawMempool, "Returns mempool txids, or a description of each (verbose)."},
		"getrawtransaction":  {handleGetRawTransaction, "Returns a mempool or confirmed transaction as hex or JSON (verbose)."},
		"help":               {handleHelp, "Lists the methods, or describes one."},
		"invalidateblock":    {handleInvalidateBlock, "Marks a block and its descendants invalid."},
		"reconsiderblock":    {handleReconsiderBlock, "Removes the invalid mark from a block and its ancestors."},
		"sendrawtransaction": {handleSendRawTransaction, "Submits a raw transaction to the mempool and relays it."},
		"stop":               {handleStop, "Shuts the node down."},
		"submitblock":        {handleSubmitBlock, "Submits a block; null on success, a rejection reason otherwise."},
		"uptime":             {handleUptime, "Returns the seconds since the server started."},
	}
	for _, extra := range []map[string]method{indexMethods, btcdMethods, btcdUtilMethods, nodeAdminMethods, adminMethods} {
		for name, m := range extra {
			if _, dup := methods[name]; dup {
				panic("rpcext: method " + name + " defined twice")
			}
			methods[name] = m
		}
	}
	methods[VerifyElectrumIndexMethod] = method{handleVerifyElectrumIndex, "Starts (\"start\", the default) or reports (\"status\") a verification of the Electrum index against the chain on the live node: progress, then the first differences by table, script hash and height."}
	for name := range methods {
		methodNames = append(methodNames, name)
	}
	sort.Strings(methodNames)
}

// handleHelp lists the method usages, or describes one method.
func handleHelp(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.HelpCmd)
	if c.Command == nil || *c.Command == "" {
		var b strings.Builder
		for _, name := range methodNames {
			usage, err := btcjson.MethodUsageText(name)
			if err != nil {
				usage = name
			}
			b.WriteString(usage)
			b.WriteByte('\n')
		}
		return strings.TrimSuffix(b.String(), "\n"), nil
	}
	m, ok := methods[*c.Command]
	_, ws := wsMethods[*c.Command]
	if !ok && !ws {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "Unknown command: "+*c.Command)
	}
	usage, err := btcjson.MethodUsageText(*c.Command)
	if err != nil {
		usage = *c.Command
	}
	if !ok {
		// A websocket command of btcd's: its usage says what it takes.
		return usage + "\n\nAnswered over websockets only, as btcd answers it.", nil
	}
	return usage + "\n\n" + m.help, nil
}
