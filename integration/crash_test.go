package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// Crash consistency: the node binary is killed with SIGKILL at random
// moments and started again on the same datadir, and every restart must
// find the index where the chain is, never rebuilt, equal row for row to
// the index the chain gives (verifyelectrumindex) and answering as the
// reference model says.
//
// CRASH_KILLS sets the number of kills (11 by default; make soak runs 200),
// CRASH_SEED the seed of the random moments (the test logs the one it used)
// and CRASH_DIR a directory to run in and keep (it must not exist).

// crashScenarios are the moments a kill lands in, taken in turn.
var crashScenarios = []string{"catch-up", "connect", "reorg", "shutdown", "connect-trailing",
	"reorg", "catch-up", "connect", "shutdown", "build", "extend"}

// crashRun is the state of one crash test: the node's directory, the
// blocks still to submit, and what the kills found.
type crashRun struct {
	t   *testing.T
	ctx context.Context
	rng *rand.Rand
	dir string
	// blocks are pre-built blocks with many transactions, submitted in
	// order; next is the first not submitted yet.
	blocks []*btcutil.Block
	next   int
	// invalidated is a block invalidated by a reorg scenario whose kill
	// may have left it invalid.
	invalidated *chainhash.Hash
	// landed counts where the kills landed, as the restarts found.
	landed map[string]int
	// restarts counts the restarts checked.
	restarts int
	// catchUpFrom and catchUpTo are the heights the killed catch-up
	// started from and went to (zero when the last kill was another).
	catchUpFrom, catchUpTo int32
	// lastScenario is the scenario of the last kill.
	lastScenario string
}

