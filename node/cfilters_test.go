package node

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/btcutil/v2/gcs"
	"github.com/btcsuite/btcd/btcutil/v2/gcs/builder"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// listeningPeer connects btcd's peer package to the node with the given
// message listeners and waits for the handshake.
func listeningPeer(t *testing.T, addr string, l peer.MessageListeners) *peer.Peer {
	t.Helper()
	verack := make(chan struct{})
	l.OnVerAck = func(*peer.Peer, *wire.MsgVerAck) { close(verack) }
	p, err := peer.NewOutboundPeer(&peer.Config{
		ChainParams:      &chaincfg.RegressionNetParams,
		Services:         wire.SFNodeNetwork | wire.SFNodeWitness,
		UserAgentName:    "test",
		UserAgentVersion: "1.0",
		AllowSelfConns:   true,
		Listeners:        l,
	}, addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p.AssociateConnection(conn)
	t.Cleanup(p.Disconnect)
	select {
	case <-verack:
	case <-time.After(testWait):
		t.Fatal("no handshake")
	}
	return p
}

// payFromCoinbase spends the coinbase of the block at height to pkScript,
// minus a fee, into the node's mempool.
func payFromCoinbase(t *testing.T, n *Node, height int32, pkScript []byte) *btcutil.Tx {
	t.Helper()
	tx := spendCoinbase(t, n, height, 10_000)
	tx.MsgTx().TxOut[0].PkScript = pkScript
	// Re-sign: the output changed.
	block, err := n.Chain().BlockByHeight(height)
	if err != nil {
		t.Fatal(err)
	}
	prev := block.Transactions()[0].MsgTx().TxOut[0].PkScript
	sig, err := txscript.SignatureScript(tx.MsgTx(), 0, prev, txscript.SigHashAll, testKey, true)
	if err != nil {
		t.Fatal(err)
	}
	tx.MsgTx().TxIn[0].SignatureScript = sig
	tx = btcutil.NewTx(tx.MsgTx())
	if _, err := n.ProcessTx(tx); err != nil {
		t.Fatalf("ProcessTx: %v", err)
	}
	return tx
}

// freshScript returns a P2WPKH script of a new key.
func freshScript(t *testing.T) []byte {
	t.Helper()
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr, err := address.NewAddressWitnessPubKeyHash(address.Hash160(key.PubKey().SerializeCompressed()),
		&chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	s, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recv waits for a value on c.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(testWait):
		t.Fatalf("no %s", what)
		var zero T
		return zero
	}
}

// TestCompactFiltersServed mines a payment to a fresh script and checks the
// BIP 157 answers over P2P against filters rebuilt independently with btcd's
// gcs builder: every filter of the chain (getcfilters), the filter header
// chain (getcfheaders, getcfilterheader RPC), the checkpoint message, the
// service bit, and that the paid script matches its block's filter and no
// other's.
func TestCompactFiltersServed(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := n.Generate(101, nil); err != nil {
		t.Fatal(err)
	}
	script := freshScript(t)
	payFromCoinbase(t, n, 1, script)
	if _, err := n.Generate(2, nil); err != nil {
		t.Fatal(err)
	}
	tip := n.Chain().BestSnapshot()
	payHeight := tip.Height - 1

	filters := make(chan *wire.MsgCFilter, 200)
	headers := make(chan *wire.MsgCFHeaders, 1)
	checkpts := make(chan *wire.MsgCFCheckpt, 1)
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{
		OnCFilter:   func(_ *peer.Peer, m *wire.MsgCFilter) { filters <- m },
		OnCFHeaders: func(_ *peer.Peer, m *wire.MsgCFHeaders) { headers <- m },
		// btcd's peer package does not dispatch cfcheckpt to
		// OnCFCheckpt; every read message passes OnRead.
		OnRead: func(_ *peer.Peer, _ int, m wire.Message, _ error) {
			if cm, ok := m.(*wire.MsgCFCheckpt); ok {
				checkpts <- cm
			}
		},
	})
	if p.Services()&(wire.SFNodeCF|wire.SFNodeBloom) != wire.SFNodeCF|wire.SFNodeBloom {
		t.Fatalf("services %v lack NODE_COMPACT_FILTERS or NODE_BLOOM", p.Services())
	}

	p.QueueMessage(wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, &tip.Hash), nil)
	var prevHeader chainhash.Hash // the genesis filter's previous header is zero
	wantHeaders := make([]chainhash.Hash, 0, tip.Height+1)
	for h := int32(0); h <= tip.Height; h++ {
		m := recv(t, filters, "cfilter")
		block, err := n.Chain().BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		if m.BlockHash != *block.Hash() {
			t.Fatalf("cfilter %d for block %v, want %v", h, m.BlockHash, block.Hash())
		}
		want := rebuildFilter(t, n, block)
		if !bytes.Equal(m.Data, want) {
			t.Fatalf("filter of block %d differs from the one rebuilt", h)
		}
		f, err := gcs.FromNBytes(builder.DefaultP, builder.DefaultM, m.Data)
		if err != nil {
			t.Fatal(err)
		}
		match, err := f.Match(builder.DeriveKey(block.Hash()), script)
		if err != nil {
			t.Fatal(err)
		}
		if match != (h == payHeight) {
			t.Fatalf("block %d: filter match of the paid script is %v", h, match)
		}
		prevHeader, err = builder.MakeHeaderForFilter(f, prevHeader)
		if err != nil {
			t.Fatal(err)
		}
		wantHeaders = append(wantHeaders, prevHeader)
	}

	// Headers from height 50: the previous header is height 49's.
	p.QueueMessage(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 50, &tip.Hash), nil)
	hm := recv(t, headers, "cfheaders")
	if hm.PrevFilterHeader != wantHeaders[49] || len(hm.FilterHashes) != int(tip.Height)-49 {
		t.Fatalf("cfheaders: prev %v (want %v), %d hashes", hm.PrevFilterHeader, wantHeaders[49], len(hm.FilterHashes))
	}
	running := hm.PrevFilterHeader
	for i, fh := range hm.FilterHashes {
		running = chainhash.DoubleHashH(append(fh[:], running[:]...))
		if running != wantHeaders[50+i] {
			t.Fatalf("filter header %d does not chain", 50+i)
		}
	}

	p.QueueMessage(wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, &tip.Hash), nil)
	if cm := recv(t, checkpts, "cfcheckpt"); len(cm.FilterHeaders) != 0 {
		t.Fatalf("%d checkpoints below height 1000", len(cm.FilterHeaders))
	}

	// The RPC methods agree.
	s := rpcBackend{n}
	for _, h := range []int32{0, payHeight, tip.Height} {
		hash, _ := n.Chain().BlockHashByHeight(h)
		raw, err := s.CFilterHeader(hash, wire.GCSFilterRegular)
		if err != nil || !bytes.Equal(raw, wantHeaders[h][:]) {
			t.Fatalf("CFilterHeader(%d) = %x, %v", h, raw, err)
		}
	}
	c := rpcClient(t, n.RPCAddrs()[0].String())
	payHash, _ := n.Chain().BlockHashByHeight(payHeight)
	got, err := c.GetCFilter(payHash, wire.GCSFilterRegular)
	if err != nil {
		t.Fatal(err)
	}
	if want := rebuildFilter(t, n, mustBlock(t, n, payHeight)); !bytes.Equal(got.Data, want) {
		t.Fatal("getcfilter differs from the rebuilt filter")
	}
	hdr, err := c.GetCFilterHeader(payHash, wire.GCSFilterRegular)
	if err != nil {
		t.Fatal(err)
	}
	if hdr.PrevFilterHeader != wantHeaders[payHeight] {
		t.Fatalf("getcfilterheader %v, want %v", hdr.PrevFilterHeader, wantHeaders[payHeight])
	}
}

