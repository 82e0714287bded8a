package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/txscript/v2"

	"github.com/btcd-electrum/btcd-electrum/integration"
)

// walletAddress is the regtest P2WPKH address of a fixed key, standing for
// an address the wallet under test derived.
func walletAddress() (address.Address, []byte) {
	key, _ := btcec.PrivKeyFromBytes(bytes.Repeat([]byte{0x42}, 32))
	addr, err := address.NewAddressWitnessPubKeyHash(
		address.Hash160(key.PubKey().SerializeCompressed()), &chaincfg.RegressionNetParams)
	if err != nil {
		log.Fatal(err)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		log.Fatal(err)
	}
	return addr, script
}

// A node with an Electrum server, started outside a test: mine a few
// blocks and read the tip over Electrum.
func ExampleStart() {
	n, err := integration.Start(integration.NodeConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Stop()

	if _, err := n.Mine(3); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tip, err := n.Electrum.SubscribeHeaders(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("network:", n.Params().Name)
	fmt.Println("Electrum tip height:", tip.Height)
	// Output:
	// network: regtest
	// Electrum tip height: 3
}

// The wallet-style flow: subscribe to a script, fund it, see the
// notification, reorg the payment away, see the status change, confirm it
// again.
func Example_walletFlow() {
	n, err := integration.Start(integration.NodeConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	addr, script := walletAddress()
	sh := integration.ScriptHash(script)
	status, err := n.Electrum.SubscribeScriptHash(ctx, sh)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("subscribed, status null:", status == nil)

	// notified waits for the notification of the status of history.
	notified := func(history ...integration.HistoryItem) {
		want := integration.Status(history)
		if _, err := n.Electrum.NextStatus(ctx, sh, func(s *string) bool {
			return s != nil && *s == *want
		}); err != nil {
			log.Fatal(err)
		}
		fmt.Println("notified: the payment at height", history[0].Height)
	}

	// The faucet matures coins (101 blocks), pays 0.5 BTC, and Fund
	// mines block 102 to confirm it.
	op, err := n.Fund(addr, btcutil.Amount(50_000_000))
	if err != nil {
		log.Fatal(err)
	}
	txid := op.Hash.String()
	notified(integration.HistoryItem{TxHash: txid, Height: 102})

	// A heavier branch from block 102 leaves the payment out: it is
	// unconfirmed again.
	if _, err := n.ReorgDropping(&op.Hash); err != nil {
		log.Fatal(err)
	}
	notified(integration.HistoryItem{TxHash: txid, Height: 0})

	// The next block confirms it again.
	if _, err := n.Mine(1); err != nil {
		log.Fatal(err)
	}
	notified(integration.HistoryItem{TxHash: txid, Height: 104})
	utxos, err := n.Electrum.ListUnspent(ctx, sh)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("unspent:", utxos[0].Value, "sat at height", utxos[0].Height)
	// Output:
	// subscribed, status null: true
	// notified: the payment at height 102
	// notified: the payment at height 0
	// notified: the payment at height 104
	// unspent: 50000000 sat at height 104
}

// Electrum listeners over TLS, WebSocket and secure WebSocket next to the
// plain TCP one, each answering server.version.
func ExampleNodeConfig_transports() {
	n, err := integration.Start(integration.NodeConfig{ElectrumTLS: true, ElectrumWS: true, ElectrumWSS: true})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tlsCfg, err := n.ElectrumTLSConfig()
	if err != nil {
		log.Fatal(err)
	}
	dial := map[string]func() (*integration.ElectrumClient, error){
		"tcp": func() (*integration.ElectrumClient, error) { return integration.DialElectrum(ctx, n.ElectrumAddr) },
		"tls": func() (*integration.ElectrumClient, error) {
			return integration.DialElectrumTLS(ctx, n.ElectrumTLSAddr, tlsCfg)
		},
		"ws": func() (*integration.ElectrumClient, error) {
			return integration.DialElectrumWS(ctx, "ws://"+n.ElectrumWSAddr+"/", nil)
		},
		"wss": func() (*integration.ElectrumClient, error) {
			return integration.DialElectrumWS(ctx, "wss://"+n.ElectrumWSSAddr+"/", tlsCfg)
		},
	}
	for _, name := range []string{"tcp", "tls", "ws", "wss"} {
		c, err := dial[name]()
		if err != nil {
			log.Fatal(err)
		}
		_, version, err := c.Version(ctx, "example", "1.4")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(name, "negotiated", version)
		c.Close()
	}
	// Output:
	// tcp negotiated 1.4
	// tls negotiated 1.4
	// ws negotiated 1.4
	// wss negotiated 1.4
}

// Reorg replaces the last blocks with a heavier branch; the replaced
// blocks' transactions are confirmed again at the same heights, so a
// wallet's history keeps its heights while the blocks change.
func ExampleNode_Reorg() {
	n, err := integration.Start(integration.NodeConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Stop()
	addr, _ := walletAddress()
	op, err := n.Fund(addr, btcutil.Amount(1_000_000))
	if err != nil {
		log.Fatal(err)
	}
	before, _ := n.RPC.GetRawTransactionVerbose(&op.Hash)
	branch, err := n.Reorg(1)
	if err != nil {
		log.Fatal(err)
	}
	after, _ := n.RPC.GetRawTransactionVerbose(&op.Hash)
	_, height, _ := n.RPC.GetBestBlock()
	fmt.Println("new branch:", len(branch), "blocks, tip at", height)
	fmt.Println("payment moved to the new branch:", before.BlockHash != after.BlockHash && after.BlockHash == branch[0].String())
	// Output:
	// new branch: 2 blocks, tip at 103
	// payment moved to the new branch: true
}
