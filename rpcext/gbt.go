package rpcext

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TemplateBackend is implemented by a Backend with btcd's block template
// generator: getblocktemplate (BIP 22 and 23: templates, long polling and
// proposals).
type TemplateBackend interface {
	// NewBlockTemplate builds a template on the tip paying payTo (nil:
	// an anyone-can-spend coinbase, for clients building their own).
	NewBlockTemplate(payTo address.Address) (*mining.BlockTemplate, error)

	// UpdateBlockTime moves a template's timestamp to now (never below
	// the median time past).
	UpdateBlockTime(msgBlock *wire.MsgBlock) error

	// MiningAddress returns one of the configured mining addresses, nil
	// when there are none.
	MiningAddress() address.Address

	// MempoolLastUpdated is when the mempool last changed.
	MempoolLastUpdated() time.Time

	// IsCurrent reports whether the chain is synced.
	IsCurrent() bool

	// AdjustedTime is the network-adjusted time.
	AdjustedTime() time.Time

	// CheckConnectBlockTemplate checks that a block would connect to the
	// tip, all rules but proof of work.
	CheckConnectBlockTemplate(block *btcutil.Block) error
}

// gbtRegenerate is how old a template must be before a changed mempool
// makes a new one, as btcd.
const gbtRegenerate = 60 * time.Second

// The constant parts of btcd's template answers.
var (
	gbtMutable      = []string{"time", "transactions/add", "prevblock", "coinbase/append"}
	gbtNonceRange   = "00000000ffffffff"
	gbtCapabilities = []string{"proposal"}
)

// gbtState is the current template and the long pollers waiting for it to
// change. mu serializes making templates (which reads the chain and the
// mempool); the wake-ups come from the node's notification paths, which
// must never wait for that, so they only touch sigMu and atomics.
type gbtState struct {
	mu            sync.Mutex
	template      *mining.BlockTemplate
	prevHash      *chainhash.Hash
	lastGenerated time.Time
	lastTxUpdate  time.Time
	minTimestamp  time.Time

	// generated is lastGenerated in Unix nanoseconds, 0 before the
	// first template.
	generated atomic.Int64
	// waiting counts the long polls waiting for a change.
	waiting atomic.Int32
	sigMu   sync.Mutex
	// changed is closed (and replaced) when long pollers should get a new
	// template: a block connected, or the mempool changed under a
	// template older than gbtRegenerate.
	changed chan struct{}
}

// newGBTState returns an empty state.
func newGBTState() *gbtState { return &gbtState{changed: make(chan struct{})} }

// wake releases the long pollers.
func (g *gbtState) wake() {
	g.sigMu.Lock()
	close(g.changed)
	g.changed = make(chan struct{})
	g.sigMu.Unlock()
}

// changedChan returns the channel the next wake closes.
func (g *gbtState) changedChan() chan struct{} {
	g.sigMu.Lock()
	defer g.sigMu.Unlock()
	return g.changed
}

// blockConnected releases the long pollers of the old tip. It never
// blocks on template work.
func (g *gbtState) blockConnected() {
	if g.generated.Load() != 0 {
		g.wake()
	}
}

// mempoolChanged releases the long pollers when their template is older
// than gbtRegenerate. It never blocks on template work.
func (g *gbtState) mempoolChanged() {
	gen := g.generated.Load()
	if gen != 0 && time.Since(time.Unix(0, gen)) >= gbtRegenerate {
		g.wake()
	}
}

// templateID is the long poll id of the current template.
func (g *gbtState) templateID() string {
	return fmt.Sprintf("%s-%d", g.prevHash, g.lastGenerated.Unix())
}

// decodeTemplateID parses a long poll id.
func decodeTemplateID(id string) (*chainhash.Hash, int64, error) {
	hashStr, genStr, ok := strings.Cut(id, "-")
	if !ok {
		return nil, 0, errors.New("invalid longpollid format")
	}
	hash, err := chainhash.NewHashFromStr(hashStr)
	if err != nil {
		return nil, 0, err
	}
	gen, err := strconv.ParseInt(genStr, 10, 64)
	if err != nil {
		return nil, 0, err
	}
	return hash, gen, nil
}

// templateBackend returns the backend's template generator or an error.
func (s *Server) templateBackend() (TemplateBackend, error) {
	tb, ok := s.cfg.Backend.(TemplateBackend)
	if !ok {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "the node does not support this method")
	}
	return tb, nil
}

// errNoMiningAddr is btcd's answer when a coinbase transaction is asked for
// without --miningaddr.
var errNoMiningAddr = btcjson.NewRPCError(btcjson.ErrRPCInternal.Code,
	"A coinbase transaction has been requested, but the server has not been configured with any payment addresses via --miningaddr")

