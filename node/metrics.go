package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/mempool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/listen"
)

// The Prometheus endpoint (--metricslisten) opens as soon as the database
// is, before the chain loads and the index catches up, so the build of the
// index on an existing datadir can be watched. It serves the node's state
// (chain and index heights, catch-up progress, index size, mempool, peers),
// the Electrum index's block-pass timings, the Electrum server's metrics
// and Go's runtime and process metrics at /metrics.

// metricsPath is where the endpoint serves.
const metricsPath = "/metrics"

// blockPassBuckets are the block-pass time buckets in seconds.
var blockPassBuckets = prometheus.ExponentialBuckets(0.0005, 2, 14) // 0.5 ms .. 4 s

// normalizeMetricsListen checks --metricslisten and makes a bare port
// ("9100" or ":9100") a loopback address.
func normalizeMetricsListen(addr string) (string, error) {
	if addr == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = "", addr
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if _, err := net.LookupPort("tcp", port); err != nil || strings.ContainsAny(host, "/ ") {
		return "", fmt.Errorf("--metricslisten=%s: want [host:]port, e.g. 9100 (loopback) or 0.0.0.0:9100", addr)
	}
	return net.JoinHostPort(host, port), nil
}

// metricsServer is the Prometheus endpoint and the node's collectors.
type metricsServer struct {
	reg *prometheus.Registry
	ln  net.Listener
	hs  *http.Server

	// chain and pool are set once they exist; the collectors skip what
	// is not there yet.
	chain atomic.Pointer[blockchain.BlockChain]
	pool  atomic.Pointer[mempool.TxPool]
	idx   *indexers.ElectrumIndex
	// peers counts connected peers; read only once ready is set.
	peers func() int32
	ready atomic.Bool

	blockPass  *prometheus.HistogramVec
	blocks     prometheus.Counter
	txs        prometheus.Counter
	writes     prometheus.Counter
	writeBytes prometheus.Counter
}

// newMetricsServer opens the endpoint on addr and starts serving.
func newMetricsServer(addr string, idx *indexers.ElectrumIndex) (*metricsServer, error) {
	m := &metricsServer{reg: prometheus.NewRegistry(), idx: idx}
	m.blockPass = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "electrum_index_block_pass_seconds",
		Help:    "Time the index's writer took for one block, by phase: plan (block and spent outputs read, scripts hashed and rows built, in parallel), write (rows put into the batch), total.",
		Buckets: blockPassBuckets,
	}, []string{"phase"})
	m.blocks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "electrum_index_blocks_total", Help: "Blocks the index's writer indexed, at the tip and in catch-ups.",
	})
	m.txs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "electrum_index_transactions_total", Help: "Transactions of the blocks the index's writer indexed.",
	})
	m.writes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "electrum_index_rows_written_total", Help: "Rows put or deleted by the index's writer for the blocks it indexed.",
	})
	m.writeBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "electrum_index_bytes_written_total", Help: "Bytes the index's writer handed to its store for the blocks it indexed (keys and values put, keys deleted).",
	})
	for _, c := range []prometheus.Collector{
		m.blockPass, m.blocks, m.txs, m.writes, m.writeBytes, nodeCollector{m},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := m.reg.Register(c); err != nil {
			return nil, err
		}
	}
	lns, err := listen.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("--metricslisten=%s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(metricsPath, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	m.ln = lns[0]
	m.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Infof("Prometheus metrics at %s", m.url())
	for _, ln := range lns {
		go func() {
			if err := m.hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Errorf("Metrics server: %v", err)
			}
		}()
	}
	return m, nil
}

// nodeReady hands over the parts that exist once the node is assembled.
func (m *metricsServer) nodeReady(peers func() int32) {
	m.peers = peers
	m.ready.Store(true)
}

// registerElectrum adds the Electrum server's metrics.
func (m *metricsServer) registerElectrum(s *electrum.Server) error {
	return s.RegisterMetrics(m.reg)
}

// url is the endpoint's address.
func (m *metricsServer) url() string { return "http://" + m.ln.Addr().String() + metricsPath }

// MetricsAddr returns the address the Prometheus endpoint listens on (nil
// without --metricslisten).
func (n *Node) MetricsAddr() net.Addr {
	if n.metrics == nil {
		return nil
	}
	return n.metrics.ln.Addr()
}

// close stops the endpoint.
func (m *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.hs.Shutdown(ctx)
}

// nodeCollector reads the node's state at scrape time.
type nodeCollector struct{ m *metricsServer }

