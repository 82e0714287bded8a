// Command esplora-load measures a node's Esplora HTTP API under a
// wallet-like load, beside its Electrum server on the same scripts: each of
// -conns connections runs a closed loop of requests drawn from a mix, and
// the tool reports requests per second and latency percentiles per
// protocol and request kind.
//
//	go run ./cmd/esplora-load -esplora http://127.0.0.1:3000 -electrum 127.0.0.1:50001 \
//	    -scripts bin/chains/mainnet-1000000/scripts.txt -conns 20,100 -duration 20s
//
// With -check it instead compares, for every script of the file, Esplora's
// stats, first page of confirmed transactions and unspent outputs with the
// Electrum server's history, balance and unspent outputs.
//
// The scripts file holds Electrum script hashes (byte-reversed SHA-256 of
// the output script), one a line, first field; '#' starts a comment.
// Esplora's mix: stats 3, first page of /txs/chain 2, /utxo 2, a
// transaction's status 1, a block header 2. Electrum's: get_balance 3,
// get_history 2, listunspent 2, transaction.get_merkle 1, block.header 2.
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	esploraURL := flag.String("esplora", "http://127.0.0.1:3000", "Esplora API base URL (with its path prefix)")
	electrumAddr := flag.String("electrum", "", "Electrum TCP address (host:port); empty: Esplora only")
	scriptsFile := flag.String("scripts", "", "file of Electrum script hashes")
	connsFlag := flag.String("conns", "20,100", "connections of each phase, comma-separated")
	duration := flag.Duration("duration", 20*time.Second, "measured time of each phase")
	warmup := flag.Duration("warmup", 2*time.Second, "unmeasured time before each phase")
	check := flag.Bool("check", false, "instead of the load: compare, for every script of the file, Esplora's stats, first page of confirmed transactions and unspent outputs with the Electrum server's history, balance and unspent outputs")
	flag.Parse()
	scripts, err := readScripts(*scriptsFile)
	if err != nil {
		fail(err)
	}
	if *check {
		if err := checkScripts(*esploraURL, *electrumAddr, scripts); err != nil {
			fail(err)
		}
		return
	}
	w, err := newWorld(*esploraURL, scripts)
	if err != nil {
		fail(err)
	}
	for _, c := range strings.Split(*connsFlag, ",") {
		conns, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || conns <= 0 {
			fail(fmt.Errorf("-conns: %q", c))
		}
		report("esplora", conns, run(conns, *warmup, *duration, func(i int) (client, error) { return w.esploraClient(conns), nil }))
		if *electrumAddr != "" {
			report("electrum", conns, run(conns, *warmup, *duration, func(i int) (client, error) {
				return dialElectrum(*electrumAddr, w)
			}))
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "esplora-load:", err)
	os.Exit(1)
}

func readScripts(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Fields(line)[0])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no scripts", path)
	}
	return out, sc.Err()
}

// world is what requests are drawn from: scripts, block hashes and
// confirmed transactions with their heights.
type world struct {
	base    string
	scripts []string // Electrum form
	blocks  []string
	txids   []string
	heights []int
}

func newWorld(base string, scripts []string) (*world, error) {
	w := &world{base: base, scripts: scripts}
	tip, err := get(http.DefaultClient, base+"/blocks/tip/height")
	if err != nil {
		return nil, err
	}
	height, err := strconv.Atoi(tip)
	if err != nil {
		return nil, fmt.Errorf("tip height %q", tip)
	}
	for h := 0; h <= height; h++ {
		hash, err := get(http.DefaultClient, base+"/block-height/"+strconv.Itoa(h))
		if err != nil {
			return nil, err
		}
		w.blocks = append(w.blocks, hash)
	}
	for h := height; h > 0 && len(w.txids) < 10_000; h -= 7 {
		body, err := get(http.DefaultClient, w.base+"/block/"+w.blocks[h]+"/txids")
		if err != nil {
			return nil, err
		}
		var ids []string
		if err := json.Unmarshal([]byte(body), &ids); err != nil {
			return nil, err
		}
		for _, id := range ids {
			w.txids = append(w.txids, id)
			w.heights = append(w.heights, h)
		}
	}
	return w, nil
}

