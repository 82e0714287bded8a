package esplora

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus series, nil until RegisterMetrics.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// RegisterMetrics adds the server's series to reg: requests by endpoint and
// status, and their duration by endpoint. Call it before Start.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("esplora: RegisterMetrics after Start")
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "esplora_requests_total",
			Help: "Esplora HTTP requests answered, by endpoint (its path pattern, \"unknown\" for no endpoint) and status code (\"gone\": the client left before the answer).",
		}, []string{"endpoint", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "esplora_request_duration_seconds",
			Help:    "Time from reading an Esplora request to its answer, by endpoint.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"endpoint"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	s.mx = m
	return nil
}

// observe records one answered request.
func (m *metrics) observe(parts []string, code int, gone bool, d time.Duration) {
	if m == nil {
		return
	}
	ep := endpointName(parts)
	c := strconv.Itoa(code)
	if gone {
		c = "gone"
	}
	m.requests.WithLabelValues(ep, c).Inc()
	m.latency.WithLabelValues(ep).Observe(d.Seconds())
}

// literalSegments are the path segments that name an endpoint; every other
// segment is a parameter.
var literalSegments = map[string]bool{
	"blocks": true, "tip": true, "height": true, "hash": true, "block-height": true, "block": true,
	"status": true, "txids": true, "header": true, "raw": true, "txid": true, "txs": true, "tx": true,
	"hex": true, "merkle-proof": true, "merkleblock-proof": true, "outspend": true, "outspends": true,
	"address": true, "scripthash": true, "chain": true, "mempool": true, "utxo": true, "recent": true,
	"fee-estimates": true, "broadcast": true,
}

// endpointName returns the path pattern of a request, "/tx/:/outspends"
// for example: a bounded set of labels whatever the paths asked for.
func endpointName(parts []string) string {
	if len(parts) == 0 || len(parts) > 5 || !literalSegments[parts[0]] {
		return "unknown"
	}
	name := ""
	for i, p := range parts {
		if i > 0 && !literalSegments[p] {
			p = ":"
		}
		name += "/" + p
	}
	return name
}