// handleGetBlockTemplate answers getblocktemplate in template mode (with
// long polling) and proposal mode, as btcd.
func handleGetBlockTemplate(s *Server, cmd interface{}, gone <-chan struct{}) (interface{}, error) {
	req := cmd.(*btcjson.GetBlockTemplateCmd).Request
	mode := "template"
	if req != nil && req.Mode != "" {
		mode = req.Mode
	}
	switch mode {
	case "template":
		return s.gbtTemplate(req, gone)
	case "proposal":
		return s.gbtProposal(req)
	}
	return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "Invalid mode")
}

// gbtTemplate answers a template request.
func (s *Server) gbtTemplate(req *btcjson.TemplateRequest, gone <-chan struct{}) (interface{}, error) {
	tb, err := s.templateBackend()
	if err != nil {
		return nil, err
	}
	// A coinbase transaction is built only for a client that says it
	// takes one and not the value alone.
	coinbaseValue := true
	if req != nil {
		var txn, value bool
		for _, c := range req.Capabilities {
			txn = txn || c == "coinbasetxn"
			value = value || c == "coinbasevalue"
		}
		coinbaseValue = !txn || value
	}
	if !coinbaseValue && tb.MiningAddress() == nil {
		return nil, errNoMiningAddr
	}
	if s.cfg.Params.Name != "regtest" && s.cfg.Params.Name != "simnet" && s.cfg.Backend.ConnectedCount() == 0 {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCClientNotConnected, "Bitcoin is not connected")
	}
	if s.cfg.Chain.BestSnapshot().Height != 0 && !tb.IsCurrent() {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCClientInInitialDownload, "Bitcoin is downloading blocks...")
	}

	g := s.gbt
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := s.updateTemplate(tb, coinbaseValue); err != nil {
		return nil, err
	}
	if req == nil || req.LongPollID == "" {
		return s.templateResult(tb, coinbaseValue, nil)
	}
	prevHash, lastGenerated, err := decodeTemplateID(req.LongPollID)
	if err != nil {
		return s.templateResult(tb, coinbaseValue, nil)
	}
	current := &g.template.Block.Header.PrevBlock
	if !prevHash.IsEqual(current) || lastGenerated != g.lastGenerated.Unix() {
		submitOld := prevHash.IsEqual(current)
		return s.templateResult(tb, coinbaseValue, &submitOld)
	}
	// The client has the current template: wait until it changes (unless
	// the tip moved since it was made).
	changed := g.changedChan()
	g.mu.Unlock()
	if tip := s.cfg.Chain.BestSnapshot().Hash; tip.IsEqual(prevHash) {
		g.waiting.Add(1)
		select {
		case <-changed:
		case <-gone:
			// Nobody to answer: the client's place is free again.
			g.waiting.Add(-1)
			g.mu.Lock()
			return nil, btcjson.NewRPCError(btcjson.ErrRPCClientNotConnected, "client gone")
		case <-s.quit:
			g.waiting.Add(-1)
			g.mu.Lock()
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "server shutting down")
		}
		g.waiting.Add(-1)
	}
	g.mu.Lock()
	if err := s.updateTemplate(tb, coinbaseValue); err != nil {
		return nil, err
	}
	submitOld := prevHash.IsEqual(&g.template.Block.Header.PrevBlock)
	return s.templateResult(tb, coinbaseValue, &submitOld)
}

// updateTemplate makes a new template when the tip changed, or when the
// mempool changed and the template is older than gbtRegenerate; otherwise
// it refreshes the template's time (and pays a mining address when a
// coinbase transaction is asked for and the template has none). The caller
// holds s.gbt.mu.
func (s *Server) updateTemplate(tb TemplateBackend, coinbaseValue bool) error {
	g := s.gbt
	lastTx := tb.MempoolLastUpdated()
	if lastTx.IsZero() {
		lastTx = time.Now()
	}
	tip := s.cfg.Chain.BestSnapshot()
	if g.template == nil || g.prevHash == nil || !g.prevHash.IsEqual(&tip.Hash) ||
		(!g.lastTxUpdate.Equal(lastTx) && time.Since(g.lastGenerated) >= gbtRegenerate) {
		var payTo address.Address
		if !coinbaseValue {
			payTo = tb.MiningAddress()
		}
		t, err := tb.NewBlockTemplate(payTo)
		if err != nil {
			return btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "Failed to create new block template: "+err.Error())
		}
		hash := tip.Hash
		g.template, g.prevHash = t, &hash
		g.lastGenerated, g.lastTxUpdate = time.Now(), lastTx
		g.minTimestamp = mining.MinimumMedianTime(tip)
		g.generated.Store(g.lastGenerated.UnixNano())
		g.wake()
		return nil
	}
	t := g.template
	if !coinbaseValue && !t.ValidPayAddress {
		pkScript, err := txscript.PayToAddrScript(tb.MiningAddress())
		if err != nil {
			return btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "Failed to create pay-to-addr script: "+err.Error())
		}
		t.Block.Transactions[0].TxOut[0].PkScript = pkScript
		t.ValidPayAddress = true
		root := blockchain.CalcMerkleRoot(btcutil.NewBlock(t.Block).Transactions(), false)
		t.Block.Header.MerkleRoot = root
	}
	if err := tb.UpdateBlockTime(t.Block); err != nil {
		return btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, err.Error())
	}
	t.Block.Header.Nonce = 0
	return nil
}

