package main

// Tests that ibd's figures measure what they are labelled with. The node is
// faked: this test binary, started by ibdOnce as its node when
// E2EBENCH_FAKE_NODE is set, so nothing heavy runs.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// init plays a fake node when E2EBENCH_FAKE_NODE is set (ibdOnce starts
// this test binary as its node, with the node's flags): a JSON-RPC server on
// --rpclisten answering getblockcount and submitblock, and with
// --electrumlisten an Electrum port answering every request with the block
// count as the tip height. It spends no CPU on the replayed blocks, and for
// each of the last E2EBENCH_FAKE_TIPS blocks (the tip phase, after the
// timed replay) it spends 300 ms of CPU and keeps 64 MiB more resident.
// With E2EBENCH_FAKE_HWM it writes that file its VmHWM (kB, which are KiB)
// once it has handled the replay's last block.
func init() {
	if os.Getenv("E2EBENCH_FAKE_NODE") == "" {
		return
	}
	var rpc, electrum string
	var tip int
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "--rpclisten="); ok {
			rpc = v
		}
		if v, ok := strings.CutPrefix(a, "--electrumlisten="); ok {
			electrum = v
		}
		if v, ok := strings.CutPrefix(a, "--addcheckpoint="); ok {
			h, _, _ := strings.Cut(v, ":")
			tip, _ = strconv.Atoi(h)
		}
	}
	tips, _ := strconv.Atoi(os.Getenv("E2EBENCH_FAKE_TIPS"))
	hwmFile := os.Getenv("E2EBENCH_FAKE_HWM")
	var (
		mu    sync.Mutex
		count int
		keep  [][]byte
	)
	l, err := net.Listen("tcp", rpc)
	if err != nil {
		os.Exit(3)
	}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &req)
		mu.Lock()
		defer mu.Unlock()
		switch req.Method {
		case "getblockcount":
			fmt.Fprintf(w, `{"result":%d,"error":null,"id":1}`, count)
		case "submitblock":
			count++
			if count > tip-tips {
				for t0 := time.Now(); time.Since(t0) < 300*time.Millisecond; {
				}
				b := make([]byte, 64<<20)
				for i := 0; i < len(b); i += 4096 {
					b[i] = 1
				}
				keep = append(keep, b)
			}
			if count == tip-tips && hwmFile != "" {
				if st, err := readProcStatus(os.Getpid()); err == nil {
					os.WriteFile(hwmFile, []byte(strconv.FormatInt(st["VmHWM"], 10)), 0o644)
				}
			}
			fmt.Fprint(w, `{"result":null,"error":null,"id":1}`)
		default:
			fmt.Fprint(w, `{"result":null,"error":{"code":-32601,"message":"no"},"id":1}`)
		}
	}))
	if electrum != "" {
		el, err := net.Listen("tcp", electrum)
		if err != nil {
			os.Exit(3)
		}
		go func() {
			for {
				c, err := el.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					sc := bufio.NewScanner(c)
					for sc.Scan() {
						var req struct {
							ID int `json:"id"`
						}
						json.Unmarshal(sc.Bytes(), &req)
						mu.Lock()
						n := count
						mu.Unlock()
						fmt.Fprintf(c, `{"jsonrpc":"2.0","id":%d,"result":{"height":%d}}`+"\n", req.ID, n)
					}
				}()
			}
		}()
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	<-ch
	os.Exit(0)
}

// fakeChainIn writes a chain directory in dir (chain.json, an empty block
// database directory, blocks.dat) whose blocks.dat holds a genesis and n
// blocks of one coinbase transaction each.
func fakeChainIn(dir string, n int) (*chainInfo, error) {
	if err := os.MkdirAll(filepath.Join(dir, "simnet", "blocks_ffldb"), 0o755); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	var prev [32]byte
	for h := 0; h <= n; h++ {
		tx := wire.NewMsgTx(1)
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 0xffffffff}, SignatureScript: []byte{byte(h), 1}})
		tx.AddTxOut(&wire.TxOut{Value: 50, PkScript: []byte{0x51}})
		blk := wire.MsgBlock{Header: wire.BlockHeader{Version: 1, PrevBlock: prev, Nonce: uint32(h)}}
		blk.AddTransaction(tx)
		var raw bytes.Buffer
		if err := blk.Serialize(&raw); err != nil {
			return nil, err
		}
		binary.Write(&buf, binary.LittleEndian, uint32(raw.Len()))
		buf.Write(raw.Bytes())
		prev = blk.BlockHash()
	}
	if err := os.WriteFile(filepath.Join(dir, "blocks.dat"), buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	ci := &chainInfo{Dir: dir, Network: "simnet", Txs: int64(n + 1), Blocks: int64(n), TipHeight: int32(n),
		Checkpoint: fmt.Sprintf("%d:%s", n, strings.Repeat("00", 32))}
	raw, err := json.Marshal(map[string]any{"network": ci.Network, "transactions": ci.Txs, "blocks": ci.Blocks,
		"checkpoint": ci.Checkpoint})
	if err != nil {
		return nil, err
	}
	return ci, os.WriteFile(filepath.Join(dir, "chain.json"), raw, 0o644)
}