// buildCrashChain builds, in this process, a regtest chain of mature coins
// and then blocks of many transactions (same-block spends, reused scripts);
// the first inDatadir blocks go into the node's datadir under dir, all are
// returned for submitting later.
func buildCrashChain(t *testing.T, dir string, seed int64, total, inDatadir int) []*btcutil.Block {
	t.Helper()
	src, err := testchain.Create(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	spec := testchain.DefaultSpec()
	spec.Txs = 40
	spec.MaxOutputs = 6
	_, mature := src.Tip()
	for i := int(mature); i < total; i++ {
		if _, err := src.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	var blocks []*btcutil.Block
	for h := int32(1); h <= int32(total); h++ {
		b, err := src.Chain.BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
	}

	dst, err := testchain.Create(filepath.Join(dir, "data", "regtest"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks[:inDatadir] {
		blk, err := btcutil.NewBlockFromBytes(mustBytes(t, b))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := dst.Chain.ProcessBlock(blk, blockchain.BFNone); err != nil {
			t.Fatal(err)
		}
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// mustBytes serializes a block.
func mustBytes(t *testing.T, b *btcutil.Block) []byte {
	t.Helper()
	raw, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// envInt reads an integer from the environment, def when unset.
func envInt(t *testing.T, name string, def int64) int64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// TestCrashKillRestart kills the node binary with SIGKILL during index
// catch-up (with batches small enough to commit many times), during block
// connection through submitblock (on the block path and on the trailing
// worker's), during reorganizations by invalidateblock/reconsiderblock, all
// while Electrum clients are subscribed; after each kill it restarts the
// node and checks it (crashRun.check).
func TestCrashKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the node binary")
	}
	kills := int(envInt(t, "CRASH_KILLS", 11))
	seed := envInt(t, "CRASH_SEED", time.Now().UnixNano())
	t.Logf("CRASH_KILLS=%d CRASH_SEED=%d", kills, seed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills)*time.Minute+5*time.Minute)
	defer cancel()

	dir := t.TempDir()
	if keep := os.Getenv("CRASH_DIR"); keep != "" {
		// Kept after the test, to read the node's logs.
		dir = keep
	}
	// Enough blocks for the connect scenarios: about eight per kill.
	total := 101 + 40 + 8*kills/3
	r := &crashRun{t: t, ctx: ctx, rng: rand.New(rand.NewSource(seed)), dir: dir,
		blocks: buildCrashChain(t, dir, seed, total, 101+40), next: 101 + 40, landed: map[string]int{}}

	for i := 0; i < kills; i++ {
		scenario := crashScenarios[i%len(crashScenarios)]
		n := r.restart(scenario == "connect-trailing")
		r.lastScenario = scenario
		switch scenario {
		case "catch-up":
			r.killCatchUp(n)
		case "connect", "connect-trailing":
			r.killConnect(n)
		case "reorg":
			r.killReorg(n)
		case "shutdown":
			r.killShutdown(n)
		case "build":
			r.killBuild(n)
		case "extend":
			r.killExtend(n)
		}
	}
	n := r.restart(false)
	r.lastScenario = ""
	// The chain continues after the last restart.
	if _, err := n.RPC.Generate(2); err != nil {
		t.Fatalf("generate after the last restart: %v", err)
	}
	r.check(n)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	var where []string
	for k, v := range r.landed {
		where = append(where, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(where)
	t.Logf("%d kills, %d restarts checked; kills landed: %s", kills, r.restarts, strings.Join(where, ", "))
}

// args are the node's flags for a run of the crash test.
func (r *crashRun) args(index, trailing bool) NodeConfig {
	cfg := NodeConfig{Binary: true, Dir: r.dir, NoElectrumIndex: !index,
		Args: []string{"--electrumcatchupbatch=24", "--electrumprogress=100ms", "--electrumheldmin=2"}}
	if !trailing {
		cfg.Args = append(cfg.Args, "--electrumtrailage=0")
	}
	return cfg
}

// restart starts the node on the crash test's datadir, waits for its RPC
// server and checks it; a kill scenario follows.
func (r *crashRun) restart(trailing bool) *Node {
	r.t.Helper()
	n, err := startNode(r.t, r.args(true, trailing))
	if err != nil {
		r.t.Fatalf("restart %d: %v", r.restarts, err)
	}
	r.t.Cleanup(func() { kill(n) })
	if r.invalidated != nil {
		// The reorg scenario's kill may have come between invalidateblock
		// and reconsiderblock, which the chain keeps across a restart.
		if _, err := n.RPC.RawRequest("reconsiderblock", []json.RawMessage{jsonString(r.invalidated.String())}); err != nil {
			r.t.Fatalf("reconsiderblock: %v", err)
		}
		r.invalidated = nil
	}
	// Blocks submitted since ffldb last wrote its cache were lost with the
	// kill: submitting goes on from the chain's tip (the pre-built block
	// at index i is at height i+1).
	_, height, err := n.RPC.GetBestBlock()
	if err != nil {
		r.t.Fatal(err)
	}
	r.next = min(int(height), len(r.blocks))
	r.check(n)
	return n
}

// jsonString encodes s as a JSON string parameter.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// kill ends the node's process with SIGKILL and waits for it.
func kill(n *Node) {
	if n.RPC != nil {
		n.RPC.Shutdown()
	}
	if n.cmd == nil || isClosed(n.exited) {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.exited
}

// killAfter kills the node after a random delay of up to max.
func (r *crashRun) killAfter(n *Node, max time.Duration) {
	time.Sleep(time.Duration(r.rng.Int63n(int64(max))))
	kill(n)
}

// subscribe connects an Electrum client subscribed to the headers and to
// scripts the blocks still to come touch, so that kills come while
// notifications are being sent.
func (r *crashRun) subscribe(n *Node) {
	ec := n.DialElectrum(r.t, r.ctx)
	if _, err := ec.SubscribeHeaders(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	seen := 0
	for _, b := range r.blocks[min(r.next, len(r.blocks)-1):] {
		for _, tx := range b.Transactions() {
			for _, out := range tx.MsgTx().TxOut {
				if seen < 30 && testchain.Indexed(out.PkScript) {
					if _, err := ec.SubscribeScriptHash(r.ctx, ScriptHash(out.PkScript)); err != nil {
						r.t.Fatal(err)
					}
					seen++
				}
			}
		}
	}
}

// killBuild stops the node, drops its index (--dropelectrumindex), starts
// it again, which builds a new index into its base in many small batches,
// and kills it at a random moment of that build.
func (r *crashRun) killBuild(n *Node) {
	r.t.Helper()
	_, chainTip, err := n.RPC.GetBestBlock()
	if err != nil {
		r.t.Fatal(err)
	}
	r.dropIndex(n)
	on, err := startNodeArgs(r.args(true, false))
	if err != nil {
		r.t.Fatal(err)
	}
	var logSize int64
	if st, err := os.Stat(on.LogFile); err == nil {
		logSize = st.Size()
	}
	if err := on.startProcess(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { kill(on) })
	r.catchUpFrom, r.catchUpTo = 0, chainTip
	for deadline := time.Now().Add(time.Minute); !isClosed(on.exited) && time.Now().Before(deadline); {
		b, _ := os.ReadFile(on.LogFile)
		if len(b) > int(logSize) && (strings.Contains(string(b[logSize:]), "catching up from") ||
			strings.Contains(string(b[logSize:]), "Node started")) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	r.killAfter(on, 100*time.Millisecond)
}

// killExtend stops the node, drops its index and starts it again trailing
// the chain, which builds a new index into its base; then it submits
// blocks that look old, pauses for the trailing worker to start a run that
// extends the base beside the chain, submits more, which the run follows,
// and kills the node at a random moment of that (docs/ARCHITECTURE.md,
// "Initial block download"). The next start is not trailing: it catches
// up through ffldb over the base's rows a killed run left above its named
// height, hidden.
func (r *crashRun) killExtend(n *Node) {
	r.t.Helper()
	r.dropIndex(n)
	r.lastScenario = ""
	n = r.restart(true)
	var logSize int64
	if st, err := os.Stat(n.LogFile); err == nil {
		logSize = st.Size()
	}
	for i := 0; i < 2 && r.next < len(r.blocks); i++ {
		r.submit(n)
	}
	// The worker starts a run once the chain has paused for a second.
	time.Sleep(1100 * time.Millisecond)
	r.killConnect(n)
	b, _ := os.ReadFile(n.LogFile)
	switch tail := string(b[min(int(logSize), len(b)):]); {
	case strings.Contains(tail, "base extended to height"):
		r.lastScenario = "extend: after a naming"
	case strings.Contains(tail, "catching up from"):
		r.lastScenario = "extend: during a run"
	default:
		r.lastScenario = "extend: before a run"
	}
}

// dropIndex stops the node and drops its index (--dropelectrumindex).
func (r *crashRun) dropIndex(n *Node) {
	r.t.Helper()
	if err := n.Stop(); err != nil {
		r.t.Fatalf("stop: %v", err)
	}
	cfg := r.args(false, false)
	cfg.Args = append(append([]string(nil), cfg.Args...), "--dropelectrumindex")
	drop, err := startNodeArgs(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := drop.startProcess(); err != nil {
		r.t.Fatal(err)
	}
	select {
	case <-drop.exited:
	case <-time.After(time.Minute):
		kill(drop)
		r.t.Fatal("--dropelectrumindex did not exit")
	}
	if drop.exitErr != nil {
		r.t.Fatalf("--dropelectrumindex: %v", drop.exitErr)
	}
}

// killCatchUp stops the node, connects blocks with the index off, then
// starts it with the index, which catches them up in many small batches,
// and kills it at a random moment of that catch-up.
func (r *crashRun) killCatchUp(n *Node) {
	r.t.Helper()
	_, indexTip, err := n.RPC.GetBestBlock()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		r.t.Fatalf("stop: %v", err)
	}
	off, err := startNode(r.t, r.args(false, false))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { kill(off) })
	if r.next < len(r.blocks) {
		for i := 0; i < 12 && r.next < len(r.blocks); i++ {
			r.submit(off)
		}
	} else if _, err := off.RPC.Generate(12); err != nil {
		r.t.Fatal(err)
	}
	_, chainTip, err := off.RPC.GetBestBlock()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := off.Stop(); err != nil {
		r.t.Fatalf("stop the node without index: %v", err)
	}
	// The index catches up before the RPC server starts: start the
	// process alone and kill it meanwhile.
	on, err := startNodeArgs(r.args(true, false))
	if err != nil {
		r.t.Fatal(err)
	}
	var logSize int64
	if st, err := os.Stat(on.LogFile); err == nil {
		logSize = st.Size()
	}
	if err := on.startProcess(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { kill(on) })
	r.catchUpFrom, r.catchUpTo = indexTip+1, chainTip
	// Kill it once its catch-up has started (or, should there be nothing
	// to catch up, once it has started).
	for deadline := time.Now().Add(time.Minute); !isClosed(on.exited) && time.Now().Before(deadline); {
		b, _ := os.ReadFile(on.LogFile)
		if len(b) > int(logSize) && (strings.Contains(string(b[logSize:]), "catching up from") ||
			strings.Contains(string(b[logSize:]), "Node started")) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	r.killAfter(on, 100*time.Millisecond)
}

// startNodeArgs builds the flags startNode would give the binary (with
// fresh ports), without starting it.
func startNodeArgs(cfg NodeConfig) (*Node, error) {
	n := &Node{cfg: cfg, Dir: cfg.Dir, DataDir: filepath.Join(cfg.Dir, "data"), LogDir: filepath.Join(cfg.Dir, "logs")}
	addrs := make([]string, 3)
	for i := range addrs {
		a, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	n.Args = []string{"--regtest", "--datadir=" + n.DataDir, "--logdir=" + n.LogDir,
		"--listen=" + addrs[0], "--rpclisten=" + addrs[1], "--rpcuser=" + RPCUser, "--rpcpass=" + RPCPass,
		"--miningaddr=" + MiningAddress().EncodeAddress(), "--nodnsseed", "--notls"}
	if !cfg.NoElectrumIndex {
		n.Args = append(n.Args, "--electrumindex", "--electrumlisten="+addrs[2])
	}
	n.Args = append(n.Args, cfg.Args...)
	n.LogFile = filepath.Join(n.LogDir, "regtest", "btcd-electrum.log")
	return n, nil
}

// submit submits the next pre-built block.
func (r *crashRun) submit(n *Node) {
	r.t.Helper()
	if err := n.RPC.SubmitBlock(r.blocks[r.next], nil); err != nil {
		r.t.Fatalf("submitblock %d: %v", r.next+1, err)
	}
	r.next++
}

// killConnect submits blocks (or, once the pre-built ones are used up,
// generates them) with clients subscribed, and kills the node at a random
// moment.
func (r *crashRun) killConnect(n *Node) {
	r.subscribe(n)
	stop := make(chan struct{})
	done := make(chan struct{})
	next := r.next
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if next < len(r.blocks) {
				err = n.RPC.SubmitBlock(r.blocks[next], nil)
				if err == nil {
					next++
				}
			} else {
				_, err = n.RPC.Generate(1)
			}
			if err != nil {
				return // the kill
			}
		}
	}()
	r.killAfter(n, 800*time.Millisecond)
	close(stop)
	<-done
	// The restart goes on from the chain's tip, wherever the kill left it.
	r.next = next
}

// killShutdown submits blocks, asks the node to stop with SIGINT and kills
// it at a random moment of its shutdown: while it stops its servers and
// peers, flushes btcd's UTXO cache or writes ffldb's cache to leveldb on
// closing the database.
func (r *crashRun) killShutdown(n *Node) {
	r.subscribe(n)
	for i := 0; i < 3; i++ {
		if r.next < len(r.blocks) {
			r.submit(n)
		} else if _, err := n.RPC.Generate(1); err != nil {
			r.t.Fatal(err)
		}
	}
	var logSize int64
	if st, err := os.Stat(n.LogFile); err == nil {
		logSize = st.Size()
	}
	_ = n.cmd.Process.Signal(syscall.SIGINT)
	// A clean shutdown of this small node takes some tens of
	// milliseconds.
	r.killAfter(n, 40*time.Millisecond)
	b, _ := os.ReadFile(n.LogFile)
	switch tail := string(b[min(int(logSize), len(b)):]); {
	case strings.Contains(tail, "Shutdown complete"):
		r.lastScenario = "shutdown: finished before the kill"
	case strings.Contains(tail, "Flushing UTXO cache"):
		r.lastScenario = "shutdown: killed while flushing and closing the database"
	default:
		r.lastScenario = "shutdown: killed before its flush"
	}
}

// killReorg reorganizes the chain back and forth by invalidateblock and
// reconsiderblock of a block 1 to 8 deep, with clients subscribed, and
// kills the node at a random moment.
func (r *crashRun) killReorg(n *Node) {
	r.subscribe(n)
	_, height, err := n.RPC.GetBestBlock()
	if err != nil {
		r.t.Fatal(err)
	}
	depth := 1 + r.rng.Intn(8)
	hash, err := n.RPC.GetBlockHash(int64(height) - int64(depth) + 1)
	if err != nil {
		r.t.Fatal(err)
	}
	r.invalidated = hash
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := n.RPC.RawRequest("invalidateblock", []json.RawMessage{jsonString(hash.String())}); err != nil {
				return
			}
			if _, err := n.RPC.RawRequest("reconsiderblock", []json.RawMessage{jsonString(hash.String())}); err != nil {
				return
			}
		}
	}()
	r.killAfter(n, 1200*time.Millisecond)
	<-done
}

// catchUpFrom matches the catch-up's first log line.
var catchUpFrom = regexp.MustCompile(`catching up from height (\d+) to (\d+)`)

// check is what every restart must show: the index was not dropped or
// rebuilt (no such log line since the last start), its tip is the chain
// tip, verifyelectrumindex finds no difference, and the Electrum answers of
// a sample of scripts (and of those the last blocks touched) equal the
// reference model built from the node's blocks.
func (r *crashRun) check(n *Node) {
	t := r.t
	t.Helper()
	r.restarts++
	logged, err := n.Log()
	if err != nil {
		t.Fatal(err)
	}
	// The log of this start: from the last "Version" line of the binary.
	if i := strings.LastIndex(logged, "[INF] NODE: Version"); i >= 0 {
		logged = logged[i:]
	}
	for _, bad := range []string{"rebuilding", "dropped", "cannot be walked back", "removed block"} {
		if strings.Contains(logged, bad) {
			t.Fatalf("restart %d: the log says %q:\n%s", r.restarts, bad, logged)
		}
	}
	if r.catchUpTo > 0 {
		// Where the killed catch-up (or build) was: what this start
		// caught up.
		what := "catch-up"
		if r.lastScenario == "build" {
			what = "build"
		}
		switch m := catchUpFrom.FindStringSubmatch(logged); {
		case m == nil:
			r.landed[what+": after it finished"]++
		case m[1] == strconv.Itoa(int(r.catchUpFrom)):
			// Its commits were in ffldb's write cache, which a kill
			// loses with the chain's own blocks of the same moment.
			r.landed[what+": restarted from its start"]++
		default:
			from, _ := strconv.Atoi(m[1])
			if int32(from) < r.catchUpFrom || int32(from) > r.catchUpTo {
				t.Fatalf("restart %d: catch-up from %d, the killed one ran from %d to %d",
					r.restarts, from, r.catchUpFrom, r.catchUpTo)
			}
			r.landed[what+": between commits, resumed"]++
		}
		r.catchUpFrom, r.catchUpTo = 0, 0
	} else if r.lastScenario != "" {
		r.landed[r.lastScenario]++
	}

	checkIndexAtTip(t, n.RPC)
	res := verifyIndexRPC(t, r.ctx, n.RPC)
	if !res.OK {
		t.Fatalf("restart %d: verifyelectrumindex: %+v", r.restarts, res)
	}

	m := modelOverRPC(t, n.RPC)
	ec := n.DialElectrum(t, r.ctx)
	defer ec.Close()
	var scripts []indexers.ScriptHash
	for sh := range m.History {
		scripts = append(scripts, sh)
	}
	slices.SortFunc(scripts, func(a, b indexers.ScriptHash) int { return strings.Compare(a.String(), b.String()) })
	r.rng.Shuffle(len(scripts), func(i, j int) { scripts[i], scripts[j] = scripts[j], scripts[i] })
	for _, sh := range scripts[:min(len(scripts), 25)] {
		compareScript(t, r.ctx, ec, m, sh)
	}
}

// verifyIndexRPC runs verifyelectrumindex to its end.
func verifyIndexRPC(t *testing.T, ctx context.Context, c *rpcclient.Client) *rpcext.VerifyIndexResult {
	t.Helper()
	call := func(action string) rpcext.VerifyIndexInfo {
		raw, err := c.RawRequest(rpcext.VerifyElectrumIndexMethod, []json.RawMessage{jsonString(action)})
		if err != nil {
			t.Fatalf("verifyelectrumindex %s: %v", action, err)
		}
		var info rpcext.VerifyIndexInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		return info
	}
	info := call("start")
	WaitFor(t, ctx, "verifyelectrumindex", func() bool {
		info = call("status")
		return !info.Running && info.Result != nil
	})
	if info.Error != "" {
		t.Fatalf("verifyelectrumindex: %s", info.Error)
	}
	return info.Result
}

// modelOverRPC builds the reference model of the node's main chain from its
// blocks, read over RPC.
func modelOverRPC(t *testing.T, c *rpcclient.Client) *testchain.Model {
	t.Helper()
	_, tip, err := c.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	blocks := make([]*btcutil.Block, 0, tip+1)
	for h := int32(0); h <= tip; h++ {
		hash, err := c.GetBlockHash(int64(h))
		if err != nil {
			t.Fatal(err)
		}
		mb, err := c.GetBlock(hash)
		if err != nil {
			t.Fatal(err)
		}
		b := btcutil.NewBlock(mb)
		b.SetHeight(h)
		blocks = append(blocks, b)
	}
	m, err := testchain.ModelOfBlocks(blocks)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// compareScript compares the Electrum answers for one script with the
// model: confirmed history, confirmed balance, confirmed unspent outputs,
// and the status of the history served.
func compareScript(t *testing.T, ctx context.Context, ec *ElectrumClient, m *testchain.Model, sh indexers.ScriptHash) {
	t.Helper()
	hex := sh.String()
	hist, err := ec.GetHistory(ctx, hex)
	if err != nil {
		t.Fatal(err)
	}
	var got []HistoryItem
	for _, e := range hist {
		if e.Height > 0 {
			got = append(got, HistoryItem{TxHash: e.TxHash, Height: e.Height})
		}
	}
	var want []HistoryItem
	for _, e := range m.History[sh] {
		want = append(want, HistoryItem{TxHash: e.TxHash.String(), Height: e.Height})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("script %s: history %v, model %v", hex, got, want)
	}
	bal, err := ec.GetBalance(ctx, hex)
	if err != nil {
		t.Fatal(err)
	}
	if bal.Confirmed != m.Balance[sh] {
		t.Fatalf("script %s: confirmed balance %d, model %d", hex, bal.Confirmed, m.Balance[sh])
	}
	us, err := ec.ListUnspent(ctx, hex)
	if err != nil {
		t.Fatal(err)
	}
	var gotU []Unspent
	for _, u := range us {
		if u.Height > 0 {
			gotU = append(gotU, u)
		}
	}
	var wantU []Unspent
	for _, u := range m.Unspent[sh] {
		wantU = append(wantU, Unspent{TxHash: u.TxHash.String(), TxPos: u.Vout, Height: u.Height, Value: u.Value})
	}
	if !slices.Equal(gotU, wantU) {
		t.Fatalf("script %s: unspent %v, model %v", hex, gotU, wantU)
	}
	status, err := ec.SubscribeScriptHash(ctx, hex)
	if err != nil {
		t.Fatal(err)
	}
	if str(status) != str(Status(hist)) {
		t.Fatalf("script %s: status %s, of its history %s", hex, str(status), str(Status(hist)))
	}
}