// templateResult describes the current template as btcd's
// getblocktemplate result. The caller holds s.gbt.mu.
func (s *Server) templateResult(tb TemplateBackend, coinbaseValue bool, submitOld *bool) (*btcjson.GetBlockTemplateResult, error) {
	g := s.gbt
	t := g.template
	block := t.Block
	header := &block.Header
	maxTime := tb.AdjustedTime().Add(blockchain.MaxTimeOffsetSeconds * time.Second)
	if header.Timestamp.After(maxTime) {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCOutOfRange,
			fmt.Sprintf("The template time is after the maximum allowed time for a block - template time %v, maximum time %v",
				header.Timestamp, maxTime))
	}
	position := make(map[chainhash.Hash]int64, len(block.Transactions))
	txs := make([]btcjson.GetBlockTemplateResultTx, 0, len(block.Transactions)-1)
	for i, tx := range block.Transactions {
		txid := tx.TxHash()
		position[txid] = int64(i)
		if i == 0 {
			continue
		}
		depends := []int64{}
		seen := map[int64]bool{}
		for _, in := range tx.TxIn {
			if p, ok := position[in.PreviousOutPoint.Hash]; ok && !seen[p] {
				seen[p] = true
				depends = append(depends, p)
			}
		}
		var buf bytes.Buffer
		if err := tx.Serialize(&buf); err != nil {
			return nil, err
		}
		txs = append(txs, btcjson.GetBlockTemplateResultTx{
			Data:    hex.EncodeToString(buf.Bytes()),
			TxID:    txid.String(),
			Hash:    tx.WitnessHash().String(),
			Depends: depends,
			Fee:     t.Fees[i],
			SigOps:  t.SigOpCosts[i],
			Weight:  blockchain.GetTransactionWeight(btcutil.NewTx(tx)),
		})
	}
	r := &btcjson.GetBlockTemplateResult{
		Bits:         strconv.FormatInt(int64(header.Bits), 16),
		CurTime:      header.Timestamp.Unix(),
		Height:       int64(t.Height),
		PreviousHash: header.PrevBlock.String(),
		WeightLimit:  blockchain.MaxBlockWeight,
		SigOpLimit:   blockchain.MaxBlockSigOpsCost,
		SizeLimit:    wire.MaxBlockPayload,
		Transactions: txs,
		Version:      header.Version,
		LongPollID:   g.templateID(),
		SubmitOld:    submitOld,
		Target:       fmt.Sprintf("%064x", blockchain.CompactToBig(header.Bits)),
		MinTime:      g.minTimestamp.Unix(),
		MaxTime:      maxTime.Unix(),
		Mutable:      gbtMutable,
		NonceRange:   gbtNonceRange,
		Capabilities: gbtCapabilities,
	}
	if t.WitnessCommitment != nil {
		r.DefaultWitnessCommitment = hex.EncodeToString(t.WitnessCommitment)
	}
	if coinbaseValue {
		flags, err := txscript.NewScriptBuilder().AddData([]byte(mining.CoinbaseFlags)).Script()
		if err != nil {
			return nil, err
		}
		r.CoinbaseAux = &btcjson.GetBlockTemplateResultAux{Flags: hex.EncodeToString(flags)}
		r.CoinbaseValue = &block.Transactions[0].TxOut[0].Value
		return r, nil
	}
	if !t.ValidPayAddress {
		return nil, errNoMiningAddr
	}
	var buf bytes.Buffer
	cb := block.Transactions[0]
	if err := cb.Serialize(&buf); err != nil {
		return nil, err
	}
	r.CoinbaseTxn = &btcjson.GetBlockTemplateResultTx{
		Data: hex.EncodeToString(buf.Bytes()), Hash: cb.TxHash().String(), Depends: []int64{},
		Fee: t.Fees[0], SigOps: t.SigOpCosts[0],
	}
	return r, nil
}