// mustBlock returns the main-chain block at height.
func mustBlock(t *testing.T, n *Node, height int32) *btcutil.Block {
	t.Helper()
	b, err := n.Chain().BlockByHeight(height)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rebuildFilter builds the BIP 158 basic filter of a block with btcd's
// builder from the block and the scripts its inputs spend (looked up in the
// chain's blocks), serialized.
func rebuildFilter(t *testing.T, n *Node, block *btcutil.Block) []byte {
	t.Helper()
	var prevScripts [][]byte
	for _, tx := range block.MsgBlock().Transactions[1:] {
		for _, in := range tx.TxIn {
			prev, _, err := n.confirmedTxByScan(&in.PreviousOutPoint.Hash)
			if err != nil {
				t.Fatalf("spent transaction %v: %v", in.PreviousOutPoint.Hash, err)
			}
			prevScripts = append(prevScripts, prev.TxOut[in.PreviousOutPoint.Index].PkScript)
		}
	}
	f, err := builder.BuildBasicFilter(block.MsgBlock(), prevScripts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.NBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// confirmedTxByScan finds a main-chain transaction by scanning the blocks
// (tests only, small chains).
func (n *Node) confirmedTxByScan(hash *chainhash.Hash) (*wire.MsgTx, int32, error) {
	best := n.chain.BestSnapshot()
	for h := best.Height; h >= 0; h-- {
		b, err := n.chain.BlockByHeight(h)
		if err != nil {
			return nil, 0, err
		}
		for _, tx := range b.Transactions() {
			if *tx.Hash() == *hash {
				return tx.MsgTx(), h, nil
			}
		}
	}
	return nil, 0, errNotStarted
}

// TestNoCFilters starts with --nocfilters: the service bit is off, the RPC
// methods answer btcd's "CF index must be enabled", a peer asking anyway is
// disconnected, and the node keeps serving.
func TestNoCFilters(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.NoCFilters = true
	n := startNode(t, cfg)
	if _, err := n.Generate(3, nil); err != nil {
		t.Fatal(err)
	}
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{})
	if p.Services()&wire.SFNodeCF != 0 {
		t.Fatalf("services %v advertise compact filters", p.Services())
	}
	c := rpcClient(t, n.RPCAddrs()[0].String())
	tip := n.Chain().BestSnapshot()
	_, err := c.GetCFilter(&tip.Hash, wire.GCSFilterRegular)
	if rerr, ok := err.(*btcjson.RPCError); !ok || rerr.Code != btcjson.ErrRPCNoCFIndex {
		t.Fatalf("getcfilter without the index: %v", err)
	}
	p.QueueMessage(wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, &tip.Hash), nil)
	select {
	case <-p.Done():
	case <-time.After(testWait):
		t.Fatal("peer asking for filters was not disconnected")
	}
	if _, err := c.GetBlockCount(); err != nil {
		t.Fatal(err)
	}
}

// TestCFCheckpoints mines past the first BIP 157 checkpoint interval: the
// cfcheckpt answer holds the filter header at height 1000, equal to the
// one getcfheaders chains up to.
func TestCFCheckpoints(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := n.Generate(wire.CFCheckptInterval+5, nil); err != nil {
		t.Fatal(err)
	}
	tip := n.Chain().BestSnapshot()
	checkpts := make(chan *wire.MsgCFCheckpt, 1)
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{
		OnRead: func(_ *peer.Peer, _ int, m wire.Message, _ error) {
			if cm, ok := m.(*wire.MsgCFCheckpt); ok {
				checkpts <- cm
			}
		},
	})
	p.QueueMessage(wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, &tip.Hash), nil)
	cm := recv(t, checkpts, "cfcheckpt")
	if len(cm.FilterHeaders) != 1 || cm.StopHash != tip.Hash {
		t.Fatalf("cfcheckpt with %d headers", len(cm.FilterHeaders))
	}
	at1000, _ := n.Chain().BlockHashByHeight(wire.CFCheckptInterval)
	want, err := rpcBackend{n}.CFilterHeader(at1000, wire.GCSFilterRegular)
	if err != nil || !bytes.Equal(cm.FilterHeaders[0][:], want) {
		t.Fatalf("checkpoint %v, filter header at 1000 %x (%v)", cm.FilterHeaders[0], want, err)
	}
}

