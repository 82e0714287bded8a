package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// SyncTimeout bounds how long Mine, MineTo, Fund and the reorgs wait for
// the Electrum server to report the node's new tip, and each of the node's
// RPC answers that Mine, MineTo, SendRaw, Faucet, Fund, the reorgs,
// ChainHistory, SpendCoinbaseAt and ElectrumInfo wait for.
var SyncTimeout = time.Minute

// answerWithin returns f's result, or an error once ctx ends: the node's RPC
// client has no deadline of its own, and a hung node would otherwise hold
// the test until go test's -timeout. A call left waiting ends when the
// node stops.
func answerWithin[T any](ctx context.Context, what string, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%s: the node did not answer: %w", what, ctx.Err())
	}
}

// rpcWithin is answerWithin for one of the helpers bounded by SyncTimeout.
func rpcWithin[T any](what string, f func() (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), SyncTimeout)
	defer cancel()
	return answerWithin(ctx, what, f)
}

// Params returns the network the node runs on (regtest unless
// NodeConfig.Net said simnet).
func (n *Node) Params() *chaincfg.Params { return n.params }

// Mine mines count blocks to the node's mining address (NodeConfig's
// MiningAddr, MiningAddress by default) and returns their hashes once the
// Electrum server reports the last one as its tip (without the Electrum
// index, once the node has it).
func (n *Node) Mine(count int) ([]*chainhash.Hash, error) {
	if count <= 0 {
		return nil, fmt.Errorf("mine %d blocks: need a positive count", count)
	}
	hashes, err := rpcWithin("generate", func() ([]*chainhash.Hash, error) { return n.RPC.Generate(uint32(count)) })
	if err != nil {
		return nil, fmt.Errorf("generate %d: %w", count, err)
	}
	return hashes, n.waitSynced()
}

// MineTo mines count blocks whose coinbases pay addr's output script (for
// an *address.AddressPubKey its P2PK script) and returns their hashes once
// the Electrum server reports the last one as its tip.
func (n *Node) MineTo(addr address.Address, count int) ([]*chainhash.Hash, error) {
	if count <= 0 {
		return nil, fmt.Errorf("mine %d blocks: need a positive count", count)
	}
	if nilAddress(addr) {
		return nil, errors.New("mine to a nil address")
	}
	// rpcclient's GenerateToAddress would send EncodeAddress, the P2PKH
	// address of a pay-to-pubkey address's key.
	raw, err := rawParams(count, rpcAddress(addr))
	if err != nil {
		return nil, err
	}
	res, err := rpcWithin("generatetoaddress", func() (json.RawMessage, error) {
		return n.RPC.RawRequest("generatetoaddress", raw)
	})
	if err != nil {
		return nil, fmt.Errorf("generatetoaddress %d %v: %w", count, addr, err)
	}
	var strs []string
	if err := json.Unmarshal(res, &strs); err != nil {
		return nil, fmt.Errorf("generatetoaddress result %s: %w", truncate(res), err)
	}
	hashes := make([]*chainhash.Hash, len(strs))
	for i, s := range strs {
		if hashes[i], err = chainhash.NewHashFromStr(s); err != nil {
			return nil, fmt.Errorf("generatetoaddress result %q: %w", s, err)
		}
	}
	return hashes, n.waitSynced()
}

// rawParams encodes the parameters of a RawRequest.
func rawParams(params ...any) ([]json.RawMessage, error) {
	raw := make([]json.RawMessage, len(params))
	for i, p := range params {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		raw[i] = b
	}
	return raw, nil
}

// SendRaw submits a transaction to the node's mempool (sendrawtransaction)
// and returns its id. The Electrum server's mempool view has it when
// SendRaw returns.
func (n *Node) SendRaw(tx *wire.MsgTx) (*chainhash.Hash, error) {
	hash, err := rpcWithin("sendrawtransaction", func() (*chainhash.Hash, error) { return n.RPC.SendRawTransaction(tx, true) })
	if err != nil {
		return nil, fmt.Errorf("sendrawtransaction %v: %w", tx.TxHash(), err)
	}
	return hash, nil
}