// Descriptions of the node's state metrics.
var (
	descChainHeight   = prometheus.NewDesc("btcd_chain_height", "Height of the main-chain tip.", nil, nil)
	descMempoolTxs    = prometheus.NewDesc("btcd_mempool_transactions", "Transactions in the mempool.", nil, nil)
	descMempoolBytes  = prometheus.NewDesc("btcd_mempool_bytes", "Serialized size of the mempool's transactions.", nil, nil)
	descPeers         = prometheus.NewDesc("btcd_peers", "Connected peers.", nil, nil)
	descIndexHeight   = prometheus.NewDesc("electrum_index_height", "Height of the last block the Electrum index holds.", nil, nil)
	descIndexProgress = prometheus.NewDesc("electrum_index_progress", "Index height over chain height (1 when caught up, 0 while the chain loads).", nil, nil)
	descIndexRows     = prometheus.NewDesc("electrum_index_rows", "Rows of the Electrum index.", nil, nil)
	descIndexBytes    = prometheus.NewDesc("electrum_index_bytes", "Key and value bytes of the Electrum index's rows (the database adds its own overhead).", nil, nil)
	descCatchUpOn     = prometheus.NewDesc("electrum_index_catchup_running", "1 while the index's writer catches up more than one block (building the index, or behind the chain in initial download).", nil, nil)
	descCatchUpHeight = prometheus.NewDesc("electrum_index_catchup_height", "Height the running or last catch-up has committed, and its target.", []string{"of"}, nil)
	descCatchUpTxs    = prometheus.NewDesc("electrum_index_catchup_transactions", "Transactions the running or last catch-up has committed, and its target.", []string{"of"}, nil)
	descCatchUpWrites = prometheus.NewDesc("electrum_index_catchup_rows_written", "Rows the running or last catch-up has put or deleted.", nil, nil)
	descCatchUpRate   = prometheus.NewDesc("electrum_index_catchup_tx_per_second", "Transactions per second the running or last catch-up has committed since it started.", nil, nil)
	descCatchUpETA    = prometheus.NewDesc("electrum_index_catchup_eta_seconds", "Time left for the running catch-up at its current rate (0 when unknown or done).", nil, nil)
)

// Describe sends every description.
func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descChainHeight, descMempoolTxs, descMempoolBytes, descPeers,
		descIndexHeight, descIndexProgress, descIndexRows, descIndexBytes, descCatchUpOn,
		descCatchUpHeight, descCatchUpTxs, descCatchUpWrites, descCatchUpRate, descCatchUpETA} {
		ch <- d
	}
}

// Collect sends what is known now.
func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	m := c.m
	chainHeight := int32(-1)
	if chain := m.chain.Load(); chain != nil {
		chainHeight = chain.BestSnapshot().Height
		gauge(descChainHeight, float64(chainHeight))
	}
	if pool := m.pool.Load(); pool != nil {
		descs := pool.TxDescs()
		size := 0
		for _, d := range descs {
			size += d.Tx.MsgTx().SerializeSize()
		}
		gauge(descMempoolTxs, float64(len(descs)))
		gauge(descMempoolBytes, float64(size))
	}
	if m.ready.Load() {
		gauge(descPeers, float64(m.peers()))
	}
	idx := m.idx
	if idx == nil {
		return
	}
	p := idx.Progress()
	if tip, err := idx.Tip(); err == nil {
		gauge(descIndexHeight, float64(tip.Height))
		target := chainHeight
		if p.Running && p.Target > target {
			target = p.Target
		}
		// While the chain loads, and no catch-up has named its target, how
		// far behind the index is is unknown: it is not caught up yet.
		progress := 0.0
		if target >= 0 {
			progress = 1
		}
		if target > 0 && tip.Height < target {
			progress = float64(max(tip.Height, 0)) / float64(target)
		}
		gauge(descIndexProgress, progress)
	}
	if rows, bytes, err := idx.Size(); err == nil {
		gauge(descIndexRows, float64(rows))
		gauge(descIndexBytes, float64(bytes))
	}
	running := 0.0
	if p.Running {
		running = 1
	}
	gauge(descCatchUpOn, running)
	// The catch-up series are served from the start, all zero until the
	// writer first catches up more than one block, so dashboards and
	// alerts never see them appear or vanish.
	gauge(descCatchUpHeight, float64(p.Height), "committed")
	gauge(descCatchUpHeight, float64(p.Target), "target")
	gauge(descCatchUpTxs, float64(p.Txs), "committed")
	gauge(descCatchUpTxs, float64(p.TargetTxs), "target")
	gauge(descCatchUpWrites, float64(p.Writes))
	gauge(descCatchUpRate, p.Rate)
	gauge(descCatchUpETA, p.ETA.Seconds())
}

// observeBlock records one block the Electrum index's writer indexed.
func (m *metricsServer) observeBlock(p indexers.BlockPass) {
	m.blockPass.WithLabelValues("plan").Observe(p.Plan.Seconds())
	m.blockPass.WithLabelValues("write").Observe(p.Write.Seconds())
	m.blockPass.WithLabelValues("total").Observe((p.Plan + p.Write).Seconds())
	m.blocks.Inc()
	m.txs.Add(float64(p.Txs))
	m.writes.Add(float64(p.Writes))
	m.writeBytes.Add(float64(p.WriteBytes))
}