// fakeIBD runs ibdOnce once with the fake node and no index, for the tests
// below: a chain of 10 blocks, the last 2 in the tip phase.
var fakeIBD = sync.OnceValues(func() (fakeIBDResult, error) {
	var r fakeIBDResult
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	dir, err := os.MkdirTemp("", "e2ebench-test-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	hwmFile := filepath.Join(dir, "hwm")
	os.Setenv("E2EBENCH_FAKE_NODE", "1")
	os.Setenv("E2EBENCH_FAKE_TIPS", "2")
	os.Setenv("E2EBENCH_FAKE_HWM", hwmFile)
	defer os.Unsetenv("E2EBENCH_FAKE_NODE")
	defer os.Unsetenv("E2EBENCH_FAKE_TIPS")
	defer os.Unsetenv("E2EBENCH_FAKE_HWM")
	ci, err := fakeChainIn(dir, 10)
	if err != nil {
		return r, err
	}
	tips, err := readTipBlocks(ci.BlocksFile(), ci.TipHeight, 2)
	if err != nil {
		return r, err
	}
	c := &common{node: exe, timeout: time.Minute}
	if r.run, err = ibdOnce(c, ci, filepath.Join(dir, "scratch"), ibdNoIndex, 1, 1, tips, nil); err != nil {
		return r, err
	}
	raw, err := os.ReadFile(hwmFile)
	if err != nil {
		return r, err
	}
	r.hwmKB, err = strconv.ParseInt(string(raw), 10, 64)
	return r, err
})

type fakeIBDResult struct {
	run   ibdRun
	hwmKB int64 // the fake node's VmHWM at the end of the replay, kB (KiB)
}

// jsonFields returns the top-level fields of v's JSON, as a report file
// has them.
func jsonFields(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// number returns the JSON number field name of m.
func number(t *testing.T, m map[string]any, name string) float64 {
	t.Helper()
	v, ok := m[name].(float64)
	if !ok {
		t.Fatalf("no number %q in the JSON (fields: %v)", name, keys(m))
	}
	return v
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestIBDReplayFiguresLeaveOutTipPhase: an ibd run's CPU seconds, VmHWM
// and peak RSS are reported beside the replay's seconds, so they are the
// node's until the replay's end; the tip phase after it has figures of its
// own. The fake node spends no CPU on the replayed blocks and 300 ms on each
// of the two tip blocks, and keeps 64 MiB more resident for each.
func TestIBDReplayFiguresLeaveOutTipPhase(t *testing.T) {
	r, err := fakeIBD()
	if err != nil {
		t.Fatal(err)
	}
	if r.run.Blocks != 8 || r.run.TipBlocks != 2 {
		t.Fatalf("replayed %d blocks and %d in the tip phase, want 8 and 2", r.run.Blocks, r.run.TipBlocks)
	}
	m := jsonFields(t, r.run)
	cpu := number(t, m, "cpu_seconds")
	if cpu > 0.25 {
		t.Errorf("replay CPU %.2f s, but the node spent next to none during the replay: the tip phase's 0.6 s is counted", cpu)
	}
	peak, hwm := number(t, m, "peak_rss_mib"), number(t, m, "hwm_mib")
	tipCPU, tipPeak := number(t, m, "tip_cpu_seconds"), number(t, m, "tip_peak_rss_mib")
	t.Logf("replay %.3f s: CPU %.2f s, peak RSS %.0f MiB, VmHWM %.0f MiB; tip phase: CPU %.2f s, peak RSS %.0f MiB",
		r.run.Seconds, cpu, peak, hwm, tipCPU, tipPeak)
	if peak > 100 || hwm > 100 {
		t.Errorf("replay peak RSS %.0f MiB, VmHWM %.0f MiB: the tip phase's 128 MiB are counted", peak, hwm)
	}
	if tipCPU < 0.3 || tipPeak < 128 {
		t.Errorf("tip phase CPU %.2f s and peak RSS %.0f MiB, want about 0.6 s and at least 128 MiB", tipCPU, tipPeak)
	}
}

// TestMemoryIsMiBAndLabelledSo: /proc's VmRSS and VmHWM are in kB, which
// are KiB, and divided by 1024 they are MiB: every memory figure is
// labelled MiB, in the JSON and the tables, beside disk sizes in MB
// (10^6 bytes).
func TestMemoryIsMiBAndLabelledSo(t *testing.T) {
	r, err := fakeIBD()
	if err != nil {
		t.Fatal(err)
	}
	m := jsonFields(t, r.run)
	want := float64(r.hwmKB) / 1024
	got := number(t, m, "hwm_mib")
	t.Logf("the node's VmHWM %d kB = %.1f MiB; hwm_mib %.1f", r.hwmKB, want, got)
	if d := (got - want) / want; d < -0.01 || d > 0.01 {
		t.Errorf("hwm_mib %.1f, the node's VmHWM at the replay's end was %d kB = %.1f MiB", got, r.hwmKB, want)
	}

	// No memory field of a report is named in MB.
	for _, v := range []any{ibdRun{}, ibdSummary{}, catchupRun{}, kindSummary{}, progressPoint{}} {
		for k := range jsonFields(t, v) {
			if strings.HasSuffix(k, "_mb") {
				t.Errorf("%T has the JSON field %q: memory is in MiB", v, k)
			}
		}
	}

	// Nor is a column or a chart axis.
	ci := &chainInfo{Dir: "chain", Network: "simnet"}
	ibd := &ibdReport{Chain: ci, Runs: []ibdRun{{Kind: ibdIndex, Run: 1}}, TipBlocks: 1}
	ibd.With = ibd.summary(ibdIndex)
	catchup := &catchupReport{Chain: ci, Runs: []catchupRun{{Kind: kindElectrum, Run: 1}}}
	catchup.summarize([]string{kindElectrum})
	var text bytes.Buffer
	ibd.writeTable(&text)
	text.WriteString(ibd.markdown())
	catchup.writeTable(&text)
	text.WriteString(catchup.markdown(""))
	if err := writeChart(&text, "chart", 1, []chartSeries{{Name: "x", Points: []progressPoint{{Height: 1}}}}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"RSS MB", "HWM MB", "memory (MB)"} {
		if strings.Contains(text.String(), bad) {
			t.Errorf("the reports say %q: memory is in MiB", bad)
		}
	}
	for _, good := range []string{"peak RSS MiB", "VmHWM MiB", "memory (MiB)", "disk in MB (10^6 bytes)"} {
		if !strings.Contains(text.String(), good) {
			t.Errorf("the reports do not say %q", good)
		}
	}
}

// TestIBDBothAlternatesOrder: with -index both, the two nodes take turns
// running first from round to round, so that neither always meets the
// machine as the other left it.
func TestIBDBothAlternatesOrder(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := fakeChainIn(dir, 4); err != nil {
		t.Fatal(err)
	}
	t.Setenv("E2EBENCH_FAKE_NODE", "1")
	t.Setenv("E2EBENCH_FAKE_TIPS", "0")
	out := filepath.Join(dir, "ibd.json")
	if err := runIBD([]string{"-chain", dir, "-node", exe, "-scratch", filepath.Join(dir, "scratch"), "-runs", "3",
		"-tipblocks", "0", "-index", "both", "-timeout", "1m", "-json", out}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Runs []struct {
			Kind string `json:"kind"`
			Run  int    `json:"run"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Runs {
		got = append(got, fmt.Sprintf("%s/%d", r.Kind, r.Run))
	}
	want := []string{"electrum/1", "noindex/1", "noindex/2", "electrum/2", "electrum/3", "noindex/3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("runs in the order %v, want %v", got, want)
	}
}