func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b), nil
}

func reverseHex(s string) string {
	b, err := hex.DecodeString(s)
	if err != nil {
		return s
	}
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return hex.EncodeToString(b)
}

// client sends one request of a kind drawn by weight.
type client interface {
	do(rng *rand.Rand) (kind string, err error)
	close()
}

// pick draws a kind from weights.
func pick(rng *rand.Rand, kinds []string, weights []int) string {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := rng.Intn(total)
	for i, w := range weights {
		if n < w {
			return kinds[i]
		}
		n -= w
	}
	return kinds[len(kinds)-1]
}

type esploraClient struct {
	w *world
	c *http.Client
}

func (w *world) esploraClient(conns int) client {
	return &esploraClient{w: w, c: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}
}

var esploraKinds, esploraWeights = []string{"stats", "txs/chain", "utxo", "tx status", "block header"}, []int{3, 2, 2, 1, 2}

func (e *esploraClient) do(rng *rand.Rand) (string, error) {
	kind := pick(rng, esploraKinds, esploraWeights)
	sh := reverseHex(e.w.scripts[rng.Intn(len(e.w.scripts))])
	var path string
	switch kind {
	case "stats":
		path = "/scripthash/" + sh
	case "txs/chain":
		path = "/scripthash/" + sh + "/txs/chain"
	case "utxo":
		path = "/scripthash/" + sh + "/utxo"
	case "tx status":
		path = "/tx/" + e.w.txids[rng.Intn(len(e.w.txids))] + "/status"
	default:
		path = "/block/" + e.w.blocks[rng.Intn(len(e.w.blocks))] + "/header"
	}
	_, err := get(e.c, e.w.base+path)
	return kind, err
}

func (e *esploraClient) close() { e.c.CloseIdleConnections() }

type electrumClient struct {
	w    *world
	conn net.Conn
	r    *bufio.Reader
	id   int
}

func dialElectrum(addr string, w *world) (client, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &electrumClient{w: w, conn: conn, r: bufio.NewReaderSize(conn, 1<<20)}
	if err := c.call("server.version", "esplora-load", "1.4"); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

func (c *electrumClient) call(method string, params ...any) error {
	c.id++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.conn.Write(append(req, '\n')); err != nil {
		return err
	}
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return err
	}
	var resp struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return err
	}
	if len(resp.Error) > 0 && string(resp.Error) != "null" {
		return fmt.Errorf("%s: %s", method, resp.Error)
	}
	return nil
}

var electrumKinds = []string{"get_balance", "get_history", "listunspent", "get_merkle", "block.header"}

func (c *electrumClient) do(rng *rand.Rand) (string, error) {
	kind := pick(rng, electrumKinds, esploraWeights)
	sh := c.w.scripts[rng.Intn(len(c.w.scripts))]
	switch kind {
	case "get_merkle":
		i := rng.Intn(len(c.w.txids))
		return kind, c.call("blockchain.transaction.get_merkle", c.w.txids[i], c.w.heights[i])
	case "block.header":
		return kind, c.call("blockchain.block.header", rng.Intn(len(c.w.blocks)))
	}
	return kind, c.call("blockchain.scripthash."+kind, sh)
}

func (c *electrumClient) close() { c.conn.Close() }

// result is one phase's measurements.
type result struct {
	elapsed time.Duration
	lat     map[string][]time.Duration
	errs    map[string]int
}