// gbtRejectReasons are BIP 22's reasons for the chain's rule errors, as
// btcd names them.
var gbtRejectReasons = map[blockchain.ErrorCode]string{
	blockchain.ErrDuplicateBlock:            "duplicate",
	blockchain.ErrBlockTooBig:               "bad-blk-length",
	blockchain.ErrBlockWeightTooHigh:        "bad-blk-weight",
	blockchain.ErrBlockVersionTooOld:        "bad-version",
	blockchain.ErrInvalidTime:               "bad-time",
	blockchain.ErrTimeTooOld:                "time-too-old",
	blockchain.ErrTimeTooNew:                "time-too-new",
	blockchain.ErrDifficultyTooLow:          "bad-diffbits",
	blockchain.ErrUnexpectedDifficulty:      "bad-diffbits",
	blockchain.ErrHighHash:                  "high-hash",
	blockchain.ErrBadMerkleRoot:             "bad-txnmrklroot",
	blockchain.ErrBadCheckpoint:             "bad-checkpoint",
	blockchain.ErrForkTooOld:                "fork-too-old",
	blockchain.ErrCheckpointTimeTooOld:      "checkpoint-time-too-old",
	blockchain.ErrNoTransactions:            "bad-txns-none",
	blockchain.ErrNoTxInputs:                "bad-txns-noinputs",
	blockchain.ErrNoTxOutputs:               "bad-txns-nooutputs",
	blockchain.ErrTxTooBig:                  "bad-txns-size",
	blockchain.ErrBadTxOutValue:             "bad-txns-outputvalue",
	blockchain.ErrDuplicateTxInputs:         "bad-txns-dupinputs",
	blockchain.ErrBadTxInput:                "bad-txns-badinput",
	blockchain.ErrMissingTxOut:              "bad-txns-missinginput",
	blockchain.ErrUnfinalizedTx:             "bad-txns-unfinalizedtx",
	blockchain.ErrDuplicateTx:               "bad-txns-duplicate",
	blockchain.ErrOverwriteTx:               "bad-txns-overwrite",
	blockchain.ErrImmatureSpend:             "bad-txns-maturity",
	blockchain.ErrSpendTooHigh:              "bad-txns-highspend",
	blockchain.ErrBadFees:                   "bad-txns-fees",
	blockchain.ErrTooManySigOps:             "high-sigops",
	blockchain.ErrFirstTxNotCoinbase:        "bad-txns-nocoinbase",
	blockchain.ErrMultipleCoinbases:         "bad-txns-multicoinbase",
	blockchain.ErrBadCoinbaseScriptLen:      "bad-cb-length",
	blockchain.ErrBadCoinbaseValue:          "bad-cb-value",
	blockchain.ErrMissingCoinbaseHeight:     "bad-cb-height",
	blockchain.ErrBadCoinbaseHeight:         "bad-cb-height",
	blockchain.ErrScriptMalformed:           "bad-script-malformed",
	blockchain.ErrScriptValidation:          "bad-script-validate",
	blockchain.ErrUnexpectedWitness:         "unexpected-witness",
	blockchain.ErrInvalidWitnessCommitment:  "bad-witness-nonce-size",
	blockchain.ErrWitnessCommitmentMismatch: "bad-witness-merkle-match",
	blockchain.ErrPreviousBlockUnknown:      "prev-blk-not-found",
	blockchain.ErrInvalidAncestorBlock:      "bad-prevblk",
	blockchain.ErrPrevBlockNotBest:          "inconclusive-not-best-prvblk",
}

// gbtProposal checks a proposed block (BIP 23): null when it would be
// accepted, else the reason.
func (s *Server) gbtProposal(req *btcjson.TemplateRequest) (interface{}, error) {
	tb, err := s.templateBackend()
	if err != nil {
		return nil, err
	}
	if req.Data == "" {
		return false, btcjson.NewRPCError(btcjson.ErrRPCType,
			"Data must contain the hex-encoded serialized block that is being proposed")
	}
	data := req.Data
	if len(data)%2 != 0 {
		data = "0" + data
	}
	raw, err := hex.DecodeString(data)
	if err != nil {
		return false, btcjson.NewRPCError(btcjson.ErrRPCDeserialization,
			fmt.Sprintf("Data must be hexadecimal string (not %q)", truncate(data)))
	}
	block, err := btcutil.NewBlockFromBytes(raw)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCDeserialization, "Block decode failed: "+err.Error())
	}
	tip := s.cfg.Chain.BestSnapshot().Hash
	if !tip.IsEqual(&block.MsgBlock().Header.PrevBlock) {
		return "bad-prevblk", nil
	}
	if err := tb.CheckConnectBlockTemplate(block); err != nil {
		var rerr blockchain.RuleError
		if !errors.As(err, &rerr) {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCVerify, "Failed to process block proposal: "+err.Error())
		}
		log.Infof("Rejected block proposal: %v", err)
		if reason, ok := gbtRejectReasons[rerr.ErrorCode]; ok {
			return reason, nil
		}
		return "rejected: " + err.Error(), nil
	}
	return nil, nil
}

// LongPolls returns the number of getblocktemplate long polls waiting for
// a new template.
func (s *Server) LongPolls() int { return int(s.gbt.waiting.Load()) }
