package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// checkResult is what -check found.
type checkResult struct {
	Checked, Skipped, Differ int
}

// electrumResult calls method on c and decodes its result into out; an
// error answer is errRefused.
func electrumResult(c *conn, out any, method string, params ...string) error {
	raw, err := c.callFull(method, 256<<20, params...)
	if err != nil {
		return err
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return err
	}
	if len(msg.Error) > 0 && string(msg.Error) != "null" {
		return fmt.Errorf("%w: %s", errRefused, msg.Error)
	}
	return json.Unmarshal(msg.Result, out)
}

// errRefused is an Electrum error answer, or Esplora's refusal of a script
// over its limits.
var errRefused = errors.New("error answer")

// runCheck compares, for every script, the Esplora API's answers with the
// Electrum server's for the same script, both read at one tip: the node
// must not be receiving blocks. Scripts either server refuses (a history or
// answer over its limits) are counted and skipped. Each
// difference is written to out.
func runCheck(ctx context.Context, cfg *config, scripts *hashList, out io.Writer) (*checkResult, error) {
	d := &dialer{addr: cfg.Server, tls: cfg.TLS, timeout: cfg.Timeout}
	c, _, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	s, _, err := newEsploraTarget(cfg.Esplora, cfg.Timeout).open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	es := s.(*esploraSession)
	res := &checkResult{}
	for _, esh := range scripts.Raw {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		why, err := checkScript(c, es, esh)
		if errors.Is(err, errRefused) {
			res.Skipped++
			continue
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", esh, err)
		}
		res.Checked++
		if len(why) > 0 {
			res.Differ++
			fmt.Fprintf(out, "%s: %s\n", esh, strings.Join(why, "; "))
		}
	}
	return res, nil
}

// checkScript returns how the two APIs' answers for one script differ.
func checkScript(c *conn, es *esploraSession, esh string) ([]string, error) {
	var hist []struct {
		TxHash string `json:"tx_hash"`
		Height int    `json:"height"`
	}
	var bal struct {
		Confirmed int64 `json:"confirmed"`
	}
	var unspent []struct {
		TxHash string `json:"tx_hash"`
		TxPos  uint32 `json:"tx_pos"`
		Value  int64  `json:"value"`
	}
	q := quoted(esh)
	if err := electrumResult(c, &hist, "blockchain.scripthash.get_history", q); err != nil {
		return nil, err
	}
	if err := electrumResult(c, &bal, "blockchain.scripthash.get_balance", q); err != nil {
		return nil, err
	}
	if err := electrumResult(c, &unspent, "blockchain.scripthash.listunspent", q); err != nil {
		return nil, err
	}
	var stats struct {
		ChainStats struct {
			FundedTxoCount int   `json:"funded_txo_count"`
			FundedTxoSum   int64 `json:"funded_txo_sum"`
			SpentTxoCount  int   `json:"spent_txo_count"`
			SpentTxoSum    int64 `json:"spent_txo_sum"`
			TxCount        int   `json:"tx_count"`
		} `json:"chain_stats"`
	}
	var page []struct {
		TxID string `json:"txid"`
	}
	var utxos []struct {
		TxID  string `json:"txid"`
		Vout  uint32 `json:"vout"`
		Value int64  `json:"value"`
	}
	sh := reverseHex(esh)
	for _, r := range []struct {
		path string
		v    any
	}{{"", &stats}, {"/txs/chain", &page}, {"/utxo", &utxos}} {
		body, err := es.get("/scripthash/" + sh + r.path)
		var he *httpError
		if errors.As(err, &he) && he.status == http.StatusBadRequest {
			// Over --esploramaxutxos or --esploramaxhistory.
			return nil, fmt.Errorf("%w: %v", errRefused, err)
		}
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(body, r.v); err != nil {
			return nil, fmt.Errorf("/scripthash/%s%s: %w", sh, r.path, err)
		}
	}
	var why []string
	cs := stats.ChainStats
	if cs.TxCount != len(hist) {
		why = append(why, fmt.Sprintf("tx_count %d, history %d", cs.TxCount, len(hist)))
	}
	if cs.FundedTxoSum-cs.SpentTxoSum != bal.Confirmed || cs.FundedTxoCount-cs.SpentTxoCount != len(unspent) {
		why = append(why, fmt.Sprintf("stats %+v, balance %d, %d unspent", cs, bal.Confirmed, len(unspent)))
	}
	for i, p := range page {
		if i >= len(hist) || p.TxID != hist[len(hist)-1-i].TxHash {
			why = append(why, fmt.Sprintf("txs/chain[%d] %s", i, p.TxID))
			break
		}
	}
	if len(page) != min(25, len(hist)) {
		why = append(why, fmt.Sprintf("txs/chain has %d", len(page)))
	}
	seen := map[string]int64{}
	for _, u := range unspent {
		seen[u.TxHash+":"+strconv.Itoa(int(u.TxPos))] = u.Value
	}
	for _, u := range utxos {
		if v, ok := seen[u.TxID+":"+strconv.Itoa(int(u.Vout))]; !ok || v != u.Value {
			why = append(why, fmt.Sprintf("utxo %s:%d not in listunspent", u.TxID, u.Vout))
			break
		}
	}
	if len(utxos) != len(unspent) {
		why = append(why, fmt.Sprintf("%d utxos, listunspent %d", len(utxos), len(unspent)))
	}
	return why, nil
}