// TestCFilterRequestsHostile sends filter requests no honest client sends
// (unknown stop hash, start above stop, ranges past the limit, an unknown
// filter type): none is answered, and the same peer's valid request
// afterwards is.
func TestCFilterRequestsHostile(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := n.Generate(20, nil); err != nil {
		t.Fatal(err)
	}
	tip := n.Chain().BestSnapshot()
	got := make(chan wire.Message, 100)
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{
		OnRead: func(_ *peer.Peer, _ int, m wire.Message, _ error) {
			switch m.(type) {
			case *wire.MsgCFilter, *wire.MsgCFHeaders, *wire.MsgCFCheckpt:
				got <- m
			}
		},
	})
	unknown := chainhash.Hash{1, 2, 3}
	for _, m := range []wire.Message{
		wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, &unknown),
		wire.NewMsgGetCFilters(wire.GCSFilterRegular, 15, mustHash(t, n, 10)),
		wire.NewMsgGetCFilters(wire.FilterType(7), 0, &tip.Hash),
		wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, &unknown),
		wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 21, &tip.Hash),
		wire.NewMsgGetCFHeaders(wire.FilterType(7), 0, &tip.Hash),
		wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, &unknown),
		wire.NewMsgGetCFCheckpt(wire.FilterType(7), &tip.Hash),
	} {
		p.QueueMessage(m, nil)
	}
	p.QueueMessage(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 1, &tip.Hash), nil)
	m := recv(t, got, "the valid cfheaders")
	if h, ok := m.(*wire.MsgCFHeaders); !ok || len(h.FilterHashes) != int(tip.Height) {
		t.Fatalf("first answer %T %v", m, m)
	}
	if !p.Connected() {
		t.Fatal("disconnected")
	}
}

// mustHash returns the main-chain block hash at height.
func mustHash(t *testing.T, n *Node, height int32) *chainhash.Hash {
	t.Helper()
	h, err := n.Chain().BlockHashByHeight(height)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