// run runs conns closed loops for warmup then duration and returns what
// was measured after the warm-up.
func run(conns int, warmup, duration time.Duration, dial func(int) (client, error)) result {
	var mu sync.Mutex
	res := result{lat: map[string][]time.Duration{}, errs: map[string]int{}}
	start := time.Now()
	measureFrom, end := start.Add(warmup), start.Add(warmup+duration)
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := dial(i)
			if err != nil {
				mu.Lock()
				res.errs["dial"]++
				mu.Unlock()
				return
			}
			defer c.close()
			rng := rand.New(rand.NewSource(int64(i)))
			lat := map[string][]time.Duration{}
			errs := map[string]int{}
			for {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				kind, err := c.do(rng)
				if t0.Before(measureFrom) {
					continue
				}
				if err != nil {
					errs[kind]++
					continue
				}
				lat[kind] = append(lat[kind], time.Since(t0))
			}
			mu.Lock()
			for k, v := range lat {
				res.lat[k] = append(res.lat[k], v...)
			}
			for k, v := range errs {
				res.errs[k] += v
			}
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	res.elapsed = duration
	return res
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func report(proto string, conns int, r result) {
	var all []time.Duration
	kinds := make([]string, 0, len(r.lat))
	for k, v := range r.lat {
		all = append(all, v...)
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	nerr := 0
	for _, v := range r.errs {
		nerr += v
	}
	fmt.Printf("%s, %d connections: %.0f req/s, p50 %v, p99 %v, max %v, %d errors %v\n", proto, conns,
		float64(len(all))/r.elapsed.Seconds(), pct(all, 0.5).Round(10*time.Microsecond),
		pct(all, 0.99).Round(10*time.Microsecond), pct(all, 1).Round(10*time.Microsecond), nerr, r.errs)
	for _, k := range kinds {
		v := r.lat[k]
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		fmt.Printf("  %-13s %7d  p50 %v  p99 %v\n", k, len(v), pct(v, 0.5).Round(10*time.Microsecond), pct(v, 0.99).Round(10*time.Microsecond))
	}
}

// checkScripts compares Esplora's answers for every script with the
// Electrum server's for the same script (both read at the same tip: the
// node must not be receiving blocks). Scripts whose history the Electrum
// server refuses as too large are counted and skipped.
func checkScripts(base, electrumAddr string, scripts []string) error {
	conn, err := net.Dial("tcp", electrumAddr)
	if err != nil {
		return err
	}
	defer conn.Close()
	e := &electrumClient{conn: conn, r: bufio.NewReaderSize(conn, 64<<20)}
	if err := e.call("server.version", "esplora-load", "1.4"); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 5 * time.Minute}
	var checked, skipped, mismatched int
	for _, esh := range scripts {
		var hist []struct {
			TxHash string `json:"tx_hash"`
			Height int    `json:"height"`
		}
		if err := e.result("blockchain.scripthash.get_history", &hist, esh); err != nil {
			skipped++
			continue
		}
		var bal struct {
			Confirmed int64 `json:"confirmed"`
		}
		var unspent []struct {
			TxHash string `json:"tx_hash"`
			TxPos  uint32 `json:"tx_pos"`
			Value  int64  `json:"value"`
		}
		if err := e.result("blockchain.scripthash.get_balance", &bal, esh); err != nil {
			return err
		}
		if err := e.result("blockchain.scripthash.listunspent", &unspent, esh); err != nil {
			skipped++
			continue
		}
		sh := reverseHex(esh)
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
		for path, v := range map[string]any{"": &stats, "/txs/chain": &page, "/utxo": &utxos} {
			body, err := get(hc, base+"/scripthash/"+sh+path)
			if err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(body), v); err != nil {
				return fmt.Errorf("%s%s: %v", sh, path, err)
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
		checked++
		if len(why) > 0 {
			mismatched++
			fmt.Printf("%s: %s\n", esh, strings.Join(why, "; "))
		}
	}
	fmt.Printf("checked %d scripts (%d skipped: too large for the Electrum server): %d differ\n", checked, skipped, mismatched)
	if mismatched > 0 {
		return fmt.Errorf("%d scripts differ", mismatched)
	}
	return nil
}

// result calls a method and decodes its result.
func (c *electrumClient) result(method string, out any, params ...any) error {
	c.id++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.conn.Write(append(req, '\n')); err != nil {
		return err
	}
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return err
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return err
	}
	if len(resp.Error) > 0 && string(resp.Error) != "null" {
		return fmt.Errorf("%s: %s", method, resp.Error)
	}
	return json.Unmarshal(resp.Result, out)
}