// WaitSynced waits until the Electrum server reports the node's best block
// at the time of the call as its tip (blockchain.headers.subscribe), or a
// later block of the node's main chain, or ctx ends. A node without the
// Electrum index is synced by definition.
func (n *Node) WaitSynced(ctx context.Context) error {
	if n.ElectrumAddr == "" {
		return nil
	}
	type best struct {
		hash   *chainhash.Hash
		height int32
	}
	b, err := answerWithin(ctx, "getbestblock", func() (best, error) {
		h, height, err := n.RPC.GetBestBlock()
		return best{h, height}, err
	})
	if err != nil {
		return fmt.Errorf("getbestblock: %w", err)
	}
	want, wantHeight := b.hash, b.height
	c, err := n.syncClient(ctx)
	if err != nil {
		return err
	}
	for {
		tip, err := c.SubscribeHeaders(ctx)
		if err != nil {
			return fmt.Errorf("waiting for the Electrum server to reach %v: %w", want, err)
		}
		h, err := tip.Header()
		if err != nil {
			return err
		}
		if hash := h.BlockHash(); hash == *want {
			return nil
		} else if tip.Height > wantHeight {
			// Blocks came after the call: a tip on the node's main chain
			// is as good.
			main, err := answerWithin(ctx, "getblockhash", func() (*chainhash.Hash, error) { return n.RPC.GetBlockHash(int64(tip.Height)) })
			if err == nil && *main == hash {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Electrum server did not reach %v (at %d): %w", want, tip.Height, ctx.Err())
		case <-time.After(syncPoll):
		}
	}
}

// syncPoll is the interval at which WaitSynced asks the Electrum server
// for its tip.
const syncPoll = 2 * time.Millisecond

// waitSynced is WaitSynced bounded by SyncTimeout.
func (n *Node) waitSynced() error {
	ctx, cancel := context.WithTimeout(context.Background(), SyncTimeout)
	defer cancel()
	return n.WaitSynced(ctx)
}

// syncClient returns the node's own Electrum connection for WaitSynced,
// dialing it on first use (the headers subscription it takes stays off
// the Electrum client tests use).
func (n *Node) syncClient(ctx context.Context) (*ElectrumClient, error) {
	n.syncMu.Lock()
	defer n.syncMu.Unlock()
	if n.syncConn != nil && !isClosed(n.syncConn.Done()) {
		n.syncConn.dropNotifications()
		return n.syncConn, nil
	}
	c, err := DialElectrum(ctx, n.ElectrumAddr)
	if err != nil {
		return nil, err
	}
	if _, _, err := c.Version(ctx, "btcd-electrum-integration-sync", "1.4"); err != nil {
		_ = c.Close()
		return nil, err
	}
	n.syncConn = c
	return c, nil
}

// ElectrumTLSConfig returns a TLS configuration that trusts the certificate
// of the node's Electrum TLS and WSS listeners.
func (n *Node) ElectrumTLSConfig() (*tls.Config, error) {
	if n.ElectrumCert == "" {
		return nil, errors.New("the node has no Electrum TLS or WSS listener")
	}
	pem, err := os.ReadFile(n.ElectrumCert)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", n.ElectrumCert)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// ElectrumInfo calls the node's getelectruminfo extension through c: the
// index and chain tips, catch-up state, listeners and sessions. The answer
// is awaited within SyncTimeout.
func ElectrumInfo(c *rpcclient.Client) (rpcext.ElectrumInfo, error) {
	var info rpcext.ElectrumInfo
	raw, err := rpcWithin("getelectruminfo", func() (json.RawMessage, error) {
		return c.RawRequest(rpcext.GetElectrumInfoMethod, nil)
	})
	if err != nil {
		return info, fmt.Errorf("getelectruminfo: %w", err)
	}
	err = json.Unmarshal(raw, &info)
	return info, err
}
