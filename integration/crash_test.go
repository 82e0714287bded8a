package integration

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcd-electrum/btcd-electrum/node"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// Crash consistency: the node binary is killed with SIGKILL at random
// moments and started again on the same datadir, and every restart must
// find the index where the chain is, never rebuilt, equal row for row to
// the index the chain gives (verifyelectrumindex) and answering as the
// reference model says.
//
// The index's store survives a kill with every batch its writer committed,
// while btcd's database loses what ffldb's write cache held (everything
// since its last flush): a restart commonly finds the index ahead of the
// chain, or on blocks the chain no longer has, and must undo exactly those
// blocks (each logged once, newest first) before it serves.
//
// CRASH_KILLS sets the number of kills (11 by default; make soak runs 200),
// CRASH_SEED the seed of the random moments (the test logs the one it used)
// and CRASH_DIR a directory to run in and keep (it must not exist).

// crashScenarios are the moments a kill lands in, taken in turn.
var crashScenarios = []string{"catch-up", "connect", "reorg", "shutdown", "ibd",
	"reorg", "catch-up", "connect", "shutdown", "build", "ibd-catch-up"}

// ibdBurst is the number of blocks the ibd-catch-up scenario connects in
// one go (the chain takes 100 to 200 ms on 2 shared cores), and
// ibdBurstKillWindow how long after the chain reached the height the kill
// aims at the kill may come (the index's writer is a few milliseconds
// behind).
const (
	ibdBurst           = 30
	ibdBurstKillWindow = 5 * time.Millisecond
)

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
	// restarts counts the restarts checked; ibds the initial downloads
	// run.
	restarts, ibds int
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
// catch-up and build (with batches small enough to commit many times),
// during block connection through submitblock, during reorganizations by
// invalidateblock/reconsiderblock, during shutdown, and during initial block
// downloads from an empty datadir (while the blocks arrive, and while the
// index catches up a burst of blocks the chain connected at once), with
// Electrum clients subscribed; after each kill it restarts the node and
// checks it (crashRun.restart, crashRun.check).
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
		if scenario == "ibd" || scenario == "ibd-catch-up" {
			// A datadir of its own: the main one's node stays down
			// until the next scenario restarts it.
			r.killIBD(scenario == "ibd-catch-up")
			continue
		}
		n := r.restart()
		r.lastScenario = scenario
		switch scenario {
		case "catch-up":
			r.killCatchUp(n)
		case "connect":
			r.killConnect(n, 800*time.Millisecond)
		case "reorg":
			r.killReorg(n)
		case "shutdown":
			r.killShutdown(n)
		case "build":
			r.killBuild(n)
		}
	}
	n := r.restart()
	// The chain continues after the last restart.
	if _, err := n.Mine(2); err != nil {
		t.Fatalf("mine after the last restart: %v", err)
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

// args are the node's flags for a run of the crash test: catch-up batches
// of 24 KiB, so that a catch-up commits many times.
func (r *crashRun) args(index bool) NodeConfig {
	return NodeConfig{Binary: true, Dir: r.dir, NoElectrumIndex: !index,
		Args: []string{"--electrumcatchupbatch=24", "--electrumprogress=100ms"}}
}

// restart starts the node on the crash test's datadir after a kill, waits
// for its RPC server and checks it (checkStart, then check); a kill
// scenario follows.
func (r *crashRun) restart() *Node {
	r.t.Helper()
	left := readIndexStore(r.t, filepath.Join(r.dir, "data"))
	logFrom := r.logSize()
	n, err := startNode(r.t, r.args(true))
	if err != nil {
		r.t.Fatalf("restart %d: %v", r.restarts, err)
	}
	r.t.Cleanup(func() { kill(n) })
	r.restarts++
	r.checkStart(n, left, startLog(r.t, n, logFrom))
	r.lastScenario = ""
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
// it again, which builds a new index from the genesis block in many small
// batches, and kills it at a random moment of that build.
func (r *crashRun) killBuild(n *Node) {
	r.t.Helper()
	_, chainTip, err := n.RPC.GetBestBlock()
	if err != nil {
		r.t.Fatal(err)
	}
	r.dropIndex(n)
	r.catchUpFrom, r.catchUpTo = 0, chainTip
	r.startAndKill(buildKillWindow)
}

// Kill windows of the start-ups the catch-up and build scenarios kill,
// from the first commit of the index's catch-up: a kill may land between
// any two of its commits of 24 KiB, or after the last, of a catch-up of 12
// blocks of many transactions (about 12 ms) or a build of the whole chain
// (about 50 ms) on 2 shared cores.
const (
	catchUpKillWindow = 15 * time.Millisecond
	buildKillWindow   = 60 * time.Millisecond
)

// startAndKill starts the node binary with the index (without waiting for
// its RPC server: the index catches up before the node serves) and kills it
// at a random moment up to window after the first commit of its catch-up
// (or once it has started, should there be nothing to catch up).
func (r *crashRun) startAndKill(window time.Duration) {
	r.t.Helper()
	on, err := startNodeArgs(r.args(true))
	if err != nil {
		r.t.Fatal(err)
	}
	var logSize int64
	if st, err := os.Stat(on.LogFile); err == nil {
		logSize = st.Size()
	}
	store := node.ElectrumIndexPath(filepath.Join(on.DataDir, "regtest"))
	journals := journalSizes(store)
	if err := on.startProcess(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { kill(on) })
	for deadline := time.Now().Add(time.Minute); !isClosed(on.exited) && time.Now().Before(deadline); {
		if journalGrew(store, journals) {
			break
		}
		b, _ := os.ReadFile(on.LogFile)
		if len(b) > int(logSize) && strings.Contains(string(b[logSize:]), "Node started") {
			break
		}
		time.Sleep(time.Millisecond)
	}
	r.killAfter(on, window)
}

// journalSizes returns the size of each journal (*.log) of the index's
// store in dir (goleveldb appends every committed batch to its journal).
func journalSizes(dir string) map[string]int64 {
	sizes := map[string]int64{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			if fi, err := e.Info(); err == nil {
				sizes[e.Name()] = fi.Size()
			}
		}
	}
	return sizes
}

// journalGrew reports whether a journal of the store in dir holds a batch
// of the index's catch-up (4 KiB or more) that it did not hold at before:
// the catch-up has committed. A new store's first batch (its schema version
// and empty tip) is smaller.
func journalGrew(dir string, before map[string]int64) bool {
	for name, size := range journalSizes(dir) {
		if size >= before[name]+4096 {
			return true
		}
	}
	return false
}

// killIBD runs an initial block download into an empty datadir of its own
// with the index on, the pre-built blocks fed by submitblock, and kills the
// node at a random moment: while the blocks arrive (with clients
// subscribed), or, with catchUp, once the chain has connected a burst of
// blocks at once (ibdBurst blocks, all but the first submitted first and
// kept by btcd as orphans until the first arrives), while the index catches
// them up. The restart (checked) finds the chain where ffldb last wrote it,
// the genesis block, and the index ahead of it; the blocks are then fed
// again and the node, checked once more, must answer as if nothing had
// happened.
func (r *crashRun) killIBD(catchUp bool) {
	t := r.t
	t.Helper()
	// The main datadir's node, killed by the last scenario, is restarted
	// and checked by the next one: its state waits meanwhile.
	main := *r
	defer func() {
		r.dir, r.next, r.invalidated = main.dir, main.next, main.invalidated
		r.lastScenario, r.catchUpFrom, r.catchUpTo = main.lastScenario, main.catchUpFrom, main.catchUpTo
	}()
	r.ibds++
	r.dir, r.next, r.invalidated = filepath.Join(main.dir, fmt.Sprintf("ibd-%d", r.ibds)), 0, nil
	r.catchUpFrom, r.catchUpTo = 0, 0
	if err := os.Mkdir(r.dir, 0o700); err != nil {
		t.Fatal(err)
	}

	n, err := startNode(t, r.args(true))
	if err != nil {
		t.Fatalf("start the initial download: %v", err)
	}
	t.Cleanup(func() { kill(n) })
	if !catchUp {
		r.lastScenario = "ibd"
		r.stream(n, false, 2*time.Second)
	} else {
		r.lastScenario = "ibd-catch-up"
		burst := min(ibdBurst, len(r.blocks)-102)
		// Quickly to a random height among the blocks of many
		// transactions (the first 101 mature coins).
		for upTo := 101 + r.rng.Intn(len(r.blocks)-101-burst+1); r.next < upTo; {
			r.submit(n)
		}
		r.subscribe(n)
		for i := r.next + burst - 1; i > r.next; i-- {
			if err := n.RPC.SubmitBlock(r.blocks[i], nil); err != nil {
				t.Fatalf("submitblock %d (an orphan until %d arrives): %v", i+1, r.next+1, err)
			}
		}
		// The first connects them all in one call, which the index
		// follows in catch-ups of several blocks. The kill comes once
		// the chain has connected a random number of them (sometimes
		// all), the index a few behind.
		r.catchUpFrom, r.catchUpTo = int32(r.next+1), int32(r.next+burst)
		res := make(chan error, 1)
		go func(b *btcutil.Block) { res <- n.RPC.SubmitBlock(b, nil) }(r.blocks[r.next])
		r.next += burst
		// (Each getblockcount takes a millisecond or two, during which
		// the chain connects about a block: the target is in the first
		// two thirds. They go through a client of their own: one
		// client's requests wait for each other.)
		poll, err := rpcclient.New(&rpcclient.ConnConfig{Host: n.RPCAddr, User: RPCUser, Pass: RPCPass,
			HTTPPostMode: true, DisableTLS: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer poll.Shutdown()
		target, returned := r.catchUpFrom+int32(r.rng.Intn(burst*2/3)), false
		for deadline := time.Now().Add(time.Minute); !returned && time.Now().Before(deadline); {
			if count, err := poll.GetBlockCount(); err == nil && int32(count) >= target {
				break
			}
			select {
			case <-res:
				returned = true
			default:
			}
		}
		r.killAfter(n, ibdBurstKillWindow)
		if !returned {
			<-res
		}
	}
	fed := r.next

	n = r.restart()
	for r.next < fed {
		r.submit(n)
	}
	if err := n.waitSynced(); err != nil {
		t.Fatal(err)
	}
	r.check(n)
	if err := n.Stop(); err != nil {
		t.Fatalf("stop after the initial download: %v", err)
	}
	if os.Getenv("CRASH_DIR") == "" {
		_ = os.RemoveAll(r.dir)
	}
}

// dropIndex stops the node and drops its index (--dropelectrumindex).
func (r *crashRun) dropIndex(n *Node) {
	r.t.Helper()
	if err := n.Stop(); err != nil {
		r.t.Fatalf("stop: %v", err)
	}
	cfg := r.args(false)
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
	off, err := startNode(r.t, r.args(false))
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
	r.catchUpFrom, r.catchUpTo = indexTip+1, chainTip
	r.startAndKill(catchUpKillWindow)
}

// startNodeArgs builds the flags startNode would give the binary (with
// fresh ports), without starting it.
func startNodeArgs(cfg NodeConfig) (*Node, error) {
	n := &Node{cfg: cfg, Dir: cfg.Dir, DataDir: filepath.Join(cfg.Dir, "data"), LogDir: filepath.Join(cfg.Dir, "logs")}
	addrs, err := freeAddrs(3)
	if err != nil {
		return nil, err
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
// moment up to window.
func (r *crashRun) killConnect(n *Node, window time.Duration) {
	r.stream(n, true, window)
}

// stream submits the pre-built blocks from the next one with clients
// subscribed (once they are used up, generates blocks with generate, else
// waits) and kills the node at a random moment up to window.
func (r *crashRun) stream(n *Node, generate bool, window time.Duration) {
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
			switch {
			case next < len(r.blocks):
				err = n.RPC.SubmitBlock(r.blocks[next], nil)
				if err == nil {
					next++
				}
			case generate:
				_, err = n.RPC.Generate(1)
			default:
				<-stop
				return
			}
			if err != nil {
				return // the kill
			}
		}
	}()
	r.killAfter(n, window)
	close(stop)
	<-done
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

// removedBlock matches the index's log line for each block it undoes.
var removedBlock = regexp.MustCompile(`Electrum index: removed block ([0-9a-f]{64} at height \d+)`)

// storedIndex is what a killed node left in the index's store: its tip and
// the hash of every block up to it.
type storedIndex struct {
	// ok is false when there is no store, or nothing in it yet.
	ok     bool
	height int32
	hash   chainhash.Hash
	blocks map[int32]chainhash.Hash
}

// readIndexStore reads the index's store in dataDir (regtest) as a killed
// node left it: the tip entry and the block rows (indexers/schema.go:
// "Exz" -> hash(32) height(4, little-endian); "Exb" height(4) -> txcount(8)
// blockhash(32)). The store holds the rows of exactly its tip, so the block
// rows are the index's chain.
func readIndexStore(t *testing.T, dataDir string) storedIndex {
	t.Helper()
	dir := node.ElectrumIndexPath(filepath.Join(dataDir, "regtest"))
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return storedIndex{}
	}
	db, err := leveldb.OpenFile(dir, &opt.Options{ReadOnly: true, ErrorIfMissing: true})
	if err != nil {
		t.Fatalf("open the index's store as the kill left it: %v", err)
	}
	defer db.Close()
	v, err := db.Get([]byte("Exz"), nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return storedIndex{}
	}
	if err != nil || len(v) != chainhash.HashSize+4 {
		t.Fatalf("the index's tip entry %x: %v", v, err)
	}
	s := storedIndex{ok: true, height: int32(binary.LittleEndian.Uint32(v[chainhash.HashSize:])),
		blocks: map[int32]chainhash.Hash{}}
	copy(s.hash[:], v)
	it := db.NewIterator(util.BytesPrefix([]byte("Exb")), nil)
	defer it.Release()
	for it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != 7 || len(v) != 8+chainhash.HashSize {
			t.Fatalf("malformed block row %x: %x", k, v)
		}
		var h chainhash.Hash
		copy(h[:], v[8:])
		s.blocks[int32(binary.BigEndian.Uint32(k[3:]))] = h
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if s.height >= 0 && s.blocks[s.height] != s.hash {
		t.Fatalf("the index's tip %v@%d has no block row", s.hash, s.height)
	}
	return s
}

// logSize returns the size of the log file of a node on the crash test's
// current datadir, 0 when there is none yet.
func (r *crashRun) logSize() int64 {
	fi, err := os.Stat(filepath.Join(r.dir, "logs", "regtest", "btcd-electrum.log"))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// startLog returns what the node logged from offset from of its log file
// up to its start-up summary ("Node started"), which comes after the
// index's first pass: the log of its start, of every attempt of it (the
// harness starts the binary again when another process took one of its
// ports, after the index's first pass ran).
func startLog(t *testing.T, n *Node, from int64) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		logged, err := n.Log()
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(logged)) < from {
			// The log was rotated (at 10 MiB) during this start.
			older, _ := os.ReadFile(n.LogFile + ".1")
			logged = string(older[min(int(from), len(older)):]) + logged
		} else {
			logged = logged[from:]
		}
		if i := strings.LastIndex(logged, "Node started"); i >= 0 {
			return logged[:i]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no start-up summary in the log:\n%s", logged)
		}
	}
}

// checkStart checks, from the log of the start (logged), what a start after
// a kill did with the index the kill left (left): the index's first pass,
// before the node serves, brought it to the chain's tip, undoing exactly
// the blocks the chain no longer holds (the kill took them from btcd's
// database, or the chain had left them), newest first, each logged once,
// then catching up from the last block they share. It records where the
// kill landed.
func (r *crashRun) checkStart(n *Node, left storedIndex, logged string) {
	t := r.t
	t.Helper()
	checkIndexAtTip(t, n.RPC)
	_, height, err := n.RPC.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	// fork is the last block the index the kill left and the chain share.
	fork := int32(-1)
	if left.ok {
		for fork = min(left.height, height); fork >= 0; fork-- {
			hash, err := n.RPC.GetBlockHash(int64(fork))
			if err != nil {
				t.Fatal(err)
			}
			if *hash == left.blocks[fork] {
				break
			}
		}
	}
	var want, got []string
	for h := left.height; left.ok && h > fork; h-- {
		want = append(want, fmt.Sprintf("%v at height %d", left.blocks[h], h))
	}
	for _, m := range removedBlock.FindAllStringSubmatch(logged, -1) {
		got = append(got, m[1])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("restart %d: the start undid %d blocks %v; the index the kill left (tip %d) and the chain (tip %d) "+
			"part after height %d, so it had to undo %v:\n%s", r.restarts, len(got), got, left.height, height, fork, want, logged)
	}
	// Then it caught up the chain's blocks above the fork, resuming from
	// there (a catch-up from further down would count more transactions).
	if fork < height {
		if line := catchUpLine(t, n.RPC, fork+1, height); !strings.Contains(logged, line) {
			t.Fatalf("restart %d: no %q in the log: the index did not resume from height %d:\n%s",
				r.restarts, line, fork, logged)
		}
	}

	if r.lastScenario == "" {
		return
	}
	tip := int32(-1)
	if left.ok {
		tip = left.height
	}
	var where string
	switch {
	case r.catchUpTo > 0:
		// Where the killed catch-up (build, or catch-up of a burst)
		// had committed to: the store keeps every commit.
		switch {
		case tip < r.catchUpFrom:
			where = "before its first commit"
		case tip < r.catchUpTo:
			where = "between commits"
		default:
			where = "after it finished"
		}
		if len(want) > 0 {
			where += ", then undone"
		}
		r.catchUpFrom, r.catchUpTo = 0, 0
	case len(want) > 0:
		where = "index ahead of the chain, undone"
	case tip < height:
		where = "index behind the chain, caught up"
	default:
		where = "index at the chain's tip"
	}
	r.landed[r.lastScenario+": "+where]++
}

// check is what every restart must show: the index was not dropped or
// rebuilt and its writer failed nothing (no such log line since the last
// start), its tip is the chain tip, verifyelectrumindex finds no
// difference, and the Electrum answers of a sample of scripts (and of those
// the last blocks touched) equal the reference model built from the node's
// blocks. The chain may have moved since the start: it waits for the index.
func (r *crashRun) check(n *Node) {
	t := r.t
	t.Helper()
	logged, err := n.Log()
	if err != nil {
		t.Fatal(err)
	}
	// The log of this start: from the last "Version" line of the binary.
	if i := strings.LastIndex(logged, "[INF] NODE: Version"); i >= 0 {
		logged = logged[i:]
	}
	for _, bad := range []string{"rebuilding", "another schema version", "Dropping the Electrum index", "[ERR] ELEC:"} {
		if strings.Contains(logged, bad) {
			t.Fatalf("restart %d: the log says %q:\n%s", r.restarts, bad, logged)
		}
	}
	if err := n.waitSynced(); err != nil {
		t.Fatalf("restart %d: %v", r.restarts, err)
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
		compareScript(t, r.ctx, ec, m, sh, nil)
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
// model: confirmed history, confirmed balance, confirmed unspent outputs
// but those of spent ("txid:vout", spent in the mempool: ElectrumX leaves
// them out), and the status of the history served.
func compareScript(t *testing.T, ctx context.Context, ec *ElectrumClient, m *testchain.Model, sh indexers.ScriptHash, spent map[string]bool) {
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
		if spent[fmt.Sprintf("%v:%d", u.TxHash, u.Vout)] {
			continue
		}
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
